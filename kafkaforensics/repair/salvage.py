"""``kfx salvage``: find every valid batch in damaged files or raw disk images and write them out.

Kafka's recovery stops at the first bad batch and throws the rest away.  Salvage walks each input
batch by batch while the bytes are sound and, past damage, searches for the next place where a
batch header is plausible (a regular expression over the bytes, so zeroed or garbage regions are
crossed at C speed, never byte by byte in Python).  A candidate counts only if its framing, its
CRC and every record in it (decompressed if need be) are valid.  The batches found are written in
offset order, without duplicates, as a new partition directory with indexes; where two different
batches claim the same offsets, the one with the higher partition leader epoch wins (what
replication's truncation by leader epoch would keep) and the other is reported as a conflict.
Inputs are only read.
"""
from __future__ import annotations

import os
from contextlib import ExitStack
from dataclasses import dataclass, field

from kafkaforensics.log.partition import Partition, parse_partition_dir_name
from kafkaforensics.log.paths import LOG_DIR, PathUsageError, classify
from kafkaforensics.log.batch_search import MAX_CANDIDATE_BYTES, offset_damage_at, scan_file, valid_batch_at  # noqa: F401
from kafkaforensics.log.segment import RESIDENT_WINDOW, Segment, release_pages
from kafkaforensics.log.writer import DEFAULT_SEGMENT_BYTES, PartitionWriter


@dataclass
class SalvageReport:
    out: str | None = None
    batches: int = 0
    records: int = 0
    duplicates: int = 0
    recovered: list[dict] = field(default_factory=list)
    skipped: list[dict] = field(default_factory=list)
    conflicts: list[dict] = field(default_factory=list)
    scanned_bytes: int = 0

    def to_json(self) -> dict:
        return {"out": self.out, "batches": self.batches, "records": self.records,
                "duplicates": self.duplicates, "recovered": self.recovered, "skipped": self.skipped,
                "conflicts": self.conflicts, "scannedBytes": self.scanned_bytes}


def _inputs(paths) -> list[str]:
    out = []
    for p in paths:
        if os.path.isdir(p):
            for root, _dirs, files in os.walk(p):
                out += [os.path.join(root, f) for f in sorted(files) if ".log" in f]
        else:
            out.append(p)
    return out


def _skipped(file: str, buf, gap) -> dict:
    """A skipped range of ``file``, with the reason when it starts at a CRC-valid batch whose offsets
    are damage (negative, or leaving int64: the CRC does not cover the base offset)."""
    out = {"file": file, "start": gap[0], "end": gap[1], "bytes": gap[1] - gap[0]}
    why = offset_damage_at(buf, gap[0])
    if why:
        out["reason"] = f"the batch at byte {gap[0]} is CRC-valid but its {why}"
    return out


def _source_topic_id(files) -> str | None:
    """The topic id of the partition the salvaged segments came from, if a partition.metadata says it."""
    for d in dict.fromkeys(os.path.dirname(os.path.abspath(f)) for f in files):
        try:
            md = Partition.scan(d).partition_metadata()
        except Exception:  # damaged evidence: the id derived from the output's name serves
            continue
        if md:
            return md["topicId"]
    return None


def check_inputs(paths) -> None:
    """ValueError (one line) for inputs that are no one partition's: a log dir (each of its partitions
    is salvaged into its own --out), or partition dirs of different topic-partitions merged into one
    output. Raw files and disk images are taken as they are."""
    names: dict[tuple[str, int], str] = {}  # topic-partition -> the first dir named for it
    for p in paths:
        if not os.path.isdir(p):
            continue
        try:
            kind = classify(p).kind
        except PathUsageError:  # a damaged dir with nothing Kafka names in it: its files are raw input
            continue
        if kind == LOG_DIR:
            raise ValueError(f"{p}: a log dir; kfx salvage takes segment files, partition dirs or disk images: "
                             "name the partition dirs to salvage each into its own --out")
        tp = parse_partition_dir_name(p)
        if tp is not None:
            names.setdefault(tp, p)
    if len(names) > 1:
        a, b = list(names.values())[:2]
        raise ValueError(f"{a} and {b} are different partitions: salvage each into its own --out "
                         "(one output holds one partition)")


def salvage(paths, out_dir: str, *, segment_bytes: int = DEFAULT_SEGMENT_BYTES, index_interval_bytes: int = 4096,
            progress=None, dry_run: bool = False) -> SalvageReport:
    check_inputs(paths)
    files = _inputs(paths)
    out_abs = os.path.abspath(out_dir)
    for p in paths:
        pa = os.path.abspath(p)
        if out_abs == pa or (os.path.isdir(pa) and out_abs.startswith(pa + os.sep)):
            raise ValueError(f"--out {out_dir} lies inside the input {p}: salvage never writes into its input")
    rep = SalvageReport()
    found = []  # (base, -epoch, last, crc, file index, position, size)
    with ExitStack() as stack:
        bufs = [stack.enter_context(Segment.of_file(f).buffer()) for f in files]
        for fi, (f, buf) in enumerate(zip(files, bufs)):
            rep.scanned_bytes += len(buf)
            for b, gap in scan_file(buf, f, progress=progress):
                if gap is not None:
                    rep.skipped.append(_skipped(f, buf, gap))
                if b is not None:
                    found.append((b.base_offset, -b.partition_leader_epoch, b.last_offset, b.crc, fi, b.position,
                                  b.size, b.count or 0))
        found.sort()
        kept: list[tuple[int, int, int, int, int, int, int, int]] = []  # the found items kept, as found
        for item in found:
            base, neg_epoch, last, crc = item[:4]
            if kept and base <= kept[-1][2]:
                prev = kept[-1]
                if (prev[0], prev[2], prev[3]) == (base, last, crc):
                    rep.duplicates += 1
                else:
                    rep.conflicts.append({"baseOffset": base, "lastOffset": last, "file": files[item[4]],
                                          "position": item[5], "keptFile": files[prev[4]], "keptPosition": prev[5]})
                continue
            kept.append(item)
        for base, _e, last, _c, _fi, _p, _s, count in kept:
            rep.batches += 1
            rep.records += count
            if rep.recovered and rep.recovered[-1]["last"] + 1 == base:
                rep.recovered[-1]["last"] = last
            else:
                rep.recovered.append({"first": base, "last": last})
        if not dry_run:
            released = [0] * len(bufs)
            with PartitionWriter(out_dir, segment_bytes=segment_bytes, index_interval_bytes=index_interval_bytes,
                                 topic_id=_source_topic_id(files)) as w:
                for _b, _e, _l, _c, fi, pos, size, _n in kept:
                    w.append(bytes(bufs[fi][pos:pos + size]))
                    if abs(pos - released[fi]) > RESIDENT_WINDOW:  # keep memory flat on huge images
                        release_pages(bufs[fi], 0, len(bufs[fi]))
                        released[fi] = pos
            rep.out = out_abs
    return rep
