"""``kfx diff`` of a fleet: every partition present in two or more log dirs (one per broker), or N
partition dirs of one partition, compared replica by replica and each divergence classified with
its evidence (file, byte position, offsets, epochs).

Per partition, the reference replica is the one whose batches carry the newest leader epoch (then
the longest log): the leader's copy as far as the files tell. Every other replica is compared with
it batch by batch (:func:`~kafkaforensics.inspect.diff.diff`) and, through the transaction state
:func:`~kafkaforensics.inspect.explain.scan` computes (producer state, markers, KIP-890's epoch bump),
transaction by transaction. The classes:

- ``diverged``: the same offsets, different bytes (CRC); ``one-sided``: batches one replica holds
  inside the other's offsets; ``epoch-truncation``: where the follower should have truncated (the
  end offset, in the reference's ``leader-epoch-checkpoint``, of the last epoch both share);
- the compaction--replication race (Kafka 3.9--4.2): ``deleted-key-resurrected`` (a key deleted on
  one replica -- its tombstone, or every record gone below that replica's cleaner checkpoint -- whose
  older value another replica still serves), ``aborted-served-as-committed`` (an ABORT marker missing
  on one replica, whose later COMMIT then commits the aborted records), ``committed-hidden`` (a COMMIT
  marker missing: the records aborted or held there), ``lso-frozen`` (a marker on one replica only:
  the other's transaction stays open past it, its last stable offset frozen);
- ``topic-id-mismatch`` (``partition.metadata``: two topics of one name), ``corrupt`` (a batch whose
  CRC fails).

A replica that is a prefix of another is ``behind``: a note, not a divergence; so are batches the
replicas' cleaners compacted differently below a cleaner checkpoint (the cleaners run independently).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from kafkaforensics.errors import KafkaFormatError
from kafkaforensics.inspect.diff import diff as diff_pair, replica_names
from kafkaforensics.inspect.explain import LogView, scan
from kafkaforensics.log.checkpoint_file import CLEANER_OFFSET
from kafkaforensics.log.log_config import LogConfig
from kafkaforensics.log.partition import LogDir, Partition, parse_partition_dir_name, partition_dir_state
from kafkaforensics.log.paths import LOG_DIR, PARTITION_DIR, PathUsageError, classify_for

DIVERGED, ONE_SIDED, EPOCH_TRUNCATION, CORRUPT, TOPIC_ID_MISMATCH = (
    "diverged", "one-sided", "epoch-truncation", "corrupt", "topic-id-mismatch")
KEY_RESURRECTED, ABORTED_SERVED, COMMITTED_HIDDEN, LSO_FROZEN = (
    "deleted-key-resurrected", "aborted-served-as-committed", "committed-hidden", "lso-frozen")
#: what ``kfx diff`` takes, in its one-line refusals
TAKES = "two partition dirs or more (replicas of one partition), or log dirs (one per broker)"


@dataclass
class Replica:
    """One replica of a partition: its dir, one walk of it, its cleaner checkpoint (offset, line)."""
    path: str
    view: LogView
    cleaner: tuple | None = None

    @property
    def cleaned_to(self) -> int:
        """The cleaner checkpoint's offset (0: the cleaner never ran on it)."""
        return self.cleaner[0] if self.cleaner else 0

    @property
    def latest_epoch(self) -> int:
        """The newest leader epoch its batches carry (-1: none)."""
        return max((b.leader_epoch for b in self.view.batches), default=-1)


@dataclass
class FleetReport:
    """Every partition compared: its replicas, divergences (each a dict with ``class``) and notes."""
    paths: list
    partitions: list = field(default_factory=list)
    single: list = field(default_factory=list)
    notes: list = field(default_factory=list)

    @property
    def divergences(self) -> list:
        return [d for p in self.partitions for d in p["divergences"]]

    @property
    def consistent(self) -> bool:
        return not self.divergences

    def to_json(self) -> dict:
        return {"paths": self.paths, "consistent": self.consistent, "partitions": self.partitions,
                "onOneReplicaOnly": self.single, "notes": self.notes,
                "classes": sorted({d["class"] for d in self.divergences})}


