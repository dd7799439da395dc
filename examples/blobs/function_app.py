"""Blob triggers, unmodified Azure Functions code: run with `funchost start examples/blobs`.

* `make_thumbnail`: the polling source (receipts: each blob version once), a pattern with a name
  and an extension, the parameters reused in the output path.
* `on_upload`: the Event Grid source (the embedded Event Grid's storage topic, or a real
  subscription to /runtime/webhooks/blobs through a tunnel).
* `archive`: SDK types (azurefunctions-extensions-bindings-blob): a `BlobClient` trigger and a
  `ContainerClient` input, talking to storage directly with the AzureWebJobsStorage setting (on
  embedded storage: the storage endpoints `funchost start` serves on 127.0.0.1:10000-10002).

    funchost blob upload images cat.png cat.png --app examples/blobs
    funchost blob download thumbnails cat-small.png - --app examples/blobs
"""

import logging

import azure.functions as func
import azurefunctions.extensions.bindings.blob as blob

app = func.FunctionApp()


@app.blob_trigger(arg_name="image", path="images/{name}.{ext}", connection="AzureWebJobsStorage")
@app.blob_output(arg_name="thumbnail", path="thumbnails/{name}-small.{ext}", connection="AzureWebJobsStorage")
def make_thumbnail(image: func.InputStream, thumbnail: func.Out[bytes]) -> None:
    data = image.read()
    logging.info("thumbnail for %s (%d bytes, ETag %s)", image.name, len(data),
                 (image.blob_properties or {}).get("ETag"))
    thumbnail.set(data[:64])  # a stand-in for real resizing


@app.blob_trigger(arg_name="upload", path="uploads/{name}", connection="AzureWebJobsStorage",
                  source=func.BlobSource.EVENT_GRID)
def on_upload(upload: func.InputStream) -> None:
    logging.info("upload %s arrived through Event Grid (%s bytes)", upload.name, upload.length)


@app.blob_trigger(arg_name="client", path="inbox/{name}", connection="AzureWebJobsStorage")
@app.blob_input(arg_name="archive_box", path="archive", connection="AzureWebJobsStorage")
def archive(client: blob.BlobClient, archive_box: blob.ContainerClient) -> None:
    content = client.download_blob().readall()
    archive_box.upload_blob(client.blob_name, content, overwrite=True)
    logging.info("archived %s (%d bytes) next to %d blob(s)", client.blob_name, len(content),
                 sum(1 for _ in archive_box.list_blobs()))
