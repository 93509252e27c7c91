"""Which Kafka generation does what: the one table kfx chooses a storage rule from.

Each :class:`Rule` is an area where Kafka's behaviour changed between releases, with the
behaviours in release order (``since`` inclusive, ``until`` exclusive, as (major, minor)) and the
Kafka source or JIRA that says so.  :class:`AppliedRules` is the table seen through a range of
versions (the one :mod:`.kafka_version` infers or is told): :meth:`~AppliedRules.possible` lists
the behaviours any version in the range has (what kfx accepts as already written by Kafka),
:meth:`~AppliedRules.write` the one kfx applies: where the versions of the range differ, the rule's safe
behaviour (the one that changes less; the newest for a file format), said in :meth:`~AppliedRules.note`.
The README's *Kafka generations* table is :func:`rules_markdown` (``tests/test_kafka_version.py``).
"""
from __future__ import annotations

from dataclasses import dataclass

Version = tuple  # (major, minor)

#: every feature release, oldest first (a range's upper bound is one of these); 0.10.1 (the time
#: index, KIP-33) is told from 0.10.0 as (0, 10, 1), 0.10.2 counting as it
RELEASES: tuple[Version, ...] = ((0, 8), (0, 9), (0, 10), (0, 10, 1), (0, 11), (1, 0), (1, 1)) + tuple(
    (2, m) for m in range(9)) + tuple((3, m) for m in range(10)) + tuple((4, m) for m in range(6))

OLDEST, NEWEST = RELEASES[0], RELEASES[-1]


def next_release(v: Version) -> Version | None:
    """The feature release after ``v`` (None past the newest known)."""
    later = [r for r in RELEASES if r > tuple(v)]
    return later[0] if later else None


def version_text(v: Version) -> str:
    return ".".join(str(x) for x in v)


def release_of(v: Version) -> Version | None:
    """The feature release (a RELEASES entry) version ``v`` (major, minor[, patch]) belongs to; None
    when kfx knows no such major.minor."""
    if tuple(v[:2]) not in {r[:2] for r in RELEASES}:
        return None
    return max(r for r in RELEASES if r <= tuple(v))


@dataclass(frozen=True)
class Behaviour:
    since: Version | None   # first release that does it (None: every release before ``until``)
    until: Version | None   # first release that no longer does it (None: still does)
    key: str                # what the code tests for
    says: str               # in words, for the table


@dataclass(frozen=True)
class Rule:
    area: str
    what: str
    behaviours: tuple[Behaviour, ...]
    source: str
    #: the behaviours that change less, best first: the first of them a range allows is taken when the
    #: range spans several behaviours (none allowed -- a file format -- : the newest is written)
    safe: tuple[str, ...] = ()
    #: whether kfx applies one behaviour (False: a check of every behaviour the range allows, never
    #: ambiguous)
    applied: bool = True


def _b(since, until, key, says) -> Behaviour:
    return Behaviour(since, until, key, says)


