"""The Blob service REST API over the `BlobApi` port (see app.py for the operations)."""
