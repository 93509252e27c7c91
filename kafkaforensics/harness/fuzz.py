"""Structure-aware fuzzing of every parser entry point (``make fuzz``; a quick pass in ``make test``).

Each *target* is a parser entry point with seed inputs taken from the bundled sample log dir (or
built with the project's writers) and the byte positions where its fields begin. Mutators work on
those boundaries: bit flips, truncation at a field boundary, inserted garbage, zeroed runs, length
fields set to 0, -1, 0x7fffffff and -2**31, varints that never end, compressed payloads replaced by
garbage or by a decompression bomb, splices; a segment's batch CRCs are recomputed after mutating
half of the time so that mutations reach the decoders behind the CRC check.

Whole commands are targets too: ``compact`` (in place, with its backup, and ``compact-dry-run``),
``recover``, ``reindex``, ``retention``, ``analyze``, ``verify`` and ``salvage`` (whose output
partition must then verify free of offset and snapshot problems) run on the mutated segment laid
out as a partition (split at a batch boundary into two segments when it can be; on tmpfs), and
``spark-records`` is the Spark records level's Arrow path without a session; a command must return
its report, every problem in it located -- nothing it raises counts as located.

One mutation puts a header field at the int64 edge (issue 58, :data:`INT64_EDGES`): a base offset
whose last offset leaves int64 or that is negative (the CRC does not cover it), a first timestamp at
Java's long limits, a base sequence at Integer.MAX_VALUE, a legacy entry's offset at the limits.
The ``decoders`` target is differential: ``Batch.records()`` and the columnar decoder must give
equal records (or the same located problem) for every input.

The contract checked for every input: the parser returns (a clean parse) or raises
:class:`~kafkaforensics.errors.KafkaFormatError` with a kind and a byte position (a located
problem); any other exception is a *crash*, more than ``HANG_SECONDS`` in one input a *hang*. The
campaign runs in a child process with its address space capped (``RLIMIT_AS``), so unbounded
allocation fails as a crash instead of swapping the machine.

The input of target ``t`` number ``i`` is a pure function of (``t``, ``i``): a campaign resumes
where the state file says it stopped, and a crasher is kept (as bytes, with its traceback) under
``tests/fixtures/fuzz-corpus/<target>/``, re-run by the test suite for ever after.
"""
from __future__ import annotations

import atexit
import shutil
import argparse
import hashlib
import json
import os
import random
import resource
import signal
import struct
import subprocess
import sys
import time
import traceback
import zlib
from dataclasses import asdict, dataclass, field
from typing import Callable

from specs import checkpoints as C
from specs import codecs
from specs import kafka_messages as K
from specs import legacy as L
from specs import protocol_messages as P
from specs import record_batch as R
from specs.primitives import field_offset
from specs.schemas import legacy as LS
from specs.schemas import record_batch as RS

from kafkaforensics.broker.protocol import Connection, ProtocolViolation, Request, request_header_version
from kafkaforensics.broker.replay import SUPPORTED, WRITE_APIS
from kafkaforensics.errors import KafkaFormatError
from kafkaforensics.log import record_columns
from kafkaforensics.log.producer_state import read_snapshot
from kafkaforensics.log.segment import (INDEX, INDEX_BY_SUFFIX, LOCAL_FILES, LOG, SNAPSHOT, TIMEINDEX, TXNINDEX,
                                        BatchScanner, file_name)
from kafkaforensics.log.txn_index import AbortedTxn, to_bytes
from kafkaforensics.log.txn_index import read_entries as read_txn
from kafkaforensics.records import builder, compression
from kafkaforensics.records import internal_topics as I
from kafkaforensics.records.batch import Record
from kafkaforensics.records.checksums import crc32c
from kafkaforensics.repair.cleaner import CompactOptions, compact
from kafkaforensics.repair.recovery import recover
from kafkaforensics.repair.reindex import reindex
from kafkaforensics.repair.retention import retention
from kafkaforensics.repair.salvage import salvage
from kafkaforensics.inspect.analyzer import AnalyzeOptions, analyze
from kafkaforensics.inspect.verify import verify
# the Spark records level's target (pyspark is imported with them: a fuzz process pays ~0.5 s once)
from kafkaforensics.spark import record_runs, scan_plan, spark_source
from kafkaforensics.spark.spark_source import KafkaSegmentsReader

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLE = os.path.join(os.path.dirname(HERE), "tests", "fixtures", "sample-logdir")
CORPUS = os.path.join(os.path.dirname(HERE), "tests", "fixtures", "fuzz-corpus")
HANG_SECONDS = 5
#: The decompression bound the campaign runs with (the default, 256 MiB, makes every bomb cost a
#: second; the bound is enforced the same way at any size, and ``tests/test_fuzz.py`` runs bombs
#: at the default bound too).
CAMPAIGN_DECOMPRESSED = 16 << 20
LENGTHS = (0, -1, 0x7FFFFFFF, -0x80000000, 0xFFFF, 1 << 30)


class Hang(Exception):
    pass


#: What a target returns when the parser reported a located problem without raising (a walk's stop).
LOCATED = "located"


