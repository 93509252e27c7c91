"""Confluent's wire framing of a key or value: magic byte 0, the schema id (4 bytes, big-endian),
for Protobuf the message-index list, then the payload.

The message-index list (confluent's ``ProtobufSerializer``/``ProtobufDeserializer``): a zigzag
varint count, then that many zigzag varints, each an index into the file's messages (then the
nested messages of the one before); the first message of the file (``[0]``) is written as the single
count 0.
"""
from __future__ import annotations

from dataclasses import dataclass

MAGIC = 0
HEADER = 5  # magic + 4-byte id


@dataclass(frozen=True)
class Framed:
    """A framed key or value: its schema id and the bytes after the 5-byte header."""
    schema_id: int
    body: bytes


def unframe(data: bytes | None) -> Framed | None:
    """The framing of ``data``, or None when it is not Confluent-framed (null, shorter than the
    header, a first byte other than 0)."""
    if data is None or len(data) < HEADER or data[0] != MAGIC:
        return None
    return Framed(int.from_bytes(data[1:HEADER], "big"), bytes(data[HEADER:]))


def _zigzag_varint(data: bytes, pos: int) -> tuple[int, int]:
    """One zigzag varint at ``pos``: (value, next position); ValueError when it runs off the end."""
    shift = result = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ValueError("the message-index list runs past the payload")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7


def message_indexes(body: bytes) -> tuple[list[int], bytes]:
    """Split a Protobuf body into its message-index list and the message bytes (ValueError when the
    list is malformed)."""
    count, pos = _zigzag_varint(body, 0)
    if count == 0:
        return [0], body[pos:]
    if count < 0 or count > len(body):
        raise ValueError(f"message-index count {count} is not a count")
    idx = []
    for _ in range(count):
        i, pos = _zigzag_varint(body, pos)
        if i < 0:
            raise ValueError(f"message index {i} is negative")
        idx.append(i)
    return idx, body[pos:]
