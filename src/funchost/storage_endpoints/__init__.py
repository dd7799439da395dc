"""Azure Storage REST endpoints (Blob, Queue, Table) over the embedded storage.

Unmodified SDK code (`BlobServiceClient.from_connection_string(...)`, `QueueClient`, `TableClient`,
Storage Explorer, the JavaScript SDKs) talks to the same embedded accounts the host's triggers
and bindings use: the endpoints are one more adapter over the storage ports. Layout:

    wire.py       the request as the handlers see it, responses, dates
    errors.py     Azure's error codes and bodies (XML for blob/queue, JSON for table)
    accounts.py   the accounts served and their keys
    sharedkey.py  Shared Key / Shared Key Lite signatures; sas.py: account and service SAS
    auth.py       who may do what: signatures, SAS permissions, container public access
    queue_api.py  the Queue service; blob/ the Blob service; table/ the Table service
    server.py     the three listening sockets; holders.py who holds a taken port (the data
                  folder's record, the identity answer); service.py the host service
    peer.py       another app's host serves the endpoints: use its accounts (peer_storage.py)
                  and say when they stop answering (peer_watch.py); docs/storage-endpoints.md
"""
