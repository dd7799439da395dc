"""Configuration as on Azure: host.json, local.settings.json, environment, connections."""
