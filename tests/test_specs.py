"""Every spec in specs/ parses what it builds (hypothesis), and agrees with the fast path."""
import io

import construct as c
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkaforensics import builder
from kafkaforensics.batch import parse_legacy_header, parse_v2_header
from specs import checkpoints as C
from specs import indexes as I
from specs import legacy as L
from specs import producer_snapshot as S
from specs import record_batch as R
from tests.strategies import batch_kwargs, records

i64 = st.integers(-2**63, 2**63 - 1)
i32 = st.integers(-2**31, 2**31 - 1)
i16 = st.integers(-2**15, 2**15 - 1)


def _strip(obj):
    """construct containers -> plain data (drop the '_io' bookkeeping)."""
    if isinstance(obj, dict):
        return {k: _strip(v) for k, v in obj.items() if not k.startswith("_")}
    if isinstance(obj, list):
        return [_strip(v) for v in obj]
    return obj


@given(st.integers(-2**63, 2**63 - 1))
def test_varint_roundtrip_and_matches_builder(n):
    assert R.Varint.parse(R.Varint.build(n)) == n
    assert builder.zigzag(n) == R.Varint.build(n)


@given(st.fixed_dictionaries({"attributes": st.just(0), "timestampDelta": i64, "offsetDelta": i32,
                              "key": st.one_of(st.none(), st.binary(max_size=40)),
                              "value": st.one_of(st.none(), st.binary(max_size=40)),
                              "headers": st.lists(st.fixed_dictionaries(
                                  {"key": st.text(max_size=5), "value": st.one_of(st.none(), st.binary(max_size=5))}),
                                  max_size=3)}))
def test_record_spec_roundtrip(rec):
    data = R.Record.build(rec)
    assert _strip(R.Record.parse(data)) == rec
    assert data == builder.encode_record(rec["offsetDelta"], rec["timestampDelta"], rec["key"], rec["value"],
                                         [(h["key"], h["value"]) for h in rec["headers"]])


@settings(max_examples=60, deadline=None)
@given(records(base_offset=1000), batch_kwargs)
def test_record_batch_spec_equals_fast_path(recs, kw):
    """The builder's bytes parse with the spec; spec and fast path agree field by field."""
    data = builder.build_v2(recs, base_offset=1000, **kw)
    spec = R.RecordBatch.parse(data)
    fast = parse_v2_header(data, 0)
    sealed = spec.body.sealed
    assert sealed.crcValid and fast.crc_valid()
    assert sealed.crc == fast.crc
    assert spec.baseOffset == fast.base_offset
    assert spec.body.partitionLeaderEpoch == fast.partition_leader_epoch
    v = sealed.value
    assert (v.attributes, v.producerId, v.producerEpoch, v.baseSequence, v.recordCount) == \
        (fast.attributes, fast.producer_id, fast.producer_epoch, fast.base_sequence, fast.count)
    fast_recs = fast.records()
    assert len(v.records) == len(fast_recs)
    for s, f in zip(v.records, fast_recs):
        assert f.offset == 1000 + s.offsetDelta
        assert f.timestamp == v.baseTimestamp + s.timestampDelta
        assert (f.key, f.value) == (s.key, s.value)
        assert [(h.key, h.value) for h in s.headers] == [tuple(h) for h in f.headers]
    if kw["codec"] == 0:  # uncompressed: the spec rebuilds the very same bytes
        assert R.RecordBatch.build(spec) == data


@settings(max_examples=40, deadline=None)
@given(records(base_offset=0, max_records=6), st.sampled_from([0, 1]), st.sampled_from([0, 1, 2, 3]))
def test_legacy_spec_equals_fast_path(recs, magic, codec):
    recs = [r for r in recs]
    data = builder.build_legacy(recs, magic=magic, codec=codec)
    spec = L.MessageSet.parse(data)
    fast, pos = [], 0
    while pos < len(data):
        b = parse_legacy_header(data, pos)
        assert b.crc_valid()
        fast.extend(b.records())
        pos += b.size
    if codec == 0:
        assert [(e.offset, e.message.value.key, e.message.value.value) for e in spec] == \
            [(r.offset, r.key, r.value) for r in fast]
        assert L.MessageSet.build(spec) == data
    else:
        (wrapper,) = spec
        assert wrapper.message.crcValid
        inner = wrapper.message.value.value
        assert [(e.message.value.key, e.message.value.value) for e in inner] == [(r.key, r.value) for r in fast]
    assert [(r.key, r.value) for r in fast] == [(r.key, r.value) for r in recs]


@given(st.lists(st.fixed_dictionaries({"relativeOffset": i32, "position": i32}), max_size=20))
def test_offset_index_spec_roundtrip(entries):
    assert _strip(I.OffsetIndexFile.parse(I.OffsetIndexFile.build(entries))) == entries


@given(st.lists(st.fixed_dictionaries({"timestamp": i64, "relativeOffset": i32}), max_size=20))
def test_time_index_spec_roundtrip(entries):
    assert _strip(I.TimeIndexFile.parse(I.TimeIndexFile.build(entries))) == entries


@given(st.lists(st.fixed_dictionaries({"version": st.just(0), "producerId": i64, "firstOffset": i64,
                                        "lastOffset": i64, "lastStableOffset": i64}), max_size=10))
