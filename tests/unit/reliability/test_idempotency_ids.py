import hashlib

import pytest

from funchost.reliability.idempotency import IdempotencyScope, import_job_id


def test_job_id_formula():
    expected = "imp_" + hashlib.sha256(b"tenant-a|POST /imports|user-1|key-1").hexdigest()[:32]
    assert import_job_id("tenant-a", "POST /imports", "user-1", "key-1") == expected
    assert IdempotencyScope("tenant-a", "POST /imports", "user-1", "key-1").job_id == expected


def test_scope_parts_change_the_job_id():
    base = IdempotencyScope("t1", "ep", "u1", "k").job_id
    assert IdempotencyScope("t2", "ep", "u1", "k").job_id != base
    assert IdempotencyScope("t1", "ep2", "u1", "k").job_id != base
    assert IdempotencyScope("t1", "ep", "u2", "k").job_id != base


def test_key_is_hashed_and_never_shown():
    scope = IdempotencyScope("t1", "ep", "u1", "secret-key-123")
    assert scope.key_hash == hashlib.sha256(b"secret-key-123").hexdigest()
    assert "secret-key-123" not in repr(scope)


@pytest.mark.parametrize("field", ["tenant_id", "endpoint", "user_id", "key"])
def test_empty_scope_parts_are_refused(field):
    parts = {"tenant_id": "t", "endpoint": "e", "user_id": "u", "key": "k", field: ""}
    with pytest.raises(ValueError):
        IdempotencyScope(**parts)
