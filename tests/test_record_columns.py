"""The columnar decoder equals the per-record decoder: same records, same errors, same positions."""
import pathlib
import random
from contextlib import contextmanager

import numpy as np
import pytest

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkaforensics.records import builder

from kafkaforensics.log import record_columns
from kafkaforensics.records.batch import Record, v2_record_bytes
from kafkaforensics.errors import KafkaFormatError
from kafkaforensics.log.record_columns import (MAX_HEADER_ROUNDS, _Fallback, _vectorised, decode_columns,
                                           iter_record_columns, iter_records)
from kafkaforensics.log.segment import BatchScanner
from tests.conftest import SAMPLE
from tests.strategies import batch_kwargs, records
from tests.batch_args import v2_kwargs

SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def _log(batch_specs):
    out, base = [], 0
    for recs, kw, lat in batch_specs:
        shifted = [Record(base + r.offset, r.timestamp, r.key, r.value, r.headers) for r in recs]
        out.append(builder.build_v2(shifted, base_offset=base, **v2_kwargs(log_append_time=lat, **kw)))
        base = shifted[-1].offset + 1
    return b"".join(out)


def _per_record(batches):
    return [r for b in batches for r in b.records()]


@contextmanager
def _walk_with(lockstep: bool):
    """Find record starts in lockstep (for any number of batches) or with the Python walk."""
    saved = record_columns.LOCKSTEP_MIN_BATCHES
    record_columns.LOCKSTEP_MIN_BATCHES = 0 if lockstep else 10**9
    try:
        yield
    finally:
        record_columns.LOCKSTEP_MIN_BATCHES = saved


@pytest.mark.parametrize("lockstep", [False, True])
@SETTINGS
@given(st.lists(st.tuples(records(max_records=8), batch_kwargs, st.booleans()), min_size=1, max_size=6))
def test_columns_equal_records(lockstep, specs):
    batches = list(BatchScanner(_log(specs)))
    with _walk_with(lockstep):
        cols = decode_columns(batches)
    want = _per_record(batches)
    assert cols.records() == want
    saved, record_columns.RECORD_SLICE = record_columns.RECORD_SLICE, 3
    try:  # Record objects made a few at a time: slices end anywhere
        assert list(cols.iter_records()) == want
    finally:
        record_columns.RECORD_SLICE = saved
    assert cols.keys() == [r.key for r in want] and cols.values() == [r.value for r in want]
    assert cols.offset.tolist() == [r.offset for r in want]
    assert cols.timestamp.tolist() == [r.timestamp for r in want]
    assert cols.header_lists() == [r.headers for r in want]
    assert cols.sequences().tolist() == [r.sequence for r in want]
    with _walk_with(lockstep):
        _vectorised(batches)  # well-formed v2 input never needs the fallback


@pytest.mark.parametrize("lockstep", [False, True])
@SETTINGS
@given(st.lists(st.tuples(records(max_records=6), batch_kwargs.filter(lambda k: k["codec"] == 0), st.booleans()),
                min_size=1, max_size=4), st.randoms(use_true_random=False), st.integers(1, 6))
def test_damaged_records_give_the_same_records_or_the_same_error(lockstep, specs, rnd, flips):
    """Bytes of the records section changed (framing and CRC ignored): both decoders agree."""
    data = bytearray(_log(specs))
    batches = list(BatchScanner(bytes(data)))
    for _ in range(flips):  # damage only inside records sections, so the walk still frames batches
        b = rnd.choice(batches)
        if b.size > 61:
            data[b.position + rnd.randrange(61, b.size)] = rnd.randrange(256)
    batches = list(BatchScanner(bytes(data)))
    try:
        want = _per_record(batches)
    except KafkaFormatError as e:
        try:
            with _walk_with(lockstep):
                decode_columns(batches)
        except KafkaFormatError as e2:
            assert e2.problem.to_json() == e.problem.to_json()
        else:
            raise AssertionError("the columnar decoder accepted what the record decoder refuses")
    else:
        with _walk_with(lockstep):
            assert decode_columns(batches).records() == want


def test_huge_varints_and_offsets_take_the_exact_path():
    """Deltas near the int64 limits would overflow numpy's sums: the fallback keeps Python's ints."""
    recs = [Record(2**62, 2**62, b"k", b"v", []), Record(2**62 + 1, -(2**62), None, None, [("h", None)])]
    data = builder.build_v2(recs, base_offset=2**62)
    batches = list(BatchScanner(data))
    assert decode_columns(batches).records() == _per_record(batches)


def test_iter_record_columns_over_the_sample():
    """Every partition of the bundled sample (legacy, compressed, transactional) in small chunks."""
    logs = sorted(pathlib.Path(SAMPLE).glob("*/*.log"))
    assert logs
    for log in logs:
        for chunk in (1, 1 << 12, 1 << 20):
            got = [r for c in iter_record_columns(str(log), chunk_bytes=chunk) for r in c.records()]
            want = [r for b in BatchScanner(log.read_bytes()) for r in b.records()]
            assert got == want, log
        assert list(iter_records(str(log))) == want, log


def test_empty_and_random_garbage():
    assert len(decode_columns([])) == 0
    rnd = random.Random(3)
    for _ in range(200):
        data = bytearray(_log([([Record(0, 5, b"k", b"v" * 30, [("a", b"b")])] * 1, {}, False)]))
        for _ in range(3):
            data[rnd.randrange(61, len(data))] = rnd.randrange(256)
        batches = list(BatchScanner(bytes(data)))
        try:
            want = _per_record(batches)
        except KafkaFormatError:
            try:
                decode_columns(batches)
                raise AssertionError("accepted")
            except KafkaFormatError:
                pass
        else:
            assert decode_columns(batches).records() == want


