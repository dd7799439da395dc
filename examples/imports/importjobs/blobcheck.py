"""Blob verification: the referenced blob exists and is the version and kind we accept.

Run at intake (400 when it fails) and again by the worker right before reading (a mismatch
there ends the job as BusinessFailed): the blob may be replaced in between.
"""

from __future__ import annotations

from funchost.reliability import BlobReference
from importjobs.settings import PipelineSettings
from importjobs.storage import BlobInfo, BlobMissing, BlobStore, bare_etag


class BlobInvalid(Exception):
    """The blob cannot be used; the message is safe to show to the caller."""


async def verify(blobs: BlobStore, blob: BlobReference, settings: PipelineSettings) -> BlobInfo:
    try:
        info = await blobs.properties(blob.container_name, blob.blob_name)
    except BlobMissing:
        raise BlobInvalid(f"blob {blob.container_name}/{blob.blob_name} does not exist") from None
    check(info, blob, settings)
    return info


def check(info: BlobInfo, blob: BlobReference, settings: PipelineSettings) -> None:
    if blob.etag is not None and bare_etag(blob.etag) != info.etag:
        raise BlobInvalid("eTag does not match the current blob")
    if blob.version_id is not None and blob.version_id != info.version_id:
        raise BlobInvalid("versionId does not match the current blob")
    if info.size > settings.max_blob_bytes:
        raise BlobInvalid(f"blob is {info.size} bytes, over the limit of {settings.max_blob_bytes}")
    content_type = info.content_type.split(";")[0].strip().lower()
    if content_type not in settings.allowed_content_types:
        raise BlobInvalid(f"content type {content_type!r} is not accepted")
