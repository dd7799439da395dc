"""The Table service REST API over the `TableService` port (see app.py for the operations)."""
