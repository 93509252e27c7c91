"""``kfx explain``: the fate of one offset, key or time of a partition, with the evidence its files hold.

One walk of the partition (:func:`scan`, :meth:`~kafkaforensics.log.partition.Partition.walk`: the
producer state gives each transactional batch its transaction and each marker the transaction it
ends, KIP-890's epoch bump per marker included) gives a :class:`LogView`; :func:`explain_offset`
judges an offset against it:

- ``present``: the batch holding it (file, byte, base/last offset), its transaction (first offset,
  COMMIT/ABORT marker or still open) and what a ``read_committed`` consumer sees (visible, skipped as
  aborted, or held behind the last stable offset by a producer's open transaction);
- ``below-log-start``: on disk below the checkpointed log start (DeleteRecords, or a follower
  following its leader's log start), or in a segment removed by retention (time: the ``.log.deleted``
  segment's largest timestamp, else the oldest remaining record's age, against ``retention.ms``; size:
  the log's bytes against ``retention.bytes``), by the log start rule or, for the KRaft metadata log, by
  its latest snapshot: every candidate rule with how sure it is;
- ``compacted``: no record at the offset, below ``cleaner-offset-checkpoint`` or inside a batch the
  cleaner thinned (or a compacted topic showing the cleaner's marks);
- ``truncated``: a torn batch claims it (Kafka's recovery cuts there; at the end of a live log dir's active
  segment it is an append in flight), or the log ends below it though a checkpoint, producer snapshot or
  leader epoch says the log once reached it;
- ``never-written``: a gap compaction does not explain; ``past-log-end``: nothing says it was written.

:func:`lag_split` divides the offsets between a committed offset and the log end the same way for
``kfx groups --explain``.
"""
from __future__ import annotations

import datetime
import json
import os
import time
from dataclasses import dataclass, field
from typing import Any

from kafkaforensics.errors import KafkaFormatError
from kafkaforensics.log.partition import LogDir, Partition
from kafkaforensics.log.paths import appending
from kafkaforensics.log.producer_state import ProducerState
from kafkaforensics.log.load_walk import replay_segment
from kafkaforensics.log.replica_race import BatchFact, ReplicaLog, fact_of
from kafkaforensics.log.unified_log import unify_all
from kafkaforensics.log.segment import (DELETED, KRAFT_SNAPSHOT_RE, LOG, SNAPSHOT, Segment, file_name,
                                        offset_for_timestamp, offset_from_name)

#: fates of an offset; the first one is "found" (exit 0), the others are gone (exit 1)
PRESENT, BELOW_LOG_START, COMPACTED, TRUNCATED, NEVER_WRITTEN, PAST_LOG_END = (
    "present", "below-log-start", "compacted", "truncated", "never-written", "past-log-end")


@dataclass
class LogView(ReplicaLog):
    """A partition as one walk leaves it, for :func:`explain_offset` and :func:`lag_split`: its
    :class:`~kafkaforensics.log.replica_race.ReplicaLog`, its torn tails and the cleaner's marks."""
    partition: Partition = field(kw_only=True)
    #: torn batches: where a segment's walk stopped on bytes that are no batch
    torn: list = field(default_factory=list)
    #: whether any batch shows the cleaner's marks (records dropped from a batch, a delete horizon)
    cleaned: bool = False

    @property
    def name(self) -> str:
        return self.partition.name

    def checkpoint(self, name: str) -> tuple[int, str] | None:
        """(offset, the file's line) of this partition in the log dir's checkpoint ``name``; None: no entry."""
        try:
            off = LogDir(self.partition.log_dir).partition_offset(name, self.partition.topic_partition)
        except KafkaFormatError:
            return None
        if off is None:
            return None
        return off, f"{name}: '{self.partition.topic} {self.partition.partition} {off}'"

    def lso_holder(self) -> tuple[int, int] | None:
        """(first offset, producer id) of the open transaction that holds the last stable offset."""
        if not self.open_txns:
            return None
        first = min(self.open_txns)
        return first, self.open_txns[first]


def parse_time(text: str) -> int:
    """``--time``: epoch ms, or an ISO-8601 UTC time (``2026-11-27T10:00:00Z``); ValueError otherwise."""
    t = text.strip()
    if t.lstrip("-").isdigit():
        return int(t)
    try:
        d = datetime.datetime.fromisoformat(t[:-1] + "+00:00" if t.endswith(("Z", "z")) else t)
    except ValueError:
        raise ValueError(f"--time {text!r}: neither epoch milliseconds nor an ISO-8601 time "
                         "(2026-11-27T10:00:00Z)") from None
    if d.tzinfo is None:
        d = d.replace(tzinfo=datetime.timezone.utc)
    return int(d.timestamp() * 1000)


