"""Azure Storage through the official SDKs (Azurite or Azure): `--storage azure`."""

from funchost.storage.azure.backend import AzureStorage

__all__ = ["AzureStorage"]