def _entry(cls: str, replica: str, other: str, text: str, evidence: list, **more) -> dict:
    """One divergence: its class, the replica it is about, the replica it was compared with."""
    return {"class": cls, "replica": replica, "other": other, "text": text, "evidence": evidence, **more}


def _batch_ev(r: Replica, b, what: str) -> dict:
    """A batch of ``r`` (a :class:`~kafkaforensics.inspect.explain.BatchFact`) as evidence."""
    return {"text": f"{what}: {b.text()} in {r.path} (epoch {b.leader_epoch})", "replica": r.path, **b.where(),
            "epoch": b.leader_epoch}


def _batch_holding(view: LogView, offset: int):
    """The batch of ``view`` holding ``offset``, or None."""
    i = view.batch_at(offset)
    if i < len(view.batches) and view.batches[i].holds(offset):
        return view.batches[i]
    return None


def _replicas(dirs: list) -> list[Replica]:
    """Each dir walked once; every keyed record kept when the topic compacts or a replica's cleaner ran."""
    parts = [Partition.scan(d) for d in dirs]
    cleaners = [LogView(pd).checkpoint(CLEANER_OFFSET) for pd in parts]
    try:
        compacts = any(LogConfig.of(d).compacts for d in dirs)
    except (ValueError, KafkaFormatError):
        compacts = False
    keyed = compacts or any(c is not None for c in cleaners)
    return [Replica(pd.path, scan(pd, every_key=keyed), c) for pd, c in zip(parts, cleaners)]


def _topic_ids(dirs: list) -> dict:
    """dir -> the topic id its ``partition.metadata`` holds (dirs without a readable one left out)."""
    out = {}
    for d in dirs:
        try:
            meta = Partition.scan(d).partition_metadata()
        except KafkaFormatError:
            meta = None
        if meta and meta.get("topicId"):
            out[d] = meta["topicId"]
    return out


def _compacted_away(ref: Replica, other: Replica, lo: int, hi: int) -> bool:
    """Offsets lo..hi below either replica's cleaner checkpoint: their cleaners may differ there."""
    return hi < max(ref.cleaned_to, other.cleaned_to)


def _where(e: dict, path: str) -> dict:
    """A batch entry of :func:`diff_pair` as evidence of the replica at ``path``."""
    return {"text": f"batch {e['baseOffset']}..{e['lastOffset']} at byte {e['position']} of "
                    f"{os.path.basename(e['file'])} in {path} (epoch {e['epoch']}, crc {e['crc']})",
            "replica": path, "file": e["file"], "position": e["position"], "baseOffset": e["baseOffset"],
            "lastOffset": e["lastOffset"], "epoch": e["epoch"]}


