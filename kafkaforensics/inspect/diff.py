"""``kfx diff``: compare two replicas of one partition batch by batch.

Reports the first diverging offset, batches present on one side only, the same offsets holding
different bytes (CRC or layout), and where truncation by leader epoch would reconcile the replicas:
the follower (B) truncates to the end offset, in the leader's (A's) leader-epoch history, of the
last epoch they share -- capped by the first divergence.

A batch whose CRC fails is damage, not a divergence: it is listed as the replica's corruption
(``corrupt_a``/``corrupt_b``: file, byte position, offsets) and its offsets are not compared; B
truncates at its first corrupt batch, as Kafka's log loading would.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from kafkaforensics.errors import KafkaFormatError
from kafkaforensics.log.leader_epochs import LeaderEpochCache
from kafkaforensics.log.partition import Partition, parse_partition_dir_name
from kafkaforensics.log.paths import PARTITION_DIR, PathUsageError, classify_for


@dataclass
class DiffReport:
    a: str
    b: str
    first_diverging_offset: int | None = None
    only_in_a: list = field(default_factory=list)
    only_in_b: list = field(default_factory=list)
    different: list = field(default_factory=list)
    log_end_offsets: tuple = (0, 0)
    truncate_b_to: int | None = None
    epoch_truncation: dict | None = None
    same_batches: int = 0
    corrupt_a: list = field(default_factory=list)
    corrupt_b: list = field(default_factory=list)
    notes: list = field(default_factory=list)

    @property
    def identical(self) -> bool:
        return self.first_diverging_offset is None and not self.corrupt_a and not self.corrupt_b

    def to_json(self) -> dict:
        return {"a": self.a, "b": self.b, "identical": self.identical,
                "firstDivergingOffset": self.first_diverging_offset, "onlyInA": self.only_in_a,
                "onlyInB": self.only_in_b, "differentBytes": self.different, "sameBatches": self.same_batches,
                "logEndOffsets": {"a": self.log_end_offsets[0], "b": self.log_end_offsets[1]},
                "truncateBTo": self.truncate_b_to, "epochTruncation": self.epoch_truncation,
                "corruptA": self.corrupt_a, "corruptB": self.corrupt_b, "notes": self.notes}


def _batches(log: Partition, corrupt: list, max_listed: int):
    """A replica's batches up to where its framing breaks; those whose CRC fails go to ``corrupt``."""
    for seg, b, _done in log.batches(damage="keep", producers=False):
        t = (b.base_offset, b.last_offset, b.crc, b.partition_leader_epoch, b.size, seg.log, b.position)
        if not b.crc_valid():
            if len(corrupt) < max_listed:
                corrupt.append({"baseOffset": t[0], "lastOffset": t[1], "crc": t[2], "file": t[5], "position": t[6],
                                "kind": "crc-mismatch"})
            continue
        yield t


def replica_names(dir_a: str, dir_b: str, different_partitions: bool = False) -> list[str]:
    """Notes on what the names of two replicas' dirs say (none: one topic-partition); raises
    :class:`~kafkaforensics.log.paths.PathUsageError` when they name two different topic-partitions,
    unless ``different_partitions``."""
    ta, tb = parse_partition_dir_name(dir_a), parse_partition_dir_name(dir_b)
    if ta is not None and tb is not None:
        if ta == tb:
            return []
        what = f"{dir_a} holds {ta[0]}-{ta[1]}, {dir_b} holds {tb[0]}-{tb[1]}"
        if not different_partitions:
            raise PathUsageError(f"{what}: two different partitions are no replicas of one "
                                 "(--different-partitions compares them anyway)")
        return [f"{what}: compared as replicas, as --different-partitions asks"]
    unnamed = " and ".join(d for d, t in ((dir_a, ta), (dir_b, tb)) if t is None)
    return [f"{unnamed}: no <topic>-<partition> name, so not known to hold the same partition; compared as replicas"]


