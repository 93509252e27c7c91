"""The walk of one segment as a load makes it (Kafka's LogLoader / LogSegment.recover): each batch
applied to the producer state and the leader-epoch cache, and the segment's load facts
(:class:`LoadFacts`, a load's facts of a segment, not a segment: its size, the offset after its last batch — its base when it has none,
LogSegment.readNextOffset —, its largest batch timestamp, where its sound batches end, what ended its
walk, the first damaged batch). :meth:`~.partition.Partition.walk` walks a partition's segments
through it; :func:`replay_segment` walks one file (a leftover being completed).  The load's rules
over the walks' facts are here too, so that every reader of a log asks the same ones without loading
the planner: :func:`log_end_after` (the log end; :func:`log_end` folds it over a partition's segments),
:func:`empty_log_end` (a log without segments') and
:func:`truncate_leader_epochs`. The partition's
load, Kafka's LogLoader.load() with its passes as named methods, is
:class:`kafkaforensics.log.log_loader.LogLoader`."""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TypeVar

from kafkaforensics.errors import KafkaFormatError, Problem
from kafkaforensics.log import time_index
from kafkaforensics.log.kafka_rules import AppliedRules
from kafkaforensics.log.leader_epochs import LeaderEpochCache
from kafkaforensics.log.segment import TIMEINDEX, Segment
from kafkaforensics.log.producer_state import ProducerState
from kafkaforensics.log.segment import BatchScanner, open_buffer
from kafkaforensics.records.batch import resolve_legacy_wrapper

DAMAGE = ("keep", "skip", "stop-segment", "stop")


@dataclass
class LoadFacts:
    """What a load learns of one segment (``files``) by walking it: LogSegment.recover's and
    readNextOffset's facts, filled in as the walk goes."""
    files: Segment
    size: int = 0
    next_offset: int = 0          # after the last batch walked; the base offset when there is none
    max_timestamp: int = -1       # the largest batch max timestamp, -1 when none
    batches: int = 0              # batches walked (damaged ones skipped or stopped at not counted)
    valid_bytes: int = 0          # where the walked batches end
    stop: Problem | None = None   # what ended the walk of this segment early (framing), if anything
    damaged: object = None        # the first damaged batch met (skipped or stopped at), if any
    path: str | None = None       # the file walked (the segment's .log unless said otherwise)

    def __post_init__(self):
        if self.path is None:
            self.path = self.files.log

    @property
    def base_offset(self) -> int:
        return self.files.base_offset

    @property
    def log(self) -> str:
        return self.files.log

    def largest_timestamp(self) -> int:
        """LogSegment.largestTimestamp: the batches' and the time index's last entry's largest, else
        the file's modification time (what retention by time judges a segment by)."""
        largest = self.max_timestamp
        tidx = self.files.existing(TIMEINDEX)
        if tidx:
            with open(tidx, "rb") as f:
                entries, _ = time_index.read_entries(f.read(), self.base_offset)
            if entries:
                largest = max(largest, entries[-1][0])
        if largest < 0:
            largest = int(os.stat(self.log).st_mtime * 1000)
        return largest


def segment_batches(seg: LoadFacts, buf, *, state: ProducerState | None = None,
                    epochs: LeaderEpochCache | None = None, damage: str = "keep", strict_legacy: bool = False,
                    before_apply=None):
    """The walk of one segment's mapped ``buf``: yields (batch, completed transaction or None) for
    each batch kept, applying it to ``state`` and ``epochs``; ``seg``'s facts are filled in when
    the walk ends (however it ends)."""
    sc = BatchScanner(buf, file=seg.path, base_offset=seg.base_offset)
    check = damage != "keep"
    # only an epoch above the newest can change the cache (assign_newer): one comparison a batch
    latest = 1 << 31 if epochs is None else (-1 if epochs.latest_epoch is None else epochs.latest_epoch)
    nxt, max_ts, n, valid = seg.next_offset, seg.max_timestamp, seg.batches, seg.valid_bytes
    try:
        for b in sc:
            if check and (not b.crc_valid() or (strict_legacy and b.count is None and _legacy_unresolved(b))):
                if seg.damaged is None:
                    seg.damaged = b
                if damage == "skip":
                    continue
                return
            if before_apply is not None:
                before_apply(b)
            done = state.append(b) if state is not None else None
            if epochs is not None and b.partition_leader_epoch > latest and b.magic >= 2:
                epochs.assign_newer(b.partition_leader_epoch, b.base_offset)
                latest = -1 if epochs.latest_epoch is None else epochs.latest_epoch  # None: a negative base
            n += 1
            nxt = b.next_offset  # LogSegment.readNextOffset: the last batch's next offset
            if b.max_timestamp > max_ts:
                max_ts = b.max_timestamp
            valid = b.position + b.size
            yield b, done
        seg.stop = sc.stop
    finally:
        seg.next_offset, seg.max_timestamp, seg.batches, seg.valid_bytes = nxt, max_ts, n, valid