def _torn(seg) -> dict | None:
    """A segment's torn tail: the bytes after its last whole batch, when they are no zero padding; the
    offsets its partial header claims (base; last when the v2 header is whole enough)."""
    if seg.valid_bytes >= seg.size:
        return None
    head = Segment.of_file(seg.path).read_at(seg.valid_bytes, 61)
    if not head.strip(b"\0"):
        return None
    base = int.from_bytes(head[:8], "big", signed=True) if len(head) >= 8 else None
    last = None
    if base is not None and len(head) >= 27 and head[16] >= 2:
        last = base + int.from_bytes(head[23:27], "big", signed=True)
    return {"file": seg.path, "position": seg.valid_bytes, "bytes": seg.size - seg.valid_bytes,
            "baseOffset": base, "lastOffset": last, "inFlight": appending(seg.path)}


def scan(partition, offsets=(), keys=(), every_key: bool = False) -> LogView:
    """Walk ``partition`` (a :class:`Partition` or its dir) once into a :class:`LogView`, keeping the
    records at ``offsets``, those of ``keys`` (bytes) and those of the keys the offsets' records have
    (``every_key``: every keyed record, for ``kfx diff``'s compaction checks)."""
    pd = Partition.of(partition)
    view = LogView(partition=pd)
    want, watched = set(offsets), set(keys)
    state = ProducerState()  # the walk's producer state, built here
    for seg, inner in pd.walk(damage="keep", state=state):
        for b, done in inner:
            f = view.add(b, state, done)
            view.cleaned = view.cleaned or f.offsets is not None and f.magic >= 2 or b.has_delete_horizon
            view.watch(b, want, watched, every_key)
    view.open_txns = {first: pid for first, pid in state.ongoing.items()}
    view.log_end, view.last_stable, view.log_start = pd.log_end_offset, pd.last_stable_offset, pd.log_start_offset
    view.torn = [t for t in (_torn(s) for s in pd.loaded) if t is not None]
    return view


def _result(offset: int, fate: str, reason: str, evidence: list, certainty: str = "certain", **more) -> dict:
    return {"offset": offset, "fate": fate, "found": fate == PRESENT, "reason": reason, "certainty": certainty,
            "evidence": evidence, **more}


def _ev(text: str, **where) -> dict:
    return {"text": text, **where}


def _key_text(key: bytes | None) -> str:
    if key is None:
        return "no key"
    try:
        return repr(key.decode("utf-8"))
    except UnicodeDecodeError:
        return "0x" + key.hex()


def _visibility(view: LogView, offset: int, b: BatchFact) -> tuple[str, list]:
    """What a read_committed consumer makes of the record at ``offset`` in ``b``, with its evidence."""
    ev: list[dict] = []
    if b.control:
        return (f"{_plural(1, (b.marker or 'control') + ' marker')} of producer {b.producer_id}: consumers never get "
                "control records"), ev
    state = view.txn_state(b)
    if state is not None:
        end = view.txns.get(b.txn_first)
        if end is not None:
            ev.append(_ev(f"producer {b.producer_id}'s transaction from offset {b.txn_first} ends with its {end['type']} "
                          f"marker at offset {end['offset']} (byte {end['position']} of {os.path.basename(end['file'])})",
                          file=end["file"], position=end["position"], markerOffset=end["offset"],
                          transactionFirstOffset=b.txn_first))
        else:
            ev.append(_ev(f"producer {b.producer_id}'s transaction from offset {b.txn_first} has no marker (still open)",
                          transactionFirstOffset=b.txn_first))
        if state == "aborted":
            return "aborted: read_committed consumers skip it (read_uncommitted ones get it)", ev
    holder = view.lso_holder()
    if offset >= view.last_stable and holder is not None:  # (an open transaction holds it)
        first, pid = holder
        return (f"held behind the last stable offset {view.last_stable}: producer {pid}'s open transaction from "
                f"offset {first}; read_committed consumers wait for its marker"), ev
    return f"visible to read_committed consumers (below the last stable offset {view.last_stable})", ev


