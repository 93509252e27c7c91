"""The Spark records level's Arrow columns, built from spans without a Python object per record,
equal the records' own values (``Batch.records()``)."""
import os

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkaforensics.log import record_arrow
from kafkaforensics.records.batch import Record
from kafkaforensics.records.builder import build_v2
from kafkaforensics.log.record_columns import decode_columns
from kafkaforensics.log.segment import BatchScanner
from tests.strategies import batch_kwargs, records

HEADERS = pa.list_(pa.field("element", pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])))


def _batches(batch_specs):
    data, base = b"", 0
    for recs, kw in batch_specs:
        recs = [Record(r.offset + base, r.timestamp, r.key, r.value, r.headers) for r in recs]
        data += build_v2(recs, base_offset=base, codec=kw["codec"])
        base = recs[-1].offset + 1
    return list(BatchScanner(data))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(records(), batch_kwargs), min_size=1, max_size=5))
def test_spans_and_headers_equal_the_records(batch_specs):
    batches = _batches(batch_specs)
    cols = decode_columns(batches)
    want = [r for b in batches for r in b.records()]
    assert record_arrow.spans(cols.buf, cols.key_start, cols.key_length).to_pylist() == [r.key for r in want]
    assert record_arrow.spans(cols.buf, cols.value_start, cols.value_length).to_pylist() == [r.value for r in want]
    got = record_arrow.headers(cols, HEADERS).to_pylist()
    assert got == [[{"key": k, "value": v} for k, v in r.headers] for r in want]


def test_header_key_that_is_not_utf8_is_replaced_as_the_record_decoder_does():
    data = bytearray(build_v2([Record(0, 1, b"k", b"v", [("ab", b"x")])], base_offset=0))
    at = bytes(data).index(b"ab")
    data[at] = 0xFF  # an invalid UTF-8 byte in the header key (CRC no longer matters here)
    batches = list(BatchScanner(bytes(data)))
    cols = decode_columns(batches)
    want = [r.headers for b in batches for r in b.records()]
    assert want[0][0][0] == "\ufffdb"
    assert record_arrow.headers(cols, HEADERS).to_pylist() == [[{"key": k, "value": v} for k, v in h] for h in want]


def test_spans_refuse_overlapping_input():
    import numpy as np
    try:
        record_arrow.spans(b"abcdef", np.array([0, 1]), np.array([3, 2]))
    except ValueError:
        return
    raise AssertionError("overlapping spans were accepted")


def test_pyarrow_s_pandas_support_returns_once_pandas_is_imported_after_a_scan_spared_it():
    """Issue 57: :func:`arrow_without_pandas` tells pyarrow pandas is absent while no pandas object can
    exist; Arrow conversions work without it, and the first import of pandas afterwards turns pyarrow's
    pandas support back on (a Series' NaN is null, as pyarrow reads a Series; pandas keeps its own loader),
    as does ``to_pandas``."""
    import subprocess
    import sys
    code = ("import sys\n"
            "import pyarrow as pa\n"
            "from kafkaforensics.log.record_arrow import arrow_without_pandas\n"
            "arrow_without_pandas(); arrow_without_pandas()\n"
            "assert pa.RecordBatch.from_pylist([{'a': 1}]).num_rows == 1\n"
            "assert 'pandas' not in sys.modules\n"
            "import pandas as pd\n"
            "assert type(pd.__loader__) is type(pd.__spec__.loader) is type(pd.core.__loader__), pd.__loader__\n"
            "print(pa.array(pd.Series([1.0, None])).null_count, pa.table({'a': [1]}).to_pandas().shape)\n")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, PYTHONPATH=root))
    assert out.stdout.split() == ["1", "(1,", "1)"], out.stdout + out.stderr
