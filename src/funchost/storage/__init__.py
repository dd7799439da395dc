"""Storage: Protocols here; `sqlite/` is the embedded default, `azure/` uses the official SDKs."""
