"""Segment as the one door to a segment's bytes (issue 52): its byte source (a local file, or an
object store's object read in ranges, as the Spark source reads ``s3://`` segments), byte ranges,
preads, index bytes and the walk over them, each against the file read plainly."""
import os
import shutil

import pytest
from pyarrow import fs as pafs

from kafkaforensics.log.partition import Partition
from kafkaforensics.log.segment import INDEX, TIMEINDEX, ObjectFiles, Segment, LogSlice
from kafkaforensics.spark.storage import Storage
from tests.corruption import make_partition


@pytest.fixture(scope="module")
def part(tmp_path_factory):
    p = str(tmp_path_factory.mktemp("bytes") / "events-0")
    make_partition(p, seed=5, n=60)
    return Partition.scan(p)


def _plain(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _local_object_store(uri: str):
    """An object store whose objects are local files (pyarrow's LocalFileSystem, as S3FileSystem is used)."""
    return pafs.LocalFileSystem(), uri.split("://", 1)[1]


def _on_store(seg: Segment) -> Segment:
    return Segment(seg.base_offset, "mem://" + seg.dir, file="mem://" + seg.log, source=ObjectFiles(_local_object_store))


def _walked(region: LogSlice) -> list:
    return [(b.base_offset, b.last_offset, b.position + region.shift, b.size) for b in region.walk()]


def test_byte_ranges_mapped_small_and_from_an_object_store(part):
    seg = part.segments[0]
    data = _plain(seg.log)
    start, end = 0, len(data)
    want = [(b.base_offset, b.last_offset, b.position, b.size) for b in seg.batches()]
    assert len(want) > 2
    for small in (0, len(data)):  # mapped, then read into memory
        with seg.bytes_range(start, end, small) as region:
            buf, shift, first, stop = region
            assert bytes(buf[first:stop]) == data[start + 0:end]
            assert _walked(region) == want
    remote = _on_store(seg)
    with remote.bytes_range(start, end) as region:
        assert bytes(region.buf[region.start:region.end]) == data
        assert _walked(region) == want
    mid = want[1][2]  # a range from the second batch on: positions shifted back to the file's
    with remote.bytes_range(mid, None) as region:
        assert region.shift == mid and _walked(region) == want[1:]


def test_reads_and_index_bytes_through_the_source(part):
    seg = part.segments[1]
    data = _plain(seg.log)
    for s in (seg, _on_store(seg)):
        assert s.read_at(7, 50) == data[7:57]
        assert s.read_at(len(data) - 3, 50) == data[-3:]
        with s.reader() as read:
            assert read(0, 12) == data[:12]
        assert s.file_bytes(INDEX) == _plain(seg.path(INDEX))
        assert s.file_bytes(TIMEINDEX) == _plain(seg.path(TIMEINDEX))
        assert s.file_bytes(".nosuch") is None
        with s.buffer() as buf:
            assert bytes(buf) == data


def test_an_index_a_user_names_is_read_as_named(part, tmp_path):
    seg = part.segments[0]
    named = str(tmp_path / f"{seg.base_offset}_abc.index")  # as tiered storage's index cache names it
    shutil.copyfile(seg.path(INDEX), named)
    s = Segment.of_index(named, seg.base_offset, INDEX)
    assert s.file_of(INDEX) == named and s.file_bytes(INDEX) == _plain(seg.path(INDEX))
    assert s.file_bytes(TIMEINDEX) is None  # the others are named after the base, in the index's dir


def test_runs_walk_as_the_batch_walk(part):
    seg = part.segments[0]
    for small in (0, 1 << 30):
        with seg.runs(lists=True, small=small) as (scanner, items):
            got = []
            for item in items:
                got += [item.base_offset] if hasattr(item, "records") else list(item.base_offset)
            assert [int(x) for x in got] == [b.base_offset for b in seg.batches()]
            assert scanner.stop is None and scanner.valid_bytes == os.path.getsize(seg.log)


def test_the_spark_storage_reads_through_segment(part):
    seg = part.segments[0]
    st = Storage()
    s = st.segment("file://" + seg.log)
    assert (s.base_offset, s.log, s.file_of(INDEX)) == (seg.base_offset, seg.log, seg.path(INDEX))
    assert st.index_bytes(seg.log, INDEX) == _plain(seg.path(INDEX))
    with st.open_range(seg.log, 0, None) as (buf, shift, first, stop):
        assert bytes(buf[first:stop]) == _plain(seg.log) and shift == 0


def test_a_log_whose_base_is_not_known_is_walked_with_no_offset_range(tmp_path):
    """A ``.log`` named otherwise, or one walked whatever its name says (``base_offset=None``), has no
    base: its walk, its byte range's walk and the Spark storage's check no offset range (offsets past
    the int32 range of any base are read), and no index is named after a base it does not have (a
    None base once stood in the int field: a TypeError there; a 0 would be another segment's file)."""
    from kafkaforensics.log.segment import LOG, file_name
    from kafkaforensics.records.batch import Record
    from kafkaforensics.records.builder import build_v2

    big = 3_000_000_000  # past the int32 range of a base 0
    offsets = [big, big + 1, big + 2]
    data = b"".join(build_v2([Record(o, 1_700_000_000_000, b"k", b"v", [])], base_offset=o) for o in offsets)
    nameless, named = tmp_path / "copy.log", tmp_path / file_name(big + 1, LOG)  # a name above its first batch
    nameless.write_bytes(data)
    named.write_bytes(data)
    for seg in (Segment.of_file(str(nameless)), Segment.of_file(str(named), None), Storage().segment(str(nameless))):
        assert seg.walk_base is None and [b.base_offset for b in seg.batches()] == offsets
        with seg.bytes_range() as region:
            assert region.base_offset is None and [b.base_offset for b in region.walk()] == offsets
    with Segment.of_file(str(named)).walk() as w:  # its name's base checked: the first batch is below it
        assert list(w) == [] and w.stop is not None and w.stop.kind == "offset-overflow"
    for seg in (Segment.of_file(str(nameless)), Segment.of_file(str(named), None)):
        with pytest.raises(ValueError, match="its base offset is not known, so no .index file is named after it"):
            seg.path(INDEX)