@dataclass
class Target:
    name: str
    run: Callable[[bytes], object]    # may raise KafkaFormatError
    seeds: list = field(default_factory=list)     # [(bytes, [boundaries])]
    segment: bool = False             # seeds are segments: CRCs may be fixed after mutating
    text: bool = False                # a text file: a missing byte position is fine (line numbers)


# -- field boundaries --------------------------------------------------------------------------------
def _field_starts(spec) -> tuple[int, ...]:
    """Where each field of a fixed-width spec begins, and where the last ends."""
    return tuple(field_offset(spec, sc.name) for sc in spec.subcons) + (spec.sizeof(),)


_V2_FIELDS = _field_starts(RS.BatchHeader)
# offset, size, crc, magic, attrs, (magic 1 timestamp or magic 0 key length), magic 0 value length / magic 1 key length
_V0_FIELDS = _field_starts(LS.EntryPrefix) + (L.KEY_LENGTH_OFFSET[0] + L.LENGTH.struct.size, L.KEY_LENGTH_OFFSET[1])


def _varint_end(buf: bytes, pos: int) -> int:
    while pos < len(buf) and buf[pos] & 0x80:
        pos += 1
    return pos + 1


def segment_boundaries(data: bytes) -> list[int]:
    """Every batch's header fields and, in uncompressed v2 batches, every record's varint fields."""
    out = []
    for b in BatchScanner(data):
        p = b.position
        fields = _V2_FIELDS if b.magic == 2 else _V0_FIELDS
        out += [p + f for f in fields]
        if b.magic == 2 and b.compression == 0:
            q, end = p + R.HEADER_SIZE, p + b.size
            while q < end:
                out.append(q)
                length_end = _varint_end(data, q)
                rec_end = length_end + _zigzag(data, q)
                r = length_end + 1               # attributes
                for _ in range(4):               # timestamp delta, offset delta, key length, ...
                    out.append(r)
                    r = _varint_end(data, r)
                out.append(r)
                q = rec_end if rec_end > q else end
        out.append(p + b.size)
    return sorted(set(x for x in out if 0 <= x <= len(data)))


def _zigzag(buf: bytes, pos: int) -> int:
    v = shift = 0
    while pos < len(buf):
        c = buf[pos]
        v |= (c & 0x7F) << shift
        pos += 1
        if not c & 0x80:
            break
        shift += 7
    return (v >> 1) ^ -(v & 1)


def fix_crcs(data: bytearray) -> None:
    """Recompute every framed batch's CRC (v2: crc32c; magic 0/1: crc32), so decoders see the damage."""
    pos = 0
    while pos + R.HEADER_SIZE_UP_TO_MAGIC <= len(data):
        _offset, size = R.LOG_PREFIX_STRUCT.unpack_from(data, pos)
        end = pos + R.LOG_OVERHEAD + size
        if size < L.RECORD_OVERHEAD_V0 or end > len(data):
            return
        magic = data[pos + R.MAGIC_OFFSET]
        if magic == 2 and size >= R.HEADER_SIZE - R.LOG_OVERHEAD:
            struct.pack_into(">I", data, pos + R.CRC_OFFSET, crc32c(bytes(data[pos + R.ATTRIBUTES_OFFSET:end])))
        elif magic in (0, 1):
            struct.pack_into(">I", data, pos + L.CRC_OFFSET, zlib.crc32(bytes(data[pos + L.MAGIC_OFFSET:end])))
        pos = end


# -- mutators ----------------------------------------------------------------------------------------
def _bomb(codec: int, size: int) -> bytes:
    return compression.compress(codec, bytes(size), magic=2)


_BOMBS: dict = {}


def bombs() -> dict:
    """One compressed block per codec that expands past the decompression bound (made once)."""
    size = codecs.MAX_DECOMPRESSED + (1 << 20)
    if size not in _BOMBS:
        _BOMBS[size] = {codec: _bomb(codec, size) for codec in (1, 2, 3, 4)}
    return _BOMBS[size]


def mutate(rnd: random.Random, data: bytes, bounds: list[int], segment: bool) -> bytes:
    buf = bytearray(data)
    at = lambda: rnd.choice(bounds) if bounds and rnd.random() < 0.8 else rnd.randint(0, len(buf))  # noqa: E731
    for _ in range(rnd.choice((1, 1, 1, 2, 3))):
        op = rnd.randrange(11 if segment else 8)
        if op == 0 and buf:                                   # bit flips
            for _ in range(rnd.randint(1, 8)):
                i = rnd.randrange(len(buf))
                buf[i] ^= 1 << rnd.randrange(8)
        elif op == 1:                                         # truncation at a field boundary
            del buf[min(at(), len(buf)):]
        elif op == 2:                                         # inserted garbage
            i = min(at(), len(buf))
            buf[i:i] = rnd.randbytes(rnd.choice((1, 2, 4, 8, 17, 64, 300)))
        elif op == 3:                                         # a zeroed run
            i = min(at(), len(buf))
            n = rnd.choice((1, 4, 8, 64, 512, 4096))
            buf[i:i + n] = bytes(len(buf[i:i + n]))
        elif op == 4:                                         # a length field set to an extreme
            i = min(at(), len(buf))
            v = rnd.choice(LENGTHS)
            if rnd.random() < 0.5:
                buf[i:i + 4] = struct.pack(">i", v if v < 1 << 31 else 0x7FFFFFFF)
            else:
                buf[i:i + 2] = struct.pack(">h", max(-32768, min(32767, v)))
        elif op == 5:                                         # a zigzag varint of an extreme value
            i = min(at(), len(buf))
            v = rnd.choice(LENGTHS + (-(1 << 62), 1 << 62))
            buf[i:i + 1] = _encode_varint((v << 1) ^ (v >> 63))
        elif op == 6:                                         # a varint that never ends
            i = min(at(), len(buf))
            n = rnd.choice((5, 10, 11, 64, 4096))
            buf[i:] = b"\xff" * n if rnd.random() < 0.5 else b"\x80" * n + bytes(buf[i + n:])
        elif op == 7 and len(buf) > 2:                        # a splice from elsewhere
            a, b = sorted(rnd.randrange(len(buf)) for _ in range(2))
            i = at()
            buf[i:i] = buf[a:b]
        elif op in (8, 9):                                    # a compressed payload replaced
            _replace_payload(rnd, buf, bomb=op == 9 and rnd.random() < 0.25)
        elif op == 10:                                        # a header field at the int64 / int32 edge
            int64_edge(rnd, buf)
    if segment and rnd.random() < 0.5:
        fix_crcs(buf)
    return bytes(buf)


