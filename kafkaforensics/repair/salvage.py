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
import re
from contextlib import ExitStack
from dataclasses import dataclass, field

from specs import legacy as L
from specs import record_batch as R

from kafkaforensics.records.batch import parse_legacy_header, parse_v2_header, resolve_legacy_wrapper
from kafkaforensics.errors import KafkaFormatError
from kafkaforensics.log.partition import PartitionDir
from kafkaforensics.log.segment import LOG_PREFIX, RESIDENT_WINDOW, open_buffer, release_pages
from kafkaforensics.log.writer import DEFAULT_SEGMENT_BYTES, PartitionWriter

# A plausible header at the match position: a positive size of at least 14 bytes, then either
# magic 2 with an attributes word below 0x80, or magic 0/1 with attributes below 0x10.
_CANDIDATE = re.compile(
    rb"(?=[\x00-\xff]{8}"
    rb"(?:[\x01-\x7f][\x00-\xff]{3}|\x00[\x01-\xff][\x00-\xff]{2}|\x00\x00[\x01-\xff][\x00-\xff]|\x00\x00\x00[\x0e-\xff])"
    rb"[\x00-\xff]{4}"
    rb"(?:\x02[\x00-\xff]{4}\x00[\x00-\x7f]|[\x00\x01][\x00-\x0f]))")


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


#: Largest batch a search candidate may claim to be (a false candidate could otherwise make the
#: CRC check read far ahead). Walking sound bytes from a valid batch has no such limit.
MAX_CANDIDATE_BYTES = 64 << 20


def _plausible_v2(b) -> bool:
    """Header checks a real v2 batch always passes; random bytes almost never do."""
    return (0 <= b.count <= b.last_offset - b.base_offset + 1 and b.compression <= 4
            and b.producer_id >= -1 and b.producer_epoch >= -1 and b.base_sequence >= -1
            and b.size <= MAX_CANDIDATE_BYTES)


def _legacy_lengths_fit(buf, pos: int, size: int, magic: int) -> bool:
    """A legacy message's key and value lengths must account for its size exactly."""
    p = pos + L.KEY_LENGTH_OFFSET[magic]
    n, end = L.LENGTH.struct.size, pos + L.LOG_OVERHEAD + size
    klen = int.from_bytes(buf[p:p + n], "big", signed=True)
    if klen < -1 or p + n + max(klen, 0) + n > end:
        return False
    q = p + n + max(klen, 0)
    vlen = int.from_bytes(buf[q:q + n], "big", signed=True)
    return q + n + max(vlen, 0) == end and vlen >= -1


def valid_batch_at(buf, pos: int, file: str | None = None, *, deep: bool = True):
    """The batch starting at ``pos`` if its framing, CRC and (``deep``) records are valid, else None.

    Batches met while walking sound bytes are taken on their CRC, as Kafka takes them; a candidate
    found by searching damaged bytes must also decode record by record."""
    n = len(buf)
    if pos + R.HEADER_SIZE_UP_TO_MAGIC > n:
        return None
    _offset, size = LOG_PREFIX.unpack_from(buf, pos)
    magic = buf[pos + R.MAGIC_OFFSET]
    if size < L.RECORD_OVERHEAD_V0 or pos + L.LOG_OVERHEAD + size > n:
        return None
    try:
        if magic == 2:
            if size + R.LOG_OVERHEAD < R.HEADER_SIZE:
                return None
            b = parse_v2_header(buf, pos, file)
            if b.last_offset < b.base_offset or b.base_offset < 0 or (deep and not _plausible_v2(b)):
                return None
            if not b.crc_valid():
                return None
            if deep:
                recs = b.records()
                if recs and (recs[0].offset < b.base_offset or recs[-1].offset > b.last_offset):
                    return None
            return b
        if magic in (0, 1):
            if size < (L.RECORD_OVERHEAD_V0 if magic == 0 else L.RECORD_OVERHEAD_V1):
                return None
            b = parse_legacy_header(buf, pos, file)
            if deep and (b.compression > 3 or b.size > MAX_CANDIDATE_BYTES or not _legacy_lengths_fit(buf, pos, size, magic)):
                return None
            if not b.crc_valid():
                return None
            resolve_legacy_wrapper(b)
            if b.base_offset < 0:
                return None
            return b
    except (KafkaFormatError, ValueError, IndexError):
        return None
    return None


def scan_file(buf, file: str, *, progress=None):
    """Yield (batch, skipped_range_or_None) for every valid batch of ``buf``; the final item may
    be (None, tail_range) for a damaged tail."""
    n = len(buf)
    pos = 0
    gap = None
    reported = 0
    released = 0
    while pos + R.HEADER_SIZE_UP_TO_MAGIC <= n:
        b = valid_batch_at(buf, pos, file, deep=gap is not None or pos == 0)
        if b is not None:
            yield b, ((gap, pos) if gap is not None else None)
            gap = None
            pos += b.size
            if pos - released > RESIDENT_WINDOW:
                release_pages(buf, released, pos - (1 << 20))
                released = pos - (1 << 20)
        else:
            if gap is None:
                gap = pos
            m = _CANDIDATE.search(buf, pos + 1)
            if m is None:
                pos = n
                break
            pos = m.start()
        if progress is not None and pos - reported >= 1 << 22:
            progress(pos - reported)
            reported = pos
    if progress is not None:
        progress(n - reported)
    if gap is not None or pos < n:
        yield None, (gap if gap is not None else pos, n)


def _inputs(paths) -> list[str]:
    out = []
    for p in paths:
        if os.path.isdir(p):
            for root, _dirs, files in os.walk(p):
                out += [os.path.join(root, f) for f in sorted(files) if ".log" in f]
        else:
            out.append(p)
    return out


def _source_topic_id(files) -> str | None:
    """The topic id of the partition the salvaged segments came from, if a partition.metadata says it."""
    for d in dict.fromkeys(os.path.dirname(os.path.abspath(f)) for f in files):
        try:
            md = PartitionDir.scan(d).partition_metadata()
        except Exception:  # damaged evidence: the id derived from the output's name serves
            continue
        if md:
            return md["topicId"]
    return None


def salvage(paths, out_dir: str, *, segment_bytes: int = DEFAULT_SEGMENT_BYTES, index_interval_bytes: int = 4096,
            progress=None, dry_run: bool = False) -> SalvageReport:
    files = _inputs(paths)
    out_abs = os.path.abspath(out_dir)
    for p in paths:
        pa = os.path.abspath(p)
        if out_abs == pa or (os.path.isdir(pa) and out_abs.startswith(pa + os.sep)):
            raise ValueError(f"--out {out_dir} lies inside the input {p}: salvage never writes into its input")
    rep = SalvageReport()
    found = []  # (base, -epoch, last, crc, file index, position, size)
    with ExitStack() as stack:
        bufs = [stack.enter_context(open_buffer(f)) for f in files]
        for fi, (f, buf) in enumerate(zip(files, bufs)):
            rep.scanned_bytes += len(buf)
            for b, gap in scan_file(buf, f, progress=progress):
                if gap is not None:
                    rep.skipped.append({"file": f, "start": gap[0], "end": gap[1], "bytes": gap[1] - gap[0]})
                if b is not None:
                    found.append((b.base_offset, -b.partition_leader_epoch, b.last_offset, b.crc, fi, b.position,
                                  b.size, b.count or 0))
        found.sort()
        kept = []
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
