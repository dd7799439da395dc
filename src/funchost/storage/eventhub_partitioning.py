"""Which partition a partition key maps to, as the Event Hubs service computes it.

The .NET SDK's `PartitionResolver` carries "a direct port of the Event Hubs service code" (Jenkins'
lookup3 over the key's UTF-8 bytes, both seeds 0, the two 32-bit results XOR-ed and truncated to a
signed 16-bit value, then ``abs(hash % count)`` with .NET's truncating remainder). Reproducing it
keeps a key on the partition it would use on Azure, so per-key ordering tests mean the same here.
Source: Azure/azure-sdk-for-net sdk/eventhub/Azure.Messaging.EventHubs/src/Core/PartitionResolver.cs.
"""

from __future__ import annotations

_MASK = 0xFFFFFFFF


def _rot(x: int, k: int) -> int:
    return ((x << k) | (x >> (32 - k))) & _MASK


def _word(data: bytes, at: int) -> int:
    return int.from_bytes(data[at:at + 4], "little")


def lookup3(data: bytes, seed1: int = 0, seed2: int = 0) -> tuple[int, int]:
    """Jenkins' hashlittle2: (c, b) as the SDK's ComputeHash returns (hash1, hash2)."""
    length = len(data)
    a = b = (0xDEADBEEF + length + seed1) & _MASK
    c = (a + seed2) & _MASK
    triplets = (length - 1) // 12 if length > 12 else 0
    for i in range(triplets):
        at = i * 12
        a = (a + _word(data, at)) & _MASK
        b = (b + _word(data, at + 4)) & _MASK
        c = (c + _word(data, at + 8)) & _MASK
        a = ((a - c) & _MASK) ^ _rot(c, 4)
        c = (c + b) & _MASK
        b = ((b - a) & _MASK) ^ _rot(a, 6)
        a = (a + c) & _MASK
        c = ((c - b) & _MASK) ^ _rot(b, 8)
        b = (b + a) & _MASK
        a = ((a - c) & _MASK) ^ _rot(c, 16)
        c = (c + b) & _MASK
        b = ((b - a) & _MASK) ^ _rot(a, 19)
        a = (a + c) & _MASK
        c = ((c - b) & _MASK) ^ _rot(b, 4)
        b = (b + a) & _MASK
    tail = data[triplets * 12:]
    if not tail:
        return c, b
    padded = tail + bytes(12 - len(tail))  # the switch's fall-through adds the bytes present only
    a = (a + _word(padded, 0)) & _MASK
    if len(tail) > 4:
        b = (b + _word(padded, 4)) & _MASK
    if len(tail) > 8:
        c = (c + _word(padded, 8)) & _MASK
    c = (c ^ b) - _rot(b, 14) & _MASK
    a = (a ^ c) - _rot(c, 11) & _MASK
    b = (b ^ a) - _rot(a, 25) & _MASK
    c = (c ^ b) - _rot(b, 16) & _MASK
    a = (a ^ c) - _rot(c, 4) & _MASK
    b = (b ^ a) - _rot(a, 14) & _MASK
    c = (c ^ b) - _rot(b, 24) & _MASK
    return c, b


def partition_key_hash(partition_key: str) -> int:
    """The signed 16-bit hash code of a partition key (`GenerateHashCode`)."""
    hash1, hash2 = lookup3(partition_key.encode("utf-8"))
    value = (hash1 ^ hash2) & 0xFFFF
    return value - 0x10000 if value >= 0x8000 else value


def partition_index_for_key(partition_key: str, partition_count: int) -> int:
    """`Math.Abs(hash % count)` with a truncating remainder equals `abs(hash) % count`."""
    return abs(partition_key_hash(partition_key)) % partition_count