#: (field, struct, values) of the int64 edge (issue 58): base offsets whose last offset leaves int64 or
#: that are negative (the CRC does not cover baseOffset: such a batch stays CRC-valid), first
#: timestamps at Java's long limits (a delta wraps them), base sequences at Integer.MAX_VALUE (they wrap
#: to 0), and a legacy entry's offset at the limits (a wrapper's inner offsets are relative to it)
INT64_EDGES = (
    (R.BATCH_HEADER.offset("baseOffset"), ">q", (2**63 - 2, 2**63 - 1, 2**63 - 41, -1, -2, -2**63)),
    (R.BATCH_HEADER.offset("baseTimestamp"), ">q", (2**63 - 1, 2**63 - 2, -2**63, -2**63 + 1)),
    (R.BATCH_HEADER.offset("baseSequence"), ">i", (2**31 - 1, 2**31 - 2, -2, -2**31)),
)
_LEGACY_OFFSETS = (2**63 - 1, 2**63 - 2, -1, -2**63)


def int64_edge(rnd, buf: bytearray) -> None:
    """Set one framed batch's base offset, first timestamp or base sequence (v2), or a legacy entry's
    offset, to a value at the int64 / int32 edge; the batch's CRC is recomputed when it covers the
    field, so the batch reaches every decoder and command behind the CRC check."""
    batches = list(BatchScanner(bytes(buf)))
    if not batches:
        return
    b = rnd.choice(batches)
    if b.magic < 2:
        struct.pack_into(">q", buf, b.position, rnd.choice(_LEGACY_OFFSETS))
        return
    at, fmt, values = rnd.choice(INT64_EDGES)
    struct.pack_into(fmt, buf, b.position + at, rnd.choice(values))
    end = b.position + b.size
    struct.pack_into(">I", buf, b.position + R.CRC_OFFSET, crc32c(bytes(buf[b.position + R.ATTRIBUTES_OFFSET:end])))


def _encode_varint(u: int) -> bytes:
    u &= (1 << 64) - 1
    out = bytearray()
    while u >= 0x80:
        out.append((u & 0x7F) | 0x80)
        u >>= 7
    out.append(u)
    return bytes(out)


def _replace_payload(rnd, buf: bytearray, bomb: bool) -> None:
    """Replace the records of one v2 batch (compressed or not) by garbage or by a bomb, same codec,
    the batch's length field fixed to frame it."""
    batches = [b for b in BatchScanner(bytes(buf)) if b.magic == 2]
    if not batches:
        return
    b = rnd.choice(batches)
    codec = b.compression if b.compression in (1, 2, 3, 4) else rnd.choice((1, 2, 3, 4))
    if bomb:
        payload = bombs()[codec]
    else:
        payload = rnd.randbytes(rnd.choice((0, 1, 7, 64, 1000)))
        if rnd.random() < 0.5:  # a valid frame of the codec around garbage
            payload = compression.compress(codec, payload, magic=2)
    hdr = bytearray(buf[b.position:b.position + R.HEADER_SIZE])
    struct.pack_into(">i", hdr, R.BATCH_LENGTH_OFFSET, R.HEADER_SIZE - R.LOG_OVERHEAD + len(payload))
    attrs = struct.unpack_from(">h", hdr, R.ATTRIBUTES_OFFSET)[0]
    struct.pack_into(">h", hdr, R.ATTRIBUTES_OFFSET, (attrs & ~R.COMPRESSION_MASK) | codec)
    buf[b.position:b.position + b.size] = hdr + payload


# -- the targets --------------------------------------------------------------------------------------
def _files(suffix: str) -> list[str]:
    out = []
    for root, _d, files in os.walk(SAMPLE):
        out += [os.path.join(root, f) for f in sorted(files) if f.endswith(suffix)]
    return sorted(out)


def _read(p: str) -> bytes:
    """A sample file's bytes (a seed), read through the segments' byte source."""
    return LOCAL_FILES.read_all(p) or b""


