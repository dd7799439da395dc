"""The Event Hubs broker written once, in SQL that SQLite and PostgreSQL both run: partitioned
logs with sequence numbers and offsets, consumer groups and retention over four tables. The
embedded backend runs it on a SQLite file per namespace (`sqlite/eventhubs.py`), the PostgreSQL
backend in a schema per namespace (`postgres/eventhubs.py`)."""
