"""The int64 edge, found by fuzzing (issues 58 and 50): offsets that leave int64 are damage (located,
reported, skipped by salvage, never in an output partition or a producer snapshot); timestamps wrap
as Java's long addition does and sequences as Kafka's incrementSequence does -- one answer from
``Batch.records()`` and the columnar decoder alike."""
import os
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkaforensics.errors import KafkaFormatError
from kafkaforensics.harness import fuzz
from kafkaforensics.inspect.analyzer import AnalyzeOptions, analyze
from kafkaforensics.inspect.verify import verify
from kafkaforensics.log import record_columns
from kafkaforensics.log.producer_state import read_snapshot
from kafkaforensics.log.segment import BatchScanner, iter_batches
from kafkaforensics.records import builder, compression, int64
from kafkaforensics.records.batch import Record

INT64_MAX = 2**63 - 1


def _batch(base, n, *, pid=-1, seq=-1, codec=0, ts=1000, ple=-1, deltas=None, lod=None) -> bytes:
    offs = deltas if deltas is not None else list(range(n))
    recs = [Record(base + d, ts + j, b"k%d" % j, b"v%d" % j, []) for j, d in enumerate(offs)]
    return builder.build_v2(recs, base_offset=base, codec=codec,
                            producer=builder.BatchProducer(producer_id=pid, producer_epoch=0, base_sequence=seq),
                            partition_leader_epoch=ple,
                            header=builder.HeaderOverrides(last_offset_delta=max(offs) if lod is None else lod))


def _with_base(batch: bytes, base: int) -> bytes:
    """``batch`` with its baseOffset set to ``base``: the CRC does not cover it, it stays valid."""
    out = bytearray(batch)
    struct.pack_into(">q", out, 0, base)
    return bytes(out)


def _decoders(data: bytes):
    """Both decoders over the CRC-valid batches of ``data``: (records of ``Batch.records()``, of the
    columnar decoder), an exception's class standing for what a decoder raised."""
    batches = [b for b in BatchScanner(data, file="x.log") if b.crc_valid()]
    try:
        exact = [r for b in batches for r in b.records()]
    except KafkaFormatError as e:
        exact = type(e)
    try:
        cols = record_columns.decode_columns(
            [b for b in BatchScanner(data, file="x.log") if b.crc_valid()]).records()
    except KafkaFormatError as e:
        cols = type(e)
    return exact, cols


# -- issue 58: kfx salvage on a batch whose base offset is 2^63-2 ------------------------------------
def test_salvage_skips_a_batch_whose_offsets_leave_int64(tmp_path, kfx):
    good = _batch(0, 5, pid=77, seq=103, codec=3)
    bad = _with_base(_batch(5, 41, pid=77, seq=108, codec=3), 0x7FFFFFFFFFFFFFFE)
    tail = _batch(46, 3, pid=77, seq=149, codec=3)
    seg = tmp_path / "00000000000000000000.log"
    seg.write_bytes(good + bad + tail)
    out = tmp_path / "out"
    r = kfx("salvage", seg, "--out", out)
    assert r.exit_code == 1, r.output  # damaged bytes skipped
    assert "Traceback" not in r.output
    at = len(good)
    line = next(x for x in r.output.splitlines() if x.startswith("skipped"))
    assert f"[{at}, {at + len(bad)})" in line and f"at byte {at}" in line and "leaves int64" in line
    # the output partition: valid, without the overflowing batch, its producer snapshot readable
    kept = [(b.base_offset, b.last_offset) for b in iter_batches(str(out / "00000000000000000000.log"))]
    assert kept == [(0, 4), (46, 48)]
    assert verify([str(out)]).ok
    snaps = [f for f in os.listdir(out) if f.endswith(".snapshot")]
    assert snaps
    for s in snaps:
        entries = read_snapshot((out / s).read_bytes(), file=s)
        assert [(e.producer_id, e.last_sequence, e.last_offset) for e in entries] == [(77, 151, 48)]
    js = kfx("salvage", seg, "--out", tmp_path / "out2", "--json", "--dry-run")
    assert js.exit_code == 1 and "leaves int64" in js.output


