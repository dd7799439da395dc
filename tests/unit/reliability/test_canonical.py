import json

import pytest

from funchost.reliability.canonical import canonical_json, request_hash, select_fields, sha256_hex

FIELDS = ("containerName", "blobName", "eTag", "versionId")


def dto(raw: str) -> dict:
    return select_fields(json.loads(raw), FIELDS)


def test_property_order_and_whitespace_do_not_change_the_hash():
    a = dto('{"containerName":"imports","blobName":"tenant-a/file.csv"}')
    b = dto('{\n  "blobName": "tenant-a/file.csv",\n  "containerName": "imports"\n}')
    assert request_hash(a) == request_hash(b)


def test_null_and_omitted_hash_the_same():
    assert request_hash(dto('{"containerName":"c","blobName":"t/b","eTag":null}')) == request_hash(
        dto('{"containerName":"c","blobName":"t/b"}'))


def test_unknown_properties_are_excluded_from_the_hash():
    plain = dto('{"containerName":"c","blobName":"t/b"}')
    extra = dto('{"containerName":"c","blobName":"t/b","requestedBy":"ceo@example.com","x":1}')
    assert "requestedBy" not in extra
    assert request_hash(plain) == request_hash(extra)


def test_casing_is_fixed_by_the_dto():
    assert dto('{"ContainerName":"c","BLOBNAME":"t/b"}') == {"containerName": "c", "blobName": "t/b"}
    assert request_hash(dto('{"ContainerName":"c","BLOBNAME":"t/b"}')) == request_hash(
        dto('{"containerName":"c","blobName":"t/b"}'))


def test_names_differing_only_in_case_are_ambiguous():
    with pytest.raises(ValueError):
        dto('{"blobName":"a","BlobName":"b"}')


def test_different_values_give_different_hashes():
    assert request_hash({"blobName": "t/a"}) != request_hash({"blobName": "t/b"})
    assert request_hash({"n": 1}) != request_hash({"n": "1"})


def test_canonical_form_is_compact_sorted_and_keeps_unicode():
    assert canonical_json({"b": 1, "a": {"d": None, "c": "é"}}) == '{"a":{"c":"é"},"b":1}'
    assert request_hash({"a": 1}) == sha256_hex('{"a":1}')


def test_nan_is_refused():
    with pytest.raises(ValueError):
        canonical_json({"a": float("nan")})


def test_a_lone_surrogate_is_refused_as_invalid_text_not_a_crash():
    body = json.loads('{"containerName": "imports", "blobName": "a\\ud800b"}')
    with pytest.raises(ValueError, match="property 'blobName' holds a lone surrogate \\(U\\+D800\\)"):
        select_fields(body, FIELDS)
    with pytest.raises(ValueError, match="lone surrogate"):
        canonical_json({"containerName": "imports", "blobName": "a\udfff"})
    with pytest.raises(ValueError, match="lone surrogate"):
        request_hash({"nested": {"k": ["\ud800"]}})


def test_sha256_hex_is_total_over_python_strings():
    assert sha256_hex("\ud800") != sha256_hex("\ud801")
    assert sha256_hex("é") == sha256_hex("é".encode())