def _present(view: LogView, offset: int, b: BatchFact, compacts: bool) -> dict:
    ev = [_ev(f"{b.text()} (magic {b.magic}, leader epoch {b.leader_epoch}, producer {b.producer_id} epoch "
              f"{b.producer_epoch})", **b.where())]
    if not b.crc_ok:
        ev.append(_ev("the batch fails its CRC: Kafka's recovery would truncate the log at it", **b.where()))
    seen, vev = _visibility(view, offset, b)
    ev += vev
    rec = view.records.get(offset)
    if rec is not None:
        ev += _key_fate(view, offset, rec, compacts)
    return _result(offset, PRESENT, seen, ev, transaction=view.txn_state(b),
                   control=b.marker if b.control else None, key=_key_json(rec))


def _key_json(rec: dict | None):
    if rec is None or rec["key"] is None:
        return None
    return rec["key"].decode("utf-8", "replace")


def _key_fate(view: LogView, offset: int, rec: dict, compacts: bool) -> list:
    """The record's key and what compaction makes of it: a later record of the key, a tombstone."""
    ev = [_ev(f"record key {_key_text(rec['key'])}, timestamp {rec['timestamp']}"
              + (", a tombstone (null value)" if rec["tombstone"] else ""))]
    later = [o for o in view.by_key.get(rec["key"], ()) if o > offset]
    if later and rec["key"] is not None and compacts:
        ev.append(_ev(f"a later record of the same key at offset {later[-1]}: the cleaner will remove this one",
                      laterOffset=later[-1]))
    if rec["tombstone"] and compacts:
        ev.append(_ev("a tombstone: the cleaner removes it delete.retention.ms after it cleans its segment"))
    return ev


def _below_start(view: LogView, offset: int, cfg, now: int) -> dict:
    """An offset below the log start: on disk below a moved log start, or in a removed segment."""
    ck = view.checkpoint(LogDir.LOG_START_OFFSET)
    segs = view.partition.segments
    first_base = segs[0].base_offset if segs else view.log_end
    ev = [_ev(f"log start offset {view.log_start}" + (f" ({ck[1]})" if ck else " (the first segment's base offset)"))]
    if offset >= first_base:
        i = view.batch_at(offset)
        if i < len(view.batches) and view.batches[i].holds(offset):
            ev.append(_ev(f"the record is still on disk: {view.batches[i].text()}", **view.batches[i].where()))
        return _result(offset, BELOW_LOG_START,
                       f"deleted by DeleteRecords: the log start was moved to {view.log_start} above the first segment's "
                       f"base {first_base} (or a follower followed its leader's log start); Kafka serves nothing below it",
                       ev, "likely", rule="delete-records")
    ev.append(_ev(f"the oldest segment left starts at offset {first_base}: the segments below it were deleted"))
    gone = _deleted_segment(view, offset)
    if gone is not None:
        ev.append(_ev(f"{os.path.basename(gone['file'])} still holds offsets {gone['baseOffset']}..{gone['nextOffset'] - 1}"
                      f" (largest timestamp {gone['largestTimestamp']}): Kafka renamed the segment for deletion and "
                      "removes the file file.delete.delay.ms later", **{k: gone[k] for k in ("file", "baseOffset")}))
        if gone["batch"] is not None:
            ev.append(_ev(f"the record is still in it: {gone['batch'].text()}", **gone["batch"].where()))
    rules = _removal_rules(view, cfg, now, ck, first_base, gone)
    ev += [_ev(r["text"]) for r in rules]
    best = next((r for r in rules if r["certainty"] == "likely"), None) or \
        next((r for r in rules if r["certainty"] == "possible"), None)
    if best is None:
        return _result(offset, BELOW_LOG_START, f"its segment was deleted (offsets below {first_base}) and no rule the "
                       "log dir holds explains it: a broker's setting the log dir does not hold, or a deletion by hand",
                       ev, "unknown", rule=None, rules=rules)
    return _result(offset, BELOW_LOG_START, f"its segment (offsets below {first_base}) was deleted by {best['rule']}",
                   ev, best["certainty"], rule=best["rule"], rules=rules)