def test_dump_verify_analyze_report_the_overflowing_batch(tmp_path, kfx):
    part = tmp_path / "t-0"
    part.mkdir()
    good = _batch(0, 5, pid=77, seq=0)
    (part / "00000000000000000000.log").write_bytes(good + _with_base(_batch(5, 41, pid=77, seq=5), INT64_MAX - 1))
    for cmd in (("dump", part / "00000000000000000000.log"), ("verify", part), ("analyze", part)):
        r = kfx(*cmd)
        assert "Traceback" not in r.output
        assert f"byte {len(good)}" in r.output and "offset-overflow" in r.output, (cmd, r.output)
    # without a segment base (a walk of bare bytes) the batch is damage all the same
    sc = BatchScanner(good + _with_base(_batch(5, 41), INT64_MAX - 1), file="x.log")
    assert len(list(sc)) == 1 and sc.stop.kind == "offset-overflow" and sc.stop.position == len(good)
    assert "leaves int64" in sc.stop.detail


# -- issue 50: one answer, Java's, from both decoders ----------------------------------------------
@pytest.mark.parametrize("first_ts", [INT64_MAX, INT64_MAX - 1, -2**63, -2**63 + 1])
def test_timestamps_wrap_as_javas_long_addition(first_ts):
    """firstTimestamp near 2^63-1 (or -2^63) plus a record's timestampDelta wraps in Java's long."""
    recs = [Record(j, first_ts + d, b"k", b"v", []) for j, d in enumerate((-1, 0, 1))]
    data = builder.build_v2(recs, base_offset=0,
                            header=builder.HeaderOverrides(base_timestamp=first_ts, max_timestamp=first_ts))
    want = [int64.java_long(first_ts + d) for d in (-1, 0, 1)]
    exact, cols = _decoders(data)
    assert [r.timestamp for r in exact] == want
    assert [r.timestamp for r in cols] == want
    assert all(-2**63 <= t <= INT64_MAX for t in want)


def test_sequences_are_kafkas_increment_sequence():
    """baseSequence + offsetDelta as DefaultRecordBatch.incrementSequence computes it in Java's int:
    wrapping at Integer.MAX_VALUE to 0, and what Java gives for a (damaged) negative offsetDelta."""
    assert int64.increment_sequence(2**31 - 1, 1) == 0
    assert int64.increment_sequence(2**31 - 3, 5) == 2
    assert int64.increment_sequence(5, -1) == -1 - (2**31 - 1 - 5) - 1  # Java: MAX - (-1) wraps
    data = _batch(10, 3, pid=9, seq=2**31 - 2, deltas=[0, 1, 2])
    b = next(iter(BatchScanner(data)))
    assert b.last_sequence == 0
    exact, cols = _decoders(data)
    assert [r.sequence for r in exact] == [r.sequence for r in cols] == [2**31 - 2, 2**31 - 1, 0]
    damaged = _batch(10, 2, pid=9, seq=5, deltas=[1, -1])  # a record whose offsetDelta is negative
    exact, cols = _decoders(damaged)
    assert [r.sequence for r in exact] == [r.sequence for r in cols] == [6, int64.increment_sequence(5, -1)]
    assert exact[1].sequence < 0


def test_a_record_offset_leaving_int64_is_located_damage_in_both_decoders():
    data = _with_base(_batch(0, 2, deltas=[0, 5], lod=0), INT64_MAX - 1)  # lastOffsetDelta 0, a record's 5
    b = next(iter(BatchScanner(data, file="x.log")))  # the header's offsets fit: the walk takes it
    with pytest.raises(KafkaFormatError) as e:
        b.records()
    assert e.value.problem.position == 0 and "leaves int64" in str(e.value)
    assert _decoders(data) == (KafkaFormatError, KafkaFormatError)


@pytest.mark.parametrize("base", [-2**63, -2**63 + 1])
def test_a_base_offset_at_minus_2_63_is_not_wrapped_by_the_columnar_decoder(base):
    """numpy's abs(-2^63) is -2^63: the vectorised path took such a base as safe and wrapped
    base + (-1) to 2^63-1 where ``Batch.records()`` reports an offset leaving int64."""
    data = _with_base(_batch(0, 2, deltas=[0, -2], lod=0), base)
    assert _decoders(data) == (KafkaFormatError, KafkaFormatError)


