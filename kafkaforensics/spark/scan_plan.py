"""Which segments and byte ranges of a fleet a scan reads: the filters Spark pushes into the
``kafka_segments`` source (topic, partition, offset and timestamp bounds, keys) turned into
skipped segments and start and end points found through each segment's ``.index`` and
``.timeindex``, the way Kafka's own lookups use them.

Offsets: a segment holds the offsets from its base up to the next segment's base; inside it, the
offset index gives the position of the batch to start from (``OffsetIndex.lookup``).

Timestamps: a time index entry ``(t, o)`` says no record up to offset ``o`` has a timestamp over
``t`` (it is the running maximum of the batches' max timestamps), so reading can start after the
last entry below the window's start, and a batch whose ``maxTimestamp`` is below the window's start
is skipped -- both exact.  Nothing else about Kafka timestamps is ordered: a record appended later
may carry an older timestamp (a replay, a producer's clock), so by default a window's *end* prunes
nothing.  ``disorder_ms`` (opt-in: ``timestampDisorderMs``; -1, the default, means no bound) states
a bound on that disorder: once the running maximum passes ``end + disorder_ms`` no later record is
read -- which loses any record later than the bound.  Pruning trusts the time index; where the
offset index says to start or stop, the batch there must bear it out, else that end of the
segment is read whole (:func:`segment_range`; ``kfx verify`` checks both indexes, ``kfx reindex``
rebuilds them); every filter is still applied to the rows, so pruning only ever decides what is
read, never what a row says.

Fleets: :func:`layout` sorts one listing of the inputs into log dirs (their broker and cluster ids
from ``meta.properties``), partition dirs (empty ones included), segments and stray files (names
Kafka never writes in a log dir or partition dir); :func:`pack` groups the pieces to read into scan
partitions the way Spark's own file sources do (``maxPartitionBytes``, ``openCostInBytes``).
"""
from __future__ import annotations

import bisect
import datetime
from dataclasses import dataclass, field
from typing import NamedTuple

from specs import checkpoints as C
from specs.lazy import lazy

from kafkaforensics.log import load_walk
from kafkaforensics.log.checkpoint_file import CHECKPOINT_BEYOND_LOG_END, past_log_end
from kafkaforensics.log.kafka_rules import AppliedRules
from kafkaforensics.log.kafka_version import kafka_version
from kafkaforensics.log.partition import LogDir, partition_dir_state, partition_of_dir_name
from kafkaforensics.log.paths import LOG_DIR_FILES
from kafkaforensics.log.segment import KRAFT_SNAPSHOT_FILE_RE, LOG, is_family_file, offset_of_file_name

#: Spark's filter classes, for the filters Spark pushes (planning a scan never needs pyspark otherwise)
datasource = lazy("pyspark.sql.datasource", globals())

#: the default bound on timestamp disorder used to prune a window's end: none (-1), pruning is exact
DEFAULT_DISORDER_MS = -1

#: columns whose bounds prune, by level: (offset columns giving a lower bound, upper bound, ...)
_LOW_OFFSET = {"offset", "lastOffset"}
_HIGH_OFFSET = {"offset", "baseOffset"}
_TIMESTAMP = {"timestamp", "maxTimestamp"}
#: the TIMESTAMP columns beside epoch-ms ones: a bound on one prunes as the same instant in ms would
_UTC_OF = {"timestampUtc": "timestamp", "maxTimestampUtc": "maxTimestamp"}
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


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


def bounds_from_options(options) -> Bounds:
    """The window a scan's checked options ask for (:func:`~kafkaforensics.spark.spark_source.read_options`):
    ``topics`` (comma-separated) and ``partitions``, ``fromOffset``/``toOffset`` (inclusive),
    ``fromTimestamp`` (inclusive) and ``toTimestamp`` (exclusive, epoch ms), ``timestampDisorderMs``.
    Unlike pushed filters these apply at every level, the scan level included; the reader keeps only
    the rows inside them."""
    disorder = options["timestampDisorderMs"]
    b = Bounds(disorder_ms=DEFAULT_DISORDER_MS if disorder is None else disorder)
    if options["topics"]:
        b.topics = {t for t in options["topics"].split(",") if t}
    if options["partitions"]:
        b.partitions = set(options["partitions"])
    b.offset_lo, b.offset_hi, b.ts_lo = options["fromOffset"], options["toOffset"], options["fromTimestamp"]
    to = options["toTimestamp"]
    b.ts_hi = None if to is None else to - 1
    return b