def _batch_classes(ref: Replica, f: Replica, max_listed: int) -> tuple[list, list]:
    """(divergences, notes) of follower ``f`` against ``ref``, batch by batch."""
    rep = diff_pair(ref.path, f.path, max_listed, different_partitions=True)
    out, notes = [], []
    leo_f = rep.log_end_offsets[1]
    for label, path, corrupt in (("reference", ref.path, rep.corrupt_a), ("replica", f.path, rep.corrupt_b)):
        for c in corrupt:
            out.append(_entry(CORRUPT, path, ref.path if path == f.path else f.path,
                              f"{path}: the batch at offsets {c['baseOffset']}..{c['lastOffset']} fails its CRC",
                              [{"text": f"{os.path.basename(c['file'])} byte {c['position']}", "file": c["file"],
                                "position": c["position"], "baseOffset": c["baseOffset"], "lastOffset": c["lastOffset"]}]))
    tail = [e for e in rep.only_in_a if e["baseOffset"] >= leo_f]
    compacted = 0
    paired = [x for d in rep.different for x in (d["a"], d["b"])]  # already a different-bytes pair
    for e in rep.only_in_a + rep.only_in_b:
        if e in tail or e in paired:
            continue
        if _compacted_away(ref, f, e["baseOffset"], e["lastOffset"]):
            compacted += 1
            continue
        holder, other = (ref.path, f.path) if e in rep.only_in_a else (f.path, ref.path)
        out.append(_entry(ONE_SIDED, holder, other, f"offsets {e['baseOffset']}..{e['lastOffset']} only in {holder}, "
                          f"not in {other}", [_where(e, holder)], offsets=[e["baseOffset"], e["lastOffset"]]))
    for d in rep.different:
        a, b = d["a"], d["b"]
        if _compacted_away(ref, f, min(a["baseOffset"], b["baseOffset"]), max(a["lastOffset"], b["lastOffset"])):
            compacted += 1
            continue
        out.append(_entry(DIVERGED, f.path, ref.path, f"offsets {a['baseOffset']}..{a['lastOffset']}: different bytes "
                          f"(crc {a['crc']} epoch {a['epoch']} vs crc {b['crc']} epoch {b['epoch']})",
                          [_where(a, ref.path), _where(b, f.path)], offsets=[min(a["baseOffset"], b["baseOffset"]),
                                                                           max(a["lastOffset"], b["lastOffset"])]))
    if compacted:
        notes.append(f"{f.path}: {compacted} batch(es) compacted differently from {ref.path} below a cleaner "
                     "checkpoint (each replica's cleaner runs on its own): not a divergence")
    if tail and not out:
        notes.append(f"{f.path} is behind {ref.path}: log end {leo_f} < {rep.log_end_offsets[0]}, a prefix of it "
                     "(it catches up by fetching): not a divergence")
    if any(d["class"] in (DIVERGED, ONE_SIDED) for d in out):
        out += _epoch_point(ref, f, rep)
    return out, notes


def _epoch_point(ref: Replica, f: Replica, rep) -> list:
    """Where ``f`` should have truncated by leader epoch (OffsetsForLeaderEpoch against ``ref``)."""
    e = rep.epoch_truncation
    if not e or e["truncateBTo"] >= rep.log_end_offsets[1]:
        return []
    ev = [{"text": f"{os.path.join(ref.path, 'leader-epoch-checkpoint')}: epoch {e['epoch']} ends at offset "
                   f"{e['endOffsetInA']} in {ref.path}", "file": os.path.join(ref.path, "leader-epoch-checkpoint"),
           "epoch": e["epoch"], "endOffset": e["endOffsetInA"]}]
    b = _batch_holding(f.view, e["truncateBTo"]) or next((x for x in f.view.batches if x.base >= e["truncateBTo"]), None)
    if b is not None:
        ev.append(_batch_ev(f, b, "the follower's first batch past it"))
    return [_entry(EPOCH_TRUNCATION, f.path, ref.path,
                   f"{f.path} should have truncated to offset {e['truncateBTo']} (the end of epoch {e['epoch']} in "
                   f"{ref.path}) but holds offsets up to {rep.log_end_offsets[1] - 1}", ev,
                   epoch=e["epoch"], truncateTo=e["truncateBTo"])]


def _txn_firsts(view: LogView) -> dict:
    """First offset of each transaction -> its first data batch."""
    out: dict = {}
    for b in view.batches:
        if b.txn_first is not None and not b.control:
            out.setdefault(b.txn_first, b)
    return out


def _marker_ev(r: Replica, m: dict, what: str) -> dict:
    """A transaction's end marker in ``r`` (as :attr:`LogView.txns` holds it) as evidence."""
    return {"text": f"{what}: {m['type']} marker at offset {m['offset']}, byte {m['position']} of "
                    f"{os.path.basename(m['file'])} in {r.path}", "replica": r.path, "file": m["file"],
            "position": m["position"], "markerOffset": m["offset"], "marker": m["type"]}


