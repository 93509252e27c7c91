"""Segment's reads as Kafka's LogSegment makes them (translateOffset, read, findOffsetByTimestamp,
collectAbortedTxns, readNextOffset, the load-time sanity check), each against a plain walk of the batches."""
import os

import pytest

from kafkaforensics.log.partition import LogDir, Partition
from kafkaforensics.log.txn_index import read_entries
from tests.corruption import make_partition


@pytest.fixture(scope="module")
def part(tmp_path_factory):
    p = str(tmp_path_factory.mktemp("reads") / "events-0")
    make_partition(p, seed=3, n=90)
    return Partition.scan(p)


def _walk(seg):
    return [(b, [(r.offset, r.timestamp) for r in b.records()]) for b in seg.batches()]


def test_translate_offset_and_read(part):
    assert len(part.segments) > 3
    assert all(seg.offset_index() for seg in part.segments[:-1])  # the reads go through real indexes
    for seg in part.segments:
        walk = _walk(seg)
        for b, recs in walk:
            for o in {b.base_offset, b.last_offset}:
                got = seg.translate_offset(o)
                want = next(x for x, _ in walk if x.last_offset >= o)
                assert got == (want.last_offset, want.position, want.size)
                data = seg.read(o, 10).records.read()
                with open(seg.log, "rb") as f:
                    f.seek(want.position)
                    assert data == f.read(10)
                assert len(seg.read(o, 1, min_one_message=True).records.read()) == want.size
        assert seg.translate_offset(walk[-1][0].last_offset + 1) is None
        assert seg.read(walk[-1][0].last_offset + 1, 100) is None
        assert seg.read_next_offset() == walk[-1][0].last_offset + 1


def test_find_offset_by_timestamp_through_the_time_index(part):
    for seg in part.segments:
        recs = [r for _b, rs in _walk(seg) for r in rs]
        for ts in [recs[0][1] - 5] + [t for _o, t in recs][::3] + [recs[-1][1], recs[-1][1] + 1]:
            want = next(((t, o) for o, t in recs if t >= ts), None)
            got = seg.find_offset_by_timestamp(ts)
            assert (got[:2] if got else None) == want, ts
        # a starting offset (the log start) above the match moves it
        mid = recs[len(recs) // 2][0]
        got = seg.find_offset_by_timestamp(recs[0][1], mid)
        assert got.offset == mid


def test_collect_aborted_txns(part):
    segs = [s for s in part.segments if s.existing(".txnindex") and os.path.getsize(s.path(".txnindex"))]
    assert segs
    for seg in segs:
        entries = read_entries(open(seg.path(".txnindex"), "rb").read())
        lo, hi = seg.base_offset, seg.read_next_offset()
        for fetch in range(lo, hi, 7):
            for upper in (fetch + 1, fetch + 20, hi):
                got, complete = seg.collect_aborted_txns(fetch, upper)
                want = []
                for t in entries:
                    if t.last_offset >= fetch and t.first_offset < upper:
                        want.append(t)
                    if t.last_stable_offset >= upper:
                        break
                assert got == want
                assert complete == any(t.last_stable_offset >= upper for t in entries)


def test_index_problem_is_kafkas_sanity_check(tmp_path):
    p = str(tmp_path / "events-0")
    make_partition(p, seed=5)
    seg = Partition.scan(p).segments[1]
    assert seg.index_problem() is None
    good = open(seg.path(".index"), "rb").read()
    with open(seg.path(".index"), "ab") as f:
        f.write(b"\xff\xff\xff\xff\0\0\0\0")  # a last entry before the base offset
    assert "below the base offset" in seg.index_problem()
    with open(seg.path(".index"), "wb") as f:
        f.write(good + bytes(8 * 100))  # a preallocated zero tail passes, as in Kafka
    assert seg.index_problem() is None
    t = open(seg.path(".timeindex"), "rb").read()
    with open(seg.path(".timeindex"), "ab") as f:
        f.write(bytes(12))  # a last timestamp below the first
    assert "before its first" in seg.index_problem()
    with open(seg.path(".timeindex"), "wb") as f:
        f.write(t)
    with open(seg.path(".index"), "ab") as f:
        f.write(b"\0\0\0")
    assert "not a multiple" in seg.index_problem()
    os.unlink(seg.path(".index"))
    assert "missing" in seg.index_problem()


def test_log_dir_reads_both_marker_formats_and_its_checkpoints(tmp_path):
    ld = tmp_path / "logs"
    make_partition(str(ld / "events-0"))
    (ld / "events-1.0123456789abcdef0123456789abcdef-delete").mkdir()
    (ld / ".kfx-backup").mkdir()
    d = LogDir(str(ld))
    assert d.clean_shutdown_marker() is None and not d.clean_shutdown
    (ld / ".kafka_cleanshutdown").write_text("")
    assert d.clean_shutdown and d.clean_shutdown_marker()["format"] == "empty"
    (ld / ".kafka_cleanshutdown").write_text('{"version":0,"brokerEpoch":42}')
    assert d.clean_shutdown_marker()["brokerEpoch"] == 42
    assert [os.path.basename(x) for x in d.partition_dirs()] == ["events-0",
                                                               "events-1.0123456789abcdef0123456789abcdef-delete"]
    assert d.checkpoint("recovery-point-offset-checkpoint") == {} and d.stored_checkpoint("recovery-point-offset-checkpoint") is None
    (ld / "recovery-point-offset-checkpoint").write_text("0\n1\nevents 0 17\n")
    assert d.checkpoint("recovery-point-offset-checkpoint") == {("events", 0): 17}
    assert d.partition_offset("recovery-point-offset-checkpoint", ("events", 0)) == 17
    (ld / "cleaner-offset-checkpoint").write_text("")
    assert d.lock_holder() is None and [os.path.basename(x) for x, _, _ in d.refused_dirs()] == [".kfx-backup"]


def test_partition_dir_producer_state_and_epochs(part, tmp_path):
    off, entries = part.latest_producer_snapshot()
    assert off == max(part.snapshots) and entries
    assert part.segment_for(off - 1).base_offset <= off - 1
    assert part.segment_for(part.segments[0].base_offset) is part.segments[0]
    assert part.leader_epoch_cache().latest_epoch is not None
    import shutil
    p = str(tmp_path / "events-0")
    shutil.copytree(part.path, p)
    with open(os.path.join(p, f"{off:020d}.snapshot"), "r+b") as f:
        f.write(b"\xff\xff")  # a damaged newest snapshot: the one before is loaded
    older = Partition.scan(p).latest_producer_snapshot()
    assert older[0] == sorted(part.snapshots)[-2]
