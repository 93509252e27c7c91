"""Segment.read as Kafka's LogSegment.read (a file region, not copied bytes), the indexes a Segment owns
(parsed once, re-read after an append), and the broker's Fetch reading through them (issue 52)."""
import os
import random

import pytest

from kafkaforensics.broker import read_path as rp
from kafkaforensics.broker.protocol import FileRegion as ProtocolFileRegion
from kafkaforensics.log import offset_index, segment as segment_module
from kafkaforensics.log.file_region import FileRegion
from kafkaforensics.log.live_log import LiveLog
from kafkaforensics.log.partition import Partition
from kafkaforensics.log.segment import BatchScanner, Segment
from tests.corruption import make_partition


@pytest.fixture(scope="module")
def part(tmp_path_factory):
    p = str(tmp_path_factory.mktemp("region") / "events-0")
    make_partition(p, seed=5, n=90)
    return p


def _batches(seg):
    with open(seg.log, "rb") as f:
        data = f.read()
    return data, list(BatchScanner(data, base_offset=seg.base_offset))


def _kafka_read(data, batches, offset, max_size, max_position, min_one):
    """LogSegment.read, from a plain walk: the bytes from the batch whose last offset is at least
    ``offset``, max_size long (its size at least, with min_one), never past max_position."""
    at = next((b for b in batches if b.last_offset >= offset), None)
    if at is None:
        return None
    size = max(max_size, at.size) if min_one else max_size
    end = len(data) if max_position is None else max_position
    n = max(0, min(end - at.position, size))
    return at.position, data[at.position:at.position + n], size < at.size


def test_read_returns_the_region_kafkas_read_gives(part):
    rnd = random.Random(7)
    segs = Partition.scan(part).segments
    assert len(segs) > 3 and all(s.offset_index() for s in segs[:-1])
    for seg in segs:
        data, batches = _batches(seg)
        offsets = sorted({o for b in batches for o in (b.base_offset, b.last_offset, b.last_offset + 1)})
        for o in offsets:
            for _ in range(4):
                max_size = rnd.choice([0, 1, 17, 500, 4096, len(data)])
                max_pos = rnd.choice([None, len(data), rnd.randrange(len(data) + 1)])
                min_one = rnd.random() < 0.5
                got = seg.read(o, max_size, max_pos, min_one)
                want = _kafka_read(data, batches, o, max_size, max_pos, min_one)
                if want is None:
                    assert got is None
                    continue
                assert isinstance(got.records, FileRegion) and got.records.path == seg.log  # a slice, not bytes
                assert (got.offset, got.position, got.records.read(), got.first_entry_incomplete) == (o, *want)
                assert got.records.position == got.position and len(got.records) == len(want[1])


def test_the_broker_region_type_is_the_log_stages():
    assert ProtocolFileRegion is FileRegion


def test_indexes_are_parsed_once_and_again_after_an_append(tmp_path, monkeypatch):
    path = str(tmp_path / "t-0")
    os.makedirs(path)
    log = LiveLog(path, "t", 0, index_interval=1)
    for i in range(3):
        log.append_records([(b"k%d" % i, b"v" * 100)], timestamp=1000 + i)
    seg = log.segments[-1]
    parsed = []
    real = offset_index.read_entries
    monkeypatch.setattr(offset_index, "read_entries", lambda data, base: parsed.append(1) or real(data, base))
    first = seg.offset_index()
    assert seg.offset_index() is first and seg.translate_offset(2).offset == 2
    assert len(parsed) == 1  # three reads of the index, one parse
    assert seg.find_offset_by_timestamp(1002).offset == 2
    log.append_records([(b"k3", b"v" * 100)], timestamp=1003)  # LiveLog rewrites the indexes
    assert seg.offset_index()[-1][0] == 3 and len(parsed) == 2
    assert seg.translate_offset(3).offset == 3
    assert seg.find_offset_by_timestamp(1003).offset == 3  # the time index is re-read too
    log.close()


def _fetch_reference(s, offset, max_bytes, limit, first):
    """Whole batches from the one holding ``offset``, within max_bytes (the first always, when
    ``first``), below ``limit``: from a plain walk of every segment."""
    for seg in s.segments:
        _data, batches = _batches(seg)
        batches = [b for b in batches if b.last_offset >= offset]
        if not batches:
            continue
        taken = []
        for b in batches:
            if b.base_offset >= limit:
                break
            if sum(x.size for x in taken) + b.size > max_bytes and (taken or not first):
                break
            taken.append(b)
        if not taken:
            return None, offset
        return (seg.log, taken[0].position, sum(b.size for b in taken)), taken[-1].next_offset
    return None, offset


def test_fetch_reads_whole_batches_through_segment(part, monkeypatch):
    s = LiveLog(part, index_after_append=False)
    reads = []
    real = Segment.read
    monkeypatch.setattr(Segment, "read", lambda seg, *a, **k: reads.append(seg.base_offset) or real(seg, *a, **k))
    path = rp.ReadPath(broker=None)
    assert not hasattr(path, "index_cache") and not hasattr(path, "_index")  # no index cache of its own
    rnd = random.Random(3)
    end = s.log_end_offset
    for _ in range(300):
        offset = rnd.randrange(end)
        max_bytes = rnd.choice([0, 1, 100, 1000, 5000, 1 << 20])
        limit = rnd.choice([end, rnd.randrange(offset, end + 1)])
        first = rnd.random() < 0.5
        data, upper = path.read(s, offset, max_bytes, limit, first)
        want, want_upper = _fetch_reference(s, offset, max_bytes, limit, first)
        got = None if not len(data) else (data.path, data.position, data.size)
        assert (got, upper) == (want, want_upper), (offset, max_bytes, limit, first)
    assert reads  # every answer came through Segment.read