def _txn_outcomes(x: Replica, y: Replica) -> list:
    """Transactions ``x`` ended with a marker ``y`` lacks though its log reaches past it."""
    out = []
    for first, bx in sorted(_txn_firsts(x.view).items()):
        mx = x.view.txns.get(first)
        by = _batch_holding(y.view, bx.base)
        if mx is None or by is None or by.txn_first is None or y.view.log_end <= mx["offset"]:
            continue
        held = _batch_holding(y.view, mx["offset"])
        if held is not None and held.control:
            continue
        sy = y.view.txn_state(by)
        ev = [_marker_ev(x, mx, "the marker"), _batch_ev(y, by, "the transaction's batch on the other replica")]
        where = {"transactionFirstOffset": first, "producerId": bx.producer_id, "markerOffset": mx["offset"]}
        lost = f"{y.path} has no batch at offset {mx['offset']} ({x.path}'s {mx['type']} marker)"
        if sy == "open":
            if mx["type"] == "COMMIT":
                out.append(_entry(COMMITTED_HIDDEN, y.path, x.path, f"{lost}: producer {bx.producer_id}'s committed "
                                  f"transaction from offset {first} is held there, hidden from read_committed", ev, **where))
            ev_lso = ev + [{"text": f"{y.path}: last stable offset {y.view.last_stable}, log end {y.view.log_end}",
                            "replica": y.path, "lastStableOffset": y.view.last_stable}]
            out.append(_entry(LSO_FROZEN, y.path, x.path, f"{lost}: producer {bx.producer_id}'s transaction from "
                              f"offset {first} stays open there, its last stable offset frozen at "
                              f"{y.view.last_stable}", ev_lso, lastStableOffset=y.view.last_stable, **where))
            continue
        my = y.view.txns.get(by.txn_first)
        if my is not None:
            ev.append(_marker_ev(y, my, "the marker ending it on the other replica"))
        if mx["type"] == "ABORT" and sy == "committed":
            out.append(_entry(ABORTED_SERVED, y.path, x.path, f"{lost}: producer {bx.producer_id}'s aborted "
                              f"transaction from offset {first} is served as committed there", ev, **where))
        elif mx["type"] == "COMMIT" and sy == "aborted":
            out.append(_entry(COMMITTED_HIDDEN, y.path, x.path, f"{lost}: producer {bx.producer_id}'s committed "
                              f"transaction from offset {first} is aborted there", ev, **where))
    return out


def _last_of_keys(view: LogView) -> dict:
    """key -> (offset, tombstone) of its last record."""
    return {k: (offs[-1], view.records[offs[-1]]["tombstone"]) for k, offs in view.by_key.items() if offs}


def _resurrected(x: Replica, y: Replica) -> list:
    """Keys ``x`` deleted (a tombstone, or every record gone below its cleaner checkpoint) whose older
    value ``y`` still serves, though ``x`` compacted that value away."""
    out, last_x = [], _last_of_keys(x.view)
    for key, (v, tomb) in sorted(_last_of_keys(y.view).items()):
        if tomb or v in x.view.records or v < x.view.log_start:
            continue
        t = last_x.get(key)
        if t is not None and (not t[1] or t[0] < v or y.view.log_end <= t[0]):
            continue
        if t is None and v >= x.cleaned_to:
            continue
        ev = [_batch_ev(y, _batch_holding(y.view, v), f"the value still served (offset {v})")]
        if y.cleaner:
            ev.append({"text": f"{y.path}: {y.cleaner[1]}", "replica": y.path, "cleanerCheckpoint": y.cleaner[0]})
        if t is not None:
            ev.append(_batch_ev(x, _batch_holding(x.view, t[0]), f"the tombstone (offset {t[0]})"))
            why = f"a tombstone at offset {t[0]}"
        else:
            ev.append({"text": f"{x.path}: {x.cleaner[1]}", "replica": x.path, "cleanerCheckpoint": x.cleaner[0]})
            why = f"no record left below its cleaner checkpoint {x.cleaned_to}"
        kt = key.decode("utf-8", "replace")
        out.append(_entry(KEY_RESURRECTED, y.path, x.path, f"key {kt!r}: deleted on {x.path} ({why}), its value at "
                          f"offset {v} still served by {y.path}", ev, key=kt, offset=v))
    return out


