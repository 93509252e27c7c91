"""The leader-epoch cache of a partition (Kafka's LeaderEpochFileCache): its rules and its file.

Entries are (epoch, start offset), both increasing.  The rules, as Kafka states them:

* ``assign(epoch, start)``: nothing changes when the newest entry has the same epoch and a start at
  or below ``start``; otherwise every entry at the end whose epoch is at least ``epoch`` or whose
  start is at least ``start`` is dropped and the new entry appended (an invalid epoch or start is
  refused);
* log recovery and the append path take a batch's epoch only when it is newer than the newest
  entry (``assign_newer``, LogSegment.recover's guard);
* ``truncate_from_end(end)``: entries starting at or after ``end`` go (an ``end`` below 0 changes
  nothing);
* ``truncate_from_start(start)``: entries starting at or before ``start`` go, and the last of them
  comes back starting at ``start``;
* ``end_offset_for(epoch, log_end)``: (the largest epoch at or below ``epoch``, the start of the
  first epoch above it), the log end for the newest epoch, ``(epoch, first start)`` below the first
  epoch, and (-1, -1) for an undefined epoch or one above every epoch;
* ``epoch_for_offset(offset)``: the epoch of the last entry starting at or before ``offset``.

The file is ``leader-epoch-checkpoint`` (``specs.checkpoints.LeaderEpochCheckpoint``), read and
written whole through :mod:`.checkpoint_file`.
"""
from __future__ import annotations

import os

from specs import checkpoints as C

from kafkaforensics.fsutil import atomic_write
from kafkaforensics.log.checkpoint_file import read_checkpoint

#: OffsetsForLeaderEpochResponse.UNDEFINED_EPOCH / UNDEFINED_EPOCH_OFFSET
UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


class LeaderEpochCache:
    """A partition's (epoch, start offset) entries and Kafka's rules over them."""

    def __init__(self, entries=()):
        self.entries: list[tuple[int, int]] = []
        for e, o in entries:
            self.assign(e, o)

    # -- reading and writing -----------------------------------------------------------------
    @classmethod
    def from_checkpoint(cls, entries: list[dict]) -> "LeaderEpochCache":
        """The cache a parsed ``leader-epoch-checkpoint`` gives, kept as written (Kafka assigns
        each line, which keeps a well-formed file as it is; a file out of order is verify's to
        report, so its lines are not reordered here)."""
        c = cls()
        c.entries = [(e["epoch"], e["startOffset"]) for e in entries]
        return c

    @classmethod
    def load(cls, entries: list[dict]) -> "LeaderEpochCache":
        """The cache Kafka builds from a parsed checkpoint when it opens a log: each line assigned
        in turn, so lines that would break monotonicity are dropped by the later ones; a line with a
        negative epoch or offset (which Kafka refuses, failing the log) is left out."""
        c = cls()
        for e in entries:
            if e["epoch"] >= 0 and e["startOffset"] >= 0:
                c.assign(e["epoch"], e["startOffset"])
        return c

    @classmethod
    def read(cls, partition_dir: str) -> "LeaderEpochCache | None":
        """The partition's ``leader-epoch-checkpoint``, or None when it has none (a malformed file
        raises :class:`~.errors.KafkaFormatError` naming file and line)."""
        entries = read_checkpoint(os.path.join(partition_dir, C.LEADER_EPOCH_FILE), C.LeaderEpochCheckpoint)
        return None if entries is None else cls.from_checkpoint(entries)

    def to_bytes(self) -> bytes:
        return C.LeaderEpochCheckpoint.build([{"epoch": e, "startOffset": o} for e, o in self.entries]).encode()

    def write(self, partition_dir: str, *, backup_dir: str | None = None) -> None:
        """Replace the partition's ``leader-epoch-checkpoint`` (temp file, fsync, rename)."""
        atomic_write(os.path.join(partition_dir, C.LEADER_EPOCH_FILE), self.to_bytes(), backup_dir=backup_dir)

    # -- the rules ---------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.entries)

    def __iter__(self):
        return iter(self.entries)

    def __eq__(self, other) -> bool:
        return isinstance(other, LeaderEpochCache) and self.entries == other.entries

    def __repr__(self) -> str:
        return f"LeaderEpochCache({self.entries!r})"

    @property
    def latest_epoch(self) -> int | None:
        return self.entries[-1][0] if self.entries else None

    def assign(self, epoch: int, start: int) -> bool:
        """Kafka's assign; True when the cache changed."""
        if epoch < 0 or start < 0:
            raise ValueError(f"invalid leader epoch entry ({epoch}, {start})")
        if self.entries and self.entries[-1][0] == epoch and self.entries[-1][1] <= start:
            return False
        es = self.entries
        while es and (es[-1][0] >= epoch or es[-1][1] >= start):
            es.pop()
        es.append((epoch, start))
        return True

    def assign_newer(self, epoch: int, start: int) -> bool:
        """The recovery / append guard: assign only an epoch newer than the newest entry.  A batch
        whose base offset is negative (damage the CRC does not cover: the walks report it) assigns
        nothing -- Kafka's assign would throw on it."""
        if epoch < 0 or start < 0 or (self.entries and epoch <= self.entries[-1][0]):
            return False
        return self.assign(epoch, start)

    def truncate_from_end(self, end_offset: int) -> list[tuple[int, int]]:
        """Drop the entries starting at or after ``end_offset``; returns them."""
        es, removed = self.entries, []
        if end_offset >= 0:
            while es and es[-1][1] >= end_offset:
                removed.append(es.pop())
        return removed[::-1]

    def truncate_from_start(self, start_offset: int) -> list[tuple[int, int]]:
        """Drop the entries starting at or before ``start_offset``, the last of them coming back
        at ``start_offset``; returns the entries removed."""
        es = self.entries
        k = 0
        while k < len(es) and es[k][1] <= start_offset:
            k += 1
        removed = es[:k]
        if removed:
            self.entries = [(removed[-1][0], start_offset)] + es[k:]
        return removed

    def end_offset_for(self, epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(epoch, end offset) answering a request for ``epoch`` (OffsetsForLeaderEpoch).  Looked up
        by epoch, as Kafka's epoch-keyed map does, so a file whose lines are out of order answers
        as Kafka would from the same entries."""
        if epoch == UNDEFINED_EPOCH:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if self.entries and max(e for e, _o in self.entries) == epoch:
            return epoch, log_end_offset
        higher = min(((e, o) for e, o in self.entries if e > epoch), default=None)
        if higher is None:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        floor = self.floor_epoch(epoch)
        return (epoch if floor is None else floor), higher[1]

    def epoch_for_offset(self, offset: int) -> int | None:
        """The epoch ``offset`` was written in: the last entry starting at or before it."""
        found = None
        for e, o in self.entries:
            if o > offset:
                break
            found = e
        return found

    def floor_epoch(self, epoch: int) -> int | None:
        """The largest cached epoch at or below ``epoch``."""
        return max((e for e, _o in self.entries if e <= epoch), default=None)