RULES: tuple[Rule, ...] = (
    Rule("offset-index-entry", "offset of an offset-index entry",
         (_b(None, (2, 0), "base", "the base offset of the batch (append: of its first batch), in appends and in recovery"),
          _b((2, 0), None, "last", "the last offset of the batch (append: the largest offset appended)")),
         "KAFKA-6264; LogSegment.append/recover (core/.../log/LogSegment.scala 1.1.1 vs 2.0.0)"),
    Rule("time-index-offset", "offset of a leader's time-index entry for uncompressed batches",
         (_b(None, (3, 7), "record", "the offset of the record holding the max timestamp (recovery, followers and compressed batches: the batch's last offset)"),
          _b((3, 7), (3, 8), "append", "the last offset of the append, which for a leader's v2 append is its one batch's (recovery and followers: the batch's last offset)"),
          _b((3, 8), None, "batch", "the last offset of the batch holding the max timestamp, everywhere")),
         "LogValidator.assignOffsetsNonCompressed 3.6.0 / 3.7.0 / 3.8.0 (a v2 append holds one batch: getFirstBatchAndMaybeValidateNoMoreBatches); KAFKA-16310"),
    Rule("index-entries-per", "index entries an append of several batches makes",
         (_b(None, (4, 1), "append", "at most one, at the append's first batch (followers and the cleaner append many batches at once), so an index sparser than recovery writes is accepted as that version's"),
          _b((4, 1), None, "batch", "one for each batch past index.interval.bytes, as recovery does")),
         "KAFKA-806 (apache/kafka#18012); LogSegment.append"),
    Rule("corrupt-index-below-recovery-point", "a corrupt .index/.timeindex below the recovery point at load",
         (_b(None, (2, 3), "rebuild", "fails the sanity check and its segment is recovered (indexes rebuilt)"),
          _b((2, 3), None, "keep", "is left as it is (indexes load lazily; only segments from the recovery point are recovered)")),
         "KAFKA-7283; LogSegment.sanityCheck 2.2.0 vs 2.3.0", safe=("keep",)),
    Rule("missing-timeindex", "a missing .timeindex next to an .index at load (and in recovery)",
         (_b(None, (0, 10, 1), "none", "is not created: 0.10.0 has no time index (nor does its recovery write one)"),
          _b((0, 10, 1), None, "create-empty", "is created empty (time indexes exist from 0.10.1, KIP-33)")),
         "KIP-33; LogSegment.sanityCheck(timeIndexFileNewlyCreated): timeIndex.resize(0)"),
    Rule("empty-log-segment", "the segment a log without segments gets at load, so its log end",
         (_b(None, (2, 3), "zero", "an empty one at offset 0, whatever log start offset is checkpointed (Log.loadSegments)"),
          _b((2, 3), None, "log-start", "an empty one at the checkpointed log start offset (LogLoader.recoverLog)")),
         "KAFKA-8306; Log.loadSegments 2.2.0 vs 2.3.0"),
    Rule("leftover-swap", "a leftover .swap segment at load",
         (_b(None, (3, 0), "recover", "is recovered: its index files deleted, its batches validated, indexes rebuilt, then renamed"),
          _b((3, 0), None, "rename", "is renamed as it is, index .swap files with it")),
         "KAFKA-12520; Log.loadSegmentFiles 2.8.0 vs LogLoader 3.0.0", safe=("rename",)),
    Rule("producers-below-log-start", "producers whose last batch lies below the log start offset",
         (_b(None, (2, 4), "evict", "are evicted at load and when the log start moves"),
          _b((2, 4), None, "keep", "are kept until they expire (see producer expiry below)")),
         "KAFKA-7190; ProducerStateManager.truncateHead 2.3.0 vs 2.4.0", safe=("keep",)),
    Rule("producer-expiry", "when a producer with no open transaction expires (loadFromSnapshot, removeExpiredProducers)",
         (_b(None, (3, 4), "transactional-id", "transactional.id.expiration.ms (default 604800000) after its last batch's timestamp"),
          _b((3, 4), None, "producer-id", "producer.id.expiration.ms (default 86400000) after its last batch's timestamp")),
         "KIP-854; ProducerStateManager.isProducerExpired", safe=("transactional-id",)),
    Rule("stray-snapshots", "producer snapshots at no segment's base offset",
         (_b(None, (2, 8), "keep", "are kept"),
          _b((2, 8), None, "remove", "are removed at load, but for the newest past the last segment's base")),
         "KAFKA-9393; ProducerStateManager.removeStraySnapshots", safe=("keep",)),
    Rule("suffix-dirs", "partition dirs with a suffix a broker knows (others stop its start: parseTopicPartitionName throws)",
         (_b(None, (1, 1), "delete", "-delete only"),
          _b((1, 1), (3, 7), "future", "-delete and -future (JBOD moves, KIP-113)"),
          _b((3, 7), None, "stray", "-delete, -future and -stray (KIP-858)")),
         "Log.parseTopicPartitionName 1.0.0 / 1.1.0; LocalLog.StrayDirSuffix 3.7.0", applied=False),
    Rule("files-since-0.11", "producer snapshots and log-start-offset-checkpoint (KIP-98, KIP-107)",
         (_b(None, (0, 11), "none", "are not written (0.10 has neither)"),
          _b((0, 11), None, "write", "are written at load (ProducerStateManager; LogManager.checkpointLogStartOffsets)")),
         "Log.scala 0.10.2.0 vs 0.11.0.0 (ProducerStateManager, logStartOffset)", safe=("none",)),
    Rule("recovery-point-unclean", "the recovery point a log gets at load after an unclean shutdown",
         (_b(None, (1, 0), "keep", "the checkpointed one is kept (recoverLog sets it only after a clean shutdown)"),
          _b((1, 0), (2, 8), "log-end", "the log end (recoverLog: recoveryPoint = activeSegment.nextOffset)"),
          _b((2, 8), None, "min", "the lower of the checkpointed one and the log end")),
         "KAFKA-10101; Log.recoverLog 0.11.0 / 1.0.0 / 2.8.0", safe=("keep", "min")),
    Rule("cleaner-tombstones", "when the cleaner drops tombstones and transaction markers",
         (_b(None, (3, 1), "segment-mtime", "once their segment was last modified before the delete horizon (last cleaned segment's mtime - delete.retention.ms)"),
          _b((3, 1), None, "delete-horizon", "once the delete horizon stamped in the batch header (now + delete.retention.ms, the first time kept) has passed; magic 0/1 keep the mtime rule")),
         "KIP-534 / KAFKA-8522; LogCleaner", safe=("delete-horizon",)),
)

