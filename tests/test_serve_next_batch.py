"""kfx serve's Fetch of a consumer going on (issue 52, item 6): the walk that cuts a Fetch's region to
whole batches reads one batch header more, the batch the consumer's next Fetch begins with, so that
Fetch reads no header to find where it starts (``Segment.read(..., at=)``); what it serves is exactly
what ``translate_offset`` would have found, on a log with offset gaps, batches of many sizes, a
read_committed limit, several segments and offsets that do not rise."""
import os
import random

import pytest

from kafkaforensics.broker.replay import ReplayBroker
from kafkaforensics.log.segment import Segment
from kafkaforensics.log.writer import write_partition
from kafkaforensics.records.batch import Record
from kafkaforensics.records.builder import build_v2


def _batch(base: int, n: int, value_size: int) -> bytes:
    return build_v2([Record(base + j, 1_700_000_000_000 + base, b"k", os.urandom(value_size), []) for j in range(n)],
                    base_offset=base)


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory):
    """``t-0``: 120 batches of 1 to 6 records of 100 B to 3 KB, offsets with gaps (a compacted log's),
    in segments of 64 KB (several segments, an index entry every 4 KB)."""
    root = tmp_path_factory.mktemp("next-batch")
    rnd = random.Random(52)
    batches, base = [], 0
    for _ in range(120):
        n = rnd.randint(1, 6)
        batches.append(_batch(base, n, rnd.choice((100, 700, 3000))))
        base += n + rnd.choice((0, 0, 3))
    write_partition(str(root / "t-0"), batches, segment_bytes=64 << 10)
    return str(root)


@pytest.fixture(scope="module")
def indexed_log_dir(tmp_path_factory):
    """``t-0``: 60 batches of 2 records of 2.5 KB, each larger than the 4 KB index interval (so each
    has an offset index entry, as the bench's 256 KB batches do), in segments of 64 KB."""
    root = tmp_path_factory.mktemp("next-batch-indexed")
    write_partition(str(root / "t-0"), [_batch(2 * i, 2, 2500) for i in range(60)], segment_bytes=64 << 10)
    return str(root)


def _consume(broker, max_bytes: int, limit_back: int = 0, hints: bool = True) -> list:
    """A consumer's Fetches from offset 0 to the end (``limit_back``: the limit that many offsets
    below the log end, as a last stable offset): each read's (region or bytes, next offset).
    ``hints=False``: every read finds its start with translate_offset."""
    rp = broker.read_path
    s = broker.partitions[("t", 0)]
    limit = s.log_end_offset - limit_back
    out, offset, first = [], 0, True
    while offset < limit:
        if not hints:
            rp.next_batch.clear()
        data, nxt = rp.read(s, offset, max_bytes, limit, first)
        out.append((data, nxt))
        if nxt == offset:
            break
        offset = nxt
    return out


def test_a_consumer_going_on_reads_no_header_to_find_its_next_fetchs_start(indexed_log_dir, monkeypatch):
    """After the first Fetch, each Fetch of a consumer going on starts where the last one's walk saw
    the next batch: no translate_offset (a walk of the segment's headers from the offset index's entry)
    but for the first Fetch of each segment."""
    broker = ReplayBroker(indexed_log_dir)
    calls = []
    real = Segment.translate_offset

    def counting(seg, offset, start_position=0):
        calls.append((seg.base_offset, offset))
        return real(seg, offset, start_position)
    monkeypatch.setattr(Segment, "translate_offset", counting)
    reads = _consume(broker, 12_000)
    segments = broker.partitions[("t", 0)].segments
    assert len(segments) > 2 and len(reads) > 3 * len(segments)
    assert {base for base, _ in calls} == {seg.base_offset for seg in segments}
    assert len(calls) == len(segments)  # each segment's first Fetch only


@pytest.mark.parametrize("max_bytes,limit_back", [(1, 0), (5_000, 0), (10_000, 7), (100_000, 0), (30_000, 40)])
def test_what_is_served_is_what_translate_offset_would_find(log_dir, max_bytes, limit_back):
    """The same Fetches with and without the next batch known serve the same regions and offsets:
    KIP-74's first batch whole, partition budgets, a read_committed limit, across segment ends."""
    with_hints = _consume(ReplayBroker(log_dir), max_bytes, limit_back)
    assert with_hints == _consume(ReplayBroker(log_dir), max_bytes, limit_back, hints=False)
    assert sum(len(d) for d, _ in with_hints) > 0


def test_offsets_that_do_not_rise_are_looked_up_as_before(tmp_path):
    """A segment whose offsets go back (damage a load may leave): the walk saw offsets that do not rise,
    so the next Fetch finds its start with translate_offset, as Kafka's LogSegment.read does."""
    bases = [0, 10, 5, 20, 30, 15, 40]
    write_partition(str(tmp_path / "t-0"), [_batch(b, 3, 1500) for b in bases], segment_bytes=1 << 30)
    broker = ReplayBroker(str(tmp_path))
    for max_bytes in (1, 2_000, 4_000):
        assert _consume(broker, max_bytes) == _consume(ReplayBroker(str(tmp_path)), max_bytes, hints=False)
