"""The cleaner's key -> latest offset map in bounded memory, like Kafka's SkimpyOffsetMap.

24 bytes a slot: a 16-byte MD5 of the key and an 8-byte offset, in two flat arrays (no Python
object per key), open addressing with linear probing.  ``put`` refuses (returns False) once the
map is at its load factor, which makes the cleaner stop the round there, as Kafka does.

The table starts at ``slots`` and doubles (rehashing) up to ``max_slots`` as keys arrive, so the
memory taken follows the keys actually put, never a count a batch header claims; the load factor
that refuses a key is that of ``max_slots``, as Kafka's is that of its whole dedupe buffer.

:meth:`OffsetMap.put_many` and :meth:`OffsetMap.get_many` do the same for many keys at once with
numpy over the same table (a new key may land in another free slot than ``put`` would give it;
nothing that can be asked of the map depends on which).  ``tests/test_offset_map.py`` proves them
equal to ``put`` and ``get`` one key at a time.
"""
from __future__ import annotations

import hashlib
from array import array
from operator import methodcaller

import numpy as np

from kafkaforensics.repair.md5_many import ONE_BLOCK, md5_spans

HASH_SIZE = 16
SLOT_BYTES = HASH_SIZE + 8
LOAD_FACTOR = 0.9
_DIGEST = methodcaller("digest")


def digests(keys) -> np.ndarray:
    """The MD5 of each key (bytes-like), as rows of two little-endian uint64 words."""
    return np.frombuffer(b"".join(map(_DIGEST, map(hashlib.md5, keys))), dtype="<u8").reshape(-1, 2)


def span_digests(buf, start: np.ndarray, length: np.ndarray) -> np.ndarray:
    """:func:`digests` of the keys ``buf[start[i]:start[i] + length[i]]``: keys that fit one MD5
    block are hashed together (:mod:`.md5_many`), longer ones one by one."""
    data = np.frombuffer(buf, dtype=np.uint8)
    short = length <= ONE_BLOCK
    if short.all():
        return md5_spans(data, start, length)
    out = np.empty((len(start), 2), dtype="<u8")
    out[short] = md5_spans(data, start[short], length[short])
    long_ = np.flatnonzero(~short)
    out[long_] = digests(bytes(data[a:a + n]) for a, n in zip(start[long_].tolist(), length[long_].tolist()))
    return out


def _occurrences(d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each distinct digest row of ``d`` comes first, and where it comes last."""
    if not len(d):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    order = np.lexsort((d[:, 1], d[:, 0]))  # stable: equal rows keep their order
    rows = d[order]
    change = np.flatnonzero((rows[1:] != rows[:-1]).any(axis=1)) + 1
    return order[np.r_[0, change]], order[np.r_[change - 1, len(d) - 1]]


class OffsetMap:
    def __init__(self, slots: int, max_slots: int | None = None):
        self.max_slots = max(16, int(slots if max_slots is None else max_slots))
        self.slots = min(self.max_slots, max(16, int(slots)))
        self.hashes = bytearray(self.slots * HASH_SIZE)
        self.offsets = array("q", bytes(8 * self.slots))
        self.used = array("b", bytes(self.slots))
        self.size = 0
        self.latest_offset = -1
        self.max_entries = int(self.max_slots * LOAD_FACTOR)

    @property
    def full(self) -> bool:
        return self.size >= self.max_entries

    def _room_for(self, n: int) -> None:
        """Grow the table (doubling, up to ``max_slots``) until ``n`` more keys stay under its load factor."""
        want = self.slots
        while want < self.max_slots and self.size + n > int(want * LOAD_FACTOR):
            want = min(self.max_slots, want * 2)
        if want == self.slots:
            return
        table, offs, used = self._views()
        live = np.flatnonzero(used)
        d, o = table[live].copy(), offs[live].copy()
        self.slots = want
        self.hashes = bytearray(want * HASH_SIZE)
        self.offsets = array("q", bytes(8 * want))
        self.used = array("b", bytes(want))
        self.size = 0
        self._insert(d, o, np.arange(len(d)), (d[:, 0] % np.uint64(want)).astype(np.int64))

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
            if self.size + 1 > int(self.slots * LOAD_FACTOR):
                self._room_for(1)
                i = self._find(h)
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

    def _views(self):
        """The table as numpy views: hashes as (slot, 2) uint64 words, offsets, used flags."""
        return (np.frombuffer(self.hashes, dtype="<u8").reshape(-1, 2),
                np.frombuffer(self.offsets, dtype=np.int64), np.frombuffer(self.used, dtype=np.int8))

    def _find_many(self, d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For each digest row: the slot holding it, else the first free slot of its probe; and
        whether it was found.  (Linear probing from the slot ``put`` starts at.)"""
        table, _, used = self._views()
        at = (d[:, 0] % np.uint64(self.slots)).astype(np.int64)
        found = np.zeros(len(d), dtype=bool)
        pending = np.arange(len(d))
        while len(pending):
            p = at[pending]
            taken = used[p] != 0
            same = taken & (table[p, 0] == d[pending, 0]) & (table[p, 1] == d[pending, 1])
            found[pending[same]] = True
            pending = pending[taken & ~same]
            at[pending] = (at[pending] + 1) % self.slots
        return at, found

    def put_many(self, d: np.ndarray, offsets: np.ndarray) -> int:
        """``put`` of each (digest row, offset) in turn: returns how many were put before the
        first refusal (``len(d)`` when none was refused)."""
        n = len(d)
        if not n:
            return 0
        at, found = self._find_many(d)
        new = np.flatnonzero(~found)
        firsts = np.sort(new[_occurrences(d[new])[0]])  # where each key not in the map first comes
        room = self.max_entries - self.size
        if self.size + min(len(firsts), room) > int(self.slots * LOAD_FACTOR):
            self._room_for(min(len(firsts), room))
            at, found = self._find_many(d)
        cut = int(firsts[room]) if len(firsts) > room else n
        last = _occurrences(d[:cut])[1]  # the last time each key comes before the cut: its latest offset
        table, offs, used = self._views()
        old = found[last]
        offs[at[last[old]]] = offsets[last[old]]
        self._insert(d, offsets, last[~old], at[last[~old]])
        return cut

    def _insert(self, d: np.ndarray, offsets: np.ndarray, todo: np.ndarray, slot: np.ndarray) -> None:
        """Put the distinct new keys ``d[todo]``, each probing on from ``slot``: claim free slots,
        one key a slot, in rounds."""
        table, offs, used = self._views()
        while len(todo):
            free = used[slot] == 0
            claim, win = np.unique(slot[free], return_index=True)
            winners = todo[free][win]
            used[claim] = 1
            table[claim] = d[winners]
            offs[claim] = offsets[winners]
            self.size += len(claim)
            lose = np.ones(len(todo), dtype=bool)
            lose[np.flatnonzero(free)[win]] = False
            todo, slot = todo[lose], (slot[lose] + 1) % self.slots

    def get_many(self, d: np.ndarray) -> np.ndarray:
        """``get`` of each digest row: the latest offset, or -1."""
        at, found = self._find_many(d)
        return np.where(found, self._views()[1][at], -1)
