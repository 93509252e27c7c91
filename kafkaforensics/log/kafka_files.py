"""Whether an index file or producer snapshot is one the log dir's Kafka generation would write.

Kafka's recovery writes deterministic indexes (:mod:`.indexing` builds them byte for byte), but its
append path did not always write the same ones (:mod:`.kafka_rules`): before 4.1 an append of several
batches (a follower's fetch, the cleaner) made at most one entry, at the append's first batch, holding
the append's largest offset (before 2.0: its first offset); a leader's time-index entry for
uncompressed batches named the record holding the max timestamp up to 3.6, the append's last offset in
3.7.  Such files are no damage: :func:`kept_as_written` says whether a file is one of them, checking
what does not depend on how the batches were grouped into appends:

* offset index: entries at batch starts, offsets and positions increasing, each more than
  ``index.interval.bytes`` past the one before (the first past the segment start); each entry's offset is
  the last offset of a batch from its own up to the next entry's (an append's largest), or, where
  the rules allow it, its batch's base offset;
* time index: timestamps increasing, offsets not decreasing; each timestamp is the running max
  timestamp at some batch, and its offset the last offset of the first batch reaching it, or where
  the rules allow it the offset of that batch's first record with the timestamp ("record") or the
  last offset of a later batch the max still holds at ("append").

A preallocated zero tail, an entry past the valid bytes or anything else is not what Kafka writes.
Fewer entries than recovery would make cannot be told from long appends (a follower's fetch, a
cleaner's chunk, up to their configured sizes), and a sparser index still finds every offset: such
an index is kept.

Producer snapshots: Kafka writes the entries in its map's order, so :func:`snapshot_kept` compares
them as a set; from 2.4 (KAFKA-7190) a snapshot also keeps producers whose batches all lie below the
log start, which a rebuild from the batches cannot see.
"""
from __future__ import annotations

import bisect

from kafkaforensics.errors import KafkaFormatError
from kafkaforensics.log.kafka_rules import AppliedRules
from kafkaforensics.log.segment import INDEX, INDEX_BY_SUFFIX, Segment
from kafkaforensics.log.producer_state import read_snapshot, snapshot_bytes
from kafkaforensics.records.batch import resolve_legacy_wrapper


def append_path_differs(rules: AppliedRules) -> bool:
    """Whether a generation in ``rules`` may have written indexes recovery would not write."""
    return ("append" in rules.possible("index-entries-per")
            or rules.possible("time-index-offset") != ["batch"])


class _HeaderColumns:
    """The batch headers of a segment's valid prefix as columns (position, size, base and last offset,
    max timestamp and its running max), and the batches themselves on demand: what an index is
    compared with (no segment of its own: the walk is the segment's)."""

    def __init__(self, walk, valid_bytes: int):
        """From the segment's ``walk`` (its batches stay readable while the walk's block is open)."""
        self.pos, self.size, self.base, self.last, self.max_ts = [], [], [], [], []
        self.batch = {}
        for b in walk:
            if b.position + b.size > valid_bytes:
                break
            self.pos.append(b.position)
            self.size.append(b.size)
            self.base.append(b.base_offset)
            self.last.append(b.last_offset)
            self.max_ts.append(b.max_timestamp)
            self.batch[b.position] = b
        self.at = {p: i for i, p in enumerate(self.pos)}
        running, m = [], -1
        for t in self.max_ts:
            m = max(m, t)
            running.append(m)
        self.running = running

    def first_base(self, i: int) -> int:
        b = self.batch[self.pos[i]]
        if b.magic < 2 and b.count is None:
            resolve_legacy_wrapper(b)
        return b.base_offset

    def record_offset(self, i: int, ts: int) -> int | None:
        """The offset of the first record of uncompressed batch ``i`` with timestamp ``ts``."""
        b = self.batch[self.pos[i]]
        if b.magic < 1 or b.compression != 0:
            return None
        for r in b.records():
            if r.timestamp == ts:
                return r.offset
        return None