def _deleted_segment(view: LogView, offset: int) -> dict | None:
    """The segment holding ``offset`` that Kafka renamed to ``.log.deleted`` and has not removed yet (its
    file, offsets, largest timestamp and the batch holding the offset), or None."""
    named = [(offset_from_name(os.path.basename(p)), p) for p in view.partition.leftovers if p.endswith(LOG + DELETED)]
    below = [(base, p) for base, p in named if base is not None and base <= offset]
    if not below:
        return None
    base, path = max(below)
    seg = replay_segment(path, base)
    if offset >= seg.next_offset:
        return None
    batch = next((fact_of(b, None) for b in Segment.of_file(path, base).batches()
                  if b.base_offset <= offset <= b.last_offset), None)
    return {"file": path, "baseOffset": base, "nextOffset": seg.next_offset, "largestTimestamp": seg.largest_timestamp(),
            "batch": batch if batch is not None and batch.holds(offset) else None}


def _removal_rules(view: LogView, cfg, now: int, ck, first_base: int, gone: dict | None = None) -> list[dict]:
    """Each rule that could have deleted the segments below ``first_base`` (``gone``: the segment itself,
    renamed for deletion), how sure, and why."""
    out = []
    if cfg is not None and cfg.metadata_log:
        out += _snapshot_rule(view, first_base)
    elif cfg is not None and cfg.deletes:
        out += _time_rule(view, cfg, now, gone) + _size_rule(view, cfg)
    elif cfg is not None:
        out.append({"rule": "retention", "certainty": "ruled out",
                    "text": f"{cfg.describe('cleanup.policy')}: Kafka deletes by time and size only with cleanup.policy delete"})
    if ck is not None and ck[0] >= first_base:
        out.append({"rule": "DeleteRecords", "certainty": "possible",
                    "text": f"{ck[1]}: a log start moved by DeleteRecords deletes the segments below it (retention writes "
                            "the new log start there too)"})
    return out


def _snapshot_rule(view: LogView, first_base: int) -> list[dict]:
    """The KRaft metadata log: Kafka deletes the segments below its latest snapshot's end offset."""
    ends = sorted(int(m.group(1)) for m in (KRAFT_SNAPSHOT_RE.match(n) for n in os.listdir(view.partition.path)) if m)
    if not ends or ends[-1] < first_base:
        return []
    return [{"rule": "KRaft snapshot", "certainty": "likely",
             "text": f"KRaft snapshot {file_name(ends[-1], '')}-*.checkpoint holds the metadata up to offset {ends[-1]}: the "
                     "metadata log is trimmed below its latest snapshot"}]


def _time_rule(view: LogView, cfg, now: int, gone: dict | None) -> list[dict]:
    ms = cfg.get_int("retention.ms")
    if ms is None or ms < 0:
        return []
    if gone is not None:  # the segment itself: Kafka's very test (LogSegment.largestTimestamp against retention.ms)
        age = now - gone["largestTimestamp"]
        return [{"rule": "retention.ms", "certainty": "likely" if age > ms else "ruled out",
                 "text": f"{cfg.describe('retention.ms')}: the deleted segment's largest timestamp "
                         f"{gone['largestTimestamp']} is {age} ms before now {now}"
                         + (", past retention.ms" if age > ms else ", within retention.ms: time retention did not delete it")}]
    loaded = view.partition.loaded
    oldest = loaded[0].largest_timestamp() if loaded else -1
    first_ts = next((b.max_timestamp for b in view.batches if b.max_timestamp >= 0), oldest)
    age = now - first_ts
    sure = "likely" if age > ms else "possible"
    return [{"rule": "retention.ms", "certainty": sure,
             "text": f"{cfg.describe('retention.ms')}: a segment goes once its largest timestamp is older; the oldest "
                     f"record left is from {first_ts} ({age} ms before now {now})"
                     + (", so the older segments before it are past retention.ms" if sure == "likely" else
                        ": older segments may have passed it")}]


def _size_rule(view: LogView, cfg) -> list[dict]:
    limit = cfg.get_int("retention.bytes")
    if limit is None or limit < 0:
        return []
    size = sum(s.size for s in view.partition.loaded)
    sure = "likely" if size >= limit else "ruled out"
    return [{"rule": "retention.bytes", "certainty": sure,
             "text": f"{cfg.describe('retention.bytes')}: the log holds {size} bytes now"
                     + (" (size retention leaves at least that much)" if sure == "likely" else
                        ", less than size retention leaves: it deleted nothing")}]


def _torn_claim(view: LogView, offset: int) -> dict | None:
    for t in view.torn:
        if t["baseOffset"] is not None and t["baseOffset"] <= offset and (t["lastOffset"] is None or offset <= t["lastOffset"]):
            return t
    return None


