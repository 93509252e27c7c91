"""``kfx compact``: Kafka's log cleaner, rule for rule, run offline on a partition directory.

After core/.../log/LogCleaner.scala (Cleaner), LogCleanerManager.cleanableOffsets and
MemoryRecords.filterTo:

* cleanable range: from the cleaner checkpoint (reset to the log start when it is outside the log)
  to the first uncleanable offset = min(last stable offset, active segment base, first dirty
  segment within the min compaction lag), rounded down to its segment's base offset;
* offset map: latest offset per key over the dirty range, skipping aborted transactions and
  control batches, in a bounded :class:`~kafkaforensics.repair.offset_map.OffsetMap`; a full map ends
  the round at the last offset it covers (the next round continues from there);
* every segment below the round's end offset is rewritten, grouped as groupSegmentsBySize groups
  them; per batch (CleanedTransactionMetadata + filterTo): aborted transactional batches go,
  COMMIT markers go once no data of their transaction is left to clean, ABORT markers stay while
  data of their transaction was seen (and their .txnindex entry with them), markers and tombstones
  get a delete horizon (now + delete.retention.ms) stamped the first time they are kept and are
  removed once a cleaning runs past it (legacy tombstones: the segment-mtime rule); a record stays
  if its offset is the latest for its key; keyless records go; each active producer's last batch
  and the round's last batch stay, empty if need be; a batch that loses nothing keeps its bytes;
* the swap: ``.cleaned`` files, renamed ``.swap``, old segments renamed ``.deleted``, swaps renamed
  into place, ``.deleted`` removed -- so an interruption is completed or rolled back by
  ``kfx recover`` as Kafka's log loading would; then the cleaner checkpoint is updated.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
import os
import shutil
import tempfile
import time
from collections import deque
from itertools import takewhile
from typing import NamedTuple

import numpy as np

from specs.layout import INT32_MAX

from kafkaforensics.records import builder, walks

from kafkaforensics import fsutil

from kafkaforensics.log import offset_index, time_index, txn_index
from kafkaforensics.records.batch import Batch, parse_header, resolve_legacy_wrapper
from kafkaforensics.defaults import (DEFAULT_DEDUPE_BUFFER_BYTES, DEFAULT_DELETE_RETENTION_MS, DEFAULT_INDEX_INTERVAL_BYTES,
                       DEFAULT_PRODUCER_ID_EXPIRATION_MS, DEFAULT_SEGMENT_BYTES)
from kafkaforensics.log.indexing import SegmentIndexes
from kafkaforensics.errors import KafkaFormatError, Problem
from kafkaforensics.repair.offset_map import OffsetMap, span_digests
from kafkaforensics.log.partition import INDEX, LOG, SNAPSHOT, TIMEINDEX, TXNINDEX, LogDir, Partition, parse_partition_dir_name
from kafkaforensics.log.record_columns import decode_columns, runs
from kafkaforensics.log.segment import INDEX_BY_SUFFIX, SEGMENT_SUFFIXES, Segment, SegmentSummary, file_name
from kafkaforensics.log.producer_state import ProducerState
from kafkaforensics.log.txn_index import AbortedTxn
from kafkaforensics.log.kafka_version import KafkaVersion, kafka_version

# Both passes take a run of batches at a time: records decoded by the columnar decoder, keys
# hashed and put or looked up in the offset map together; with ``records.walks.SPEEDUPS`` off,
# batch by batch, record by record (the reference the tests compare with): ``_map_batches`` and
# ``_Filter.judged`` are bound to one or the other once, at import.


@dataclass
class CompactOptions:
    delete_retention_ms: int = DEFAULT_DELETE_RETENTION_MS
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int | None = None
    now: int | None = None
    segment_bytes: int = DEFAULT_SEGMENT_BYTES
    max_index_bytes: int = 10 << 20
    include_active: bool = False
    index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES
    dedupe_buffer_bytes: int = DEFAULT_DEDUPE_BUFFER_BYTES
    producer_id_expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS
    ignore_checkpoint: bool = False  # clean from the log start, whatever cleaner-offset-checkpoint says
    #: whose tombstone rule applies ("X.Y", a KafkaVersion, or None: inferred from the log dir); up to
    #: 3.0 every tombstone and marker goes by its segment's mtime, from 3.1 by the batch's delete horizon
    kafka_version: "str | KafkaVersion | None" = None


@dataclass
class CompactStats:
    """A compaction's counters, every one an int from 0."""

    records_before: int = 0
    bytes_before: int = 0
    records_after: int = 0
    bytes_after: int = 0
    tombstones_kept: int = 0
    tombstones_removed: int = 0
    aborted_records_removed: int = 0
    keyless_records_removed: int = 0
    markers_kept: int = 0
    markers_removed: int = 0
    batches_emptied: int = 0
    batches_removed: int = 0