def test_txn_index_spec_roundtrip(entries):
    data = I.TxnIndexFile.build(entries)
    assert len(data) == 34 * len(entries)
    assert _strip(I.TxnIndexFile.parse(data)) == entries


@given(st.lists(st.fixed_dictionaries({"producerId": i64, "epoch": i16, "lastSequence": i32, "lastOffset": i64,
                                        "offsetDelta": i32, "timestamp": i64, "coordinatorEpoch": i32,
                                        "currentTxnFirstOffset": i64}), max_size=10))
def test_producer_snapshot_spec_roundtrip_and_matches_library(entries):
    from kafkaforensics.producer_state import ProducerEntry, read_snapshot, snapshot_bytes
    data = S.ProducerSnapshot.build({"version": 1, "sealed": {"value": entries}})
    parsed = S.ProducerSnapshot.parse(data)
    assert parsed.sealed.crcValid and _strip(parsed.sealed.value) == entries
    lib = [ProducerEntry(*(e[f] for f in S.ENTRY_FIELDS)) for e in entries]
    assert snapshot_bytes(lib) == data
    assert read_snapshot(data) == lib


@given(st.lists(st.fixed_dictionaries({"topic": st.from_regex(r"[a-zA-Z0-9._-]{1,20}", fullmatch=True),
                                        "partition": st.integers(0, 10**4), "offset": st.integers(0, 2**63 - 1)}),
                max_size=10))
def test_offset_checkpoint_roundtrip(entries):
    assert C.OffsetCheckpoint.parse(C.OffsetCheckpoint.build(entries)) == entries


@given(st.lists(st.fixed_dictionaries({"epoch": st.integers(0, 2**31 - 1), "startOffset": st.integers(0, 2**63 - 1)}),
                max_size=10))
def test_leader_epoch_checkpoint_roundtrip(entries):
    assert C.LeaderEpochCheckpoint.parse(C.LeaderEpochCheckpoint.build(entries)) == entries


def test_checkpoint_text_is_kafkas_layout():
    text = C.OffsetCheckpoint.build([{"topic": "t", "partition": 3, "offset": 42}])
    assert text == "0\n1\nt 3 42\n"
    assert C.LeaderEpochCheckpoint.build([{"epoch": 5, "startOffset": 100}]) == "0\n1\n5 100\n"


def test_partition_metadata_roundtrip():
    text = C.build_partition_metadata("q3Bq1nEAR5uD4qPQ0Kh0bw")
    assert text == "version: 0\ntopic_id: q3Bq1nEAR5uD4qPQ0Kh0bw\n"
    assert C.parse_partition_metadata(text) == {"version": 0, "topicId": "q3Bq1nEAR5uD4qPQ0Kh0bw"}


def test_header_struct_is_derived_from_the_spec():
    assert R.HEADER_STRUCT.size == R.HEADER_SIZE == R.BatchHeader.sizeof()
    assert R.HEADER_FIELDS[0] == "baseOffset" and R.HEADER_FIELDS[-1] == "recordCount"


def test_every_layout_struct_is_its_specs():
    """The fast paths' structs and the construct specs come from one Layout table: deriving the
    struct back from the construct spec (``struct_of``) gives the very same struct and names."""
    from specs.primitives import field_offset, struct_of
    specs = [(R.HEADER_STRUCT, R.HEADER_FIELDS, R.BatchHeader), (L.PREFIX_STRUCT, L.PREFIX_FIELDS, L.EntryPrefix),
             (I.OFFSET_ENTRY, I.OFFSET_FIELDS, I.OffsetIndexEntry), (I.TIME_ENTRY, I.TIME_FIELDS, I.TimeIndexEntry),
             (I.TXN_ENTRY, I.TXN_FIELDS, I.AbortedTxnEntry), (S.ENTRY_STRUCT, S.ENTRY_FIELDS, S.ProducerEntry)]
    for st, names, spec in specs:
        derived, derived_names = struct_of(spec)
        assert derived.format == st.format and derived_names == names
    for name in ("partitionLeaderEpoch", "crc", "attributes"):
        assert field_offset(R.BatchHeader, name) == R.BATCH_HEADER.offset(name)
    assert (R.PARTITION_LEADER_EPOCH_OFFSET, R.CRC_OFFSET, R.ATTRIBUTES_OFFSET) == (12, 17, 21)


def test_spec_modules_build_construct_on_first_use():
    """Importing a spec module does not import construct; the first construct spec asked for does."""
    import subprocess
    import sys
    code = ("import sys; from specs import record_batch as R, legacy, indexes, producer_snapshot; "
            "assert 'construct' not in sys.modules, 'imported'; R.HEADER_STRUCT; assert 'construct' not in sys.modules; "
            "R.RecordBatch; assert 'construct' in sys.modules; legacy.MessageSet; print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "ok", out.stderr
    try:
        R.NoSuchSpec
    except AttributeError as e:
        assert "NoSuchSpec" in str(e)
    else:
        raise AssertionError("an unknown name must raise AttributeError")


def test_attribute_bits():
    attrs = R.BatchAttributes.parse((0x04 | 0x08 | 0x10 | 0x20 | 0x40).to_bytes(2, "big"))
    assert attrs.compression == "zstd" and attrs.timestampType == "LogAppendTime"
    assert attrs.isTransactional and attrs.isControl and attrs.hasDeleteHorizon