def _legacy_wrapper(wrapper_offset: int, inner_offsets) -> bytes:
    """A gzip magic 1 wrapper at ``wrapper_offset`` whose inner messages have the given (relative) offsets."""
    inner = b"".join(builder.legacy_entry(o, 1, 0, 1000, b"k", b"v") for o in inner_offsets)
    return builder.legacy_entry(wrapper_offset, 1, 1, 1000, None, compression.compress(1, inner, magic=1))


def test_legacy_wrapper_whose_inner_offsets_leave_int64_is_damage_in_both_decoders():
    """magic 1: inner offsets are relative to the wrapper's (the last); a wrapper at 2^63-1 whose last
    inner offset is -5 puts its records past 2^63-1 -- located damage, not an OverflowError."""
    data = _legacy_wrapper(INT64_MAX, [0, 1, -5])
    b = next(iter(BatchScanner(data, file="x.log")))
    assert b.crc_valid()
    with pytest.raises(KafkaFormatError) as e:
        b.records()
    assert e.value.problem.position == 0 and "leaves int64" in str(e.value)
    assert _decoders(data) == (KafkaFormatError, KafkaFormatError)


# -- issue 50: a first batch whose baseOffset is -1 ----------------------------------------------------
@pytest.mark.parametrize("base", [-1, -2**63])
def test_analyze_on_a_negative_base_offset_is_a_finding(tmp_path, kfx, base):
    part = tmp_path / "t-0"
    part.mkdir()
    first = _with_base(_batch(0, 3, ple=0), base)
    (part / "00000000000000000000.log").write_bytes(first + _batch(3, 2, ple=0))
    rep = analyze([str(part)], AnalyzeOptions(now=2_000_000_000_000))
    found = [f for f in rep.findings if f.position == 0 and f.severity == "error"]
    assert found, rep.findings
    r = kfx("analyze", part)
    assert r.exit_code == 1 and "Traceback" not in r.output


# -- the decoders' differential target, and what it found --------------------------------------------
def test_a_legacy_log_append_time_message_has_no_create_time_in_either_decoder():
    """A magic 1 message flagged LogAppendTime stores one timestamp, the log append time: no
    producer's create time to give (the columnar decoder gave the timestamp again)."""
    data = builder.build_legacy([Record(0, 5000, b"k", b"v", [])], magic=1, log_append_time=True)
    exact, cols = _decoders(data)
    assert [(r.timestamp, r.create_time) for r in exact] == [(5000, None)]
    assert cols == exact


def test_an_lz4_frame_decodes_the_same_after_a_failed_one():
    """The thread's LZ4 decompressor is discarded after a failure: a frame decodes the same whatever
    failed before it (after a frame stating its content size failed, the next valid frame failed
    with ERROR_frameSize_wrong: the columnar decoder and records() then disagreed)."""
    import lz4.frame
    recs = [Record(j, 1000 + j, b"k%d" % j, b"v" * 40, []) for j in range(8)]
    good = builder.build_legacy(recs, magic=0, codec=3)
    bad = bytearray(lz4.frame.compress(bytes(range(256)) * 2, store_size=True, block_linked=False))
    bad[17] ^= 0xFF  # the first block's size: past the frame's maximum
    for _ in range(3):
        with pytest.raises(KafkaFormatError):
            compression.decompress(3, bytes(bad), magic=1)
        assert len(next(iter(BatchScanner(good, file="x.log"))).records()) == 8


def test_the_differential_target_finds_no_difference(monkeypatch):
    """Mutated segments (int64-edge headers among the mutations) through both decoders: equal
    records or the same located problem, for every input of a quick pass."""
    from specs import codecs
    monkeypatch.setattr(codecs, "MAX_DECOMPRESSED", 4 << 20)
    t = fuzz.targets()["decoders"]
    stats, crashers = fuzz.Stats(), []
    fuzz.run_target(t, 0, 1500, stats, corpus=None, crashers=crashers)
    assert not crashers, crashers[0][2]
    assert stats.located > 0 and stats.clean > 0


