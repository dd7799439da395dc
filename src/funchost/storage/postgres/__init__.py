"""`--storage postgres`: the host's shared state on one PostgreSQL server, for hosts on several
machines (docs/postgres.md).

`config` finds the server and the schema, `migrate` brings a component's tables up to date under
an advisory lock, `backend` hands out one service per port: those built here share their state
through the server, the others still come from the embedded stores of the data folder.
"""
