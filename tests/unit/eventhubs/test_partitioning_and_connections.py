"""Partition-key hashing as the service does it, and which broker a `connection` means."""

from __future__ import annotations

import pytest

from funchost.errors import ConfigError
from funchost.eventhubs.namespaces import MISSING
from funchost.settings.messaging_connections import (
    EMBEDDED,
    NAMESPACE,
    looks_like_connection_string,
    resolve_messaging_connection,
)
from funchost.storage.eventhub_partitioning import partition_index_for_key, partition_key_hash

# The SDK's own stability vectors (PartitionResolverTests.PartitionHashTestCases), which pin the
# port of the service's hash.
VECTORS = [
    ("7", -15263), ("131", 30562), ("7149583486996073602", 12977), ("FWfAT", -22341),
    ("sOdeEAsyQoEuEFPGerWO", -6503),
    ("FAyAIctPeCgmiwLKbJcyswoHglHVjQdvtBowLACDNORsYvOcLddNJYDmhAVkbyLOrHTKLneMNcbgWVlasVywOByANjs", 5226),
    ("1XYM6!(7(lF5wq4k4m*e$Nc!1ezLJv*1YK1Y-C^*&B$O)lq^iUkG(TNzXG;Zi#z2Og*Qq0#^*k):vXh$3,C7We7%W0meJ;b3,rQCg^J;^"
     "twXgs5E$$hWKxqp", 23950),
    ("E(x;RRIaQcJs*P;D&jTPau-4K04oqr:lF6Z):ERpo&;9040qyV@G1_c9mgOs-8_8/10Fwa-7b7-yP!T-!IH&968)FWuI;(^g$2fN;)HJ^^yTn:",
     -29304),
    ("!c*_!I@1^c", 15372), ("p4*!jioeO/z-!-;w:dh", -3104), ("$0cb", 26269), ("-4189260826195535198", 453),
]


@pytest.mark.parametrize(("key", "expected"), VECTORS)
def test_hash_matches_the_service(key: str, expected: int) -> None:
    assert partition_key_hash(key) == expected


def test_partition_index_uses_the_absolute_truncated_remainder() -> None:
    assert partition_index_for_key("7", 4) == 15263 % 4  # -15263 % 4 in .NET is -3; abs -> 3
    assert partition_index_for_key("7", 4) == 3
    assert {partition_index_for_key(f"k{i}", 4) for i in range(50)} == {0, 1, 2, 3}


EMULATOR = "Endpoint=sb://localhost;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=SAS_KEY_VALUE;" \
           "UseDevelopmentEmulator=true;"
REAL = "Endpoint=sb://contoso.servicebus.windows.net/;SharedAccessKeyName=send;SharedAccessKey=c2VjcmV0;EntityPath=orders"


def test_emulator_connection_string_means_embedded() -> None:
    c = resolve_messaging_connection("EH", {"EH": EMULATOR}, missing=MISSING, local=False)
    assert (c.kind, c.fully_qualified_namespace, c.absent) == (EMBEDDED, "localhost", False)


def test_real_connection_string_means_the_namespace_and_entity_path_wins() -> None:
    c = resolve_messaging_connection("EH", {"AzureWebJobsEH": REAL}, missing=MISSING, local=True)
    assert (c.kind, c.fully_qualified_namespace, c.entity_path, c.setting_name) == (
        NAMESPACE, "contoso.servicebus.windows.net", "orders", "AzureWebJobsEH")
    assert "c2VjcmV0" not in repr(c)


def test_identity_connection() -> None:
    c = resolve_messaging_connection("EH", {"EH__fullyQualifiedNamespace": "contoso.servicebus.windows.net",
                                            "EH__clientId": "abc"}, missing=MISSING, local=True)
    assert c.kind == NAMESPACE and c.is_identity and c.identity == {"clientId": "abc"}


def test_absent_setting_is_embedded_only_when_local() -> None:
    c = resolve_messaging_connection("Missing", {}, missing=MISSING, local=True)
    assert c.kind == EMBEDDED and c.absent
    with pytest.raises(ConfigError, match="EventHub account connection string with name 'Missing' does not exist"):
        resolve_messaging_connection("Missing", {}, missing=MISSING, local=False)


def test_a_connection_string_used_as_setting_name_is_redacted_never_embedded() -> None:
    assert looks_like_connection_string(REAL)
    with pytest.raises(ConfigError) as caught:
        resolve_messaging_connection(REAL, {}, missing=MISSING, local=True)
    assert "REDACTED" in str(caught.value) and "c2VjcmV0" not in str(caught.value)


def test_empty_connection_is_an_error() -> None:
    with pytest.raises(ConfigError, match="'connection' is empty"):
        resolve_messaging_connection("", {}, missing=MISSING, local=True)
