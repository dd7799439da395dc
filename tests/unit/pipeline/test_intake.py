"""HTTP intake rules (pipeline.md section 1) through the real host, in-process."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time

import jwt
import pytest
from tests.support.pipeline import CSV_OK, Pipeline, auth, token

from funchost.reliability import IdempotencyScope, NewJob, OutboxMessage, OutboxState

BODY = {"containerName": "imports", "blobName": "tenant-a/in/file.csv"}


async def _ready(p: Pipeline, name: str = "tenant-a/in/file.csv", data: bytes = CSV_OK, **kw: str) -> None:
    await p.upload(name, data, **kw)


def _outbox_rows(p: Pipeline, job_id: str) -> list:
    return p.store.outbox.for_job(job_id)


async def test_same_key_twice_returns_the_same_job_and_writes_one_outbox_row(any_pipeline: Pipeline) -> None:
    p = any_pipeline
    await _ready(p)
    first = await p.submit(BODY, key="k-1")
    second = await p.submit(BODY, key="k-1")
    assert first.status_code == second.status_code == 202
    job_id = first.json()["jobId"]
    assert second.json() == {"jobId": job_id, "statusUrl": f"/api/imports/{job_id}"}
    assert job_id.startswith("imp_") and len(job_id) == 36
    assert len(_outbox_rows(p, job_id)) == 1


async def test_same_key_concurrently_creates_one_job(any_pipeline: Pipeline) -> None:
    p = any_pipeline
    await _ready(p)
    responses = await asyncio.gather(*(p.submit(BODY, key="k-race") for _ in range(6)))
    assert {r.status_code for r in responses} == {202}
    job_ids = {r.json()["jobId"] for r in responses}
    assert len(job_ids) == 1
    assert len(_outbox_rows(p, job_ids.pop())) == 1


async def test_same_key_with_a_different_body_is_a_conflict(any_pipeline: Pipeline) -> None:
    p = any_pipeline
    await _ready(p)
    await _ready(p, "tenant-a/in/other.csv")
    assert (await p.submit(BODY, key="k-2")).status_code == 202
    conflict = await p.submit({**BODY, "blobName": "tenant-a/in/other.csv"}, key="k-2")
    assert conflict.status_code == 409
    assert "different request body" in conflict.json()["error"]


async def test_same_key_under_another_tenant_user_or_endpoint_is_another_job(any_pipeline: Pipeline) -> None:
    p = any_pipeline
    await _ready(p)
    await _ready(p, "tenant-b/in/file.csv")
    mine = (await p.submit(BODY, key="shared")).json()["jobId"]
    other_user = await p.submit(BODY, key="shared", user="user-2")
    other_tenant = await p.submit({**BODY, "blobName": "tenant-b/in/file.csv"}, key="shared", tenant="tenant-b")
    assert other_user.status_code == other_tenant.status_code == 202
    assert len({mine, other_user.json()["jobId"], other_tenant.json()["jobId"]}) == 3
    # another endpoint of the same tenant and user with the same key: its own scope, no conflict
    scope = IdempotencyScope("tenant-a", "POST /api/exports", "user-1", "shared")
    decision = p.store.intake.accept_import(scope, "another-hash", OutboxMessage("exports", "{}"))
    assert decision.kind.value == "Accepted" and decision.job_id != mine


async def test_property_order_whitespace_casing_and_unknown_properties_do_not_change_the_hash(
        pipeline: Pipeline) -> None:
    await _ready(pipeline)
    first = await pipeline.submit(None, key="k-3", raw=b'{"containerName":"imports","blobName":"tenant-a/in/file.csv"}')
    variants = [
        b'{\n  "blobName": "tenant-a/in/file.csv",\n  "containerName": "imports"\n}',
        b'{"BlobName":"tenant-a/in/file.csv","ContainerName":"imports","eTag":null,"requestedBy":"x"}',
    ]
    for raw in variants:
        again = await pipeline.submit(None, key="k-3", raw=raw)
        assert again.status_code == 202, again.text
        assert again.json()["jobId"] == first.json()["jobId"]


async def test_requested_by_comes_from_the_token_never_from_the_body(pipeline: Pipeline) -> None:
    await _ready(pipeline)
    response = await pipeline.submit({**BODY, "requestedBy": "ceo@example.com"}, key="k-4", user="user-7")
    job = pipeline.store.jobs.get(response.json()["jobId"])
    assert job is not None and job.requested_by == "user-7"
    payload = json.loads(_outbox_rows(pipeline, job.job_id)[0].payload)
    assert payload["requestedByUserId"] == "user-7" and "ceo" not in json.dumps(payload)


async def test_a_client_chosen_tenant_header_is_not_trusted(pipeline: Pipeline) -> None:
    response = await pipeline.host.http("POST", "/api/imports", key="master", json=BODY,
                                        headers={"Idempotency-Key": "k", "X-Tenant-Id": "tenant-a",
                                                 "X-Authenticated-UserId": "admin"})
    assert response.status_code == 401


@pytest.mark.parametrize("bearer", ["", "Bearer", "Bearer not-a-jwt", f"Bearer {token(secret='wrong-secret-0123456789-abcdefghij')}",
                                    f"Bearer {token(lifetime=-60)}", f"Bearer {token(tenant='')}"])
async def test_missing_or_invalid_identity_is_401(pipeline: Pipeline, bearer: str) -> None:
    response = await pipeline.host.http("POST", "/api/imports", key="master", json=BODY,
                                        headers={"Idempotency-Key": "k", "Authorization": bearer})
    assert response.status_code == 401


async def test_easyauth_principal_is_used_in_easyauth_mode(start_pipeline) -> None:  # type: ignore[no-untyped-def]
    import base64

    p = await start_pipeline(IMPORTS_AUTH="easyauth")
    await _ready(p)
    claims = {"claims": [{"typ": "http://schemas.microsoft.com/identity/claims/tenantid", "val": "tenant-a"},
                         {"typ": "http://schemas.microsoft.com/identity/claims/objectidentifier", "val": "u-9"}]}
    header = base64.b64encode(json.dumps(claims).encode()).decode()
    ok = await p.host.http("POST", "/api/imports", key="master", json=BODY,
                           headers={"Idempotency-Key": "k", "X-MS-CLIENT-PRINCIPAL": header})
    assert ok.status_code == 202
    assert p.store.jobs.get(ok.json()["jobId"]).requested_by == "u-9"  # type: ignore[union-attr]
    bearer_only = await p.host.http("POST", "/api/imports", key="master", json=BODY,
                                    headers={"Idempotency-Key": "k2", **auth()})
    assert bearer_only.status_code == 401


async def test_deeply_nested_identity_json_is_401_not_a_failure(start_pipeline) -> None:  # type: ignore[no-untyped-def]
    import base64

    deep = b"[" * 3_000 + b"]" * 3_000
    header = base64.urlsafe_b64encode(deep).rstrip(b"=").decode()
    bearer = await start_pipeline()
    response = await bearer.host.http("POST", "/api/imports", key="master", json=BODY,
                                      headers={"Idempotency-Key": "k", "Authorization": f"Bearer {header}.e30.c2ln"})
    assert response.status_code == 401
    easyauth = await start_pipeline(IMPORTS_AUTH="easyauth")
    response = await easyauth.host.http("POST", "/api/imports", key="master", json=BODY, headers={
        "Idempotency-Key": "k", "X-MS-CLIENT-PRINCIPAL": base64.b64encode(deep).decode()})
    assert response.status_code == 401


async def test_declared_body_over_32_kib_is_413(pipeline: Pipeline) -> None:
    big = json.dumps({**BODY, "pad": "x" * 40_000}).encode()
    response = await pipeline.submit(None, raw=big)
    assert response.status_code == 413


async def test_streamed_body_over_32_kib_without_length_is_413(pipeline: Pipeline) -> None:
    big = json.dumps({**BODY, "pad": "x" * 40_000}).encode()

    async def chunks():  # type: ignore[no-untyped-def]
        for i in range(0, len(big), 4096):
            yield big[i:i + 4096]

    headers = {**auth(), "Idempotency-Key": "k", "Content-Type": "application/json"}
    response = await pipeline.host.http("POST", "/api/imports", key="master", content=chunks(), headers=headers)
    assert "content-length" not in {k.lower() for k in response.request.headers}
    assert response.status_code == 413


async def test_body_just_under_the_limit_is_accepted(pipeline: Pipeline) -> None:
    await _ready(pipeline)
    body = json.dumps({**BODY, "pad": ""}).encode()
    body = body[:-1] + b', "x": "' + b"y" * (32 * 1024 - len(body) - 10) + b'"}'
    assert len(body) <= 32 * 1024
    assert (await pipeline.submit(None, raw=body)).status_code == 202


async def test_idempotency_key_is_required(pipeline: Pipeline) -> None:
    assert (await pipeline.submit(BODY, key=None)).status_code == 400
    assert (await pipeline.submit(BODY, key="   ")).status_code == 400


@pytest.mark.parametrize("raw, needle", [
    (b'{"containerName": "imports", ', "not valid JSON"),
    (b"[1, 2]", "JSON object"),
    (b'{"containerName": 5, "blobName": "tenant-a/x.csv"}', "'containerName' must be a string"),
    (b'{"containerName": "imports"}', "blobName"),
    (b"", "empty"),
    (b"[" * 15_000 + b"]" * 15_000, "nested too deeply"),  # RecursionError in the decoder
    (b'{"containerName": "imports", "blobName": "tenant-a/x.csv", "x": ' + b"[" * 100 + b"]" * 100 + b"}",
     "nested too deeply"),  # decodes, but deeper than the documents the app reads
])
async def test_invalid_bodies_are_400_with_a_clear_message(pipeline: Pipeline, raw: bytes, needle: str) -> None:
    response = await pipeline.submit(None, raw=raw)
    assert response.status_code == 400
    assert needle in response.json()["error"]


@pytest.mark.parametrize("container, name, violation", [
    ("exports", "tenant-a/in/file.csv", "container_not_allowed"),     # container not in the allow-list
    ("Imports", "tenant-a/in/file.csv", "container_not_allowed"),     # container case differs
    ("imports", "tenant-b/in/file.csv", "outside_tenant_prefix"),     # another tenant's prefix
    ("imports", "Tenant-A/in/file.csv", "outside_tenant_prefix"),     # prefix case differs (ordinal comparison)
    ("imports", "tenant-a", "outside_tenant_prefix"),                 # no prefix separator
    ("imports", "/tenant-a/in/file.csv", "leading_slash"),
    ("imports", "tenant-a/../tenant-b/x.csv", "dot_dot"),
    ("imports", "tenant-a/in\\file.csv", "backslash"),               # inside the tenant prefix
    ("imports", "tenant-a/in/fi\x00le.csv", "control_character"),
    ("imports", "tenant-a/in/fi\nle.csv", "control_character"),
])
async def test_blob_policy_violations_are_403(pipeline: Pipeline, container: str, name: str, violation: str) -> None:
    response = await pipeline.submit({"containerName": container, "blobName": name}, key=f"k-{container}-{name!r}")
    assert response.status_code == 403, response.text
    assert response.json()["reason"] == "blob_not_allowed"
    assert f"({violation})" in response.json()["error"]
    assert pipeline.store.jobs.count_by_state()["Enqueued"] == 0


async def test_blob_verification_failures_are_400(start_pipeline) -> None:  # type: ignore[no-untyped-def]
    p = await start_pipeline(IMPORTS_MAX_BLOB_BYTES="100")
    props = await p.upload("tenant-a/in/file.csv")
    await p.upload("tenant-a/in/big.csv", b"customerId,amount\n" + b"C001,1\n" * 40)
    await p.upload("tenant-a/in/image.png", b"\x89PNG", content_type="image/png")
    cases = [
        ({**BODY, "blobName": "tenant-a/in/missing.csv"}, "does not exist"),
        ({**BODY, "eTag": '"0x0000"'}, "eTag"),
        ({**BODY, "versionId": "2026-01-01T00:00:00.0000000Z"}, "versionId"),
        ({**BODY, "blobName": "tenant-a/in/big.csv"}, "over the limit"),
        ({**BODY, "blobName": "tenant-a/in/image.png"}, "content type"),
    ]
    for i, (body, needle) in enumerate(cases):
        response = await p.submit(body, key=f"v-{i}")
        assert response.status_code == 400, (body, response.text)
        assert needle in response.json()["error"]
    good = await p.submit({**BODY, "eTag": props.etag}, key="v-ok")  # quoted or bare eTag both match
    assert good.status_code == 202


async def test_the_job_pins_the_verified_etag(pipeline: Pipeline) -> None:
    props = await pipeline.upload("tenant-a/in/file.csv")
    job_id = (await pipeline.submit(BODY, key="pin")).json()["jobId"]
    job = pipeline.store.jobs.get(job_id)
    assert job is not None and job.blob is not None and job.blob.etag == props.etag.strip('"')


async def test_a_retry_gets_its_answer_even_when_the_blob_no_longer_verifies(pipeline: Pipeline) -> None:
    props = await pipeline.upload("tenant-a/in/file.csv")
    body = {**BODY, "eTag": props.etag}
    job_id = (await pipeline.submit(body, key="retry")).json()["jobId"]
    await pipeline.upload("tenant-a/in/file.csv", CSV_OK + b"C003,1.00,EUR\n")  # replaced: new eTag
    again = await pipeline.submit(body, key="retry")
    assert again.status_code == 202 and again.json()["jobId"] == job_id
    other = await pipeline.submit({**BODY, "blobName": "tenant-a/in/missing.csv"}, key="retry")
    assert other.status_code == 409
    fresh = await pipeline.submit(body, key="retry-new")  # a new key still meets the verification
    assert fresh.status_code == 400 and "eTag" in fresh.json()["error"]
    assert len(_outbox_rows(pipeline, job_id)) == 1


async def test_status_is_tenant_scoped(pipeline: Pipeline) -> None:
    await _ready(pipeline)
    job_id = (await pipeline.submit(BODY, key="k-5")).json()["jobId"]
    mine = await pipeline.status(job_id)
    assert mine.status_code == 200 and mine.json()["jobId"] == job_id
    assert (await pipeline.status(job_id, tenant="tenant-b")).status_code == 404
    assert (await pipeline.status("imp_doesnotexist")).status_code == 404
    anonymous = await pipeline.host.http("GET", f"/api/imports/{job_id}", key="master")
    assert anonymous.status_code == 401


async def test_intake_needs_a_function_key(pipeline: Pipeline) -> None:
    response = await pipeline.host.http("POST", "/api/imports", json=BODY, headers={**auth(), "Idempotency-Key": "k"})
    assert response.status_code == 401


async def test_event_jobs_and_http_jobs_share_no_scope(pipeline: Pipeline) -> None:
    """An event job has no idempotency key: it can never collide with an HTTP scope."""
    decision = pipeline.store.intake.accept(NewJob("blob_x", "tenant-a", "eventgrid", "eventgrid:BlobCreated"),
                                            OutboxMessage("ocr-jobs", "{}"))
    assert decision.kind.value == "Accepted"
    assert pipeline.store.outbox.for_job("blob_x")[0].state in (OutboxState.PENDING, OutboxState.DISPATCHED)


SAS = "sv=2024-05-04&ss=b&srt=o&sp=r&se=2030-01-01T00:00:00Z&sig=c2VjcmV0LXNpZ25hdHVyZQ%3D%3D"
JWT = token()


@pytest.mark.parametrize("name", [f"tenant-a/in/file.csv?{SAS}", f"tenant-b/in/file.csv?{SAS}",
                                  f"tenant-a/in/{JWT}", f"tenant-b/{JWT}/file.csv",
                                  "tenant-a/AccountKey=c2VjcmV0", "tenant-a/Bearer abcdef"])
async def test_a_blob_name_carrying_a_credential_is_refused_and_never_logged(
        pipeline: Pipeline, name: str, caplog: pytest.LogCaptureFixture) -> None:
    """A URL with its SAS (or a token) pasted as a blob name is a 403, not an UnsafeLogValue 500."""
    caplog.set_level(logging.DEBUG)
    response = await pipeline.submit({"containerName": "imports", "blobName": name}, key=f"k-{len(name)}-{name[:9]}")
    assert response.status_code == 403, response.text
    assert response.json()["reason"] == "blob_not_allowed" and "(credential_like)" in response.json()["error"]
    logged = caplog.text + "".join(str(getattr(r, "custom_dimensions", "")) for r in caplog.records)
    assert "Blob reference is not allowed" in logged
    secrets = [s for s in ("c2VjcmV0LXNpZ25hdHVyZQ", JWT.split(".")[1], "c2VjcmV0", "abcdef") if s in name]
    assert secrets and [s for s in secrets if s in logged] == []


async def test_a_credential_in_the_container_name_is_masked_in_the_log(
        pipeline: Pipeline, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    response = await pipeline.submit({"containerName": f"imports?{SAS}", "blobName": "tenant-a/in/file.csv"})
    assert response.status_code == 403
    assert "c2VjcmV0LXNpZ25hdHVyZQ" not in caplog.text and "Blob reference is not allowed" in caplog.text


async def test_a_jwks_host_answers_401_for_a_token_whose_algorithm_does_not_fit_the_key(
        start_pipeline, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from cryptography.hazmat.primitives.asymmetric import ec, rsa
    from jwt.algorithms import RSAAlgorithm

    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwks = tmp_path / "jwks.json"
    jwks.write_text(json.dumps({"keys": [{**json.loads(RSAAlgorithm.to_jwk(rsa_key.public_key())), "kid": "k1"}]}))
    p = await start_pipeline(IMPORTS_JWKS_FILE=str(jwks), IMPORTS_JWT_SECRET="")
    claims = {"tid": "tenant-a", "oid": "u", "exp": int(time.time()) + 600}
    es256 = jwt.encode(claims, ec.generate_private_key(ec.SECP256R1()), algorithm="ES256", headers={"kid": "k1"})
    response = await p.submit(BODY, headers={"Authorization": f"Bearer {es256}"})
    assert response.status_code == 401 and "does not fit" in response.json()["error"]
    rs256 = jwt.encode(claims, rsa_key, algorithm="RS256", headers={"kid": "k1"})
    await _ready(p)
    assert (await p.submit(BODY, headers={"Authorization": f"Bearer {rs256}"})).status_code == 202


async def test_a_jobs_database_locked_elsewhere_is_a_quick_503_and_the_retry_is_accepted(start_pipeline) -> None:  # type: ignore[no-untyped-def]
    """Another host holds the write lock (frozen, or paused in a debugger): the request waits
    at most IMPORTS_INTAKE_WAIT_SECONDS, writes nothing and says when to retry."""
    import sqlite3

    p = await start_pipeline(IMPORTS_INTAKE_WAIT_SECONDS="0.2")
    await _ready(p)
    other_host = sqlite3.connect(p.store.db.path, isolation_level=None)
    other_host.execute("BEGIN IMMEDIATE")
    try:
        busy = await p.submit(BODY, key="k-busy")
        assert busy.status_code == 503, busy.text
        assert busy.headers["Retry-After"] == "5" and busy.json()["reason"] == "store_unavailable"
    finally:
        other_host.execute("ROLLBACK")
        other_host.close()
    job_id = IdempotencyScope("tenant-a", "POST /api/imports", "user-1", "k-busy").job_id
    assert p.store.jobs.get(job_id) is None  # nothing was written
    retried = await p.submit(BODY, key="k-busy")
    assert retried.status_code == 202 and retried.json()["jobId"] == job_id
    assert (await p.status(retried.json()["jobId"])).status_code == 200


async def test_intake_is_served_while_background_store_calls_hold_every_shared_thread(pipeline: Pipeline) -> None:
    """Background work stuck behind a lock fills the default thread pool: intake has its own."""
    p = pipeline
    await _ready(p)
    loop = asyncio.get_running_loop()
    release = threading.Event()
    blocked = [loop.run_in_executor(None, release.wait, 30) for _ in range(64)]
    try:
        response = await asyncio.wait_for(p.submit(BODY, key="k-starved"), 10)
        assert response.status_code == 202
        assert (await asyncio.wait_for(p.status(response.json()["jobId"]), 10)).status_code == 200
    finally:
        release.set()
        await asyncio.gather(*blocked)


async def test_a_storage_account_that_does_not_answer_is_a_503_and_the_retry_is_accepted(pipeline: Pipeline) -> None:
    """The blob cannot be verified while its storage is away (a PostgreSQL server restarting,
    endpoints unreachable): nothing is written and the client is told to retry."""
    from funchost.errors import StorageError

    await _ready(pipeline)
    blobs = pipeline.context.blobs
    service = blobs._service

    class Away:
        def __getattr__(self, name: str) -> object:
            async def fail(*args: object, **kwargs: object) -> None:
                raise StorageError("cannot reach PostgreSQL at db:5432/funchost", code="ServerBusy", status=503)
            return fail

    blobs._service = Away()
    try:
        busy = await pipeline.submit(BODY, key="k-away")
    finally:
        blobs._service = service
    assert busy.status_code == 503, busy.text
    assert busy.headers["Retry-After"] == "5" and busy.json()["reason"] == "storage_unavailable"
    job_id = IdempotencyScope("tenant-a", "POST /api/imports", "user-1", "k-away").job_id
    assert pipeline.store.jobs.get(job_id) is None
    retried = await pipeline.submit(BODY, key="k-away")
    assert retried.status_code == 202 and retried.json()["jobId"] == job_id