def test_a_batch_that_does_not_fit_is_not_skipped_for_the_next_segment(part):
    """A later partition of a Fetch whose budget is smaller than the batch holding its offset gets
    nothing (Kafka's read: an incomplete first batch), never the next segment's batches after it."""
    s = LiveLog(part, index_after_append=False)
    seg = s.segments[0]
    _data, batches = _batches(seg)
    last = batches[-1]
    data, upper = rp.ReadPath(broker=None).read(s, last.base_offset, last.size - 1, s.log_end_offset, first=False)
    assert (data, upper) == (b"", last.base_offset)
    data, upper = rp.ReadPath(broker=None).read(s, last.base_offset, last.size - 1, s.log_end_offset, first=True)
    assert (data.position, data.size, upper) == (last.position, last.size, last.next_offset)


def test_fetch_parses_each_index_once_across_fetches(part, monkeypatch):
    s = LiveLog(part, index_after_append=False)
    parsed = []
    real = offset_index.read_entries
    monkeypatch.setattr(offset_index, "read_entries", lambda data, base: parsed.append(base) or real(data, base))
    path = rp.ReadPath(broker=None)
    for _ in range(3):
        offset = 0
        while offset < s.log_end_offset:
            data, offset = path.read(s, offset, 2000, s.log_end_offset, first=True)
    assert sorted(parsed) == sorted({seg.base_offset for seg in s.segments if os.path.getsize(seg.path(".index"))})


def test_segment_copies_carry_no_cached_index(part):
    import pickle
    seg = Partition.scan(part).segments[0]
    seg.offset_index()
    copy = pickle.loads(pickle.dumps(seg))
    assert copy == seg and copy._indexes == {} and copy.offset_index() == seg.offset_index()
    assert segment_module.Segment is Segment


def test_live_log_end_after_a_damaged_last_batch_is_read_next_offset(tmp_path, monkeypatch):
    """The load's walk skips a batch whose CRC fails; the log end is still after it, as Kafka's
    LogSegment.readNextOffset (which checks no CRC) says: LiveLog asks Segment.read_next_offset."""
    p = str(tmp_path / "events-0")
    make_partition(p, seed=5, n=90)
    last_seg = Partition.scan(p).segments[-1]
    _data, batches = _batches(last_seg)
    last = batches[-1]
    with open(last_seg.log, "r+b") as f:  # a flipped byte in the last batch's records: its CRC fails
        f.seek(last.position + last.size - 1)
        byte = f.read(1)
        f.seek(last.position + last.size - 1)
        f.write(bytes([byte[0] ^ 0xFF]))
    asked = []
    real = Segment.read_next_offset
    monkeypatch.setattr(Segment, "read_next_offset", lambda seg: asked.append(seg.base_offset) or real(seg))
    s = LiveLog(p, index_after_append=False)
    assert s.log_end_offset == last.next_offset and asked == [last_seg.base_offset]
    assert s.crc_skipped == {last_seg.base_offset: [(last.position, last.position + last.size)]}


def test_fetch_checks_crcs_only_where_the_load_skipped_a_batch(tmp_path, monkeypatch, caplog):
    """The load checked every batch's CRC: a Fetch computes none again, but for the batches the load
    skipped for theirs, which are served as stored and logged once."""
    import logging
    from kafkaforensics.records import batch as batch_module
    p = str(tmp_path / "events-0")
    make_partition(p, seed=5, n=90)
    seg = Partition.scan(p).segments[1]
    _data, batches = _batches(seg)
    bad = batches[len(batches) // 2]
    with open(seg.log, "r+b") as f:  # a flipped byte in a middle batch's records: its CRC fails
        f.seek(bad.position + bad.size - 1)
        byte = f.read(1)
        f.seek(bad.position + bad.size - 1)
        f.write(bytes([byte[0] ^ 0xFF]))
    s = LiveLog(p, index_after_append=False)
    assert s.crc_skipped == {seg.base_offset: [(bad.position, bad.position + bad.size)]}
    checked = []
    real = batch_module.Batch.crc_valid
    monkeypatch.setattr(batch_module.Batch, "crc_valid", lambda b: checked.append(b.base_offset) or real(b))
    path = rp.ReadPath(broker=None)
    with caplog.at_level(logging.WARNING, logger="kfx.serve"):
        for _ in range(2):
            offset, served = 0, []
            while offset < s.log_end_offset:
                data, offset = path.read(s, offset, 1 << 20, s.log_end_offset, first=True)
                served += [b.base_offset for b in BatchScanner(data.read())]
            assert bad.base_offset in served  # served as stored
    assert set(checked) == {bad.base_offset}  # no clean batch's CRC computed again
    logged = [r.getMessage() for r in caplog.records if "serving the batch" in r.getMessage()]
    assert len(logged) == 1 and f"offset {bad.base_offset}" in logged[0]
    checked.clear()  # ListOffsets' and the transaction restore's walk of the valid batches: the same
    valid = [b.base_offset for b in rp.valid_batches(s)]
    assert bad.base_offset not in valid and len(valid) == sum(len(_batches(x)[1]) for x in s.segments) - 1
    assert checked == [bad.base_offset]
