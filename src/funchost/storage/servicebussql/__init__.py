"""The Service Bus broker written once, in SQL that SQLite and PostgreSQL both run.

Peek-lock, sessions, topics with their rules, scheduled messages, dead-lettering, deferral and
duplicate detection are check-then-write logic over four tables (entities, messages, sessions,
dedup). It lives here once; each backend gives it a database (`sqlconn.StoreDatabase`) whose
write transactions are serialized per namespace: the embedded backend a SQLite file per
namespace (`sqlite/servicebus.py`, BEGIN IMMEDIATE), the PostgreSQL backend a schema per
namespace (`postgres/servicebus.py`, an advisory lock per namespace). A rule fixed here holds
on both.
"""
