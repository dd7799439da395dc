"""The ledger stand-in is protected like every other function: key, identity, tenant scope,
bounded bodies, and an idempotency that cannot be hijacked by a pre-created entry."""

from __future__ import annotations

import json

from tests.support.pipeline import CSV_OK, Pipeline, auth, token

from funchost.reliability import sha256_hex

PATH = "/api/ledger/entries"
BODY = {"containerName": "imports", "blobName": "tenant-a/in/file.csv"}


def service(tenant: str = "tenant-a", user: str = "importjobs-worker") -> dict[str, str]:
    """A principal with the Ledger.Write app role (what the pipeline's worker presents)."""
    return {"Authorization": f"Bearer {token(tenant, user, roles=['Ledger.Write'])}"}


async def _post(p: Pipeline, body: object, key: str | None = "k-1", headers: dict[str, str] | None = None,
                raw: bytes | None = None) -> object:
    sent = {**(headers if headers is not None else service()), "Content-Type": "application/json"}
    if key is not None:
        sent["Idempotency-Key"] = key
    return await p.host.http("POST", PATH, key="master", headers=sent,
                             content=raw if raw is not None else json.dumps(body).encode())


async def test_no_key_or_no_identity_is_401(pipeline: Pipeline) -> None:
    p = pipeline
    for method in ("GET", "POST"):
        assert (await p.host.http(method, PATH, headers=service())).status_code == 401  # no function key
        assert (await p.host.http(method, PATH, key="master")).status_code == 401  # no principal


async def test_only_the_ledger_writer_role_records_entries(pipeline: Pipeline) -> None:
    p = pipeline
    response = await _post(p, {"tenantId": "tenant-a", "total": "1"}, headers=auth("tenant-a", "user-1"))
    assert response.status_code == 403 and "Ledger.Write" in response.json()["error"]  # type: ignore[attr-defined]
    assert await p.ledger() == []


async def test_entries_are_listed_for_the_callers_tenant_only(any_pipeline: Pipeline) -> None:
    p = any_pipeline
    assert (await _post(p, {"tenantId": "tenant-a", "n": 1}, key="a-1")).status_code == 201  # type: ignore[attr-defined]
    assert (await _post(p, {"tenantId": "tenant-b", "n": 2}, key="b-1",
                        headers=service("tenant-b"))).status_code == 201  # type: ignore[attr-defined]
    assert [e["idempotencyKey"] for e in await p.ledger("tenant-a")] == ["a-1"]
    assert [e["idempotencyKey"] for e in await p.ledger("tenant-b")] == ["b-1"]
    across = await _post(p, {"tenantId": "tenant-b", "n": 3}, key="x-1")  # tenant-a's caller, tenant-b's entry
    assert across.status_code == 403  # type: ignore[attr-defined]


async def test_same_key_same_body_is_the_first_entry_another_body_is_422(any_pipeline: Pipeline) -> None:
    p = any_pipeline
    first = await _post(p, {"tenantId": "tenant-a", "total": "10"}, key="k")
    again = await _post(p, {"total": "10", "tenantId": "tenant-a"}, key="k")
    other = await _post(p, {"tenantId": "tenant-a", "total": "0"}, key="k")
    assert (first.status_code, again.status_code, other.status_code) == (201, 200, 422)  # type: ignore[attr-defined]
    assert again.json()["entryId"] == first.json()["entryId"]  # type: ignore[attr-defined]


async def test_bodies_and_keys_are_bounded_and_checked(pipeline: Pipeline) -> None:
    p = pipeline
    big = {"tenantId": "tenant-a", "note": "x" * (16 * 1024)}
    assert (await _post(p, big)).status_code == 413  # type: ignore[attr-defined]
    assert (await _post(p, None, raw=b"{not json")).status_code == 400  # type: ignore[attr-defined]
    assert (await _post(p, [1, 2])).status_code == 400  # type: ignore[attr-defined]
    for deep in (b"[" * 5_000 + b"]" * 5_000, b'{"a":' * 2_000 + b"1" + b"}" * 2_000):  # under 16 KiB
        refused = await _post(p, None, raw=deep)
        assert refused.status_code == 400 and "nested too deeply" in refused.json()["error"]  # type: ignore[attr-defined]
    assert (await _post(p, {"n": 1}, key=None)).status_code == 400  # type: ignore[attr-defined]
    assert (await _post(p, {"n": 1}, key="k" * 256)).status_code == 400  # type: ignore[attr-defined]
    assert await p.ledger() == []


async def test_an_entry_pre_created_under_the_jobs_key_is_not_taken_as_its_result(pipeline: Pipeline) -> None:
    """The job id is predictable (sha256 of tenant, endpoint, user and key): an entry someone
    else records under `<jobId>:ledger-post` first must not become the job's ledger entry."""
    p = pipeline
    p.host.faults.arm("pipeline.dispatch.prepare", RuntimeError("hold"), when=lambda job_id, **_: job_id.startswith("imp_"))
    await p.upload("tenant-a/in/file.csv", CSV_OK)
    job_id = (await p.submit(BODY, key="k-forge")).json()["jobId"]
    forged = await _post(p, {"tenantId": "tenant-a", "jobId": job_id, "total": "0.00"}, key=f"{job_id}:ledger-post",
                         headers=service("tenant-a", "mallory"))
    assert forged.status_code == 201  # type: ignore[attr-defined]
    await p.settle(13)  # the timer dispatches the held row; the worker posts the job's own entry
    assert await p.state(job_id) == "Completed"
    effect = p.store.effects.get(job_id, "ledger-post")
    assert effect is not None and effect.result["entryId"] != forged.json()["entryId"]  # type: ignore[attr-defined]
    assert effect.result["entry"]["jobId"] == job_id and effect.result["entry"]["total"] != "0.00"
    assert sha256_hex(json.dumps(effect.result["entry"], sort_keys=True).encode()) != \
        sha256_hex(json.dumps(forged.json()["entry"], sort_keys=True).encode())  # type: ignore[attr-defined]
