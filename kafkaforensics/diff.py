"""``kfx diff``: compare two replicas of one partition batch by batch.

Reports the first diverging offset, batches present on one side only, the same offsets holding
different bytes (CRC or layout), and where truncation by leader epoch would reconcile the replicas:
the follower (B) truncates to the end offset, in the leader's (A's) leader-epoch history, of the
last epoch they share -- capped by the first divergence.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .partition import PartitionDir
from .segment import BatchScanner, open_buffer


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

    @property
    def identical(self) -> bool:
        return self.first_diverging_offset is None

    def to_json(self) -> dict:
        return {"a": self.a, "b": self.b, "identical": self.identical,
                "firstDivergingOffset": self.first_diverging_offset, "onlyInA": self.only_in_a,
                "onlyInB": self.only_in_b, "differentBytes": self.different, "sameBatches": self.same_batches,
                "logEndOffsets": {"a": self.log_end_offsets[0], "b": self.log_end_offsets[1]},
                "truncateBTo": self.truncate_b_to, "epochTruncation": self.epoch_truncation}


def _batches(pd: PartitionDir):
    for seg in pd.segments:
        with open_buffer(seg.log) as buf:
            for b in BatchScanner(buf, file=seg.log, base_offset=seg.base_offset):
                if not b.crc_valid():
                    return
                yield (b.base_offset, b.last_offset, b.crc, b.partition_leader_epoch, b.size, seg.log, b.position)


def diff(dir_a: str, dir_b: str, max_listed: int = 1000) -> DiffReport:
    pa, pb = PartitionDir.scan(dir_a), PartitionDir.scan(dir_b)
    rep = DiffReport(pa.path, pb.path)
    ia, ib = _batches(pa), _batches(pb)
    x, y = next(ia, None), next(ib, None)
    leo_a = leo_b = 0
    epochs_b = []

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
            if y[3] >= 0 and (not epochs_b or y[3] > epochs_b[-1][0]):
                epochs_b.append((y[3], y[0]))
        if y is None or (x is not None and x[1] < y[0]):
            diverge(x[0])
            if len(rep.only_in_a) < max_listed:
                rep.only_in_a.append(entry(x))
            x = next(ia, None)
        elif x is None or y[1] < x[0]:
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
    if rep.first_diverging_offset is not None:
        rep.truncate_b_to = rep.first_diverging_offset
        try:
            epochs_a = [(e["epoch"], e["startOffset"]) for e in (pa.leader_epochs() or [])]
        except Exception:
            epochs_a = []
        if epochs_a and epochs_b:
            last_b = epochs_b[-1][0]
            shared = [e for e, _s in epochs_a if e <= last_b]
            if shared:
                e = max(shared)
                later = [s for ep, s in epochs_a if ep > e]
                end = min(later) if later else leo_a
                rep.epoch_truncation = {"epoch": e, "endOffsetInA": end,
                                        "truncateBTo": min(end, leo_b)}
    return rep