def merge(a: Bounds, b: Bounds) -> Bounds:
    """What both ``a`` and ``b`` allow."""
    def lo(x, y):
        return y if x is None else x if y is None else max(x, y)

    def hi(x, y):
        return y if x is None else x if y is None else min(x, y)

    def both(x, y):
        return y if x is None else x if y is None else x & y
    return Bounds(both(a.topics, b.topics), both(a.partitions, b.partitions), lo(a.offset_lo, b.offset_lo),
                  hi(a.offset_hi, b.offset_hi), lo(a.ts_lo, b.ts_lo), hi(a.ts_hi, b.ts_hi), both(a.keys, b.keys),
                  a.disorder_ms if b.disorder_ms < 0 else b.disorder_ms if a.disorder_ms < 0
                  else min(a.disorder_ms, b.disorder_ms))


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
            values: tuple = tuple(v or ()) if isinstance(f, datasource.In) else (v,)
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
        if col in _UTC_OF and isinstance(v, datetime.datetime) and v.tzinfo is not None:
            # Spark hands a TIMESTAMP bound as an aware datetime (microseconds): the epoch-ms bound
            # that keeps the same rows (ceiling for >= and <, floor for > and <=); a naive one, never
            # seen, is not guessed at. Not applied exactly (Spark filters the rows again): it prunes
            micros = (v - _EPOCH) // datetime.timedelta(microseconds=1)
            up = isinstance(f, (datasource.GreaterThanOrEqual, datasource.LessThan))
            col, v = _UTC_OF[col], -(-micros // 1000) if up else micros // 1000
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
class Range:
    """The part of a segment a scan reads: bytes ``[start, end)`` (end None: to the file's end)
    and the offsets to keep (``first_offset``..``last_offset``)."""
    start: int = 0
    end: int | None = None
    first_offset: int | None = None
    last_offset: int | None = None


def segment_range(bounds: Bounds, base: int, next_base: int | None, load, prior_max_ts: int | None,
                  base_offset_at=None):
    """The :class:`Range` of a segment based at ``base`` (the partition's next segment at
    ``next_base``, None for the last) that can hold wanted records, or None to skip it.
    ``load()`` returns its :class:`~kafkaforensics.log.indexing.SegmentIndexes` (``offsets``: the
    ``.index`` entries, offset and position; ``times``: the ``.timeindex`` entries, timestamp and
    offset; empty when a file is missing), called only when an index is needed;
    ``prior_max_ts`` is the largest timestamp of the partition's earlier segments;
    ``base_offset_at(position)`` reads the base offset of the batch at a position of the segment:
    where the offset index says to start or stop, the batch there must bear it out (one at or
    before the first offset wanted; one past the last), else the index is not trusted and that end
    of the segment is read whole -- a damaged or forged index never hides a record.
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
        after = next((k for k in range(1, len(offsets)) if offsets[k - 1][0] >= r.last_offset), None)
        if after is not None:
            r.end = offsets[after][1]
    if base_offset_at is not None:
        if r.start and r.first_offset is not None and not _starts_by(base_offset_at(r.start), base, r.first_offset):
            r.start = 0
        if r.end is not None:
            there = base_offset_at(r.end)
            if there is None or there <= r.last_offset:
                r.end = None
    return r, seg_max


def _starts_by(found: int | None, base: int, first_offset: int) -> bool:
    """Whether a batch based at ``found`` can start the reading of offsets from ``first_offset`` in a
    segment based at ``base``: it lies in the segment and holds no offset after the first wanted."""
    return found is not None and base <= found <= first_offset


# ---------------------------------------------------------------------------------- fleets ----
class Source(NamedTuple):
    """Where a row comes from: the log dir, its broker (node) id and cluster id from its
    ``meta.properties`` (None where it has none), the topic and partition of the partition dir."""
    log_dir: str
    broker_id: int | None
    cluster_id: str | None
    topic: str | None
    partition: int | None
    dir_name: str | None = None   # the partition dir's own name (a -delete/-future/-stray copy's too)
    tier: str = "local"           # "remote": a partition of a remote tier (spark/remote_inputs.py)


#: what Kafka writes in a partition dir besides the segment family (``<offset>.log`` and kin)
PARTITION_DIR_FILES = frozenset((C.LEADER_EPOCH_FILE, C.PARTITION_METADATA_FILE, "quorum-state"))


def _known(name: str, names: frozenset) -> bool:
    return name in names or (name.endswith(".tmp") and name[:-4] in names)


@dataclass
class PlanStep:
    """One step of a scan plan, one thing a scan partition reads: ``segment`` bytes ``[start, end)`` of a ``.log`` (``last``:
    to the file's end; ``first``: the first piece the scan reads of the segment) keeping offsets
    ``first_offset``..``last_offset``; ``partition``, a partition
    dir's own row (so that an empty one is seen; ``first_offset``: the log end of one without segments,
    :attr:`Layout.empty_ends`); ``stray``, a file Kafka does not write there; ``lost``,
    a checkpoint (``uri``) past the log end of a partition dir whose log is gone (its offset ``first_offset``)."""
    kind: str
    uri: str
    src: Source
    size: int = 0
    start: int = 0
    end: int = 0
    last: bool = True
    first_offset: int | None = None
    last_offset: int | None = None
    base: int | None = None          # the segment's base offset
    next_base: int | None = None     # the partition's next segment's base offset (None: the last one)
    note: str | None = None          # why a ``bad-meta`` piece's meta.properties was not understood; a ``lost`` one's "kind: detail"
    first: bool = True

    @property
    def bytes(self) -> int:
        return self.end - self.start if self.kind == "segment" else 0


@dataclass
class Layout:
    """A fleet's listing sorted out: partition dirs (dir -> Source), each one's segments
    [(base, uri, size)], stray files [(uri, size, Source)], and log dirs whose
    ``meta.properties`` could not be read (dir -> why), partition dirs with no segment whose log
    dir's checkpoints put them past their log end (dir -> [(checkpoint uri, offset, kind, detail)]), and
    the log end Kafka's load gives each partition dir with no segment (dir -> offset)."""
    partitions: dict = field(default_factory=dict)
    segments: dict = field(default_factory=dict)
    strays: list = field(default_factory=list)
    bad_meta: dict = field(default_factory=dict)
    lost: dict = field(default_factory=dict)
    empty_ends: dict = field(default_factory=dict)


def _split(uri: str) -> tuple[str, str]:
    """``posixpath.split`` of a listed URI (no trailing slash), without its per-call overhead: a
    fleet lists tens of thousands."""
    i = uri.rfind("/") + 1
    head = uri[:i]
    if head and head != "/" * len(head):
        head = head.rstrip("/")
    return head, uri[i:]


def segment_base(name: str) -> int | None:
    """The base offset a segment's file name gives (``<20-digit offset>.log``); None for any other."""
    return offset_of_file_name(name) if name.endswith(LOG) else None


def _ancestors(d: str):
    """The dirs above ``d``, nearest first (a listed URI's, up to its root or bucket)."""
    while True:
        head, name = _split(d)
        if not name or not head or head == d:
            return
        yield head
        d = head


def layout(entries, read_file) -> Layout:
    """Sort ``entries`` -- (uri, size, is_dir) of one listing of the inputs -- into a
    :class:`Layout`; ``read_file(uri)`` reads a file of the store (bytes or text; None: none), which
    each log dir's :class:`~kafkaforensics.log.partition.LogDir` reads its own files through."""
    files = [(u, s, *_split(u)) for u, s, d in entries if not d]   # (uri, size, dir, name)
    dirs = {u.rstrip("/") for u, _s, d in entries if d}
    dirs |= {d for _u, _s, d, _n in files}
    split_dirs = {d: _split(d) for d in dirs}
    named = {d: partition_of_dir_name(name) for d, (_head, name) in split_dirs.items()}
    metas = {u for u, _s, _d, n in files if LogDir.is_meta_properties(n)}
    # a partition dir holds Kafka's files itself: a dir with a partition dir, a segment or a
    # meta.properties further down is none, whatever its name (a log dir called kafka-logs-1, a
    # fleet's broker-3); a subdir holding anything else (a stray) leaves it a partition dir
    above_kafka = set()
    for d in [d for d, tp in named.items() if tp] + [d for _u, _s, d, n in files
                                                     if LogDir.is_meta_properties(n) or segment_base(n) is not None]:
        for up in _ancestors(d):
            if up in above_kafka:
                break
            above_kafka.add(up)
    meta_dirs = {_split(u)[0] for u in metas}
    part_dirs = {d: (split_dirs[d][0], tp) for d, tp in named.items()
                 if tp and d not in above_kafka and d not in meta_dirs}
    log_dirs = {head for head, _tp in part_dirs.values()} | meta_dirs
    out = Layout()
    ids = {}
    for ld in sorted(log_dirs):
        log_dir = LogDir.over(read_file, ld)
        try:
            ids[ld] = log_dir.identity() if log_dir.meta_properties_file in metas else (None, None)
        except ValueError as e:
            ids[ld] = (None, None)
            out.bad_meta[ld] = f"{log_dir.meta_properties_file}: {e}"
    for d in sorted(part_dirs):
        ld, (topic, partition) = part_dirs[d]
        out.partitions[d] = Source(ld, *ids.get(ld, (None, None)), topic, partition, split_dirs[d][1])
        out.segments[d] = []
    for uri, size, d, name in sorted(files):
        base = segment_base(name)
        if d in part_dirs:
            if base is not None:
                out.segments[d].append((base, uri, size))
            elif not (is_family_file(name) or KRAFT_SNAPSHOT_FILE_RE.match(name)
                      or _known(name, PARTITION_DIR_FILES)):
                out.strays.append((uri, size, out.partitions[d]))
        elif d in log_dirs:
            if not _known(name, LOG_DIR_FILES):
                out.strays.append((uri, size, Source(d, *ids[d], None, None)))
        elif (home := next((up for up in _ancestors(d) if up in part_dirs or up in log_dirs), None)) is not None:
            # in a subdir Kafka never reads (a partition dir's, or a log dir's that is no partition dir)
            out.strays.append((uri, size, out.partitions[home] if home in part_dirs else Source(home, *ids[home], None, None)))
        elif base is not None:  # a segment outside any partition dir
            out.partitions.setdefault(d, Source(_split(d)[0], None, None, None, None))
            out.segments.setdefault(d, []).append((base, uri, size))
    for segs in out.segments.values():
        segs.sort()
    _logs_gone(out, read_file)
    return out


def _logs_gone(out: Layout, read_file) -> None:
    """Into ``out.empty_ends``: the log end of each partition dir with no segment; into ``out.lost``: the
    live ones that their log dir's recovery-point or log-start checkpoint puts past that log end
    (:func:`~kafkaforensics.log.checkpoint_file.past_log_end`, the rule verify applies; a high watermark
    past it is only a warning there, and no anomaly here).  That log end is the loader's
    (:func:`~kafkaforensics.log.load_walk.empty_log_end`): Kafka's LogLoader gives a log without segments
    an empty one at its checkpointed log start (at 0 before 2.3), by the rules of the generation that
    wrote the log dir (:func:`_load_rules`); a copy set aside ends at 0.  The checkpoints are those of the
    partition dir's parent, listed or not (a partition dir scanned alone too, as verify reads them), read
    through its :class:`~kafkaforensics.log.partition.LogDir` only when such a dir exists; one that
    cannot be read is verify's to report."""
    tables: dict[str, tuple[dict, AppliedRules]] = {}
    for d, src in out.partitions.items():
        if out.segments.get(d) or src.topic is None:
            continue
        if partition_dir_state(src.dir_name or "") != "live":
            # a copy set aside: LogLoader.load gives a -delete one an empty segment at 0 (no recoverLog);
            # verify and recover end every set-aside copy there (Kafka would load an empty -future or
            # -stray one at its checkpointed log start: a difference all three share)
            out.empty_ends[d] = 0
            continue
        log_dir = LogDir.over(read_file, src.log_dir)
        if src.log_dir not in tables:
            tables[src.log_dir] = (log_dir.checkpoints()[0], _load_rules(src.log_dir))
        checkpoints, rules = tables[src.log_dir]
        tp = (src.topic, src.partition)
        leo = out.empty_ends[d] = load_walk.empty_log_end(checkpoints.get(LogDir.LOG_START_OFFSET, {}).get(tp) or 0, rules)
        for name, table in checkpoints.items():
            off = table.get(tp)
            past = past_log_end(name, src.dir_name, off, leo)
            if past is not None and past[0] == CHECKPOINT_BEYOND_LOG_END:
                out.lost.setdefault(d, []).append((log_dir.file(name), off, *past))


def log_end_of_pieces(pieces, empty: int | None) -> int | None:
    """A partition's log end, as Kafka's load finds it, from the pieces of its segments a scan walked
    ((segment base offset, the piece's first byte, the offset after the last batch its walk kept or None,
    the damage that stopped the walk or None) each, in any order: a large segment is read in pieces,
    possibly by different tasks): each segment ends after the last batch kept up to the first piece whose
    walk stopped at damage (Kafka's recovery truncates the segment there; what a later piece read past it
    is not the log's), and the load's own rule folds the segments in base order
    (:func:`~kafkaforensics.log.load_walk.log_end`); ``empty`` for a partition with none.  The one
    function the inventory's ``logEndOffset`` is computed by, in pyarrow and on Spark's executors."""
    ends: dict[int, list] = {}   # base -> [next offset, stopped]
    for base, _position, next_offset, stop in sorted(pieces, key=lambda p: (p[0], p[1])):
        seg = ends.setdefault(base, [None, False])
        if seg[1]:
            continue
        if next_offset is not None:
            seg[0] = next_offset
        seg[1] = stop is not None
    return load_walk.log_end(((base, ends[base][0]) for base in sorted(ends)), empty)


def _load_rules(log_dir: str) -> AppliedRules:
    """The rules a load of ``log_dir``'s partitions applies: those of the generation that wrote it, as
    :class:`~kafkaforensics.log.log_loader.LogLoader` infers it, for a local log dir; a log dir in an
    object store says no generation (its files are not read for one), so it gets the newest rules, as a
    local one without evidence does."""
    if "://" in log_dir and not log_dir.startswith("file://"):
        return AppliedRules()
    return kafka_version(log_dir.removeprefix("file://")).rules()


#: Spark's default split size for its own file sources (spark.sql.files.maxPartitionBytes)
MAX_PARTITION_BYTES = 128 << 20
#: what opening a segment costs, in bytes read: measured (benchmarks/spark_group.py --profile) at
#: about 0.1 ms a small segment in the reader, the time of some 15 KiB of batches -- far below
#: Spark's 4 MiB for a Parquet file (footer, schema, row groups); 64 KiB leaves room for a remote
#: file system's request
OPEN_COST_BYTES = 64 << 10


def split_size(pieces, max_partition_bytes: int, open_cost: int, min_partitions: int) -> int:
    """How many bytes (a piece costing its bytes plus ``open_cost``) a scan partition takes, as
    Spark's ``FilePartition.maxSplitBytes``: ``maxPartitionBytes``, less when the scan is small
    enough that its cores would otherwise idle, but not under ``open_cost``."""
    total = sum(p.bytes + open_cost for p in pieces if p.kind == "segment")
    per_core = total // max(1, min_partitions)
    return min(max_partition_bytes, max(open_cost, per_core))


def pack(pieces, max_bytes: int, open_cost: int) -> list[list[PlanStep]]:
    """Consecutive pieces (in listing order: a partition's segments stay together) grouped into scan
    partitions of at most ``max_bytes`` of cost each (a single larger piece gets one of its own); a
    partition dir's row goes with the first piece after it."""
    out: list[list[PlanStep]] = []
    cur: list[PlanStep] = []
    cost = 0
    for p in pieces:
        c = p.bytes + open_cost if p.kind != "partition" else 0
        if cur and cost + c > max_bytes and any(q.kind != "partition" for q in cur):
            out.append(cur)
            cur, cost = [], 0
        cur.append(p)
        cost += c
    if cur:
        out.append(cur)
    return out