def diff(dir_a: str, dir_b: str, max_listed: int = 1000, different_partitions: bool = False) -> DiffReport:
    """Compare two replicas of one partition: two partition dirs (anything else raises
    :class:`~kafkaforensics.log.paths.PathUsageError`: a log dir holds many partitions, a file is part
    of one; so do two dirs named after two different topic-partitions, unless ``different_partitions``)."""
    classify_for([dir_a, dir_b], "diff", accept=(PARTITION_DIR,),
                 what="two partition dirs (two replicas of one partition)")
    notes = replica_names(dir_a, dir_b, different_partitions)
    pa, pb = Partition.scan(dir_a), Partition.scan(dir_b)
    rep = DiffReport(pa.path, pb.path, notes=notes)
    ia, ib = _batches(pa, rep.corrupt_a, max_listed), _batches(pb, rep.corrupt_b, max_listed)
    corrupt_offsets: list[tuple[int, int]] = []  # offset ranges a corrupt batch of either side holds: not compared there

    def covered(t):
        return any(lo <= t[0] and t[1] <= hi for lo, hi in corrupt_offsets)
    x, y = next(ia, None), next(ib, None)
    leo_a = leo_b = 0

    def diverge(off):
        if rep.first_diverging_offset is None or off < rep.first_diverging_offset:
            rep.first_diverging_offset = off

    def entry(t):
        return {"baseOffset": t[0], "lastOffset": t[1], "crc": t[2], "epoch": t[3], "file": t[5], "position": t[6]}

    while x is not None or y is not None:
        if x is not None:
            leo_a = max(leo_a, x[1] + 1)
        if y is not None:
            leo_b = max(leo_b, y[1] + 1)
        corrupt_offsets[:] = [(c["baseOffset"], c["lastOffset"]) for c in rep.corrupt_a + rep.corrupt_b]
        if y is None or (x is not None and x[1] < y[0]):
            assert x is not None  # the loop runs while either side has a batch
            if not covered(x):
                diverge(x[0])
                if len(rep.only_in_a) < max_listed:
                    rep.only_in_a.append(entry(x))
            x = next(ia, None)
        elif x is None or y[1] < x[0]:
            if not covered(y):
                diverge(y[0])
                if len(rep.only_in_b) < max_listed:
                    rep.only_in_b.append(entry(y))
            y = next(ib, None)
        else:
            if (x[0], x[1], x[2]) != (y[0], y[1], y[2]):
                diverge(min(x[0], y[0]))
                if len(rep.different) < max_listed:
                    rep.different.append({"a": entry(x), "b": entry(y)})
            else:
                rep.same_batches += 1
            ax, ay = x[1], y[1]
            if ax <= ay:
                x = next(ia, None)
            if ay <= ax:
                y = next(ib, None)
    rep.log_end_offsets = (leo_a, leo_b)
    if rep.corrupt_b:  # Kafka's log loading truncates B at its first corrupt batch
        first_bad = rep.corrupt_b[0]["baseOffset"]
        rep.truncate_b_to = first_bad if rep.first_diverging_offset is None else min(first_bad,
                                                                                      rep.first_diverging_offset)
    if rep.first_diverging_offset is not None:
        rep.truncate_b_to = min(rep.first_diverging_offset, rep.truncate_b_to if rep.truncate_b_to is not None
                                else rep.first_diverging_offset)
        try:
            epochs_a = LeaderEpochCache.read(pa.path) or LeaderEpochCache()
        except KafkaFormatError:
            epochs_a = LeaderEpochCache()
        assert isinstance(pb.batch_epochs, LeaderEpochCache)  # built by the walk of B's batches above
        last_b = pb.batch_epochs.latest_epoch  # B's epochs, as its batches carry them
        e = epochs_a.floor_epoch(last_b) if last_b is not None else None
        if e is not None:
            # the end offset, in A's history, of the last epoch the replicas share
            _e, end = epochs_a.end_offset_for(e, leo_a)
            rep.epoch_truncation = {"epoch": e, "endOffsetInA": end, "truncateBTo": min(end, leo_b)}
    return rep
