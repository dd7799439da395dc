"""The blob store written once, in SQL that SQLite and PostgreSQL both run.

Azure's blob rules (conditions and ETags, the lease state machine, block lists, versions,
listing, the change journal) are check-then-write logic over a few tables. It lives here once;
each backend gives it a database (`sqlconn.StoreDatabase`) whose write transactions are
serialized per account: the embedded backend a SQLite file per account (`sqlite/blobs.py`,
BEGIN IMMEDIATE), the PostgreSQL backend a schema per account (`postgres/blobs.py`, an advisory
lock per account). A rule fixed here holds on both.
"""
