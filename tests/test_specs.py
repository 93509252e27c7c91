"""Every spec in specs/ parses what it builds (hypothesis), and agrees with the fast path."""
import io

import construct as c
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkaforensics.records import builder
from kafkaforensics.records.batch import parse_legacy_header, parse_v2_header
from specs import checkpoints as C
from specs import indexes as I
from specs import legacy as L
from specs import producer_snapshot as S
from specs import record_batch as R
from specs.schemas import indexes as IS
from specs.schemas import legacy as LS
from specs.schemas import producer_snapshot as SS
from specs.schemas import record_batch as RS
from tests.strategies import batch_kwargs, records
from tests.batch_args import v2_kwargs

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
    assert RS.Varint.parse(RS.Varint.build(n)) == n
    assert builder.zigzag(n) == RS.Varint.build(n)


@given(st.fixed_dictionaries({"attributes": st.just(0), "timestampDelta": i64, "offsetDelta": i32,
                              "key": st.one_of(st.none(), st.binary(max_size=40)),
                              "value": st.one_of(st.none(), st.binary(max_size=40)),
                              "headers": st.lists(st.fixed_dictionaries(
                                  {"key": st.text(max_size=5), "value": st.one_of(st.none(), st.binary(max_size=5))}),
                                  max_size=3)}))
def test_record_spec_roundtrip(rec):
    data = RS.Record.build(rec)
    assert _strip(RS.Record.parse(data)) == rec
    assert data == builder.encode_record(rec["offsetDelta"], rec["timestampDelta"], rec["key"], rec["value"],
                                         [(h["key"], h["value"]) for h in rec["headers"]])


@settings(max_examples=60, deadline=None)
@given(records(base_offset=1000), batch_kwargs)
def test_record_batch_spec_equals_fast_path(recs, kw):
    """The builder's bytes parse with the spec; spec and fast path agree field by field."""
    data = builder.build_v2(recs, base_offset=1000, **v2_kwargs(**kw))
    spec = RS.RecordBatch.parse(data)
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
        assert RS.RecordBatch.build(spec) == data


@settings(max_examples=40, deadline=None)
@given(records(base_offset=0, max_records=6), st.sampled_from([0, 1]), st.sampled_from([0, 1, 2, 3]))
def test_legacy_spec_equals_fast_path(recs, magic, codec):
    recs = [r for r in recs]
    data = builder.build_legacy(recs, magic=magic, codec=codec)
    spec = LS.MessageSet.parse(data)
    fast, pos = [], 0
    while pos < len(data):
        b = parse_legacy_header(data, pos)
        assert b.crc_valid()
        fast.extend(b.records())
        pos += b.size
    if codec == 0:
        assert [(e.offset, e.message.value.key, e.message.value.value) for e in spec] == \
            [(r.offset, r.key, r.value) for r in fast]
        assert LS.MessageSet.build(spec) == data
    else:
        (wrapper,) = spec
        assert wrapper.message.crcValid
        inner = wrapper.message.value.value
        assert [(e.message.value.key, e.message.value.value) for e in inner] == [(r.key, r.value) for r in fast]
    assert [(r.key, r.value) for r in fast] == [(r.key, r.value) for r in recs]


@given(st.lists(st.fixed_dictionaries({"relativeOffset": i32, "position": i32}), max_size=20))
def test_offset_index_spec_roundtrip(entries):
    assert _strip(IS.OffsetIndexFile.parse(IS.OffsetIndexFile.build(entries))) == entries


@given(st.lists(st.fixed_dictionaries({"timestamp": i64, "relativeOffset": i32}), max_size=20))
def test_time_index_spec_roundtrip(entries):
    assert _strip(IS.TimeIndexFile.parse(IS.TimeIndexFile.build(entries))) == entries


@given(st.lists(st.fixed_dictionaries({"version": st.just(0), "producerId": i64, "firstOffset": i64,
                                        "lastOffset": i64, "lastStableOffset": i64}), max_size=10))
def test_txn_index_spec_roundtrip(entries):
    data = IS.TxnIndexFile.build(entries)
    assert len(data) == 34 * len(entries)
    assert _strip(IS.TxnIndexFile.parse(data)) == entries


@given(st.lists(st.fixed_dictionaries({"producerId": i64, "epoch": i16, "lastSequence": i32, "lastOffset": i64,
                                        "offsetDelta": i32, "timestamp": i64, "coordinatorEpoch": i32,
                                        "currentTxnFirstOffset": i64}), max_size=10))