def compare_partition(name: str, dirs: list, max_listed: int = 1000, check_ids: bool = True) -> dict:
    """The replicas ``dirs`` of partition ``name`` compared: divergences, notes, each one's log end
    (``check_ids``: their ``partition.metadata`` topic ids must agree)."""
    out = {"partition": name, "replicas": list(dirs), "reference": None, "divergences": [], "notes": []}
    ids = _topic_ids(dirs) if check_ids else {}
    if len(set(ids.values())) > 1:
        out["divergences"].append(_entry(TOPIC_ID_MISMATCH, dirs[0], dirs[1], "partition.metadata: topic ids differ ("
                                         + ", ".join(f"{d}: {t}" for d, t in ids.items()) + "): two topics of one name",
                                         [{"text": f"{os.path.join(d, 'partition.metadata')}: topic_id {t}",
                                           "file": os.path.join(d, "partition.metadata"), "topicId": t}
                                          for d, t in ids.items()]))
        return out
    reps = _replicas(dirs)
    ref = max(reps, key=lambda r: (r.latest_epoch, r.view.log_end))
    out["reference"] = ref.path
    out["logEndOffsets"] = {r.path: r.view.log_end for r in reps}
    out["lastStableOffsets"] = {r.path: r.view.last_stable for r in reps}
    for f in reps:
        if f is ref:
            continue
        found, notes = _batch_classes(ref, f, max_listed)
        out["divergences"] += found + _txn_outcomes(ref, f) + _txn_outcomes(f, ref)
        out["notes"] += notes
    for x in reps:
        for y in reps:
            if x is not y:
                out["divergences"] += _resurrected(x, y)
    return out


def _live_partition_dirs(log_dir: str) -> list:
    """The live partition dirs of ``log_dir``, spelled from the path the user gave."""
    return [os.path.join(log_dir, os.path.basename(d)) for d in LogDir(log_dir).partition_dirs()
            if partition_dir_state(d) == "live"]


def fleet_diff(paths: list, max_listed: int = 1000, different_partitions: bool = False) -> FleetReport:
    """Compare N log dirs (every partition in two or more of them, matched by dir name) or N partition
    dirs of one partition; bad paths (a file, log dirs mixed with partition dirs, one path, two
    different topic-partitions unless ``different_partitions``) raise :class:`PathUsageError`."""
    kinds = classify_for(paths, "diff", accept=(LOG_DIR, PARTITION_DIR), what=TAKES)
    if len({k.kind for k in kinds}) > 1:
        raise PathUsageError(f"kfx diff takes {TAKES}, not both: "
                             + ", ".join(f"{k.path} is {'a log dir' if k.kind == LOG_DIR else 'a partition dir'}"
                                         for k in kinds))
    if len({os.path.realpath(p) for p in paths}) < len(paths) or len(paths) < 2:
        raise PathUsageError(f"kfx diff takes {TAKES}: two or more different dirs, one replica each")
    rep = FleetReport(list(paths))
    one_name = True
    if kinds[0].kind == PARTITION_DIR:
        one_name = len({parse_partition_dir_name(p) for p in paths}) == 1
        for p in paths[1:]:
            rep.notes += replica_names(paths[0], p, different_partitions)
        groups = {os.path.basename(os.path.normpath(paths[0])): list(paths)}
    else:
        groups = {}
        for ld in paths:
            for d in _live_partition_dirs(ld):
                groups.setdefault(os.path.basename(d), []).append(d)
    for name, dirs in sorted(groups.items()):
        if len(dirs) < 2:
            rep.single.append({"partition": name, "replica": dirs[0]})
            continue
        rep.partitions.append(compare_partition(name, dirs, max_listed, check_ids=one_name))
    return rep