def _errors_of_both(batches) -> list:
    """The located errors the record decoder and the columnar decoder (with either way of finding
    record starts) raise over ``batches``."""
    errors = []
    for decode, lockstep in ((_per_record, False), (decode_columns, False), (decode_columns, True)):
        try:
            with _walk_with(lockstep):
                decode(batches)
        except KafkaFormatError as e:
            errors.append(e.problem.to_json())
    return errors


@pytest.mark.parametrize("where, byte, detail", [
    (5, 6, "fields span"),          # value length one short: a stray byte looks like 'no headers'
    (4, 3, "negative key length"),  # key length -2
    (5, 5, "negative value length"),  # value length -3
])
def test_malformed_fields_are_refused_by_both(where, byte, detail):
    data = bytearray(builder.build_v2([Record(0, 5, None, b"abc\x00", [])], base_offset=0))
    assert data[61 + 4:61 + 6] == b"\x01\x08"  # after len, attributes, timestamp and offset deltas: key, value
    data[61 + where] = byte
    batches = list(BatchScanner(bytes(data)))
    errors = _errors_of_both(batches)
    assert len(errors) == 3 and errors[0] == errors[1] == errors[2] and detail in errors[0]["detail"]


@pytest.mark.parametrize("delta", [-1, 1])
def test_record_count_disagreeing_with_the_records_is_refused_by_both(delta):
    """recordCount one too low leaves bytes after the last record, one too high runs out of them:
    the walk over record lengths must end exactly at the batch's end."""
    import struct
    data = bytearray(b"".join(builder.build_v2([Record(o, 5, b"k", b"v" * o, [])], base_offset=o) for o in range(40)))
    pos = [b.position for b in BatchScanner(bytes(data))][17]
    count = struct.unpack_from(">i", data, pos + 57)[0]
    struct.pack_into(">i", data, pos + 57, count + delta)
    batches = list(BatchScanner(bytes(data)))
    errors = _errors_of_both(batches)
    assert len(errors) == 3 and errors[0] == errors[1] == errors[2]


def test_header_spans_and_their_malformed_lengths():
    """Headers are decoded as spans: a negative header value length (-3 here) is a null value,
    shown as -1 in the column; a negative key length and a key running past the record are refused
    by both decoders; a record with more headers than the vectorised rounds takes the exact path."""
    recs = [Record(0, 5, b"k", b"v", [("h", b"xy"), ("é", None)]), Record(1, 6, None, b"w", [("last", None)])]
    data = bytearray(builder.build_v2(recs, base_offset=0))
    batches = list(BatchScanner(bytes(data)))
    cols = _vectorised(batches)
    assert cols.header_record.tolist() == [0, 0, 1]
    assert cols.header_value_length.tolist() == [2, -1, -1]
    assert [cols.buf[s:s + n] for s, n in zip(cols.header_key_start.tolist(), cols.header_key_length.tolist())] == \
        [b"h", "é".encode(), b"last"]
    assert cols.records() == _per_record(batches)

    assert data[-1] == 0x01  # the last header's value length: -1
    data[-1] = 0x05  # -3: still a null value for both
    batches = list(BatchScanner(bytes(data)))
    cols = _vectorised(batches)
    assert cols.header_value_length.tolist() == [2, -1, -1]
    assert cols.records() == _per_record(batches)

    at = len(data) - 6  # the last header's key length (4), before b"last" and the value length
    assert data[at] == 8
    for byte, detail in ((3, "negative header key length"), (10, "")):  # key length -2; 5 runs past the end
        bad = bytearray(data)
        bad[at] = byte
        errors = _errors_of_both(list(BatchScanner(bytes(bad))))
        assert len(errors) == 3 and errors[0] == errors[1] == errors[2] and detail in errors[0]["detail"]

    many = [Record(0, 5, b"k", b"v", [(str(i), b"%d" % i) for i in range(MAX_HEADER_ROUNDS + 1)])]
    batches = list(BatchScanner(builder.build_v2(many, base_offset=0)))
    with pytest.raises(_Fallback):
        _vectorised(batches)
    assert decode_columns(batches).records() == _per_record(batches)


def test_columns_of_records_sections_say_what_they_lack():
    """decode_sections' columns (the Spark runs' decoder) have offsets but no Batch objects: asking
    them for Record objects, or decoding LogAppendTime sections without their maxTimestamp, is a
    ValueError saying so (was a TypeError on None deep inside)."""
    recs = [Record(i, 1000 + i, b"k%d" % i, b"v", []) for i in range(3)]
    b = next(iter(BatchScanner(builder.build_v2(recs, base_offset=0, **v2_kwargs()))))
    body = v2_record_bytes(b)
    one = (np.array([0], np.int64), np.array([len(body)], np.int64), np.array([3], np.int64),
           np.array([0], np.int64), np.array([b.first_timestamp], np.int64))
    cols = record_columns.decode_sections(body, *one, np.array([False]), None)
    assert cols.offset.tolist() == [0, 1, 2]
    with pytest.raises(ValueError, match="carry no batches"):
        cols.records()
    with pytest.raises(ValueError, match="maxTimestamp"):
        record_columns.decode_sections(body, *one, np.array([True]), None)
