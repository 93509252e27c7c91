"""The cleaner's key -> latest offset map in bounded memory, like Kafka's SkimpyOffsetMap.

24 bytes a slot: a 16-byte MD5 of the key and an 8-byte offset, in two flat arrays (no Python
object per key), open addressing with linear probing.  ``put`` refuses (returns False) once the
map is at its load factor, which makes the cleaner stop the round there, as Kafka does.
"""
from __future__ import annotations

import hashlib
from array import array

HASH_SIZE = 16
SLOT_BYTES = HASH_SIZE + 8
LOAD_FACTOR = 0.9
_EMPTY = bytes(HASH_SIZE)


class OffsetMap:
    def __init__(self, slots: int):
        self.slots = max(16, int(slots))
        self.hashes = bytearray(self.slots * HASH_SIZE)
        self.offsets = array("q", bytes(8 * self.slots))
        self.used = array("b", bytes(self.slots))
        self.size = 0
        self.latest_offset = -1
        self.max_entries = int(self.slots * LOAD_FACTOR)

    @classmethod
    def for_bytes(cls, buffer_bytes: int) -> "OffsetMap":
        return cls(buffer_bytes // SLOT_BYTES)

    @property
    def full(self) -> bool:
        return self.size >= self.max_entries

    def _find(self, h: bytes) -> int:
        slots, hashes, used = self.slots, self.hashes, self.used
        i = int.from_bytes(h[:8], "little") % slots
        while used[i]:
            j = i * HASH_SIZE
            if hashes[j:j + HASH_SIZE] == h:
                return i
            i += 1
            if i == slots:
                i = 0
        return i

    def put(self, key: bytes, offset: int) -> bool:
        h = hashlib.md5(key).digest()
        i = self._find(h)
        if not self.used[i]:
            if self.size >= self.max_entries:
                return False
            self.used[i] = 1
            self.hashes[i * HASH_SIZE:(i + 1) * HASH_SIZE] = h
            self.size += 1
        self.offsets[i] = offset
        return True

    def get(self, key: bytes) -> int:
        """Latest offset of ``key``, or -1."""
        i = self._find(hashlib.md5(key).digest())
        return self.offsets[i] if self.used[i] else -1

    def update_latest_offset(self, offset: int) -> None:
        if offset > self.latest_offset:
            self.latest_offset = offset

    @property
    def memory_bytes(self) -> int:
        return self.slots * (SLOT_BYTES + 1)