def _truncated(view: LogView, offset: int, torn: dict) -> dict:
    ev = [_ev(f"a torn batch at byte {torn['position']} of {os.path.basename(torn['file'])} ({torn['bytes']} bytes) claims "
              f"offsets {torn['baseOffset']}.." + ("" if torn["lastOffset"] is None else str(torn["lastOffset"])),
              file=torn["file"], position=torn["position"], baseOffset=torn["baseOffset"], lastOffset=torn["lastOffset"])]
    if torn["inFlight"]:
        return _result(offset, PAST_LOG_END, "being written: the broker holding this log dir is still appending this "
                       "batch at the end of its active segment (an append in flight, not damage)", ev, rule="in-flight")
    return _result(offset, TRUNCATED, f"truncated: a torn tail (a batch written in part); Kafka's recovery cuts the "
                   f"segment at byte {torn['position']}", ev, rule="torn-tail")


def _past_end(view: LogView, offset: int) -> dict:
    """An offset at or past the log end: truncated when the files say the log once reached it."""
    ev = [_ev(f"the log end offset is {view.log_end}")]
    once = []
    for name, what in ((LogDir.REPLICATION_OFFSET, "high watermark"),
                       (LogDir.RECOVERY_POINT, "recovery point")):
        ck = view.checkpoint(name)
        if ck is not None and ck[0] > offset:
            once.append(_ev(f"{ck[1]}: the {what} was {ck[0]}", line=ck[1]))
    snaps = [s for s in view.partition.snapshots if s > offset]
    if snaps:
        once.append(_ev(f"producer snapshot {file_name(snaps[-1], SNAPSHOT)}: the log had reached offset {snaps[-1]}"))
    epochs = _epochs(view)
    once += [_ev(f"leader-epoch-checkpoint: epoch {e} started at offset {s}", line=f"{e} {s}") for e, s in epochs
             if s > offset]
    if not once:
        return _result(offset, PAST_LOG_END, f"past the log end offset {view.log_end}: not written (yet)", ev)
    if epochs:
        ev.append(_ev("leader epochs: " + ", ".join(f"{e} from {s}" for e, s in epochs)
                      + " (a replica diverging from its leader truncates to the end of their last common epoch)"))
    return _result(offset, TRUNCATED, f"truncated: the log ends at {view.log_end} though its files say it once "
                   "reached this offset (a replica's truncation to its leader's epoch end, or recovery)", ev + once,
                   "likely", rule="log-end-below-checkpoints")


def _epochs(view: LogView) -> list:
    try:
        cache = view.partition.leader_epoch_cache()
    except KafkaFormatError:
        return []
    return list(cache) if cache else []


def _missing(view: LogView, offset: int, i: int, cfg) -> dict:
    """No record at ``offset`` between the log start and end: compacted away, or never written."""
    prev = view.batches[i - 1] if i > 0 else None
    b = view.batches[i] if i < len(view.batches) else None
    ev = []
    if b is not None and b.base <= offset <= b.last:
        ev.append(_ev(f"{b.text()} keeps {len(b.offsets or ())} of its {b.last - b.base + 1} offsets", **b.where()))
    else:
        ev.append(_ev("offsets " + (f"{prev.last + 1}" if prev else f"{view.log_start}") + ".."
                      + (f"{b.base - 1}" if b else f"{view.log_end - 1}") + " are in no batch"
                      + (f" (between {prev.text()} and {b.text()})" if prev and b else "")))
    cleaner = view.checkpoint(LogDir.CLEANER_OFFSET)
    compacts = cfg is not None and cfg.compacts
    if cfg is not None:
        ev.append(_ev(cfg.describe("cleanup.policy")))
    if cleaner is not None and offset < cleaner[0]:
        ev.append(_ev(f"{cleaner[1]}: the cleaner cleaned the log up to {cleaner[0]}", line=cleaner[1]))
        return _result(offset, COMPACTED, "compacted away: the cleaner keeps only the latest record of a key (and drops "
                       "tombstones past delete.retention.ms, aborted records and markers); the record's key left with it",
                       ev, rule="compaction")
    if b is not None and b.base <= offset <= b.last and b.magic >= 2:
        return _result(offset, COMPACTED, "compacted away: its batch keeps its offsets but the cleaner removed this record",
                       ev, rule="compaction")
    if view.cleaned or compacts:
        return _result(offset, COMPACTED, "compacted away, most likely: " + (
            "batches show the cleaner's marks" if view.cleaned else "the topic is compacted")
            + " though cleaner-offset-checkpoint does not cover it", ev, "likely", rule="compaction")
    return _result(offset, NEVER_WRITTEN, "never written: an offset gap the log shows no sign of compaction for", ev,
                   rule="gap")