def _fixed(data: bytes, width: int, head: int = 0) -> list[int]:
    return list(range(0, head)) + list(range(head, len(data) + 1, width)) + \
        [x + o for x in range(head, len(data), width) for o in (4, 8)]


def _segment_seeds():
    seeds = [_read(p) for p in _files(".log")]
    # every codec in magic 2, with headers, null keys and values, a control batch and a transaction
    extra = []
    for codec in range(5):
        recs = [Record(j, 1000 + j, None if j == 1 else b"k%d" % j, None if j == 2 else b"v" * j,
                       [("h", b"x")] if j % 2 else []) for j in range(4)]
        extra.append(builder.build_v2(recs, base_offset=0, codec=codec,
                                      producer=builder.BatchProducer(producer_id=7, producer_epoch=1, base_sequence=0),
                                      transactional=codec == 3))
    for magic in (0, 1):
        for codec in range(4):
            recs = [Record(j, 1000 + j, b"k", b"v" * j, []) for j in range(3)]
            extra.append(builder.build_legacy(recs, magic=magic, codec=codec))
    seeds += extra
    return [(s, segment_boundaries(s)) for s in seeds]


def _drain_segment(data: bytes):
    sc = BatchScanner(data, file="fuzz.log", base_offset=0)
    n, located = 0, False
    for b in sc:
        b.crc_valid()
        try:
            for r in b.records():
                r.control() if b.is_control else None
                n += 1
        except KafkaFormatError as e:
            if e.problem.position is None:
                raise AssertionError(f"unlocated problem: {e}") from None
            located = True
    if sc.stop is not None and sc.stop.position is None:
        raise AssertionError(f"unlocated stop: {sc.stop}")
    return LOCATED if located or sc.stop is not None else n


def _drain_columns(data: bytes):
    """The columnar decoder (Spark's records level) over the batches whose CRC holds."""
    batches = [b for b in BatchScanner(data, file="fuzz.log", base_offset=0) if b.crc_valid()]
    try:
        cols = record_columns.decode_columns(batches)
    except KafkaFormatError as e:
        if e.problem.position is None:
            raise AssertionError(f"unlocated problem: {e}") from None
        return LOCATED
    return len(cols)


def _decode_or_error(decode):
    """``decode()``'s records, or ("error", position) for the located KafkaFormatError it raised."""
    try:
        return decode()
    except KafkaFormatError as e:
        if e.problem.position is None:
            raise AssertionError(f"unlocated problem: {e}") from None
        return ("error", e.problem.position)


def decoders_agree(data: bytes):
    """The differential target: every CRC-valid batch decoded by ``Batch.records()`` and by the
    columnar decoder (its record starts found by the Python walk and in lockstep), each batch alone
    and all of them as one run, must give equal records (offsets, timestamps, sequences, keys,
    values, headers) or both raise a located problem at the same batch. Any difference is a defect
    of one of the two decoders."""
    def fresh():
        return [b for b in BatchScanner(data, file="fuzz.log") if b.crc_valid()]

    exact = [_decode_or_error(b.records) for b in fresh()]
    saved = record_columns.LOCKSTEP_MIN_BATCHES
    try:
        for lockstep in (0, 10**9):
            record_columns.LOCKSTEP_MIN_BATCHES = lockstep
            for i, b in enumerate(fresh()):
                got = _decode_or_error(lambda: record_columns.decode_columns([b]).records())
                if got != exact[i]:
                    raise AssertionError(f"the decoders differ on the batch at byte {b.position}: "
                                         f"records() {exact[i]!r}, columns {got!r}")
            run = _decode_or_error(lambda: record_columns.decode_columns(fresh()).records())
            errors = [e for e in exact if isinstance(e, tuple)]
            want = errors[0] if errors else [r for rs in exact for r in rs]
            if run != want:
                raise AssertionError(f"the decoders differ on the run of {len(exact)} batches")
    finally:
        record_columns.LOCKSTEP_MIN_BATCHES = saved
    return LOCATED if any(isinstance(e, tuple) for e in exact) else sum(map(len, exact))


_SPARK_READER: list[KafkaSegmentsReader] = []  # made by the first input of the Spark target


def _spark_records(data: bytes):
    """The Spark records level's Arrow paths (``KafkaSegmentsReader._records_arrow``: the columnar
    decoder, then Arrow columns from its spans; and the whole-segment fast path of
    :mod:`~kafkaforensics.spark.record_runs`) over every batch, CRC-valid ones and, as with
    ``includeCorrupt``, the others; no Spark session is made."""
    if not _SPARK_READER:
        _SPARK_READER.append(spark_source.KafkaSegmentsReader({"includeCorrupt": "true"}, "records",
                                                                spark_source.spark_schema("records")))
    reader = _SPARK_READER[0]
    rows = 0
    src = scan_plan.Source("fuzz", None, None, "t", 0)
    anomalies: list = []
    for batch in reader._records_arrow([(b, src, "fuzz.log", 0) for b in BatchScanner(data, file="fuzz.log",
                                                                                       base_offset=0)], anomalies):
        rows += batch.num_rows
    fast = record_runs.FileRun()  # the fast path over the same bytes, as a whole small segment
    if fast.add(data, 0, len(data), 0, scan_plan.PlanStep("segment", "fuzz.log", src, len(data), 0, len(data), base=0)):
        for batch in reader._fast_arrow(fast, anomalies):
            rows += batch.num_rows
    return rows


