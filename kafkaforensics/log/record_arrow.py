"""Records decoded into columns (:mod:`~kafkaforensics.log.record_columns`) as Arrow arrays, with no
Python object per record: what the Spark records level hands to the JVM.

Keys, values and headers stay ``(start, length)`` spans into the run's decompressed bytes until
Arrow copies them into contiguous buffers in C++: the spans of one column lie in log order and do
not overlap, so the buffer read as a binary array whose elements are, in turn, a span and the gap
up to the next one is a valid Arrow array, and taking its even elements is the column.
``tests/test_record_arrow.py`` proves the arrays equal to the records' Python values.
"""
from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys

import numpy as np
import pyarrow as pa
import pyarrow.lib

from specs.layout import INT32_MAX

from kafkaforensics.log.record_columns import RecordColumns



class _PandasImported(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """The finder :func:`arrow_without_pandas` leaves on ``sys.meta_path``: it loads pandas as the
    path finder would, then tells pyarrow that pandas is there (and leaves the path)."""

    def find_spec(self, name, path=None, target=None):
        """pandas' spec with this loader around its own; None for any other module."""
        if name != "pandas":
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None and spec.loader is not None:
            self.loader = spec.loader
            spec.loader = self
        return spec

    def create_module(self, spec):
        """As pandas' own loader."""
        return self.loader.create_module(spec)

    def exec_module(self, module) -> None:
        """pandas run by its own loader; then pyarrow's pandas support is asked for, which imports
        it again (the module now in ``sys.modules``) and turns pyarrow's pandas support back on.  pandas
        sees its own loader, as if this one had never been there."""
        module.__loader__ = module.__spec__.loader = self.loader
        self.loader.exec_module(module)
        pyarrow.lib._pandas_api.pd  # noqa: B018  (pyarrow's shim retries the import when asked)


class _PandasBlocked(importlib.abc.MetaPathFinder):
    """The finder on ``sys.meta_path`` while pyarrow asks whether pandas is importable: it is not."""

    def find_spec(self, name, path=None, target=None):
        """ModuleNotFoundError for pandas; None (the next finder's answer) for any other module."""
        if name == "pandas":
            raise ModuleNotFoundError("pandas left unimported for pyarrow's first conversion", name="pandas")
        return None


def arrow_without_pandas() -> None:
    """Spare a process that never uses pandas its import (0.25-0.45 s, up to ~9 % of a whole
    one-machine ``kfx scan``; issue 57).  pyarrow's first conversion of anything that is not already an Arrow
    array (``pa.array`` of a list or even of a numpy array, ``from_pylist``, ``pa.table`` of lists)
    imports pandas, only to ask whether the object is a pandas Series.  While pandas is not imported
    no pandas object exists, so pyarrow is told, once, that pandas is absent; the first import of
    pandas afterwards, by anyone, turns pyarrow's pandas support back on (:class:`_PandasImported`),
    and a use of pandas through pyarrow (``to_pandas``) imports it again itself.  Nothing to do once
    pandas is imported (pyarrow's ``have_pandas`` cannot be read without importing it).  (Kept to the
    one-machine scan, which never uses pandas.)"""
    if "pandas" in sys.modules or any(isinstance(f, _PandasImported) for f in sys.meta_path):
        return
    block = _PandasBlocked()
    sys.meta_path.insert(0, block)
    try:
        pa.array([])  # pyarrow asks for pandas on its first conversion of a list: absent
    finally:
        sys.meta_path.remove(block)
    sys.meta_path.insert(0, _PandasImported())


def spans(buf: bytes, start: np.ndarray, length: np.ndarray, type=pa.binary()) -> pa.Array:
    """The byte spans ``buf[start:start+length]`` as an Arrow array of ``type`` (binary or
    string); a negative length is null.  Spans must lie in increasing, non-overlapping order."""
    n = len(start)
    if n == 0:
        return pa.array([], type=type)
    start = np.asarray(start, np.int64)
    length = np.asarray(length, np.int64)
    valid = length >= 0
    ln = np.where(valid, length, 0)
    end = start + ln
    if (start[1:] < end[:-1]).any() or start[0] < 0 or end[-1] > len(buf):
        raise ValueError("spans out of order or out of the buffer")
    offsets = np.empty(2 * n + 1, np.int64)
    offsets[0:2 * n:2] = start
    offsets[1:2 * n:2] = end
    offsets[2 * n] = end[-1]
    large = offsets[-1] > INT32_MAX
    wide = pa.large_binary() if type == pa.binary() else pa.large_string()
    raw = pa.Array.from_buffers(wide if large else type, 2 * n,
                                [None, pa.py_buffer(offsets if large else offsets.astype(np.int32)),
                                 pa.py_buffer(buf)])
    even = pa.array(np.arange(0, 2 * n, 2, dtype=np.int64), mask=~valid)
    out = raw.take(even)
    return out.cast(type) if large else out


def headers(cols: RecordColumns, list_type: pa.DataType) -> pa.Array:
    """Each record's headers as ``list<struct<key: string, value: binary>>`` (``list_type``).
    Header keys are UTF-8 text; one that is not valid UTF-8 is decoded with replacement
    characters, as ``Batch.records()`` does."""
    n = len(cols)
    counts = np.bincount(cols.header_record, minlength=n) if len(cols.header_record) else np.zeros(n, np.int64)
    offsets = np.zeros(n + 1, np.int32)
    np.cumsum(counts, out=offsets[1:])
    keys = spans(cols.buf, cols.header_key_start, cols.header_key_length, pa.string())
    try:
        keys.validate(full=True)
    except pa.ArrowInvalid:
        raw = spans(cols.buf, cols.header_key_start, cols.header_key_length, pa.binary()).to_pylist()
        keys = pa.array([k.decode("utf-8", "replace") for k in raw], pa.string())
    values = spans(cols.buf, cols.header_value_start, cols.header_value_length, pa.binary())
    item = list_type.value_type
    struct = pa.StructArray.from_arrays([keys, values], fields=list(item))
    return pa.ListArray.from_arrays(pa.array(offsets), struct, type=list_type)


def per_batch(values, which: np.ndarray, type: pa.DataType) -> pa.Array:
    """A column whose value is its record's batch's: ``values[which]``."""
    return pa.array(values, type=type).take(pa.array(which))


def constant(value, n: int, type: pa.DataType) -> pa.Array:
    """``n`` copies of ``value``."""
    return pa.repeat(pa.scalar(value, type=type), n)
