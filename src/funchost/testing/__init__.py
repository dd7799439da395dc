"""funchost.testing: run a function app in-process with a manual clock (pytest plugin + harness)."""