def test_the_differential_target_reports_a_difference(monkeypatch):
    """The target can fail: a columnar decoder that wraps an offset differently is caught."""
    data = _batch(0, 3, pid=9, seq=1)
    assert fuzz.decoders_agree(data) == 3
    real = record_columns.RecordColumns.sequences
    monkeypatch.setattr(record_columns.RecordColumns, "sequences", lambda self: real(self) + 1)
    with pytest.raises(AssertionError, match="decoders differ"):
        fuzz.decoders_agree(data)


def test_the_campaign_mutates_at_the_int64_edge():
    """The campaign's own mutations reach every int64 edge (so the next such case is found there
    first): base offsets leaving int64 and negative, first timestamps at Java's limits, base
    sequences at Integer.MAX_VALUE, CRC-valid so that the decoders and commands see them."""
    t = fuzz.targets()["segment"]
    seen = set()
    for i in range(len(t.seeds), len(t.seeds) + 4000):
        sc = BatchScanner(fuzz.input_for(t, i))
        for b in sc:
            if not b.crc_valid() or b.magic < 2:
                continue
            seen.add("negative" if b.base_offset < 0 else None)
            seen.add("timestamp" if abs(b.first_timestamp) >= 2**63 - 2 else None)
            seen.add("sequence" if b.base_sequence >= 2**31 - 2 else None)
        if sc.stop is not None and "leaves int64" in sc.stop.detail:  # the walk stops at such a batch
            seen.add("overflow")
    assert {"overflow", "negative", "timestamp", "sequence"} <= seen


def test_the_salvage_target_of_the_campaign_takes_issue_58(tmp_path):
    """The campaign runs salvage (and verify) as commands: issue 58's segment is a report there, not a crash."""
    data = _batch(0, 5, pid=77, seq=103, codec=3) + _with_base(_batch(5, 41, pid=77, seq=108, codec=3), INT64_MAX - 1)
    ts = fuzz.targets()
    assert fuzz.check(ts["salvage"], data) == "clean"
    assert fuzz.check(ts["verify"], data) == "located"
    assert fuzz.check(ts["decoders"], data) in ("clean", "located")


@pytest.mark.parametrize("wrapper_offset", [2**40, -1])
def test_salvage_skips_a_legacy_wrapper_no_segment_can_hold(tmp_path, wrapper_offset):
    """A magic 0 wrapper's offset is its last inner offset: one far past its first (more than an
    int32 apart) or before it is damage the salvaged partition must not hold (found by the
    campaign's salvage target: verify rejected the output)."""
    from kafkaforensics.repair.salvage import salvage
    inner = b"".join(builder.legacy_entry(o, 0, 0, -1, b"k", b"v") for o in (0, 1, 2))
    bad = builder.legacy_entry(wrapper_offset, 0, 1, -1, None, compression.compress(1, inner, magic=0))
    good = builder.build_legacy([Record(3 + j, -1, b"k", b"v", []) for j in range(2)], magic=0, codec=1)
    seg = tmp_path / "00000000000000000000.log"
    seg.write_bytes(bad + good)
    rep = salvage([str(seg)], str(tmp_path / "out"))
    assert rep.skipped and rep.skipped[0]["start"] == 0 and rep.batches == 1
    assert not verify([str(tmp_path / "out")]).problems


def test_a_ten_byte_timestamp_delta_is_read_as_javas_varlong():
    """ByteUtils.readVarlong keeps 64 bits: the tenth byte's bits past bit 63 are shifted out. A
    timestamp delta whose tenth byte is 0x02 (bit 64 alone) is 0, in both decoders."""
    from kafkaforensics.harness.fuzz import fix_crcs
    # attributes, a tsDelta of ten bytes, offsetDelta 0, null key and value, no headers
    body = bytes([0]) + bytes([0x80] * 9 + [0x02]) + bytes([0, 1, 1, 0])
    record = builder.zigzag(len(body)) + body
    head = bytearray(_batch(0, 1, ts=777)[:61])
    struct.pack_into(">i", head, 8, 61 - 12 + len(record))
    data = bytearray(bytes(head) + record)
    fix_crcs(data)
    exact, cols = _decoders(bytes(data))
    assert [r.timestamp for r in exact] == [r.timestamp for r in cols] == [777]


