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
  the other's transaction stays open past it, its last stable offset frozen) -- judged by the rules of
  :mod:`kafkaforensics.log.replica_race`, which ``kfx scan``'s replica view shares;
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
from kafkaforensics.log.log_config import LogConfig
from kafkaforensics.log.replica_race import Replica, batch_ev, entry, reference, resurrected, txn_outcomes
from kafkaforensics.log.partition import LogDir, Partition, parse_partition_dir_name, partition_dir_state
from kafkaforensics.log.paths import LOG_DIR, PARTITION_DIR, PathUsageError, classify_for

DIVERGED, ONE_SIDED, EPOCH_TRUNCATION, CORRUPT, TOPIC_ID_MISMATCH = (
    "diverged", "one-sided", "epoch-truncation", "corrupt", "topic-id-mismatch")
#: what ``kfx diff`` takes, in its one-line refusals
TAKES = "two partition dirs or more (replicas of one partition), or log dirs (one per broker)"


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


def _replicas(dirs: list) -> list[Replica]:
    """Each dir walked once; every keyed record kept when the topic compacts or a replica's cleaner ran."""
    parts = [Partition.scan(d) for d in dirs]
    cleaners = [LogView(partition=pd).checkpoint(LogDir.CLEANER_OFFSET) for pd in parts]
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
            out.append(entry(CORRUPT, path, ref.path if path == f.path else f.path,
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
        out.append(entry(ONE_SIDED, holder, other, f"offsets {e['baseOffset']}..{e['lastOffset']} only in {holder}, "
                          f"not in {other}", [_where(e, holder)], offsets=[e["baseOffset"], e["lastOffset"]]))
    for d in rep.different:
        a, b = d["a"], d["b"]
        if _compacted_away(ref, f, min(a["baseOffset"], b["baseOffset"]), max(a["lastOffset"], b["lastOffset"])):
            compacted += 1
            continue
        out.append(entry(DIVERGED, f.path, ref.path, f"offsets {a['baseOffset']}..{a['lastOffset']}: different bytes "
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
    b = f.view.batch_holding(e["truncateBTo"]) or next((x for x in f.view.batches if x.base >= e["truncateBTo"]), None)
    if b is not None:
        ev.append(batch_ev(f, b, "the follower's first batch past it"))
    return [entry(EPOCH_TRUNCATION, f.path, ref.path,
                   f"{f.path} should have truncated to offset {e['truncateBTo']} (the end of epoch {e['epoch']} in "
                   f"{ref.path}) but holds offsets up to {rep.log_end_offsets[1] - 1}", ev,
                   epoch=e["epoch"], truncateTo=e["truncateBTo"])]


def compare_partition(name: str, dirs: list, max_listed: int = 1000, check_ids: bool = True) -> dict:
    """The replicas ``dirs`` of partition ``name`` compared: divergences, notes, each one's log end
    (``check_ids``: their ``partition.metadata`` topic ids must agree)."""
    divergences: list[dict] = []
    all_notes: list[str] = []
    out: dict[str, object] = {"partition": name, "replicas": list(dirs), "reference": None,
                              "divergences": divergences, "notes": all_notes}
    ids = _topic_ids(dirs) if check_ids else {}
    if len(set(ids.values())) > 1:
        divergences.append(entry(TOPIC_ID_MISMATCH, dirs[0], dirs[1], "partition.metadata: topic ids differ ("
                                  + ", ".join(f"{d}: {t}" for d, t in ids.items()) + "): two topics of one name",
                                  [{"text": f"{os.path.join(d, 'partition.metadata')}: topic_id {t}",
                                    "file": os.path.join(d, "partition.metadata"), "topicId": t}
                                   for d, t in ids.items()]))
        return out
    reps = _replicas(dirs)
    ref = reference(reps)
    out["reference"] = ref.path
    out["logEndOffsets"] = {r.path: r.view.log_end for r in reps}
    out["lastStableOffsets"] = {r.path: r.view.last_stable for r in reps}
    for f in reps:
        if f is ref:
            continue
        found, notes = _batch_classes(ref, f, max_listed)
        divergences += found + txn_outcomes(ref, f) + txn_outcomes(f, ref)
        all_notes += notes
    for x in reps:
        for y in reps:
            if x is not y:
                divergences += resurrected(x, y)
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
