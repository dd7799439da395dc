import hashlib

import pytest

from funchost.reliability.blobref import BlobPolicy, BlobReference, Violation, blob_job_id, parse_blob_url

POLICY = BlobPolicy.of(["imports"], account="stexample")


def ref(name: str, container: str = "imports", account: str = "stexample") -> BlobReference:
    return BlobReference(account, container, name)


def test_allowed_reference():
    assert POLICY.check(ref("tenant-a/2026/06/file.csv"), "tenant-a") is None


@pytest.mark.parametrize(
    ("blob", "violation"),
    [
        (ref("tenant-a/f.csv", container="exports"), Violation.CONTAINER_NOT_ALLOWED),
        (ref("tenant-a/f.csv", container="Imports"), Violation.CONTAINER_NOT_ALLOWED),
        (ref("tenant-b/f.csv"), Violation.OUTSIDE_TENANT_PREFIX),
        (ref("Tenant-A/f.csv"), Violation.OUTSIDE_TENANT_PREFIX),
        (ref("tenant-a"), Violation.OUTSIDE_TENANT_PREFIX),
        (ref("tenant-ab/f.csv"), Violation.OUTSIDE_TENANT_PREFIX),
        (ref("tenant-a/../tenant-b/f.csv"), Violation.DOT_DOT),
        (ref("tenant-a/a\\b.csv"), Violation.BACKSLASH),
        (ref("tenant-a/a\x00b.csv"), Violation.CONTROL_CHARACTER),
        (ref("tenant-a/a\nb.csv"), Violation.CONTROL_CHARACTER),
        (ref("tenant-a/a\x7fb.csv"), Violation.CONTROL_CHARACTER),
        (ref("/tenant-a/f.csv"), Violation.LEADING_SLASH),
        (ref("tenant-a/f.csv", account="other"), Violation.ACCOUNT_NOT_ALLOWED),
        (ref(""), Violation.MISSING),
        (ref("tenant-a/f.csv?sv=2024&sig=abcdef"), Violation.CREDENTIAL_LIKE),
        (ref("tenant-b/f.csv?sig=abcdef"), Violation.CREDENTIAL_LIKE),
        (ref("tenant-a/eyJhbGciOi.eyJzdWIiOi.c2lnbmF0dXJl"), Violation.CREDENTIAL_LIKE),
        (ref("tenant-a/AccountKey=abc"), Violation.CREDENTIAL_LIKE),
    ],
)
def test_refused_references(blob, violation):
    assert POLICY.check(blob, "tenant-a") is violation
    assert not POLICY.is_allowed(blob, "tenant-a")


def test_account_compares_case_insensitively():
    assert POLICY.check(ref("tenant-a/f.csv", account="STEXAMPLE"), "tenant-a") is None


def test_empty_tenant_never_matches():
    assert POLICY.check(ref("/x"), "") is Violation.LEADING_SLASH
    assert POLICY.check(ref("x/f"), "") is Violation.OUTSIDE_TENANT_PREFIX


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://stexample.blob.core.windows.net/imports/tenant-a/f.csv", ("stexample", "imports", "tenant-a/f.csv")),
        ("https://STEXAMPLE.blob.core.windows.net/imports/a%20b.csv?sv=1&sig=x", ("stexample", "imports", "a b.csv")),
        ("http://127.0.0.1:10000/devstoreaccount1/imports/tenant-a/f.csv",
         ("devstoreaccount1", "imports", "tenant-a/f.csv")),
        ("http://localhost:10000/acct/c/b", ("acct", "c", "b")),
    ],
)
def test_parse_blob_url(url, expected):
    assert parse_blob_url(url) == expected


@pytest.mark.parametrize("url", [
    "ftp://stexample.blob.core.windows.net/c/b", "https://stexample.blob.core.windows.net/c",
    "http://127.0.0.1:10000/acct/c", "not a url", "https://.blob.core.windows.net/c/b",
    "https://a.b.blob.core.windows.net/c/b",
])
def test_unparseable_urls(url):
    assert parse_blob_url(url) is None


def test_blob_job_id_prefers_version_id_then_etag():
    blob = BlobReference("acct", "c", "t/b", etag='"0x1"', version_id="v1")
    material = b"acct|c|t/b|v1|Microsoft.Storage.BlobCreated"
    assert blob_job_id(blob, "Microsoft.Storage.BlobCreated") == "blob_" + hashlib.sha256(material).hexdigest()[:32]
    etag_only = BlobReference("acct", "c", "t/b", etag='"0x1"')
    material = b'acct|c|t/b|"0x1"|Microsoft.Storage.BlobCreated'
    assert blob_job_id(etag_only, "Microsoft.Storage.BlobCreated") == "blob_" + hashlib.sha256(material).hexdigest()[:32]


def test_blob_job_id_needs_a_version():
    with pytest.raises(ValueError):
        blob_job_id(BlobReference("acct", "c", "t/b"), "Microsoft.Storage.BlobCreated")
    with pytest.raises(ValueError):
        blob_job_id(BlobReference("acct", "c", "t/b", etag="  "), "Microsoft.Storage.BlobCreated")


def test_versions_of_one_blob_are_different_jobs():
    a = blob_job_id(BlobReference("acct", "c", "t/b", etag='"0x1"'), "Microsoft.Storage.BlobCreated")
    b = blob_job_id(BlobReference("acct", "c", "t/b", etag='"0x2"'), "Microsoft.Storage.BlobCreated")
    assert a != b
