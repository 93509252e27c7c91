"""Which segments and byte ranges of a fleet a scan reads: the filters Spark pushes into the
``kafka_segments`` source (topic, partition, offset and timestamp bounds, keys) turned into
skipped segments and start and end points found through each segment's ``.index`` and
``.timeindex``, the way Kafka's own lookups use them.

Offsets: a segment holds the offsets from its base up to the next segment's base; inside it, the
offset index gives the position of the batch to start from (``OffsetIndex.lookup``).

Timestamps: a time index entry ``(t, o)`` says no record up to offset ``o`` has a timestamp over
``t`` (it is the running maximum of the batches' max timestamps), so reading can start after the
last entry below the window's start -- that is exact.  A window's *end* has no such guarantee: a
record appended later may carry an older timestamp.  The end is pruned under a stated bound on
that disorder, ``disorder_ms`` (default one hour, Kafka's default for how far ahead of the broker's
clock a producer's timestamp may be, ``log.message.timestamp.after.max.ms``): once the running
maximum passes ``end + disorder_ms`` no later record is read.  ``disorder_ms = -1`` turns the end
pruning off, so that a window finds late records anywhere.  Pruning trusts the index files
(``kfx verify`` checks them, ``kfx reindex`` rebuilds them); Spark still applies every filter to
the rows, so pruning only ever decides what is read, never what a row says.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from specs.lazy import lazy

#: Spark's filter classes, for the filters Spark pushes (planning a scan never needs pyspark otherwise)
datasource = lazy("pyspark.sql.datasource", globals())

#: the default bound on timestamp disorder used to prune a window's end (ms)
DEFAULT_DISORDER_MS = 3_600_000

#: columns whose bounds prune, by level: (offset columns giving a lower bound, upper bound, ...)
_LOW_OFFSET = {"offset", "lastOffset"}
_HIGH_OFFSET = {"offset", "baseOffset"}
_TIMESTAMP = {"timestamp", "maxTimestamp"}


@dataclass
class Bounds:
    """What the pushed filters allow (None: anything)."""
    topics: set | None = None
    partitions: set | None = None
    offset_lo: int | None = None
    offset_hi: int | None = None
    ts_lo: int | None = None
    ts_hi: int | None = None
    keys: set | None = None
    disorder_ms: int = DEFAULT_DISORDER_MS

    @property
    def ts_stop(self) -> int | None:
        """Past this running maximum timestamp no record of the window can follow."""
        if self.ts_hi is None or self.disorder_ms < 0:
            return None
        return self.ts_hi + self.disorder_ms

    def wants(self, topic, partition) -> bool:
        return ((self.topics is None or topic in self.topics)
                and (self.partitions is None or partition in self.partitions))

    def batch_wanted(self, b) -> bool:
        """Can batch ``b`` hold a record of the timestamp window (by its header alone)?"""
        if self.ts_lo is not None and b.magic > 0 and b.max_timestamp < self.ts_lo:
            return False
        return True


def _intersect(current: set | None, values) -> set:
    values = set(values)
    return values if current is None else current & values


def _as_key(v):
    if isinstance(v, str):
        return v.encode("utf-8")
    return bytes(v) if isinstance(v, (bytes, bytearray, memoryview)) else None


def bounds_from_filters(filters, disorder_ms: int = DEFAULT_DISORDER_MS) -> Bounds:
    """Pruning bounds from Spark's pushed filters (``pyspark.sql.datasource`` Filter objects: an
    ``attribute`` tuple and a ``value``); filters on other columns are ignored here."""
    b = Bounds(disorder_ms=disorder_ms)
    for f in filters:
        if len(getattr(f, "attribute", ())) != 1:
            continue
        col, v = f.attribute[0], getattr(f, "value", None)
        if isinstance(f, (datasource.EqualTo, datasource.In)):
            values = v if isinstance(f, datasource.In) else (v,)
            if col == "topic":
                b.topics = _intersect(b.topics, values)
            elif col == "partition":
                b.partitions = _intersect(b.partitions, values)
            elif col == "key":
                keys = [_as_key(x) for x in values]
                if None not in keys:
                    b.keys = _intersect(b.keys, keys)
            elif col == "offset" and all(isinstance(x, int) for x in values):
                b.offset_lo = max(min(values), b.offset_lo if b.offset_lo is not None else min(values))
                b.offset_hi = min(max(values), b.offset_hi if b.offset_hi is not None else max(values))
            continue
        if not isinstance(v, int) or isinstance(v, bool):
            continue
        if isinstance(f, (datasource.GreaterThan, datasource.GreaterThanOrEqual)):
            lo = v + 1 if isinstance(f, datasource.GreaterThan) else v
            if col in _LOW_OFFSET:
                b.offset_lo = lo if b.offset_lo is None else max(b.offset_lo, lo)
            elif col in _TIMESTAMP:
                b.ts_lo = lo if b.ts_lo is None else max(b.ts_lo, lo)
        elif isinstance(f, (datasource.LessThan, datasource.LessThanOrEqual)):
            hi = v - 1 if isinstance(f, datasource.LessThan) else v
            if col in _HIGH_OFFSET:
                b.offset_hi = hi if b.offset_hi is None else min(b.offset_hi, hi)
            elif col == "timestamp":
                b.ts_hi = hi if b.ts_hi is None else min(b.ts_hi, hi)
    return b


@dataclass
class SegmentIndexes:
    """A segment's ``.index`` entries (last offset of a batch, its position) and ``.timeindex``
    entries (running max timestamp, offset), as lists; empty when the file is missing."""
    base: int
    offsets: list = field(default_factory=list)
    times: list = field(default_factory=list)


@dataclass
class Range:
    """The part of a segment a scan reads: bytes ``[start, end)`` (end None: to the file's end)
    and the offsets to keep (``first_offset``..``last_offset``)."""
    start: int = 0
    end: int | None = None
    first_offset: int | None = None
    last_offset: int | None = None


def segment_range(bounds: Bounds, base: int, next_base: int | None, load, prior_max_ts: int | None):
    """The :class:`Range` of a segment based at ``base`` (the partition's next segment at
    ``next_base``, None for the last) that can hold wanted records, or None to skip it.
    ``load()`` returns its :class:`SegmentIndexes` (called only when an index is needed);
    ``prior_max_ts`` is the largest timestamp of the partition's earlier segments.
    Returns (range or None, this segment's largest timestamp when known)."""
    if bounds.offset_hi is not None and base > bounds.offset_hi:
        return None, None
    if bounds.offset_lo is not None and next_base is not None and next_base <= bounds.offset_lo:
        return None, None
    stop = bounds.ts_stop
    if stop is not None and prior_max_ts is not None and prior_max_ts > stop:
        return None, None
    r = Range(first_offset=bounds.offset_lo, last_offset=bounds.offset_hi)
    if r.first_offset is None and bounds.ts_lo is None and stop is None:
        return r, None
    ix = load()
    times = ix.times
    # a rolled segment's time index ends with its largest timestamp; the last one's may lag
    seg_max = times[-1][0] if times and next_base is not None else None
    if bounds.ts_lo is not None and times:
        if seg_max is not None and seg_max < bounds.ts_lo:
            return None, seg_max
        i = bisect.bisect_left([t for t, _o in times], bounds.ts_lo) - 1
        if i >= 0:  # every record up to times[i]'s offset is older than the window
            after = times[i][1] + 1
            r.first_offset = after if r.first_offset is None else max(r.first_offset, after)
    if stop is not None and times:
        j = next((k for k, (t, _o) in enumerate(times) if t > stop), None)
        if j is not None:  # nothing after that entry's offset can be in the window
            r.last_offset = times[j][1] if r.last_offset is None else min(r.last_offset, times[j][1])
    offsets = ix.offsets
    if r.first_offset is not None and offsets:
        k = bisect.bisect_right([o for o, _p in offsets], r.first_offset) - 1
        if k >= 0:
            r.start = offsets[k][1]
    if r.last_offset is not None and offsets:
        # the batch after an indexed batch ending at or past last_offset starts past it
        k = next((k for k in range(1, len(offsets)) if offsets[k - 1][0] >= r.last_offset), None)
        if k is not None:
            r.end = offsets[k][1]
    return r, seg_max