@dataclass
class CompactReport:
    partition: str
    out: str | None
    dry_run: bool
    first_dirty_offset: int = 0
    first_uncleanable_offset: int = 0
    end_offset: int = 0
    rounds: int = 0
    dirty_ratio_before: float = 0.0
    dirty_ratio_after: float = 0.0
    groups: list[list[str]] = field(default_factory=list)
    stats: CompactStats = field(default_factory=CompactStats)
    notes: list[str] = field(default_factory=list)
    offset_map_bytes: int = 0
    kafka: KafkaVersion | None = None  # the KafkaVersion whose rules applied
    backup: str | None = None
    #: located problems that stopped the cleaning (records that do not decode, an offset map too small)
    problems: list[Problem] = field(default_factory=list)

    def to_json(self) -> dict:
        s = self.stats
        return {"partition": self.partition, "out": self.out, "dryRun": self.dry_run,
                "firstDirtyOffset": self.first_dirty_offset, "firstUncleanableOffset": self.first_uncleanable_offset,
                "cleanedUpTo": self.end_offset, "rounds": self.rounds,
                "records": {"before": s.records_before, "after": s.records_after},
                "bytes": {"before": s.bytes_before, "after": s.bytes_after},
                "tombstones": {"kept": s.tombstones_kept, "removed": s.tombstones_removed},
                "abortedRecordsRemoved": s.aborted_records_removed,
                "keylessRecordsRemoved": s.keyless_records_removed,
                "markers": {"kept": s.markers_kept, "removed": s.markers_removed},
                "emptyBatchesKept": s.batches_emptied,
                "dropped": {"batches": s.batches_removed, "records": s.records_before - s.records_after,
                            "bytes": s.bytes_before - s.bytes_after,
                            "segmentsRewritten": sum(len(g) for g in self.groups)},
                "dirtyRatio": {"before": self.dirty_ratio_before, "after": self.dirty_ratio_after},
                "kafkaVersion": self.kafka.to_json() if self.kafka is not None else None,
                "groups": self.groups, "offsetMapBytes": self.offset_map_bytes, "notes": self.notes, "backup": self.backup,
                "problems": [p.to_json() for p in self.problems]}


# --------------------------------------------------------------------------- log survey ----
def _survey(pd: Partition, opts: CompactOptions, now: int):
    """One pass over the log: segments, producer state at the end, aborted transactions, counts."""
    log = Partition.of(pd)
    aborted: list[AbortedTxn] = []
    segs = []
    records = 0
    for s, batches in log.walk():
        seg_records = 0
        for b, done in batches:
            if done is not None and done.aborted:
                aborted.append(done.aborted_entry())
            if b.magic < 2:
                resolve_legacy_wrapper(b)
            seg_records += _claimed_records(b)
        records += seg_records
        segs.append(SegmentSummary(s.base_offset, s.size, s.valid_bytes, s.batches, seg_records, None, s.next_offset,
                                   s.max_timestamp, s.files))
    state = log.state
    assert isinstance(state, ProducerState)  # the walk above kept the producers (Partition.walk's default)
    for i in range(len(segs) - 1):
        segs[i] = replace(segs[i], next_offset=segs[i + 1].base_offset)  # a segment ends where the next begins
    active_producers = {}
    for pid, e in state.producers.items():
        expired = e.current_txn_first_offset < 0 and e.timestamp < now - opts.producer_id_expiration_ms
        if not expired:
            active_producers[pid] = (e.last_offset if e.last_offset >= 0 else None, e.epoch)
    return segs, state, aborted, active_producers, records


def _largest_ts(s: SegmentSummary) -> int:
    """A surveyed segment's largest batch timestamp, else its ``.log``'s modification time (ms): what
    the compaction lags are judged by."""
    return s.max_timestamp if s.max_timestamp >= 0 else int(_segment(s).last_modified() * 1000)


def _index_bytes(s: SegmentSummary, suffix: str) -> int:
    """The size of a surveyed segment's index ``suffix`` (0: none): what a cleaned group's may not exceed."""
    return _segment(s).index_bytes(suffix)


def _segment(s: SegmentSummary) -> Segment:
    """The file-backed segment of a surveyed row (the survey's rows all carry theirs)."""
    assert s.segment is not None
    return s.segment