def explain_offset(view: LogView, offset: int, cfg=None, now: int | None = None) -> dict:
    """The fate of ``offset`` in ``view`` (see the module's docstring), with its evidence: a dict with
    offset, fate, found, reason, certainty and evidence (each a text and where: file, position, offsets,
    checkpoint line); ``cfg``: the topic's :class:`~kafkaforensics.log.log_config.LogConfig`."""
    now = int(time.time() * 1000) if now is None else now
    if offset < view.log_start:
        return _below_start(view, offset, cfg, now)
    i = view.batch_at(offset)
    if i < len(view.batches) and view.batches[i].holds(offset):
        return _present(view, offset, view.batches[i], cfg is not None and cfg.compacts)
    torn = _torn_claim(view, offset)
    if torn is not None:
        return _truncated(view, offset, torn)
    if offset >= view.log_end:
        return _past_end(view, offset)
    return _missing(view, offset, i, cfg)


def explain_key(view: LogView, key: bytes, cfg=None, now: int | None = None) -> list[dict]:
    """Every record of ``key`` the partition holds, in offset order, with its fate."""
    return [explain_offset(view, o, cfg, now) for o in view.by_key.get(key, [])]


def explain_time(view: LogView, timestamp: int, cfg=None, now: int | None = None) -> dict:
    """The offset ListOffsets gives for ``timestamp`` (the first record at or after it, from the log
    start), explained; past the log end when no record is that late."""
    found = offset_for_timestamp(view.partition.segments, timestamp, view.log_start)
    if found is None:
        return _result(view.log_end, PAST_LOG_END, f"no record has a timestamp at or after {timestamp}: ListOffsets "
                       "answers no offset", [_ev(f"the log end offset is {view.log_end}")], timestamp=timestamp)
    out = explain_offset(view, found.offset, cfg, now)
    out["evidence"].insert(0, _ev(f"the first record at or after {timestamp} is offset {found.offset} (timestamp "
                                  f"{found.timestamp}), as ListOffsets finds it through the time index"))
    return out | {"timestamp": timestamp}


def partition_dir(path: str, topic: str | None, partition: int | None) -> str:
    """The partition dir ``explain`` is given: ``path`` itself, or ``path``/``topic``-``partition`` of a log
    dir; ValueError naming what is wrong."""
    if (topic is None) != (partition is None):
        raise ValueError("--topic and --partition go together")
    if topic is None:
        return path
    pd = os.path.join(path, f"{topic}-{partition}")
    if not os.path.isdir(pd):
        raise ValueError(f"{path}: no partition dir {topic}-{partition} in this log dir")
    return pd


# -- lag, explained ------------------------------------------------------------------------------
def lag_split(view: LogView, committed: int) -> dict:
    """The offsets from ``committed`` to the log end split by what a read_committed consumer makes of
    them: data it gets, control markers (by type), records of aborted transactions, records held behind
    the last stable offset, offsets no record holds (compaction) and offsets below the log start."""
    markers: dict[str, int] = {}
    out: dict[str, Any] = {"offsets": max(0, view.log_end - committed), "data": 0, "controlMarkers": markers,
                           "aborted": 0, "heldBehindLso": 0, "removed": 0, "belowLogStart": 0}
    lo, hi = committed, view.log_end
    if lo >= hi:
        return out
    if lo < view.log_start:
        out["belowLogStart"], lo = view.log_start - lo, view.log_start
    counted = 0
    for b in view.batches[view.batch_at(lo):]:
        if b.base >= hi:
            break
        n = b.count_in(lo, hi)
        counted += n
        if b.control:
            kind = b.marker or "control"
            markers[kind] = markers.get(kind, 0) + n
        elif view.txn_state(b) == "aborted":
            out["aborted"] += n
        else:
            held = b.count_in(max(lo, view.last_stable), hi)
            out["heldBehindLso"] += held
            out["data"] += n - held
    out["removed"] = hi - lo - counted
    holder = view.lso_holder()
    if out["heldBehindLso"] and holder is not None:  # (an open transaction holds them)
        first, pid = holder
        out["lsoHolder"] = {"producerId": pid, "transactionFirstOffset": first, "lastStableOffset": view.last_stable}
    return out


