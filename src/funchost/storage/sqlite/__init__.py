"""The embedded backend: SQLite files under the data folder, safe across processes (WAL)."""