def _claimed_records(b: Batch) -> int:
    """The records a batch's header claims, bounded by what the batch can hold: its offset span and,
    uncompressed, 7 bytes a record (a hostile count never sizes anything)."""
    n = max(0, min(b.count or 0, b.last_offset - b.base_offset + 1))
    if b.magic >= 2 and b.compression == 0:
        n = min(n, max(0, b.size - 61) // 7)
    return n


# ------------------------------------------------------------------- transaction tracking ----
class _TxnMetadata:
    """CleanedTransactionMetadata: which transactional batches are aborted, which markers can go."""

    def __init__(self, aborted: list[AbortedTxn]):
        self.pending = deque(sorted(aborted, key=lambda a: a.first_offset))
        self.ongoing_aborted: dict[int, list] = {}   # pid -> [AbortedTxn, last observed batch offset]
        self.ongoing_committed: set[int] = set()
        self.cleaned_index: list[AbortedTxn] | None = None

    def _consume_up_to(self, offset: int) -> None:
        while self.pending and self.pending[0].first_offset <= offset:
            a = self.pending.popleft()
            self.ongoing_aborted.setdefault(a.producer_id, [a, None])

    def on_control(self, b: Batch) -> bool:
        self._consume_up_to(b.last_offset)
        recs = b.records()
        if not recs:
            return True  # an empty control batch was already cleaned
        ctl = recs[0].control() or {}
        pid = b.producer_id
        if ctl.get("type") == "ABORT":
            meta = self.ongoing_aborted.pop(pid, None)
            if meta is not None and meta[1] is not None:
                if self.cleaned_index is not None:
                    self.cleaned_index.append(meta[0])
                return False
            return True
        if ctl.get("type") == "COMMIT":
            if pid in self.ongoing_committed:
                self.ongoing_committed.discard(pid)
                return False
            return True
        return False

    def on_data(self, b: Batch) -> bool:
        """True when the batch belongs to an aborted transaction (safe to discard)."""
        self._consume_up_to(b.last_offset)
        if not b.is_transactional:
            return False
        meta = self.ongoing_aborted.get(b.producer_id)
        if meta is not None:
            meta[1] = b.last_offset
            return True
        self.ongoing_committed.add(b.producer_id)
        return False


# ---------------------------------------------------------------------------- the cleaner ----
def _build_offset_map(segs, start, end, aborted, omap: OffsetMap) -> None:
    txn = _TxnMetadata([a for a in aborted if a.last_offset >= start and a.first_offset < end])
    dirty = [s for s in segs if s.next_offset > start and s.base_offset < end]
    for s in dirty:
        with s.segment.walk() as walk:
            if not _map_batches(takewhile(lambda b: b.base_offset < end, walk), start, txn, omap):
                return  # full: the round ends at the last offset mapped
        omap.update_latest_offset(min(s.next_offset, end) - 1)


def _map_batches_fast(batches, start: int, txn: "_TxnMetadata", omap: OffsetMap) -> bool:
    """``_map_batches`` over runs: each run's records decoded together (:func:`_map_columns`), a
    run the columnar decoder refuses record by record (:func:`_map_records`)."""
    for run in runs(batches):
        try:
            cols = decode_columns(run)
        except KafkaFormatError:
            cols = None  # record by record: each batch's records() raises its error if it is reached
        if not (_map_records(run, start, txn, omap) if cols is None else _map_columns(run, cols, start, txn, omap)):
            return False
    return True


def _map_records(batches, start: int, txn: "_TxnMetadata", omap: OffsetMap) -> bool:
    """Put the keys of the batches' records from ``start`` on (not those of control batches or
    aborted transactions) in log order, batch by batch, record by record; False when the map is
    full (the batch whose key did not fit, and all after it, are left out of the map's latest
    offset).  ``_map_batches`` with ``records.walks.SPEEDUPS`` off: the reference."""
    for b in batches:
        if b.is_control:
            txn.on_control(b)
        elif not txn.on_data(b):
            for r in b.records():
                if r.key is not None and r.offset >= start:
                    if not omap.put(bytes(r.key), r.offset):
                        return False
        if b.last_offset >= start:
            omap.update_latest_offset(b.last_offset)
    return True


def _map_columns(run: list, cols, start: int, txn: "_TxnMetadata", omap: OffsetMap) -> bool:
    """:func:`_map_records` of ``run`` from its decoded columns ``cols``: the keys hashed and put
    together."""
    mapped = np.zeros(len(run), dtype=bool)
    for i, b in enumerate(run):  # transactions are followed batch by batch, in order
        if b.is_control:
            txn.on_control(b)
        else:
            mapped[i] = not txn.on_data(b)
    rec = np.flatnonzero(mapped[cols.batch] & (cols.key_length >= 0) & (cols.offset >= start))
    done = omap.put_many(span_digests(cols.buf, cols.key_start[rec], cols.key_length[rec]), cols.offset[rec])
    whole = len(run) if done == len(rec) else int(cols.batch[rec[done]])  # batches wholly mapped
    for b in run[:whole]:
        if b.last_offset >= start:
            omap.update_latest_offset(b.last_offset)
    return done == len(rec)


#: the offset map's pass over a segment's batches: in columnar runs, or with ``records.walks.SPEEDUPS``
#: off record by record (chosen once, at import)
_map_batches = walks.bind("_map_batches", _map_batches_fast, _map_records)


def _group_segments(segs, max_size, max_index, first_uncleanable):
    groups, rest = [], list(segs)
    while rest:
        group = [rest.pop(0)]
        log_size, idx_size, tidx_size = group[0].size, _index_bytes(group[0], INDEX), _index_bytes(group[0], TIMEINDEX)
        while rest:
            nxt = rest[0]
            last_of_first = rest[1].base_offset - 1 if len(rest) > 1 else first_uncleanable - 1
            if not (log_size + nxt.size <= max_size and idx_size + _index_bytes(nxt, INDEX) <= max_index
                    and tidx_size + _index_bytes(nxt, TIMEINDEX) <= max_index
                    and (nxt.size == 0 or last_of_first - group[-1].base_offset <= INT32_MAX)):
                break
            group.append(rest.pop(0))
            log_size += nxt.size
            idx_size += _index_bytes(nxt, INDEX)
            tidx_size += _index_bytes(nxt, TIMEINDEX)
        groups.append(group)
    return groups


class _Filter:
    """MemoryRecords.filterTo with the cleaner's RecordFilter, one batch at a time."""

    def __init__(self, omap, txn, active_producers, upper_bound, now, opts, stats, retain_legacy_deletes):
        self.omap, self.txn, self.active = omap, txn, active_producers
        self.upper, self.now, self.opts, self.stats = upper_bound, now, opts, stats
        self.retain_legacy_deletes = retain_legacy_deletes
        self.by_mtime = opts.kafka_version is not None and \
            opts.kafka_version.rules().write("cleaner-tombstones") == "segment-mtime"

    def _last_of_producer(self, b: Batch) -> bool:
        last = self.active.get(b.producer_id)
        if last is None:
            return False
        last_data, epoch = last
        if last_data is not None:
            return b.last_offset == last_data
        return b.is_control and b.producer_epoch == epoch

    def _tombstones_stay(self, b: Batch) -> bool:
        if b.magic >= 2 and not self.by_mtime:
            return b.delete_horizon_ms is None or self.now < b.delete_horizon_ms
        return self.retain_legacy_deletes

    def verdict(self, b: Batch) -> "_Verdict":
        """The record filter over a data batch's ``records()``, one record at a time: a record
        past the map stays; else a keyless one goes, one older than its key's latest goes, a
        tombstone goes once its delete horizon has passed."""
        latest, get, stay = self.omap.latest_offset, self.omap.get, self._tombstones_stay(b)
        keep, keyless, gone, tombstones = [], 0, 0, 0
        for r in b.records():
            if r.offset > latest:
                k = True
            elif r.key is None:
                k = False
                keyless += 1
            elif r.offset < get(bytes(r.key)):
                k = False
            elif r.value is not None:
                k = True
            else:
                k = stay
                gone += not stay
            tombstones += k and r.value is None
            keep.append(k)
        return _Verdict(keep, keyless, gone, tombstones)

    def verdicts(self, run: list) -> list:
        """:meth:`verdict` of every batch of ``run`` at once (columnar decoder, keys looked up
        together); None for each batch when the run is not for the columnar decoder."""
        try:
            cols = decode_columns(run)
        except KafkaFormatError:
            return [None] * len(run)
        off, key_null, value_null = cols.offset, cols.key_length < 0, cols.value_length < 0
        old = off <= self.omap.latest_offset
        ask = np.flatnonzero(old & ~key_null)
        latest = np.full(len(off), -1, dtype=np.int64)
        latest[ask] = self.omap.get_many(span_digests(cols.buf, cols.key_start[ask], cols.key_length[ask]))
        stay = np.array([self._tombstones_stay(b) for b in run], dtype=bool)[cols.batch]
        keyless = old & key_null
        stale = old & ~key_null & (off < latest)
        gone = old & ~key_null & ~stale & value_null & ~stay
        keep = ~(keyless | stale | gone)
        at = np.concatenate(([0], np.cumsum(np.bincount(cols.batch, minlength=len(run))))).tolist()
        sums = [np.concatenate(([0], np.cumsum(x))).tolist() for x in (keyless, gone, keep & value_null)]
        flags = keep.tolist()
        return [_Verdict(flags[a:z], *(c[z] - c[a] for c in sums)) for a, z in zip(at, at[1:])]

    def _judged_fast(self, batches):
        """Each batch with its :meth:`verdicts` verdict (None: :meth:`apply` judges it itself)."""
        return ((b, v) for run in runs(batches) for b, v in zip(run, self.verdicts(run)))

    def _judged_reference(self, batches):
        """``judged`` with ``records.walks.SPEEDUPS`` off: no verdict given, every batch judged by
        :meth:`apply` record by record."""
        return ((b, None) for b in batches)

    #: each batch with its verdict, from columnar runs or (the reference) none: chosen once, at import
    judged = walks.bind("judged", _judged_fast, _judged_reference)

    def apply(self, b: Batch, verdict: "_Verdict | None" = None) -> tuple[bytes | None, int]:
        """The batch's bytes after cleaning (None when it goes) and how many records it keeps;
        ``verdict``: the record filter's, if :meth:`verdicts` gave one."""
        can_discard = self.txn.on_control(b) if b.is_control else self.txn.on_data(b)
        if b.is_control and self.by_mtime:  # up to 3.0 a marker goes by its segment's mtime too
            discard_records = can_discard and not self.retain_legacy_deletes
        elif b.is_control:
            discard_records = can_discard and b.delete_horizon_ms is not None and b.delete_horizon_ms <= self.now
        else:
            discard_records = can_discard
        if b.producer_id >= 0 and b.magic >= 2 and self._last_of_producer(b):
            retain_empty = True
        elif b.next_offset == self.upper:
            retain_empty = True  # the round's last batch keeps the last offset known
        else:
            retain_empty = False
        n = len(b.records()) if verdict is None else len(verdict.keep)
        st = self.stats
        v = None  # the record filter's verdict, for a data batch that is not discarded
        if discard_records:
            kept = 0
            if not b.is_control and b.is_transactional:
                st.aborted_records_removed += n
        elif b.is_control:
            kept = n
        else:
            v = verdict or self.verdict(b)
            kept = sum(v.keep)
            st.keyless_records_removed += v.keyless_removed
            st.tombstones_removed += v.tombstones_removed
            st.tombstones_kept += v.tombstones_kept
        if b.is_control:
            if kept:
                st.markers_kept += 1
            else:
                st.markers_removed += 1
        if kept:
            has_tombstone = v is not None and v.tombstones_kept > 0
            marker_for_empty_txn = can_discard and b.is_control
            set_horizon = b.magic >= 2 and (has_tombstone or marker_for_empty_txn) and b.delete_horizon_ms is None \
                and not self.by_mtime
            if kept == n and not set_horizon:
                return bytes(b.data), kept  # writeOriginalBatch: the bytes as they were
            horizon = self.now + self.opts.delete_retention_ms if set_horizon else b.delete_horizon_ms
            recs = b.records()
            return _rebuild(b, recs if v is None else [r for r, k in zip(recs, v.keep) if k], horizon), kept
        if retain_empty and b.magic >= 2:
            st.batches_emptied += 1
            lat = b.timestamp_type == "LogAppendTime"
            return _v2_like(b, [], 0, builder.HeaderOverrides(
                last_offset_delta=b.last_offset - b.base_offset, log_append_time=lat, base_timestamp=-1,
                max_timestamp=b.max_timestamp)), 0
        return None, 0


class _Verdict(NamedTuple):
    """The record filter's word on a data batch: ``keep``, one flag a record; how many go as
    keyless or as tombstones past their horizon, and how many tombstones stay."""
    keep: list
    keyless_removed: int
    tombstones_removed: int
    tombstones_kept: int


def _v2_like(b: Batch, records, codec: int, header) -> bytes:
    """A v2 batch of ``records`` with ``b``'s header (its leader epoch, flags and producer fields) and
    ``header``'s overrides."""
    return builder.build_v2(records, base_offset=b.base_offset, partition_leader_epoch=b.partition_leader_epoch,
                            codec=codec, transactional=b.is_transactional, control=b.is_control,
                            producer=builder.BatchProducer(b.producer_id, b.producer_epoch, b.base_sequence),
                            header=header)


def _rebuild(b: Batch, kept, horizon) -> bytes:
    if b.magic >= 2:
        for r in kept:
            r.attributes = 0  # DefaultRecord.writeTo writes 0: no record attribute is in use
        lat = b.timestamp_type == "LogAppendTime"
        return _v2_like(b, kept, b.compression, builder.HeaderOverrides(
            last_offset_delta=b.last_offset - b.base_offset, log_append_time=lat, delete_horizon_ms=horizon,
            max_timestamp=b.max_timestamp if lat else None))
    return builder.build_legacy(kept, magic=b.magic, codec=b.compression,
                                log_append_time=b.timestamp_type == "LogAppendTime",
                                wrapper_timestamp=b.max_timestamp if b.compression else None)


@dataclass
class _CleanRound:
    """What one cleaning round filters every group's batches by: the offset map, the transactions,
    the active producers, the first uncleanable offset, the clock, the options, the round's stats,
    the horizon legacy tombstones are judged by, and where replaced files are backed up."""
    omap: OffsetMap
    txn: "_TxnMetadata"
    active: dict
    upper: int
    now: int
    opts: CompactOptions
    stats: CompactStats
    legacy_horizon: float
    backup: str | None = None

    def filter(self, s) -> "_Filter":
        """The record filter of segment ``s`` (legacy deletes retained by its modification time)."""
        return _Filter(self.omap, self.txn, self.active, self.upper, self.now, self.opts, self.stats,
                       s.segment.last_modified() * 1000 > self.legacy_horizon)


def _clean_group(pdir, group, rnd: _CleanRound):
    """Write the group's cleaned segment as .cleaned files; returns their paths."""
    backup = rnd.backup
    base = group[0].base_offset
    names = {suf: os.path.join(pdir, file_name(base, suf) + ".cleaned") for suf in SEGMENT_SUFFIXES}
    for p in names.values():
        fsutil.created(p, backup)
    try:
        with fsutil.doing("writing the cleaned segment", names[LOG], sum(s.size for s in group)):
            return _write_cleaned(names, group, rnd)
    except BaseException:
        for p in names.values():  # what a failed cleaning leaves is gone (Kafka deletes its .cleaned files)
            if os.path.exists(p):
                os.unlink(p)
        raise


def _write_cleaned(names, group, rnd: _CleanRound):
    """The group's batches through the round's filter into ``names`` (the .cleaned log and indexes)."""
    base, opts, stats, txn = group[0].base_offset, rnd.opts, rnd.stats, rnd.txn
    idx = SegmentIndexes(base, opts.index_interval_bytes)
    txn.cleaned_index = []
    fsutil._step("write")
    with open(names[LOG], "wb") as out:
        fsutil.fit_new(names[LOG], fd=out.fileno())
        for s in group:
            flt = rnd.filter(s)
            with s.segment.walk() as walk:
                for b, verdict in flt.judged(walk):
                    data, kept = flt.apply(b, verdict)
                    if data is None:
                        stats.batches_removed += 1
                        continue
                    h = parse_header(data)
                    if not 0 <= h.last_offset - base <= INT32_MAX:  # LogSegment.ensureOffsetInRange
                        raise KafkaFormatError(
                            "offset-overflow", f"the batch's last offset {h.last_offset} does not fit a segment "
                            f"based at {base} (4-byte relative offsets): Kafka's cleaner splits such a segment "
                            "first (LogSegmentOffsetOverflowException)",
                            file=s.segment.log, position=b.position, offset=b.base_offset)
                    out.write(data)
                    idx.add(h)
                    stats.records_after += kept
                    stats.bytes_after += len(data)
        out.flush()
        fsutil._step("fsync")
        os.fsync(out.fileno())
    idx.close()
    for suf, data in ((INDEX, offset_index.to_bytes(idx.offsets, base)),
                      (TIMEINDEX, time_index.to_bytes(idx.times, base)),
                      (TXNINDEX, txn_index.to_bytes(txn.cleaned_index))):
        fsutil._step("write")
        with open(names[suf], "wb") as f:
            fsutil.fit_new(names[suf], fd=f.fileno())
            f.write(data)
            f.flush()
            fsutil._step("fsync")
            os.fsync(f.fileno())
    mtime = group[-1].segment.last_modified()  # the cleaned segment keeps the last source segment's modification time
    os.utime(names[LOG], (mtime, mtime))
    return names


def _count_after(pdir: str, opts: CompactOptions, now: int, rep: CompactReport) -> None:
    """The records and bytes the partition holds once a cleaning stopped part-way (what it dropped
    is what the groups swapped in before the stop dropped)."""
    try:
        segs, _state, _aborted, _active, records = _survey(Partition.scan(pdir), opts, now)
    except KafkaFormatError:
        return
    rep.stats.records_after, rep.stats.bytes_after = records, sum(s.size for s in segs)


def _uncleanable(rep: CompactReport, e: KafkaFormatError) -> None:
    """A batch whose records do not decode: Kafka's cleaner throws, drops its ``.cleaned`` files and
    marks the partition uncleanable; here the round stops, located, with nothing of it swapped in."""
    rep.problems.append(e.problem)
    rep.notes.append("cleaning stopped at a batch whose records do not decode (Kafka marks the partition "
                     "uncleanable); the segments from there on were left as they were")


def _swap(pdir, group, cleaned: dict, backup=None) -> None:
    """LocalLog.replaceSegments: .cleaned -> .swap, old -> .deleted, .swap -> final, drop .deleted
    (into the backup, when there is one)."""
    base = group[0].base_offset
    for suf in SEGMENT_SUFFIXES:
        fsutil.rename(cleaned[suf], os.path.join(pdir, file_name(base, suf) + ".swap"), backup_dir=backup)
    deleted = []
    for s in group:
        for suf in SEGMENT_SUFFIXES:
            p = os.path.join(pdir, file_name(s.base_offset, suf))
            if os.path.exists(p):
                fsutil.rename(p, p + ".deleted", backup_dir=backup)
                deleted.append(p + ".deleted")
    for suf in SEGMENT_SUFFIXES:
        final = os.path.join(pdir, file_name(base, suf))
        if suf in INDEX_BY_SUFFIX and INDEX_BY_SUFFIX[suf].created_lazily and os.path.getsize(final + ".swap") == 0:
            fsutil.remove_file(final + ".swap", backup_dir=backup)  # Kafka creates the transaction index lazily
            continue
        fsutil.rename(final + ".swap", final, backup_dir=backup)
    for p in deleted:
        fsutil.remove_file(p, backup_dir=backup)


def _read_cleaner_checkpoint(pdir, tp):
    try:
        return LogDir(os.path.dirname(os.path.abspath(pdir))).partition_offset(LogDir.CLEANER_OFFSET, tp)
    except KafkaFormatError:  # an unreadable checkpoint: Kafka would start from the log start
        return None


def _write_cleaner_checkpoint(pdir, tp, offset, backup=None) -> None:
    LogDir(os.path.dirname(os.path.abspath(pdir))).set_partition_offset(LogDir.CLEANER_OFFSET, tp, offset,
                                                                      unreadable="replace", backup_dir=backup)


def _dirty_ratio(segs, first_dirty, first_uncleanable) -> float:
    clean = sum(s.size for s in segs if s.next_offset <= first_dirty)
    dirty = sum(s.size for s in segs if s.base_offset >= first_dirty and s.base_offset < first_uncleanable)
    return dirty / (clean + dirty) if clean + dirty else 0.0


def compact(partition_dir: str, opts: CompactOptions | None = None, *, out: str | None = None,
            dry_run: bool = False, backup: bool = True, backup_dir: str | None = None) -> CompactReport:
    """Compact a partition in place (or into ``out``, leaving the input untouched).

    In place, every segment rewritten or deleted is kept in ``backup_dir`` (default
    ``<partition>/.kfx-backup/<time>``; ``backup=False``: none) with a manifest ``kfx restore`` undoes.
    A dry run works on a dir of symbolic links in the system's temp dir: nothing is created in the
    log dir, and the input's files are only ever read."""
    opts = opts or CompactOptions()
    src = os.path.abspath(partition_dir)
    kafka = kafka_version(src, opts.kafka_version)
    opts = replace(opts, kafka_version=kafka)
    pd0 = Partition.scan(src)
    if pd0.leftovers:
        raise ValueError(f"{partition_dir} has leftover files of an interrupted operation "
                         f"({os.path.basename(pd0.leftovers[0])}, ...): run `kfx recover` first")
    tp = parse_partition_dir_name(src)
    rep = CompactReport(os.path.basename(src), None, dry_run, kafka=kafka)
    now = opts.now if opts.now is not None else int(time.time() * 1000)
    journal = None
    if dry_run or out:
        # a dry run never touches the log dir; --out builds beside its output (renamed into place)
        parent = tempfile.gettempdir() if dry_run or out is None else os.path.dirname(os.path.abspath(out))
        work_parent = fsutil.temp_dir(parent, "compact")
        work = os.path.join(work_parent, os.path.basename(out) if out and not dry_run else rep.partition)
        _link_copy(src, work, symlinks=dry_run)
        ck = _read_cleaner_checkpoint(src, tp)
        if ck is not None:
            _write_cleaner_checkpoint(work, tp, ck)
    else:
        work_parent, work = None, src
        fsutil.clean_temps(src)
        if backup:
            journal = fsutil.Backup(backup_dir or fsutil.default_backup_dir(src))
    try:
        try:
            _compact_in_place(work, tp, opts, now, rep, journal)
        except KafkaFormatError as e:
            _uncleanable(rep, e)
            _count_after(work, opts, now, rep)
        for p in rep.problems:  # say where the bytes are, not where the work copy was
            if p.file and work != src and p.file.startswith(work + os.sep):
                p.file = os.path.join(src, p.file[len(work) + 1:])
        if out and not dry_run:
            final = os.path.abspath(out)
            if os.path.exists(final):
                if os.listdir(final):
                    raise FileExistsError(f"{out} exists and is not empty")
                os.rmdir(final)
            fsutil.rename(work, final)
            if tp is not None and rep.rounds:
                if os.path.dirname(final) != os.path.dirname(src):
                    _write_cleaner_checkpoint(final, tp, rep.end_offset)
                else:  # that checkpoint file is the input's: leave it alone
                    rep.notes.append(f"cleaner-offset-checkpoint not written: the output shares the input's log dir "
                                     f"(the cleaned output is clean up to {rep.end_offset})")
            rep.out = final
    finally:
        if work_parent is not None:
            shutil.rmtree(work_parent, ignore_errors=True)
    if journal is not None and journal.entries:
        rep.backup = journal.dir
    return rep


def _why_nothing_to_clean(segs, first_dirty, checkpoint, leo, first_unstable, lagging, opts) -> str:
    """Why the cleanable section is empty, and what would make the cleaner act."""
    if first_dirty >= leo:
        if checkpoint is not None and checkpoint > segs[0].base_offset:
            return (f"nothing to clean: the log is clean up to its end (cleaner-offset-checkpoint at {checkpoint}); "
                    "--ignore-checkpoint cleans it again from the log start")
        return "nothing to clean: the log holds no record"
    active = segs[-1]
    if first_unstable is not None and first_unstable <= first_dirty:
        return (f"nothing to clean: a transaction open since offset {first_unstable} holds the cleaner below the "
                "last stable offset (a marker, or `kafka-transactions.sh abort`, releases it)")
    if lagging is not None and lagging <= first_dirty:
        return (f"nothing to clean: the dirty segments are younger than min.compaction.lag.ms="
                f"{opts.min_compaction_lag_ms}; --min-compaction-lag-ms or --now changes that")
    if not opts.include_active and active.base_offset <= first_dirty:
        return (f"nothing to clean: every dirty record is in the active segment {os.path.basename(active.segment.log)} "
                f"(offsets {first_dirty}..{leo - 1}), which Kafka never cleans; --include-active cleans it too")
    return "nothing to clean: the dirty section is empty or uncleanable"


def _link_copy(src: str, dst: str, *, symlinks: bool = False) -> None:
    """Hard-link (or copy; ``symlinks``: symbolically link) the partition's files: compaction only
    ever renames, creates and removes files, so the input's inodes are never written."""
    os.makedirs(dst)
    for n in os.listdir(src):
        p = os.path.join(src, n)
        if os.path.isfile(p):
            if symlinks:
                os.symlink(p, os.path.join(dst, n))
                continue
            try:
                os.link(p, os.path.join(dst, n))
            except OSError:
                shutil.copy2(p, os.path.join(dst, n))


def _compact_in_place(pdir: str, tp, opts: CompactOptions, now: int, rep: CompactReport, backup=None) -> None:
    """LogCleaner's rounds over one partition until its dirty section is clean (or nothing can be)."""
    first = True
    while True:
        pd = Partition.scan(pdir)
        segs, state, aborted, active, records = _survey(pd, opts, now)
        if first:
            rep.stats.records_before = records
            rep.stats.bytes_before = sum(s.size for s in segs)
        if not segs:
            return
        leo = segs[-1].next_offset
        ck = None if opts.ignore_checkpoint and first else _read_cleaner_checkpoint(pdir, tp)
        first_dirty, uncleanable, lagging = _cleanable_range(segs, state, ck, opts, now)
        if first:
            rep.first_dirty_offset, rep.first_uncleanable_offset = first_dirty, uncleanable
            rep.dirty_ratio_before = _dirty_ratio(segs, first_dirty, uncleanable)
            if opts.max_compaction_lag_ms is not None:
                overdue = [s.base_offset for s in segs if s.base_offset >= first_dirty and _largest_ts(s) < now - opts.max_compaction_lag_ms]
                if overdue:
                    rep.notes.append(f"segments past max.compaction.lag.ms: {overdue} (Kafka would clean this log now)")
        if uncleanable <= first_dirty:
            if first:
                rep.notes.append(_why_nothing_to_clean(segs, first_dirty, ck, leo, state.first_unstable_offset(),
                                                       lagging, opts))
                rep.end_offset = first_dirty
                rep.stats.records_after, rep.stats.bytes_after = records, rep.stats.bytes_before
            rep.dirty_ratio_after = _dirty_ratio(segs, rep.end_offset, uncleanable)
            return
        # room for every record of the log (an upper bound on its keys) to start with; the map grows
        # with the keys put, within the dedupe buffer
        # (the start is bounded by the bytes too, and by a million slots: the map grows from there)
        start = min(int(records / 0.9), sum(s.size for s in segs) // 7, 1 << 20)
        omap = OffsetMap(max(16, start + 16), opts.dedupe_buffer_bytes // 25)
        _build_offset_map(segs, first_dirty, uncleanable, aborted, omap)
        rep.offset_map_bytes = max(rep.offset_map_bytes, omap.memory_bytes)
        end = omap.latest_offset + 1
        if end <= first_dirty:  # LogCleaner.buildOffsetMap: not one segment's keys fit
            rep.problems.append(Problem(segs[0].segment.log, None, first_dirty, "offset-map-full",
                                        f"the offset map ({omap.memory_bytes} bytes) cannot hold the keys of the "
                                        "first dirty batch: raise --dedupe-buffer-bytes"))
            return
        clean_upto = [s for s in segs if s.next_offset <= first_dirty]
        legacy_horizon = (clean_upto[-1].segment.last_modified() * 1000 - opts.delete_retention_ms) if clean_upto else 0
        rnd = _CleanRound(omap, _TxnMetadata(aborted), active, uncleanable, now, opts, CompactStats(), legacy_horizon,
                          backup)
        _clean_round(pdir, tp, segs, end, rnd, rep)
        first = False
        if end >= uncleanable:
            new_sizes = [s for s in segs if s.base_offset >= end]
            clean_bytes = rnd.stats.bytes_after
            dirty_bytes = sum(s.size for s in new_sizes if s.base_offset < uncleanable)
            rep.dirty_ratio_after = dirty_bytes / (clean_bytes + dirty_bytes) if clean_bytes + dirty_bytes else 0.0
            return


def _cleanable_range(segs, state, ck, opts: CompactOptions, now: int) -> tuple[int, int, int | None]:
    """LogCleanerManager.cleanableOffsets: (first dirty offset, first uncleanable offset, the base of the
    segment min.compaction.lag.ms holds back or None)."""
    log_start, leo = segs[0].base_offset, segs[-1].next_offset
    first_dirty = ck if ck is not None and log_start <= ck <= leo else log_start
    candidates = [state.first_unstable_offset() or leo]
    if not opts.include_active:
        candidates.append(segs[-1].base_offset)
    lagging = None
    if opts.min_compaction_lag_ms > 0:
        for s in segs[:-1] if not opts.include_active else segs:
            if s.next_offset > first_dirty and _largest_ts(s) > now - opts.min_compaction_lag_ms:
                candidates.append(s.base_offset)
                lagging = s.base_offset
                break
    uncleanable = max(first_dirty, min(candidates))
    # round down to the base offset of the segment that holds it (calculateCleanableBytes)
    holder = [s.base_offset for s in segs if s.base_offset <= uncleanable and (uncleanable < s.next_offset or s is segs[-1])]
    if holder and uncleanable < leo:
        uncleanable = holder[-1]
    return first_dirty, uncleanable, lagging


def _clean_round(pdir: str, tp, segs, end: int, rnd: _CleanRound, rep: CompactReport) -> None:
    """One round: every group of the segments below ``end`` cleaned and swapped in, the cleaner
    checkpoint at ``end``, stray snapshots dropped, the round's counts added to ``rep``."""
    clean_segs = [s for s in segs if s.base_offset < end]
    for g in _group_segments(clean_segs, rnd.opts.segment_bytes, rnd.opts.max_index_bytes, rnd.upper):
        cleaned = _clean_group(pdir, g, rnd)
        _swap(pdir, g, cleaned, rnd.backup)
        rep.groups.append([os.path.basename(s.segment.log) for s in g])
    _write_cleaner_checkpoint(pdir, tp, end, rnd.backup)
    # producer snapshots of segments that no longer exist are stray now (Kafka drops them)
    bases = {s.base_offset for s in Partition.scan(pdir).segments}
    for s in segs:
        p = os.path.join(pdir, file_name(s.base_offset, SNAPSHOT))
        if s.base_offset not in bases and os.path.exists(p):
            fsutil.remove_file(p, backup_dir=rnd.backup)
    st, round_stats = rep.stats, rnd.stats
    for k in ("tombstones_kept", "tombstones_removed", "aborted_records_removed", "keyless_records_removed",
              "markers_kept", "markers_removed", "batches_emptied", "batches_removed"):
        setattr(st, k, getattr(st, k) + getattr(round_stats, k))
    rep.rounds += 1
    rep.end_offset = end
    untouched = [s for s in segs if s.base_offset >= end]
    st.records_after = round_stats.records_after + sum(s.records for s in untouched)
    st.bytes_after = round_stats.bytes_after + sum(s.size for s in untouched)