def _offset_index_fits(entries, bs: _HeaderColumns, rules: AppliedRules, interval: int) -> bool:
    bases = rules.allows("offset-index-entry", "base")
    lasts = rules.allows("offset-index-entry", "last")
    prev_pos, prev_off = 0, None
    for k, (off, pos) in enumerate(entries):
        i = bs.at.get(pos)
        if i is None or pos - prev_pos <= interval or (prev_off is not None and off <= prev_off):
            return False
        nxt = bs.at.get(entries[k + 1][1], len(bs.pos)) if k + 1 < len(entries) else len(bs.pos)
        j = bisect.bisect_left(bs.last, off, i, max(i + 1, nxt))
        ok = lasts and j < max(i + 1, nxt) and bs.last[j] == off
        if not ok and bases:
            ok = off == bs.first_base(i)
        if not ok:
            return False
        prev_pos, prev_off = pos, off
    return True


def _time_index_fits(entries, bs: _HeaderColumns, rules: AppliedRules) -> bool:
    record = rules.allows("time-index-offset", "record")
    append = rules.allows("time-index-offset", "append")
    prev_t, prev_o = None, None
    for t, off in entries:
        if prev_t is not None and (t <= prev_t or off < prev_o):
            return False
        k = bisect.bisect_left(bs.running, t)
        if k == len(bs.running) or bs.running[k] != t:
            return False
        ok = off == bs.last[k]
        if not ok and record:
            ok = off == bs.record_offset(k, t)
        if not ok and append:
            end = bisect.bisect_right(bs.running, t)   # the batches the max still holds at
            j = bisect.bisect_left(bs.last, off, k, end)
            ok = j < end and bs.last[j] == off
        if not ok:
            return False
        prev_t, prev_o = t, off
    return True


def kept_as_written(target: str, suffix: str, seg_log: str, base: int, valid_bytes: int,
                    rules: AppliedRules, interval: int) -> bool:
    """Whether the index file ``target`` (``.index`` or ``.timeindex`` of the segment ``seg_log``,
    whose first ``valid_bytes`` are kept) is one a Kafka of ``rules`` would have written."""
    kind = INDEX_BY_SUFFIX.get(suffix)
    if kind is None or not kind.preallocated or not append_path_differs(rules):
        return False
    try:
        with open(target, "rb") as f:
            data = f.read()
        module = kind.module
        if len(data) % module.ENTRY_SIZE:
            return False
        entries, zero_tail = module.read_entries(data, base)
        if zero_tail:
            return False
        with Segment.of_file(seg_log, base).walk() as walk:
            bs = _HeaderColumns(walk, valid_bytes)
            if suffix == INDEX:
                return _offset_index_fits(entries, bs, rules, interval)
            return _time_index_fits(entries, bs, rules)
    except (OSError, KafkaFormatError, ValueError):
        return False


def snapshot_kept(path: str, rebuilt: bytes, log_start: int, rules: AppliedRules) -> bool:
    """Whether the snapshot file ``path`` holds what Kafka would keep where kfx rebuilt ``rebuilt``:
    the same entries in any order, plus (2.4+) producers last seen below ``log_start``."""
    try:
        with open(path, "rb") as f:
            have = {e.producer_id: e for e in read_snapshot(f.read(), file=path)}
        want = {e.producer_id: e for e in read_snapshot(rebuilt)}
    except (OSError, KafkaFormatError):
        return False
    if any(have.get(pid) != e for pid, e in want.items()):
        return False
    extra = [e for pid, e in have.items() if pid not in want]
    return not extra or (rules.write("producers-below-log-start") == "keep"
                         and all(e.last_offset < log_start for e in extra))


def evict_below(snapshot: bytes, log_start: int) -> bytes:
    """``snapshot`` without the producers whose last batch lies below ``log_start`` (what Kafka up to
    2.3 keeps: ProducerStateManager.isProducerRetained)."""
    entries = read_snapshot(snapshot)
    kept = [e for e in entries if e.last_offset >= log_start]
    return snapshot if len(kept) == len(entries) else snapshot_bytes(kept)


def expire_below(snapshot: bytes, log_start: int, now_ms: int, expiry_ms: int) -> bytes:
    """``snapshot`` without the producers last seen below ``log_start`` that have expired at ``now_ms``:
    no open transaction and ``now_ms - last timestamp >= expiry_ms`` (ProducerStateManager.isProducerExpired;
    2.4+ keeps a producer below the log start only until then, KAFKA-7190)."""
    entries = read_snapshot(snapshot)
    kept = [e for e in entries if e.last_offset >= log_start or e.current_txn_first_offset >= 0
            or now_ms - e.timestamp < expiry_ms]
    return snapshot if len(kept) == len(entries) else snapshot_bytes(kept)
