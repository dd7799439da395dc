"""Durable Functions: the extension's side of the out-of-process protocol, on the embedded task hub.

Apps written with ``azure-functions-durable`` (``df.DFApp``, ``df.Blueprint``) run unmodified: the
SDK replays its orchestrator generator against the history this package keeps, and returns the
actions it wants; `replay` does what the Durable extension and the Durable Task Framework do
with those actions (sequence ids, non-determinism checks, retries, timers); `episode` turns the
outcome into history events and work; `dispatcher` runs orchestrations, activities, entities and
timers from the task hub (`funchost.storage.durable`), shared safely by several hosts; `http_api`
serves the management API at the extension's URLs. The protocol and its sources are written
down in ``docs/durable.md``.
"""