def test_producer_snapshot_spec_roundtrip_and_matches_library(entries):
    from kafkaforensics.log.producer_state import ProducerEntry, read_snapshot, snapshot_bytes
    data = SS.ProducerSnapshot.build({"version": 1, "sealed": {"value": entries}})
    parsed = SS.ProducerSnapshot.parse(data)
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
    assert text == "version: 0\ntopic_id: q3Bq1nEAR5uD4qPQ0Kh0bw"  # as Kafka: no newline at the end, 43 bytes
    assert len(text.encode()) == 43
    assert C.parse_partition_metadata(text) == {"version": 0, "topicId": "q3Bq1nEAR5uD4qPQ0Kh0bw"}


def test_header_struct_is_derived_from_the_spec():
    assert R.HEADER_STRUCT.size == R.HEADER_SIZE == RS.BatchHeader.sizeof()
    assert R.HEADER_FIELDS[0] == "baseOffset" and R.HEADER_FIELDS[-1] == "recordCount"


def test_every_layout_struct_is_its_specs():
    """The fast paths' structs and the construct specs come from one Layout table: deriving the
    struct back from the construct spec (``struct_of``) gives the very same struct and names."""
    from specs.primitives import field_offset, struct_of
    specs = [(R.HEADER_STRUCT, R.HEADER_FIELDS, RS.BatchHeader), (L.PREFIX_STRUCT, L.PREFIX_FIELDS, LS.EntryPrefix),
             (I.OFFSET_ENTRY, I.OFFSET_FIELDS, IS.OffsetIndexEntry), (I.TIME_ENTRY, I.TIME_FIELDS, IS.TimeIndexEntry),
             (I.TXN_ENTRY, I.TXN_FIELDS, IS.AbortedTxnEntry), (S.ENTRY_STRUCT, S.ENTRY_FIELDS, SS.ProducerEntry)]
    for st, names, spec in specs:
        derived, derived_names = struct_of(spec)
        assert derived.format == st.format and derived_names == names
    for name in ("partitionLeaderEpoch", "crc", "attributes"):
        assert field_offset(RS.BatchHeader, name) == R.BATCH_HEADER.offset(name)
    assert (R.PARTITION_LEADER_EPOCH_OFFSET, R.CRC_OFFSET, R.ATTRIBUTES_OFFSET) == (12, 17, 21)


