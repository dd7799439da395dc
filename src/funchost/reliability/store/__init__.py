"""Jobs databases: the dialect layer (`db`), the schema (`schema`), SQLite and PostgreSQL.

Open a store with `funchost.reliability.open_store` (or `JobStore(SqliteDatabase(...))`).
"""
