"""A partition loaded in one walk: its segments, log start and end offsets, producer state and
leader epochs (what Kafka's LogLoader / LocalLog hold once a log is opened).

:class:`PartitionLog` walks the segments of a :class:`~.partition.PartitionDir` in base-offset
order, batch by batch, and fills in as it goes:

* per segment (:class:`LoadedSegment`): its size, the offset after its last batch (its base when
  it has none: LogSegment.readNextOffset), its largest batch timestamp, where its sound batches
  end and what ended its walk;
* the log end offset: the last segment's next offset (0 without segments);
* the log start offset: the first segment's base, moved up to the log dir's
  ``log-start-offset-checkpoint`` entry when that lies within the log (DeleteRecords moves it
  without removing a segment);
* the producer state the batches build (:class:`~.producer_state.ProducerState`) and the last
  stable offset it implies;
* the leader epochs the batches carry (LogSegment.recover's rule, :mod:`.leader_epochs`) and the
  partition's leader-epoch cache: ``leader-epoch-checkpoint`` when it has entries, else those.

What a damaged batch (a CRC mismatch; with ``strict_legacy`` also a legacy wrapper that does not
resolve) does is the caller's choice, ``damage``: ``keep`` it (no CRC is checked), ``skip`` it,
``stop-segment`` (the rest of its segment is not walked) or ``stop`` (nothing after it is).
Callers that look at every batch iterate :meth:`PartitionLog.walk` (segment by segment) or
:meth:`PartitionLog.batches`; the others call :meth:`PartitionLog.load`.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from kafkaforensics.log.checkpoint_file import LOG_START_OFFSET, partition_offset
from kafkaforensics.errors import KafkaFormatError, Problem
from kafkaforensics.log.leader_epochs import LeaderEpochCache
from kafkaforensics.log.partition import PartitionDir
from kafkaforensics.log.segment import Segment
from kafkaforensics.log.producer_state import ProducerState
from kafkaforensics.log.segment import BatchScanner, open_buffer
from kafkaforensics.records.batch import resolve_legacy_wrapper

DAMAGE = ("keep", "skip", "stop-segment", "stop")


@dataclass
class LoadedSegment:
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


def segment_batches(seg: LoadedSegment, buf, *, state: ProducerState | None = None,
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
            if b.partition_leader_epoch > latest and b.magic >= 2:
                epochs.assign_newer(b.partition_leader_epoch, b.base_offset)
                latest = epochs.latest_epoch
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
                   epochs: LeaderEpochCache | None = None) -> LoadedSegment:
    """Walk one segment file (every framed batch kept) into ``state`` and ``epochs``: what log
    loading does with a segment it need not recover.  ``path`` may be a leftover being completed
    (``.log.swap``)."""
    seg = LoadedSegment(Segment(base_offset, os.path.dirname(path)), next_offset=base_offset, path=path)
    with open_buffer(path) as buf:
        seg.size = len(buf)
        for _ in segment_batches(seg, buf, state=state, epochs=epochs):
            pass
    return seg


def _legacy_unresolved(b) -> bool:
    if b.magic >= 2 or b.count is not None:
        return False
    try:
        resolve_legacy_wrapper(b)
    except KafkaFormatError:
        return True
    return False


class PartitionLog:
    """One walk over a partition (see the module's doc)."""

    def __init__(self, partition: PartitionDir | str, *, damage: str = "keep", strict_legacy: bool = False,
                 producers: bool = True, log_dir: str | None = None, before_apply=None):
        if damage not in DAMAGE:
            raise ValueError(f"damage must be one of {DAMAGE}, not {damage!r}")
        self.dir = partition if isinstance(partition, PartitionDir) else PartitionDir.scan(partition)
        self.damage, self.strict_legacy = damage, strict_legacy
        #: called with each batch kept before the producer state takes it (a look at the state
        #: the batches before it left: a producer snapshot check)
        self.before_apply = before_apply
        self.log_dir = log_dir if log_dir is not None else os.path.dirname(os.path.abspath(self.dir.path))
        self.segments: list[LoadedSegment] = []
        self.state: ProducerState | None = ProducerState() if producers else None
        self.batch_epochs = LeaderEpochCache()
        self.stopped = False       # a ``stop`` walk ended at a damaged batch
        self._walked = False

    # -- the walk ------------------------------------------------------------------------------
    def walk(self):
        """Yield (segment, its batches) for each segment in order; the batches come as
        (batch, transaction its marker completes or None).  Facts of a segment are final once
        its batches are exhausted (batches a caller leaves are still walked)."""
        if self._walked:
            raise RuntimeError("a PartitionLog walks its partition once")
        self._walked = True
        for sf in self.dir.segments:
            if self.stopped:
                return
            seg = LoadedSegment(sf, next_offset=sf.base_offset)
            self.segments.append(seg)
            with open_buffer(sf.log) as buf:
                seg.size = len(buf)
                inner = segment_batches(seg, buf, state=self.state, epochs=self.batch_epochs, damage=self.damage,
                                        strict_legacy=self.strict_legacy, before_apply=self.before_apply)
                yield seg, inner
                for _ in inner:  # what the caller left
                    pass
            if seg.damaged is not None and self.damage == "stop":
                self.stopped = True

    def batches(self):
        """Every batch walked, in log order: (segment, batch, completed transaction or None)."""
        for seg, inner in self.walk():
            for b, done in inner:
                yield seg, b, done

    def load(self) -> "PartitionLog":
        """Walk the whole partition (if not walked yet) and return self."""
        if not self._walked:
            for _seg, inner in self.walk():
                for _ in inner:
                    pass
        return self

    # -- what the walk gives -------------------------------------------------------------------
    @property
    def log_end_offset(self) -> int:
        return self.segments[-1].next_offset if self.segments else 0

    @property
    def last_stable_offset(self) -> int:
        first = self.state.first_unstable_offset() if self.state is not None else None
        return self.log_end_offset if first is None else first

    @property
    def leader_epoch(self) -> int:
        """The newest leader epoch the batches carry (0 when none does)."""
        return max(0, self.batch_epochs.latest_epoch or 0)

    def checkpointed_log_start(self) -> int | None:
        """This partition's entry in the log dir's ``log-start-offset-checkpoint`` (None: no file,
        no entry, a partition dir not named ``topic-N``)."""
        tp = (self.dir.topic, self.dir.partition) if self.dir.topic is not None else None
        return partition_offset(self.log_dir, LOG_START_OFFSET, tp)

    @property
    def log_start_offset(self) -> int:
        """The first segment's base, or the checkpointed log start when it lies above it and
        within the log; a damaged checkpoint is ignored (the first base serves)."""
        start = self.segments[0].base_offset if self.segments else (
            self.dir.segments[0].base_offset if self.dir.segments else 0)
        try:
            ck = self.checkpointed_log_start()
        except KafkaFormatError:
            ck = None
        if ck is not None and start < ck <= self.log_end_offset:
            return ck
        return start

    def checkpoint_epochs(self) -> LeaderEpochCache | None:
        """``leader-epoch-checkpoint`` as it is (None: no file; a malformed one raises)."""
        return LeaderEpochCache.read(self.dir.path)

    def leader_epochs(self) -> LeaderEpochCache:
        """The partition's leader-epoch cache: the checkpoint when it is readable and has entries,
        else the epochs the batches carry."""
        try:
            cache = self.checkpoint_epochs()
        except KafkaFormatError:
            cache = None
        return cache if cache else self.batch_epochs