BY_AREA = {r.area: r for r in RULES}


def _overlaps(b: Behaviour, low: Version, high: Version | None) -> bool:
    starts_before_high = high is None or b.since is None or tuple(b.since) < tuple(high)
    ends_after_low = b.until is None or tuple(b.until) > tuple(low)
    return starts_before_high and ends_after_low


@dataclass(frozen=True)
class AppliedRules:
    """The table for the Kafka versions in [low, high) (high None: no upper bound)."""
    low: Version = OLDEST
    high: Version | None = None

    def possible(self, area: str) -> list[str]:
        """The behaviours of ``area`` some version in the range has, oldest first."""
        return [b.key for b in BY_AREA[area].behaviours if _overlaps(b, self.low, self.high)]

    def allows(self, area: str, key: str) -> bool:
        return key in self.possible(area)

    def write(self, area: str) -> str:
        """The behaviour kfx applies: the one of every version in the range; where the range spans
        several, the rule's safe one (the one that changes less), else the newest (a file format)."""
        p = self.possible(area)
        if len(p) > 1:
            for key in BY_AREA[area].safe:
                if key in p:
                    return key
        return p[-1]

    def ambiguous(self) -> list[str]:
        """The areas whose behaviour differs between the versions of the range, each in words: what
        kfx applies and what ``--kafka-version`` would settle (for notes)."""
        out = []
        for r in RULES:
            p = self.possible(r.area)
            if len(p) > 1 and r.applied:
                how = "the one that changes less" if set(r.safe) & set(p) else "the newest"
                out.append(f"{r.area}: {' / '.join(p)} -> {self.write(r.area)} ({how})")
        return out

    def note(self) -> str | None:
        """One line saying where the range's rules differ and what kfx took (None: nowhere)."""
        amb = self.ambiguous()
        if not amb:
            return None
        return ("the Kafka versions this log dir may be from differ in " + "; ".join(amb)
                + ": give --kafka-version X.Y to apply that version's rules")

    def summary(self) -> dict:
        """Area -> the behaviour kfx writes (and accepts, when more than one is possible)."""
        out = {}
        for r in RULES:
            p = self.possible(r.area)
            out[r.area] = p[-1] if len(p) == 1 else {"write": self.write(r.area), "accept": p}
        return out


#: suffix-dirs behaviour -> the dir suffixes that version parses
KNOWN_SUFFIXES = {"delete": ("delete",), "future": ("delete", "future"), "stray": ("delete", "future", "stray")}


def refused_dir(name: str, state: str, rules: AppliedRules) -> str | None:
    """Why no Kafka of ``rules``' range starts on a log dir holding the partition dir ``name`` in
    ``state`` (``-future``/``-stray``), in one line; None when one of them parses it."""
    if state in ("live", "delete") or any(state in KNOWN_SUFFIXES[k] for k in rules.possible("suffix-dirs")):
        return None
    # the one behaviour parsing ``state`` first (the oldest, -delete only, has no since)
    since = next(b.since for b in BY_AREA["suffix-dirs"].behaviours
                 if b.since is not None and state in KNOWN_SUFFIXES[b.key])
    return (f"{name}: Kafka before {version_text(since)} cannot parse a -{state} dir name "
            f"(parseTopicPartitionName throws) and refuses to start on this log dir; move the dir out")


def _range_text(b: Behaviour) -> str:
    since, until = b.since, b.until
    last = RELEASES[RELEASES.index(tuple(until)) - 1] if until is not None else None
    if since is None:
        return "all" if last is None else "≤ " + version_text(last)
    if last is None:
        return "≥ " + version_text(since)
    return version_text(since) if last == tuple(since) else f"{version_text(since)}–{version_text(last)}"


#: producer-expiry behaviour -> Kafka's default expiry, ms
EXPIRY_DEFAULT_MS = {"transactional-id": 604_800_000, "producer-id": 86_400_000}


def rules_markdown() -> str:
    """The table as the README shows it."""
    lines = ["| area | Kafka | behaviour | source |", "|---|---|---|---|"]
    for r in RULES:
        for i, b in enumerate(r.behaviours):
            safe = " (applied where the versions a log dir may be from span this change)" if b.key in r.safe else ""
            lines.append(f"| {r.what if i == 0 else ''} | {_range_text(b)} | {b.says}{safe} | "
                         f"{r.source if i == 0 else ''} |")
    return "\n".join(lines)