def _plural(n: int, one: str, many: str | None = None) -> str:
    article = "an" if one[0].lower() in "aeiou" else "a"
    return f"{article if n == 1 else n} {one if n == 1 else many or one + 's'}"


def lag_text(split: dict) -> str:
    """``1 offset: a COMMIT marker, nothing to consume`` and the like."""
    n = split["offsets"]
    if n == 0:
        return "no lag"
    parts = []
    if split["data"]:
        parts.append(f"{split['data']} data record{'s' if split['data'] != 1 else ''} to consume")
    for kind, k in sorted(split["controlMarkers"].items()):
        parts.append(_plural(k, f"{kind} marker"))
    if split["aborted"]:
        parts.append(f"{split['aborted']} record{'s' if split['aborted'] != 1 else ''} of aborted transactions")
    if split["heldBehindLso"]:
        h = split["lsoHolder"]
        parts.append(f"{split['heldBehindLso']} held behind the last stable offset {h['lastStableOffset']} (producer "
                     f"{h['producerId']}'s open transaction from {h['transactionFirstOffset']})")
    if split["removed"]:
        parts.append(f"{split['removed']} removed by compaction")
    if split["belowLogStart"]:
        parts.append(f"{split['belowLogStart']} below the log start")
    text = f"{n} offset{'s' if n != 1 else ''}: " + ", ".join(parts)
    return text + (", nothing to consume" if not split["data"] else "")


def keys_decoding_to(view: LogView, key: str, key_decoder, topic: str | None) -> list[bytes]:
    """The raw keys of ``view`` (every keyed record watched) that are ``key``: its UTF-8 bytes, and the
    Confluent-framed keys whose decoded value equals ``key`` read as JSON (else as a string) — one
    decoded key may have been written under several schema ids."""
    try:
        want = json.loads(key)
    except ValueError:
        want = key
    raw = key.encode()
    return [k for k in view.by_key if k == raw or (
        (d := key_decoder.decode(k, topic, True)).framed and d.error is None and d.value == want)]


def explain(path: str, *, offset: int | None = None, key: str | None = None, at: str | None = None,
            cfg=None, now: int | None = None, key_decoder=None, remote=None) -> dict:
    """``kfx explain``: the partition dir ``path``'s answer for one ``offset``, every record of ``key`` or
    the offset ListOffsets gives for the time ``at`` (epoch ms or ISO-8601): {partition, logStartOffset,
    logEndOffset, lastStableOffset, results}; ValueError for a bad question. With ``key_decoder`` (a
    :class:`~kafkaforensics.records.schema_decode.SchemaDecoder`) ``key`` may be a decoded key. With
    ``remote`` (a remote tier) the partition is read over both tiers, as Kafka's UnifiedLog reads it."""
    if sum(x is not None for x in (offset, key, at)) != 1:
        raise ValueError("give exactly one of --offset, --key, --time")
    if offset is not None and offset < 0:
        raise ValueError(f"--offset {offset}: offsets are not negative")
    ts = parse_time(at) if at is not None else None
    pd = unify_all([Partition.scan(path)], remote)[0]
    if key is not None and key_decoder is not None:
        view = scan(pd, every_key=True)
        keys = keys_decoding_to(view, key, key_decoder, pd.topic)
        results = sorted((r for k in keys for r in explain_key(view, k, cfg, now)), key=lambda r: r["offset"])
    elif key is not None:
        view = scan(pd, keys=[key.encode()])
        results = explain_key(view, key.encode(), cfg, now)
    elif ts is not None:
        first = scan(pd)
        found = offset_for_timestamp(pd.segments, ts, first.log_start)
        view = scan(pd, offsets=[found.offset]) if found is not None else first
        results = [explain_time(view, ts, cfg, now)]
    else:
        assert offset is not None  # exactly one of offset, key, at (checked above)
        view = scan(pd, offsets=[offset])
        results = [explain_offset(view, offset, cfg, now)]
    return {"partition": view.name, "path": pd.path, "logStartOffset": view.log_start, "logEndOffset": view.log_end,
            "lastStableOffset": view.last_stable, "key": key, "results": results}