def test_layout_modules_import_no_construct():
    """The layout modules the fast paths read import no construct; the schema modules declare their
    construct Structs at module level (an editor jumps to ``RecordBatch``), with no lazy ``__getattr__``."""
    import subprocess
    import sys
    code = ("import sys; from specs import record_batch, legacy, indexes, producer_snapshot, checkpoints, codecs; "
            "assert 'construct' not in sys.modules, 'imported'; "
            "from specs.schemas import record_batch as RS, legacy as LS; assert 'construct' in sys.modules; "
            "import construct as c; assert isinstance(RS.RecordBatch, c.Construct) and isinstance(LS.MessageSet, c.Construct); "
            "print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "ok", out.stderr
    import specs.indexes, specs.legacy, specs.producer_snapshot, specs.record_batch  # noqa: E401
    for module in (specs.record_batch, specs.legacy, specs.indexes, specs.producer_snapshot):
        assert not hasattr(module, "__getattr__"), module.__name__
    try:
        RS.NoSuchSpec
    except AttributeError as e:
        assert "NoSuchSpec" in str(e)
    else:
        raise AssertionError("an unknown name must raise AttributeError")


def test_attribute_bits():
    attrs = RS.BatchAttributes.parse((0x04 | 0x08 | 0x10 | 0x20 | 0x40).to_bytes(2, "big"))
    assert attrs.compression == "zstd" and attrs.timestampType == "LogAppendTime"
    assert attrs.isTransactional and attrs.isControl and attrs.hasDeleteHorizon


# -- the fast paths' constants and hand-written struct code, proven equal to their specs ---------------

@settings(deadline=None)  # the first example imports the module (numpy for the indexes)
@given(st.sampled_from(sorted(R.CONTROL_TYPES)), i16)
def test_control_record_key_fast_path_equals_spec(ctype, version):
    from kafkaforensics.records.batch import Record
    key = builder.control_record_key(ctype, version)
    assert key == RS.ControlRecordKey.build({"version": version, "type": ctype})
    rec = Record(0, 0, key, None)
    assert rec.control_type == RS.ControlRecordKey.parse(key).type == ctype
    assert rec.control()["version"] == version and rec.control()["type"] == R.CONTROL_TYPES[ctype]


@settings(deadline=None)  # the first example imports the module (numpy for the indexes)
@given(st.sampled_from([R.ABORT, R.COMMIT]), i16, i32)
def test_end_txn_marker_fast_path_equals_spec(ctype, version, epoch):
    from kafkaforensics.records.batch import Record
    value = builder.end_txn_marker_value(epoch, version)
    assert value == RS.EndTransactionMarker.build({"version": version, "coordinatorEpoch": epoch})
    parsed = RS.EndTransactionMarker.parse(value)
    ctl = Record(0, 0, builder.control_record_key(ctype), value).control()
    assert (ctl["version"], ctl["coordinatorEpoch"]) == (parsed.version, parsed.coordinatorEpoch)
    assert ctl["type"] == ("ABORT" if ctype == R.ABORT else "COMMIT")


def test_control_type_of_a_short_key_is_minus_one():
    from kafkaforensics.records.batch import Record
    assert Record(0, 0, b"\x00\x00\x00", None).control_type == -1 and Record(0, 0, None, None).control_type == -1


@settings(deadline=None)  # the first example imports the module (numpy for the indexes)
@given(st.integers(0, 2**16 - 1))
def test_attribute_masks_equal_the_spec(raw):
    """Every mask the fast paths test a batch's attributes with picks the spec's field."""
    attrs = RS.BatchAttributes.parse(raw.to_bytes(2, "big"))
    assert raw & R.COMPRESSION_MASK == int(attrs.compression)
    assert bool(raw & R.TIMESTAMP_TYPE_MASK) == (attrs.timestampType == "LogAppendTime")
    assert bool(raw & R.TRANSACTIONAL_MASK) == attrs.isTransactional
    assert bool(raw & R.CONTROL_MASK) == attrs.isControl
    assert bool(raw & R.DELETE_HORIZON_MASK) == attrs.hasDeleteHorizon
    legacy = LS.MessageAttributes.parse((raw & 0xFF).to_bytes(1, "big"))
    assert raw & L.COMPRESSION_MASK == int(legacy.compression)
    assert bool(raw & L.TIMESTAMP_TYPE_MASK) == (legacy.timestampType == "LogAppendTime")


@settings(deadline=None)  # the first example imports the module (numpy for the indexes)
@given(st.integers(-2**15, 2**15 - 1).filter(lambda a: a & 0x07 < 5))
def test_batch_flags_of_the_fast_path_equal_the_spec(attributes):
    """A header read by the fast path reports the flags the spec parses from its attributes."""
    from kafkaforensics.records import compression
    fields = dict.fromkeys(R.HEADER_FIELDS, 0) | {"batchLength": R.HEADER_SIZE - R.LOG_OVERHEAD, "magic": 2,
                                                  "attributes": attributes}
    data = R.HEADER_STRUCT.pack(*(fields[f] for f in R.HEADER_FIELDS))
    b = parse_v2_header(data, 0)
    attrs = RS.BatchAttributes.parse(data[R.ATTRIBUTES_OFFSET:R.ATTRIBUTES_OFFSET + 2])
    assert b.compression_name == str(attrs.compression) == compression.CODEC_NAMES[b.compression]
    assert b.timestamp_type == str(attrs.timestampType)
    assert (b.is_transactional, b.is_control, b.has_delete_horizon) == (
        attrs.isTransactional, attrs.isControl, attrs.hasDeleteHorizon)


def test_offsets_are_read_off_the_specs():
    """The framing every magic shares: the same byte offsets from either spec, as Kafka's Records."""
    assert (R.LOG_OVERHEAD, R.MAGIC_OFFSET, R.HEADER_SIZE_UP_TO_MAGIC, R.HEADER_SIZE) == (12, 16, 17, 61)
    assert (L.LOG_OVERHEAD, L.MAGIC_OFFSET) == (R.LOG_OVERHEAD, R.MAGIC_OFFSET)
    assert R.LOG_PREFIX_STRUCT.format == L.PREFIX_STRUCT.format[:3] == ">ql"   # int64 offset, int32 size
    assert (L.RECORD_OVERHEAD_V0, L.RECORD_OVERHEAD_V1, L.TIMESTAMP_OFFSET, L.KEY_LENGTH_OFFSET) == (14, 22, 18, (18, 26))
    assert (S.ENTRIES_OFFSET, S.COUNT_OFFSET, S.CRC_OFFSET) == (10, 6, 2)
    from specs import codecs
    assert codecs.CODEC_NAMES == R.CODECS == ("none", "gzip", "snappy", "lz4", "zstd")
    assert (codecs.NONE, codecs.GZIP, codecs.SNAPPY, codecs.LZ4, codecs.ZSTD) == (0, 1, 2, 3, 4)


@settings(deadline=None)  # the first example imports the module (numpy for the indexes)
@given(st.lists(st.fixed_dictionaries({"relativeOffset": st.integers(1, 2**31 - 1), "position": i32}), max_size=20),
       st.integers(0, 2**40))
def test_offset_index_fast_path_equals_spec(entries, base):
    from kafkaforensics.log import offset_index
    data = IS.OffsetIndexFile.build(entries)
    assert offset_index.to_bytes([(base + e["relativeOffset"], e["position"]) for e in entries], base) == data
    got, zero_tail = offset_index.read_entries(data, base)
    assert zero_tail == 0
    assert got == [(base + e["relativeOffset"], e["position"]) for e in _strip(IS.OffsetIndexFile.parse(data))]


@settings(deadline=None)  # the first example imports the module (numpy for the indexes)
@given(st.lists(st.fixed_dictionaries({"timestamp": st.integers(1, 2**62), "relativeOffset": i32}), max_size=20),
       st.integers(0, 2**40))
def test_time_index_fast_path_equals_spec(entries, base):
    from kafkaforensics.log import time_index
    data = IS.TimeIndexFile.build(entries)
    assert time_index.to_bytes([(e["timestamp"], base + e["relativeOffset"]) for e in entries], base) == data
    got, zero_tail = time_index.read_entries(data, base)
    assert zero_tail == 0
    assert got == [(e["timestamp"], base + e["relativeOffset"]) for e in _strip(IS.TimeIndexFile.parse(data))]


@settings(deadline=None)  # the first example imports the module (numpy for the indexes)
@given(st.lists(st.fixed_dictionaries({"version": st.just(0), "producerId": i64, "firstOffset": i64,
                                        "lastOffset": i64, "lastStableOffset": i64}), max_size=10))
def test_txn_index_fast_path_equals_spec(entries):
    from kafkaforensics.log import txn_index
    data = IS.TxnIndexFile.build(entries)
    got = txn_index.read_entries(data)
    assert [e.to_json() for e in got] == _strip(IS.TxnIndexFile.parse(data))
    assert txn_index.to_bytes(got) == data


def test_specs_import_nothing_from_the_library():
    """specs/ is the bottom layer: importing every spec module loads no kafkaforensics module."""
    import subprocess
    import sys
    code = ("import pkgutil, importlib, sys, specs\n"
            "for m in pkgutil.walk_packages(specs.__path__, 'specs.'): importlib.import_module(m.name)\n"
            "from specs.schemas import legacy\n"
            "legacy.MessageSet.parse(legacy.MessageSet.build([]))\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'kafkaforensics'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_lazy_imports_on_first_use_and_becomes_the_module():
    """specs/lazy.py: nothing is imported until an attribute is asked for; then the importer's global
    is the module itself, the import is the ordinary one (``-X importtime`` lists it), and a missing
    module raises ModuleNotFoundError at that first use."""
    import subprocess
    import sys
    code = ("import sys; from specs.lazy import lazy\n"
            "g = {}; g['m'] = lazy('colorsys', g); g['x'] = lazy('no_such_module_kfx', g)\n"
            "assert 'colorsys' not in sys.modules and 'lazy' in repr(g['m'])\n"
            "assert g['m'].rgb_to_hsv(1, 0, 0)[0] == 0 and g['m'] is sys.modules['colorsys']\n"
            "try:\n    g['x'].anything\nexcept ModuleNotFoundError:\n    print('ok')\n")
    out = subprocess.run([sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "ok", out.stderr
    assert any(line.rstrip().endswith("| colorsys") for line in out.stderr.splitlines())


def test_bits_names_of_refuses_a_field_without_value_names():
    """specs.layout.Bits.names_of: an enumerated field's names; a flag (no value names) or an absent field
    raises KeyError, as ``mask`` does for an absent field (it used to return None for a flag, against its
    ``tuple[str, ...]`` annotation, and raise StopIteration for an absent field)."""
    import pytest
    assert R.BATCH_ATTRIBUTES.names_of("timestampType") == ("CreateTime", "LogAppendTime")
    for name in ("isTransactional", "noSuchField"):
        with pytest.raises(KeyError):
            R.BATCH_ATTRIBUTES.names_of(name)