_EDGE_OFFSETS = st.sampled_from([0, 5, 2**62 - 1, 2**62, 2**63 - 2, 2**63 - 41, -1, -2**63, -2**63 + 1])
_EDGE_TIMES = st.sampled_from([0, 1000, 2**62, 2**63 - 1, 2**63 - 2, -2**63, -2**63 + 1, -1])
_EDGE_SEQUENCES = st.sampled_from([-1, 0, 2**31 - 1, 2**31 - 2, 2**31 - 5, -2, -2**31])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.lists(st.tuples(st.integers(-3, 40), st.integers(-2**20, 2**20)), min_size=1,
                                   max_size=6),
                          _EDGE_OFFSETS, _EDGE_TIMES, _EDGE_SEQUENCES, st.integers(0, 4), st.booleans()),
                min_size=1, max_size=4))
def test_the_decoders_agree_at_the_int64_edge(specs):
    """Differential: batches whose base offset, first timestamp and base sequence sit at the int64 /
    int32 edges, with record offset and timestamp deltas of either sign (damage Kafka never writes
    but a disk can hold), decode to the same records -- or the same located problem -- through
    ``Batch.records()`` and the columnar decoder (Python walk and lockstep alike)."""
    data = b""
    for deltas, base, first_ts, seq, codec, lat in specs:
        recs = [Record(base + d, first_ts + t, b"k", b"v", []) for d, t in deltas]
        b = builder.build_v2(recs, base_offset=base,
                             header=builder.HeaderOverrides(last_offset_delta=max(max(d for d, _ in deltas), 0), base_timestamp=first_ts, max_timestamp=first_ts, log_append_time=lat),
                             codec=codec,
                             producer=builder.BatchProducer(producer_id=5 if seq >= 0 else -1, producer_epoch=0, base_sequence=seq))
        data += b
    fuzz.decoders_agree(data)


def test_a_batch_whose_offsets_leave_int64_never_enters_a_producer_snapshot():
    """ProducerState.append leaves such a batch out: the snapshot it writes packs (issue 58's
    traceback was struct.error in snapshot_bytes, packing its last offset)."""
    from kafkaforensics.log.producer_state import ProducerState
    from kafkaforensics.records.batch import parse_v2_header
    state = ProducerState()
    for raw in (_batch(0, 5, pid=77, seq=0), _with_base(_batch(5, 41, pid=77, seq=5), INT64_MAX - 1)):
        state.append(parse_v2_header(raw, 0))
    entries = read_snapshot(state.to_snapshot(), file="x.snapshot")
    assert [(e.producer_id, e.last_sequence, e.last_offset) for e in entries] == [(77, 4, 4)]


def _one_record_batch(offset_delta_varint: bytes) -> bytes:
    """A v2 batch of one record whose offsetDelta is the raw varint given (CRC made valid)."""
    from kafkaforensics.harness.fuzz import fix_crcs
    body = bytes([0, 0]) + offset_delta_varint + bytes([1, 1, 0])  # attrs, tsDelta 0, .., null key/value
    record = builder.zigzag(len(body)) + body
    head = bytearray(_batch(0, 1, ts=777)[:61])
    struct.pack_into(">i", head, 8, 61 - 12 + len(record))
    data = bytearray(bytes(head) + record)
    fix_crcs(data)
    return bytes(data)


def test_an_offset_delta_is_read_as_javas_varint():
    """DefaultRecord.readFrom reads offsetDelta with ByteUtils.readVarint: more than 5 bytes is
    damage (located, in both decoders); the bits of a fifth byte past 32 are shifted out."""
    assert _decoders(_one_record_batch(bytes([0x82, 0x80, 0x80, 0x80, 0x80, 0x00]))) == (
        KafkaFormatError, KafkaFormatError)
    exact, cols = _decoders(_one_record_batch(bytes([0x82, 0x80, 0x80, 0x80, 0x10])))  # 2 + 2^32: 1 in Java
    assert [r.offset for r in exact] == [r.offset for r in cols] == [1]