def replay_segment(path: str, base_offset: int, state: ProducerState | None = None,
                   epochs: LeaderEpochCache | None = None) -> LoadFacts:
    """Walk one segment file (every framed batch kept) into ``state`` and ``epochs``: what log
    loading does with a segment it need not recover.  ``path`` may be a leftover being completed
    (``.log.swap``)."""
    seg = LoadFacts(Segment(base_offset, os.path.dirname(path)), next_offset=base_offset, path=path)
    with open_buffer(path) as buf:
        seg.size = len(buf)
        for _ in segment_batches(seg, buf, state=state, epochs=epochs):
            pass
    return seg


def log_end_after(leo: int, base: int, next_offset: int | None) -> int:
    """The log end once the segment at ``base`` is loaded (LogSegment.readNextOffset over the segments so
    far): the offset after its last batch kept, else (``next_offset`` None: it has none) the larger of
    the log end before it and its base.  The one rule the load (:class:`~.log_loader.LogLoader`), the
    partition's walk (the broker's start) and ``kfx verify`` find a log end by."""
    return max(leo, base) if next_offset is None else next_offset


#: what :func:`log_end` gives a log without segments: an offset, or None (not known)
_Empty = TypeVar("_Empty", bound=int | None)


def log_end(segments, empty: _Empty) -> int | _Empty:
    """The log end of a partition whose segments, in base order, are ``segments`` ((base offset, the offset
    after its last batch kept, None when it has none) each): :func:`log_end_after` folded over them from
    the first segment's base; ``empty`` (:func:`empty_log_end`, or None: not known) when there are none."""
    leo = None
    for base, next_offset in segments:
        leo = log_end_after(base if leo is None else leo, base, next_offset)
    return empty if leo is None else leo


def empty_log_end(log_start: int, rules: AppliedRules) -> int:
    """The log end of a log without segments, by ``rules`` (the log dir's generation's): LogLoader gives it
    one empty segment, at the checkpointed ``log_start`` from 2.3 (KAFKA-8306, LogLoader.recoverLog), at 0
    before (Log.loadSegments).  The one rule the load (:class:`~.log_loader.LogLoader`), ``kfx verify``
    and the Spark inventory find an empty partition's log end by."""
    return log_start if rules.write("empty-log-segment") == "log-start" else 0


def truncate_leader_epochs(epochs: LeaderEpochCache, leo: int, log_start: int) -> list[tuple[int, int]]:
    """LogLoader.load's leader-epoch truncation of ``epochs``: ``truncateFromEnd(logEndOffset)`` (every
    entry starting at or past the log end ``leo``), then ``truncateFromStart(logStartOffset)`` (0: none);
    the entries dropped past the end come back.  The load (:class:`~.log_loader.LogLoader`), the broker's
    start (:class:`~.live_log.LiveLog`) and ``kfx verify`` ask this one rule."""
    past_end = epochs.truncate_from_end(leo)
    if log_start > 0 and epochs and epochs.entries[0][1] < log_start:
        epochs.truncate_from_start(log_start)
    return past_end


def _legacy_unresolved(b) -> bool:
    if b.magic >= 2 or b.count is not None:
        return False
    try:
        resolve_legacy_wrapper(b)
    except KafkaFormatError:
        return True
    return False