# -- whole commands over a partition dir --------------------------------------------------------------
#: where command targets build their partition dir (tmpfs when there is one: thousands of files a second)
WORK = os.path.join("/dev/shm" if os.path.isdir("/dev/shm") else "/tmp", f"kfx-fuzz-{os.getpid()}")
NOW = 1_700_000_000_000 + 10**9


def _partition(data: bytes) -> str:
    """``data`` as a fresh partition dir ``<WORK>/logs/t-0``: split at a batch boundary in the middle
    into two segments (the second named by the base offset its first batch claims) when it can be."""
    logs = os.path.join(WORK, "logs")
    if not os.path.isdir(WORK):
        atexit.register(shutil.rmtree, WORK, True)
    shutil.rmtree(logs, ignore_errors=True)
    part = os.path.join(logs, "t-0")
    os.makedirs(part)
    bounds = [b for b in segment_boundaries(data) if 0 < b < len(data)] if len(data) < 1 << 16 else []
    cut = bounds[len(bounds) // 2] if bounds else None
    pieces = [(0, data)]
    if cut is not None and cut + 8 <= len(data):
        second = struct.unpack_from(">q", data, cut)[0]
        if 0 < second < 1 << 62:
            pieces = [(0, data[:cut]), (second, data[cut:])]
    for base, piece in pieces:
        with open(os.path.join(part, file_name(base, ".log")), "wb") as f:
            f.write(piece)
    return part


def _problems_located(problems) -> None:
    for p in problems:
        if p.position is None and getattr(p, "offset", getattr(p, "first_offset", None)) is None and p.file is None:
            raise AssertionError(f"unlocated problem: {p}")


def _command(name: str):
    """A target running the command ``name`` on the mutated segment as a partition: it must return a
    report (its problems located) -- nothing it raises is acceptable, not even a KafkaFormatError."""
    def run(data: bytes):
        part = _partition(data)
        try:
            out = _COMMANDS[name](part)
        except KafkaFormatError as e:
            raise AssertionError(f"{name} raised instead of reporting: {e}") from None
        _problems_located(getattr(out, "problems", []) or [])
        return LOCATED if getattr(out, "problems", None) else out
    return run


def _compact(part, dry_run):
    return compact(part, CompactOptions(now=NOW, include_active=True, segment_bytes=2000), dry_run=dry_run,
                   backup=not dry_run)


def _recover(part):
    return recover(part, full=True)


def _reindex(part):
    return reindex(part, index_interval_bytes=64)


def _retention(part):
    return retention(part, retention_bytes=100, retention_ms=10**9, now=NOW)


def _analyze(part):
    return analyze([part], AnalyzeOptions(now=NOW))


def _verify(part):
    return verify([part])


def _salvage(part):
    """Salvage the partition into a new one, whose offsets and producer snapshot must then verify
    clean (salvage never copies a batch whose offsets are damage -- negative, leaving int64, out of
    any segment's range -- into its output or its producer snapshot).  (Batches met walking sound
    bytes are taken on their CRC, as Kafka takes them: their records are not judged here.)"""
    out = os.path.join(WORK, "salvaged-0")
    shutil.rmtree(out, ignore_errors=True)
    rep = salvage([part], out)
    for p in verify([out]).problems:
        if "offset" in p.kind or "snapshot" in p.kind:
            raise AssertionError(f"salvage wrote a partition verify rejects: {p}")
    for s in rep.skipped:
        if s.get("start") is None or not s.get("file"):
            raise AssertionError(f"unlocated skipped range: {s}")
    return rep


_COMMANDS = {"compact": lambda p: _compact(p, False), "compact-dry-run": lambda p: _compact(p, True),
             "recover": _recover, "reindex": _reindex, "retention": _retention, "analyze": _analyze,
             "verify": _verify, "salvage": _salvage}


def _index_target(name, suffix):
    kind = INDEX_BY_SUFFIX[suffix]

    def run(data):
        entries, _ = kind.module.read_entries(data, 0)
        return len(entries)
    seeds = [(d, _fixed(d, kind.entry_size)) for d in map(_read, _files(suffix))]
    return Target(name, run, seeds)


def _txn_seeds():
    seeds = [_read(p) for p in _files(TXNINDEX)]
    seeds.append(to_bytes([AbortedTxn(7, 0, 5, 3, 0), AbortedTxn(9, 6, 9, 6, 0)]))
    return [(d, _fixed(d, 34) + [x + o for x in range(0, len(d), 34) for o in (2, 10, 18, 26)]) for d in seeds]


def _snapshot_seeds():
    return [(d, list(range(0, 11)) + list(range(10, len(d) + 1, 2))) for d in map(_read, _files(".snapshot"))]


def _text_run(data: bytes):
    text = data.decode("utf-8", errors="replace")
    n, located = 0, False
    for parse in (C.OffsetCheckpoint.parse, C.LeaderEpochCheckpoint.parse, C.parse_partition_metadata):
        try:
            n += len(parse(text, file="x"))
        except KafkaFormatError:
            located = True
    n += len(C.parse_properties(text))
    return LOCATED if located else n


def _text_seeds():
    names = ("-checkpoint", C.PARTITION_METADATA_FILE, C.META_PROPERTIES_FILE)
    out = []
    for root, _d, files in os.walk(SAMPLE):
        for f in sorted(files):
            if f.endswith(names):
                d = _read(os.path.join(root, f))
                out.append((d, [i for i, c in enumerate(d) if c in b" \n:="] + [0, len(d)]))
    return out


def _internal_seeds():
    """(key, value) pairs of the internal topics framed as one input: u16 key length, key, value."""
    pairs = [I.encode_offset_commit("g", "orders", 0, 42)]
    for kv, key, val in ((0, K.TransactionLogKey, K.TransactionLogValue),):
        k = struct.pack(">h", kv) + key.build({"TransactionalId": "tx"}, kv)
        v = struct.pack(">h", 0) + val.build({"ProducerId": 7, "ProducerEpoch": 1, "TransactionTimeoutMs": 1000,
                                              "TransactionStatus": 0}, 0)
        pairs.append((k, v))
    out = []
    for i, (k, v) in enumerate(pairs):
        d = bytes([i % 3]) + struct.pack(">H", len(k)) + k + (v or b"")
        out.append((d, list(range(len(d) + 1))))
    for api, schema in sorted(K.METADATA_RECORDS.items())[:40]:
        for ver in sorted({schema.valid[0], schema.valid[1]}):
            try:
                body = schema.build({}, ver)
            except Exception:
                continue
            if api >= 128 or ver >= 128:
                continue
            d = bytes([2]) + struct.pack(">H", 0) + bytes([1, api, ver]) + body
            out.append((d, list(range(len(d) + 1))))
    for ctype in (2, 3, 4, 5, 6):
        schema = I.CONTROL_SCHEMAS[ctype]
        try:
            body = schema.build({}, schema.valid[0])
        except Exception:
            continue
        d = bytes([3, ctype]) + body
        out.append((d, list(range(len(d) + 1))))
    return out


def _internal_run(data: bytes):
    if len(data) < 2:
        raise KafkaFormatError("schema", "empty", position=0)
    which = data[0] % 4
    if which == 3:
        return I.decode_metadata_control(data[1], data[2:])
    if len(data) < 3:
        raise KafkaFormatError("schema", "short", position=0)
    klen = struct.unpack_from(">H", data, 1)[0]
    key, value = data[3:3 + klen], data[3 + klen:] or None
    if which == 0:
        return I.decode_offsets(key, value)
    if which == 1:
        return I.decode_transaction_log(key, value)
    return I.decode_metadata(data[3:])


def request_seeds() -> list[bytes]:
    """One framed request (header and body) at the lowest and highest version of every API the
    broker accepts (read-only and --writable), with a topic and a partition where the API has them."""
    topic = [{"Name": "orders", "Topic": "orders", "PartitionIndexes": [0], "Partitions": [
        {"Partition": 0, "PartitionIndex": 0, "FetchOffset": 0, "PartitionMaxBytes": 1 << 20, "Timestamp": -2,
         "CommittedOffset": 3, "Index": 0, "Records": b""}]}]
    out = []
    for k, (lo, hi) in sorted({**SUPPORTED, **WRITE_APIS}.items()):
        m = P.REQUESTS[k]
        for v in sorted({lo, hi, (lo + hi) // 2}):
            body = b""
            for obj in ({"Topics": topic, "GroupId": "g", "Key": "g", "TopicData": topic, "Acks": 1,
                         "ProtocolType": "consumer", "MemberId": "", "TransactionalId": "t",
                         "Protocols": [{"Name": "range", "Metadata": b"\x00\x01"}]}, {}):
                try:
                    body = m.build(obj, v)
                    break
                except Exception:
                    continue
            hv = request_header_version(k, v)
            hdr = P.RequestHeader.build({"RequestApiKey": k, "RequestApiVersion": v, "CorrelationId": 7,
                                         "ClientId": "fuzz"}, hv)
            out.append(struct.pack(">i", len(hdr) + len(body)) + hdr + body)
    return out


def _request_run(data: bytes):
    conn = Connection(max_frame=1 << 20)
    try:
        events = conn.receive_data(data)
    except KafkaFormatError as e:  # the sans-IO contract: events, never an exception
        raise AssertionError(f"receive_data raised instead of a ProtocolViolation: {e}") from None
    if any(isinstance(e, ProtocolViolation) for e in events):
        return LOCATED
    return sum(isinstance(e, Request) for e in events)


def _request_bounds(d: bytes) -> list[int]:
    return list(range(0, min(len(d), 24))) + list(range(24, len(d) + 1, 2))


def targets() -> dict[str, Target]:
    seg = _segment_seeds()
    ts = [
        Target("segment", _drain_segment, seg, segment=True),
        Target("columns", _drain_columns, seg, segment=True),
        Target("decoders", decoders_agree, seg, segment=True),
        Target("spark-records", _spark_records, seg, segment=True),
        *(Target(n, _command(n), seg, segment=True) for n in _COMMANDS),
        _index_target("offset-index", INDEX),
        _index_target("time-index", TIMEINDEX),
        Target("txn-index", lambda d: len(read_txn(d, file="x")), _txn_seeds()),
        Target("snapshot", lambda d: len(read_snapshot(d, file="x")), _snapshot_seeds()),
        Target("checkpoint", _text_run, _text_seeds(), text=True),
        Target("internal-topics", _internal_run, _internal_seeds()),
        Target("request", _request_run, [(d, _request_bounds(d)) for d in request_seeds()]),
    ]
    return {t.name: t for t in ts}


# -- running -----------------------------------------------------------------------------------------
def _alarm(_sig, _frm):
    raise Hang()


def check(target: Target, data: bytes, hang_seconds: float = HANG_SECONDS) -> str:
    """'clean', 'located', 'hang' or 'crash:<traceback>' for one input."""
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, hang_seconds)
    try:
        return "located" if target.run(data) is LOCATED else "clean"
    except KafkaFormatError as e:
        if e.problem.position is None and not target.text and e.problem.kind != "schema":
            return "crash:unlocated problem: " + str(e)
        return "located"
    except Hang:
        return "hang"
    except BaseException as e:  # noqa: BLE001 -- anything else is what the fuzzer is for
        if isinstance(e, KeyboardInterrupt):
            raise
        return "crash:" + "".join(traceback.format_exception(e))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def input_for(target: Target, i: int) -> bytes:
    """Input ``i`` of ``target``: a pure function of the two (campaigns resume by index)."""
    rnd = random.Random(f"{target.name}:{i}")
    seed, bounds = target.seeds[i % len(target.seeds)]
    if i < len(target.seeds):
        return seed
    if rnd.random() < 0.05:                       # plain truncation at every boundary, in turn
        return seed[:bounds[(i // len(target.seeds)) % len(bounds)]] if bounds else seed
    return mutate(rnd, seed, bounds, target.segment)


@dataclass
class Stats:
    """A campaign's counts per target: inputs run, and how each ended; seconds spent."""

    inputs: int = 0
    clean: int = 0
    located: int = 0
    crashes: int = 0
    hangs: int = 0
    seconds: float = 0.0


def save_crasher(name: str, data: bytes, outcome: str, corpus: str = CORPUS) -> str:
    d = os.path.join(corpus, name)
    os.makedirs(d, exist_ok=True)
    h = hashlib.sha1(data).hexdigest()[:16]
    p = os.path.join(d, h + ".bin")
    with open(p, "wb") as f:
        f.write(data)
    with open(p[:-4] + ".txt", "w") as f:
        f.write(outcome)
    return p


def run_target(t: Target, start: int, count: int, stats: Stats, corpus: str | None = CORPUS,
               deadline: float | None = None, crashers: list | None = None) -> int:
    """Inputs ``start`` .. ``start+count`` of ``t``; returns the next index."""
    t0 = time.monotonic()
    i = start
    for i in range(start, start + count):
        if deadline is not None and (i & 63) == 0 and time.monotonic() > deadline:
            break
        data = input_for(t, i)
        out = check(t, data)
        stats.inputs += 1
        if out == "clean":
            stats.clean += 1
        elif out == "located":
            stats.located += 1
        else:
            if out == "hang":
                stats.hangs += 1
            else:
                stats.crashes += 1
            if corpus:
                save_crasher(t.name, data, out, corpus)
            if crashers is not None:
                crashers.append((t.name, i, out))
    else:
        i = start + count
    stats.seconds += time.monotonic() - t0
    return i


def replay_corpus(corpus: str = CORPUS) -> list[tuple[str, str, str]]:
    """Every kept crasher through its target again: [(target, file, outcome)] of those still failing."""
    ts = targets()
    bad: list[tuple[str, str, str]] = []
    if not os.path.isdir(corpus):
        return bad
    for name in sorted(os.listdir(corpus)):
        d = os.path.join(corpus, name)
        if name not in ts or not os.path.isdir(d):
            continue
        for f in sorted(os.listdir(d)):
            if f.endswith(".bin"):
                out = check(ts[name], _read(os.path.join(d, f)))
                if out not in ("clean", "located"):
                    bad.append((name, f, out))
    return bad


def campaign(per_target: int, minutes: float, state_path: str, corpus: str = CORPUS,
             only: list[str] | None = None, memory_mb: int = 2048) -> dict:
    """The long campaign: round robin over the targets in slices until each has ``per_target``
    inputs or the time is up; the state (next index and counts per target) is saved after every
    slice, so a stopped campaign resumes."""
    limit = memory_mb << 20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    codecs.MAX_DECOMPRESSED = CAMPAIGN_DECOMPRESSED
    ts = targets()
    state: dict = {"targets": {}}  # the campaign's JSON state file, as read
    if os.path.exists(state_path):
        with open(state_path) as f:
            state = json.load(f)
    deadline = time.monotonic() + minutes * 60
    names = [n for n in ts if not only or n in only]
    peak = 0
    while time.monotonic() < deadline:
        busy = False
        for n in names:
            st = state["targets"].setdefault(n, asdict(Stats()) | {"next": 0})
            if st["next"] >= per_target:
                continue
            busy = True
            s = Stats()
            st["next"] = run_target(ts[n], st["next"], min(2000, per_target - st["next"]), s, corpus, deadline)
            for k in ("inputs", "clean", "located", "crashes", "hangs", "seconds"):
                st[k] += getattr(s, k)
            peak = max(peak, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
            state["peak_rss_mb"] = max(state.get("peak_rss_mb", 0), peak // 1024)
            state["address_space_cap_mb"] = memory_mb
            state["updated"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            _save(state_path, state)
        if not busy:
            break
    return state


def _save(path: str, state: dict) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(state, f, indent=1, sort_keys=True)
    os.replace(tmp, path)


def cli_campaign(files: int, workdir: str, seed: int = 0, per_process: int = 40) -> dict:
    """Mutated segment, index, snapshot and checkpoint files through ``kfx verify``, ``kfx analyze``
    and ``kfx dump --deep`` subprocesses (many files a process), and partitions of them through
    ``kfx recover --dry-run``, ``kfx compact --dry-run`` and ``kfx salvage``: exit codes must be in
    {0, 1, 2} and stderr free of tracebacks. Returns counts and the failing runs."""
    rnd = random.Random(seed)
    ts = targets()
    kinds = [("segment", LOG), ("offset-index", INDEX), ("time-index", TIMEINDEX),
             ("txn-index", TXNINDEX), ("snapshot", SNAPSHOT), ("checkpoint", C.LEADER_EPOCH_FILE)]
    os.makedirs(workdir, exist_ok=True)
    made = []
    for i in range(files):
        name, suffix = kinds[i % len(kinds)]
        t = ts[name]
        data = input_for(t, rnd.randrange(10**9))
        d = os.path.join(workdir, f"t-{i // len(kinds)}")
        os.makedirs(d, exist_ok=True)
        p = os.path.join(d, suffix if suffix.startswith("leader") else file_name((i // len(kinds)) * 100, suffix))
        with open(p, "wb") as f:
            f.write(data)
        made.append(p)
    bad: list[dict] = []  # the commands that crashed: their arguments, exit code and stderr
    cmds = []
    for j in range(0, len(made), per_process):
        chunk = made[j:j + per_process]
        cmds.append(["dump", "--deep", "--print-data", *chunk])
        cmds.append(["dump", "--deep", "--format", "json", *chunk])
    dirs = sorted({os.path.dirname(p) for p in made})
    for j in range(0, len(dirs), per_process):
        cmds.append(["verify", "--json", *dirs[j:j + per_process]])
        cmds.append(["analyze", "--json", "--now", str(NOW), *dirs[j:j + per_process]])
    for d in dirs[:12]:  # the repairs take one partition a process: dry runs (they change nothing)
        cmds.append(["recover", "--dry-run", "--json", d])
        cmds.append(["compact", "--dry-run", "--include-active", "--json", "--now", str(NOW), d])
        # salvage writes a new partition (and its producer snapshot) beside the inputs, never into them
        cmds.append(["salvage", "--json", d, "--out", os.path.join(workdir, "salvaged", os.path.basename(d))])
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    for c in cmds:
        r = subprocess.run([sys.executable, "-m", "kafkaforensics", *c], capture_output=True, timeout=300,
                           env=env)
        err = r.stderr.decode("utf-8", "replace")
        if r.returncode not in (0, 1, 2) or "Traceback" in err:
            bad.append({"cmd": c[:3], "rc": r.returncode, "stderr": err[-3000:]})
    return {"files": len(made), "processes": len(cmds), "bad": bad}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m kafkaforensics.harness.fuzz", description=__doc__.split("\n")[0])
    ap.add_argument("--per-target", type=int, default=1_000_000)
    ap.add_argument("--minutes", type=float, default=15)
    ap.add_argument("--state", default=os.path.join(CORPUS, "campaign.json"))
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--cli-files", type=int, default=300)
    ap.add_argument("--workdir", default="/tmp/kfx-fuzz-cli")
    a = ap.parse_args(argv)
    bad = replay_corpus()
    print(f"corpus replay: {len(bad)} still failing")
    if a.cli_files:
        cli = cli_campaign(a.cli_files, a.workdir)
        print(f"CLI: {cli['files']} mutated files through {cli['processes']} kfx processes, "
              f"{len(cli['bad'])} bad")
        for b in cli["bad"]:
            print(b)
        with open(a.state + ".cli.json", "w") as f:
            json.dump(cli, f, indent=1)
    state = campaign(a.per_target, a.minutes, a.state, only=a.only)
    print(f"{'target':16} {'inputs':>10} {'clean':>10} {'located':>10} {'crashes':>8} {'hangs':>6} {'in/s':>8}")
    for n, st in state["targets"].items():
        rate = st["inputs"] / st["seconds"] if st["seconds"] else 0
        print(f"{n:16} {st['inputs']:>10} {st['clean']:>10} {st['located']:>10} {st['crashes']:>8} "
              f"{st['hangs']:>6} {rate:>8.0f}")
    print(f"peak RSS {state.get('peak_rss_mb')} MB under a {state.get('address_space_cap_mb')} MB address-space cap; "
          f"state in {a.state}")
    return 1 if bad or any(st["crashes"] or st["hangs"] for st in state["targets"].values()) else 0


if __name__ == "__main__":
    raise SystemExit(main())
