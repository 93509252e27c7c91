"""A partition loaded in one place: file naming, the loader, the checkpoint editor, the leader-epoch cache."""
import os
import re

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kafkaforensics.log.checkpoint_file import (LOG_START_OFFSET, RECOVERY_POINT, read_offsets, set_partition_offset,
                                            update_offsets)
from kafkaforensics.errors import KafkaFormatError
from kafkaforensics.log.leader_epochs import UNDEFINED_EPOCH, LeaderEpochCache
from kafkaforensics.log.load_walk import replay_segment
from kafkaforensics.log.partition import LogDir, Partition
from kafkaforensics.log.producer_state import ProducerState
from kafkaforensics.log.segment import (LEFTOVER_SUFFIXES, LOG, BatchScanner, file_name, offset_from_name,
                                    open_buffer, sibling, without_leftover_suffix)
from specs import checkpoints as C
from tests.corruption import layout, make_partition, mixed_batches
from kafkaforensics.log.writer import write_partition

PACKAGE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "kafkaforensics")


# -- naming -----------------------------------------------------------------------------------
@given(st.integers(0, 2**63 - 1), st.sampled_from([".log", ".index", ".timeindex", ".txnindex", ".snapshot"]),
       st.sampled_from(("",) + LEFTOVER_SUFFIXES))
def test_file_names_round_trip(base, suffix, leftover):
    name = file_name(base, suffix) + leftover
    assert len(name) == 20 + len(suffix) + len(leftover)
    assert offset_from_name(name) == base
    assert offset_from_name(os.path.join("/x/topic-0", name)) == base
    assert without_leftover_suffix(name) == file_name(base, suffix)
    assert sibling(os.path.join("d", file_name(base, suffix)), LOG) == os.path.join("d", file_name(base, LOG))


@pytest.mark.parametrize("name", ["42.log", "0000000000000000004.log", "000000000000000000042.log",
                                  "00000000000000000042.lag", "leader-epoch-checkpoint", "00000000000000000042.log.kfx-tmp"])
def test_other_names_have_no_offset(name):
    assert offset_from_name(name) is None
    with pytest.raises(ValueError):
        sibling(name, LOG)


def test_segment_names_are_made_in_one_place():
    """Kafka's 20-digit names are formatted only in segment.py (file_name, kraft_snapshot_file_name)."""
    found = []
    for root, _dirs, files in os.walk(PACKAGE):
        for f in sorted(files):
            if f.endswith(".py"):
                with open(os.path.join(root, f)) as fh:
                    found += [(f, i) for i, line in enumerate(fh, 1) if ":020d" in line]
    assert [f for f, _ in found] == ["segment.py", "segment.py"], found


# -- the leader-epoch cache -------------------------------------------------------------------
class ReferenceEpochs:
    """Kafka's rules restated over an epoch-keyed dict, written from their documentation, not from
    LeaderEpochCache: the cache must behave exactly like it."""

    def __init__(self):
        self.m: dict[int, int] = {}

    def entries(self):
        return sorted(self.m.items())

    def assign(self, epoch, start):
        if self.m:
            last = max(self.m)
            if last == epoch and self.m[last] <= start:
                return
        for e in sorted(self.m, reverse=True):  # from the newest while non-monotonic with the new one
            if e >= epoch or self.m[e] >= start:
                del self.m[e]
            else:
                break
        self.m[epoch] = start

    def truncate_from_end(self, end):
        if end < 0:
            return
        for e in sorted(self.m, reverse=True):
            if self.m[e] >= end:
                del self.m[e]
            else:
                break

    def truncate_from_start(self, start):
        gone = [e for e in sorted(self.m) if self.m[e] <= start]
        # entries are monotonic, so those at or before ``start`` are a prefix
        for e in gone:
            del self.m[e]
        if gone:
            self.m[gone[-1]] = start

    def end_offset_for(self, epoch, leo):
        if epoch == -1:
            return -1, -1
        if self.m and max(self.m) == epoch:
            return epoch, leo
        higher = [e for e in self.m if e > epoch]
        if not higher:
            return -1, -1
        lower = [e for e in self.m if e <= epoch]
        return (max(lower) if lower else epoch), self.m[min(higher)]

    def epoch_for_offset(self, offset):
        at = [e for e in self.m if self.m[e] <= offset]
        return max(at) if at else None


_ops = st.lists(st.one_of(
    st.tuples(st.just("assign"), st.integers(0, 6), st.integers(0, 60)),
    st.tuples(st.just("assign"), st.integers(0, 6), st.integers(0, 60)),
    st.tuples(st.just("assign_newer"), st.integers(-1, 6), st.integers(0, 60)),
    st.tuples(st.just("end"), st.integers(-2, 65)),
    st.tuples(st.just("start"), st.integers(-1, 65)),
), max_size=40)


@settings(max_examples=400, deadline=None)
@given(_ops, st.lists(st.tuples(st.integers(-1, 8), st.integers(-1, 70)), max_size=8))
@example([("assign", 0, 0), ("assign", 1, 1), ("assign", 0, 1)], [])
def test_epoch_cache_equals_the_reference_model(ops, queries):
    cache, ref = LeaderEpochCache(), ReferenceEpochs()
    for op in ops:
        if op[0] == "assign":
            cache.assign(op[1], op[2])
            ref.assign(op[1], op[2])
        elif op[0] == "assign_newer":
            changed = cache.assign_newer(op[1], op[2])
            newer = op[1] >= 0 and (not ref.m or op[1] > max(ref.m))
            assert changed == newer
            if newer:
                ref.assign(op[1], op[2])
        elif op[0] == "end":
            cache.truncate_from_end(op[1])
            ref.truncate_from_end(op[1])
        else:
            cache.truncate_from_start(op[1])
            ref.truncate_from_start(op[1])
        assert cache.entries == ref.entries()
        # always monotonic: epochs and start offsets both increase
        assert all(a[0] < b[0] and a[1] < b[1] for a, b in zip(cache.entries, cache.entries[1:]))
    leo = (cache.entries[-1][1] + 5) if cache.entries else 0
    for epoch, offset in queries:
        assert cache.end_offset_for(epoch, leo) == ref.end_offset_for(epoch, leo)
        assert cache.epoch_for_offset(offset) == ref.epoch_for_offset(offset)
    assert LeaderEpochCache.load(C.LeaderEpochCheckpoint.parse(cache.to_bytes().decode())) == cache


def test_epoch_cache_rules_by_example():
    c = LeaderEpochCache([(1, 0), (3, 10), (5, 30)])
    assert c.end_offset_for(3, 99) == (3, 30)
    assert c.end_offset_for(4, 99) == (3, 30)      # the largest epoch at or below, ending where 5 starts
    assert c.end_offset_for(5, 99) == (5, 99)      # the newest: the log end
    assert c.end_offset_for(0, 99) == (0, 0)       # below the first: the first start
    assert c.end_offset_for(6, 99) == (UNDEFINED_EPOCH, -1)
    assert c.end_offset_for(UNDEFINED_EPOCH, 99) == (UNDEFINED_EPOCH, -1)
    assert c.assign(5, 40) is False                # the same epoch, later: nothing to do
    assert c.assign(5, 25) and c.entries == [(1, 0), (3, 10), (5, 25)]
    assert c.assign(4, 12) and c.entries == [(1, 0), (3, 10), (4, 12)]  # an older epoch truncates the newer
    assert LeaderEpochCache([(3, 10), (5, 30)]).assign(3, 40)
    d = LeaderEpochCache([(3, 10), (5, 30)])
    d.assign(3, 40)
    assert d.entries == [(3, 40)]  # the epoch's own older entry goes too
    with pytest.raises(ValueError):
        c.assign(-1, 3)
    assert c.truncate_from_start(11) == [(1, 0), (3, 10)] and c.entries == [(3, 11), (4, 12)]
    assert c.truncate_from_start(11) == [(3, 11)] and c.entries == [(3, 11), (4, 12)]  # exclusive: kept at 11
    assert c.truncate_from_end(12) == [(4, 12)] and c.entries == [(3, 11)]
    assert c.truncate_from_end(-1) == [] and c.entries == [(3, 11)]


def test_epoch_cache_file_round_trip(tmp_path):
    assert LeaderEpochCache.read(str(tmp_path)) is None
    c = LeaderEpochCache([(0, 0), (2, 17)])
    c.write(str(tmp_path))
    assert (tmp_path / "leader-epoch-checkpoint").read_text() == "0\n2\n0 0\n2 17\n"
    assert LeaderEpochCache.read(str(tmp_path)) == c
    (tmp_path / "leader-epoch-checkpoint").write_text("0\n2\n0 0\n")
    with pytest.raises(KafkaFormatError) as e:
        LeaderEpochCache.read(str(tmp_path))
    assert e.value.problem.file.endswith("leader-epoch-checkpoint")
    # Kafka's loading assigns each line: a line breaking monotonicity drops the ones before it
    assert LeaderEpochCache.load([{"epoch": 0, "startOffset": 0}, {"epoch": 3, "startOffset": 50},
                                  {"epoch": 4, "startOffset": 20}, {"epoch": -1, "startOffset": 60}]).entries \
        == [(0, 0), (4, 20)]


# -- the checkpoint editor --------------------------------------------------------------------
_tp = st.tuples(st.sampled_from(["a", "b", "orders", "t.x_y-z"]), st.integers(0, 5))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.dictionaries(_tp, st.integers(0, 10**12), max_size=8),
       st.dictionaries(_tp, st.one_of(st.none(), st.integers(0, 10**12)), max_size=4))
def test_editor_changes_only_the_entries_asked(tmp_path, table, changes):
    path = str(tmp_path / RECOVERY_POINT)
    with open(path, "w") as f:
        f.write(C.OffsetCheckpoint.build([{"topic": t, "partition": p, "offset": o} for (t, p), o in table.items()]))
    before = os.stat(path)
    wrote = update_offsets(path, changes)
    after = read_offsets(path)
    expect = dict(table)
    for tp, off in changes.items():
        if off is None:
            expect.pop(tp, None)
        else:
            expect[tp] = off
    assert after == expect
    # untouched entries keep their order, changed ones their place, new ones come last
    assert list(after) == [tp for tp in table if tp in expect] + [tp for tp in expect if tp not in table]
    assert wrote == (expect != table)
    if not wrote:
        assert os.stat(path).st_ino == before.st_ino  # nothing rewritten
    assert sorted(os.listdir(tmp_path)) == [RECOVERY_POINT]  # no temp file left
    os.unlink(path)


def test_editor_per_partition(tmp_path):
    d = str(tmp_path)
    partition_offset = lambda d, name, tp: LogDir(d).partition_offset(name, tp)  # noqa: E731 (the log dir's reader)
    assert partition_offset(d, LOG_START_OFFSET, ("t", 0)) is None
    assert set_partition_offset(d, LOG_START_OFFSET, ("t", 0), 5, create=False) is False
    assert not os.path.exists(os.path.join(d, LOG_START_OFFSET))
    assert set_partition_offset(d, LOG_START_OFFSET, ("t", 0), 5)
    assert set_partition_offset(d, LOG_START_OFFSET, ("u", 1), 7)
    assert set_partition_offset(d, LOG_START_OFFSET, ("t", 0), 6)
    assert open(os.path.join(d, LOG_START_OFFSET)).read() == "0\n2\nt 0 6\nu 1 7\n"
    assert partition_offset(d, LOG_START_OFFSET, ("u", 1)) == 7
    assert partition_offset(d, LOG_START_OFFSET, None) is None
    with pytest.raises(ValueError):
        partition_offset(d, "meta.properties", ("t", 0))
    with open(os.path.join(d, LOG_START_OFFSET), "w") as f:
        f.write("0\n3\nt 0 6\n")
    with pytest.raises(KafkaFormatError) as e:
        set_partition_offset(d, LOG_START_OFFSET, ("t", 0), 9)
    assert "expected 3 entries" in e.value.problem.detail
    assert open(os.path.join(d, LOG_START_OFFSET)).read() == "0\n3\nt 0 6\n"  # a malformed file is left as it is
    assert set_partition_offset(d, LOG_START_OFFSET, ("t", 0), 9, unreadable="replace")
    assert read_offsets(os.path.join(d, LOG_START_OFFSET)) == {("t", 0): 9}


# -- the loader -------------------------------------------------------------------------------
def _naive(part, damage="keep"):
    """The walk each command used to write for itself: segment by segment, batch by batch."""
    state, leo, nexts, largest, seen = ProducerState(), 0, [], [], []
    stop = False
    for seg in Partition.scan(part).segments:
        if stop:
            break
        nxt, ts = seg.base_offset, -1
        with open_buffer(seg.log) as buf:
            for b in BatchScanner(buf, file=seg.log, base_offset=seg.base_offset):
                if damage != "keep" and not b.crc_valid():
                    if damage == "skip":
                        continue
                    stop = damage == "stop"
                    break
                state.append(b)
                nxt, ts = b.last_offset + 1, max(ts, b.max_timestamp)
                seen.append(b.base_offset)
        nexts.append(nxt)
        largest.append(ts)
        leo = nxt
    return state.to_snapshot(), leo, nexts, largest, seen


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(0, 10_000), st.sampled_from(["keep", "skip", "stop-segment", "stop"]), st.integers(0, 30))
def test_loader_equals_the_naive_walk(tmp_path_factory, seed, damage, hit):
    part = str(tmp_path_factory.mktemp("p") / "events-0")
    write_partition(part, mixed_batches(seed), segment_bytes=4000, index_interval_bytes=1024)
    lay = layout(part)
    flat = [(seg, b) for seg, bs in lay for b in bs]
    seg, (pos, size, _base, _last) = flat[hit % len(flat)]
    with open(seg, "r+b") as f:  # a CRC mismatch: the batch's last byte (a record's) flipped
        f.seek(pos + size - 1)
        c = f.read(1)
        f.seek(pos + size - 1)
        f.write(bytes([c[0] ^ 0x55]))
    snap, leo, nexts, largest, seen = _naive(part, damage)
    got = []
    log = Partition.scan(part)
    for s, b, _done in log.batches(damage=damage):
        got.append(b.base_offset)
    assert got == seen
    assert log.state.to_snapshot() == snap
    assert [s.next_offset for s in log.loaded] == nexts
    assert [s.max_timestamp for s in log.loaded] == largest
    assert log.log_end_offset == leo
    assert log.stopped == (damage == "stop")
    damaged = [s for s in log.loaded if s.damaged is not None]
    assert (len(damaged) == 1 and damaged[0].log == seg) == (damage != "keep")


def test_loader_facts(tmp_path):
    part = make_partition(tmp_path / "events-0")
    log = Partition.scan(part).load()
    lay = layout(part)
    assert [s.base_offset for s in log.loaded] == [offset_from_name(p) for p, _ in lay]
    assert log.log_end_offset == lay[-1][1][-1][3] + 1
    assert [s.size for s in log.loaded] == [os.path.getsize(p) for p, _ in lay]
    assert all(s.valid_bytes == s.size and s.stop is None for s in log.loaded)
    # the batches' epochs are the writer's leader-epoch-checkpoint
    assert log.batch_epochs == LeaderEpochCache.read(part) == log.leader_epochs()
    assert log.leader_epoch == log.batch_epochs.latest_epoch
    assert log.last_stable_offset == log.log_end_offset  # every transaction of the corpus is ended
    # the log start: the first base, or the checkpoint's entry when it lies within the log
    assert log.log_start_offset == 0
    set_partition_offset(str(tmp_path), LOG_START_OFFSET, ("events", 0), 17)
    assert log.log_start_offset == 17 and log.checkpointed_log_start() == 17
    set_partition_offset(str(tmp_path), LOG_START_OFFSET, ("events", 0), log.log_end_offset + 1)
    assert log.log_start_offset == 0
    with open(tmp_path / LOG_START_OFFSET, "w") as f:
        f.write("garbage")
    assert log.log_start_offset == 0
    # a damaged leader-epoch-checkpoint: the batches' epochs serve
    with open(os.path.join(part, "leader-epoch-checkpoint"), "w") as f:
        f.write("0\n5\n")
    assert log.leader_epochs() == log.batch_epochs
    # one segment on its own, as recovery replays a flushed one
    first = lay[0][0]
    state = ProducerState()
    seg = replay_segment(first, 0, state)
    assert seg.next_offset == log.loaded[0].next_offset and seg.batches == len(lay[0][1])
    # each walk starts afresh: a second one gives the same facts, not twice the producers' batches
    before = (log.state.to_snapshot(), [(s.base_offset, s.next_offset) for s in log.loaded])
    assert (log.load().state.to_snapshot(), [(s.base_offset, s.next_offset) for s in log.loaded]) == before
    with pytest.raises(ValueError):
        next(log.walk(damage="ignore"))


def test_loader_empty_active_segment_ends_the_log_at_its_base(tmp_path):
    """LogSegment.readNextOffset: an empty segment's next offset is its base, so an empty active
    segment (rolled by retention) puts the log end there."""
    part = make_partition(tmp_path / "events-0")
    leo = Partition.scan(part).load().log_end_offset
    open(os.path.join(part, file_name(leo + 10, LOG)), "wb").close()
    log = Partition.scan(part).load()
    assert log.log_end_offset == leo + 10 and log.loaded[-1].batches == 0


def test_no_module_outside_the_broker_walks_a_partition_itself():
    """The commands walk partitions through Partition.walk (the broker's modules are another change's)."""
    broker = {"replay.py", "server.py", "protocol.py", "group_coordinator.py", "replay_admin.py"}
    modules = {f: os.path.join(root, f) for root, _dirs, files in os.walk(PACKAGE) for f in files if f.endswith(".py")}
    for name in ("retention.py", "groups.py", "diff.py", "analyzer.py"):
        with open(modules[name]) as f:
            text = f.read()
        assert "BatchScanner(" not in text and "C.OffsetCheckpoint" not in text, name
    for name in sorted(modules):
        if name in broker or name == "checkpoint_file.py":
            continue
        with open(modules[name]) as f:
            text = f.read()
        # checkpoint entries are edited only through checkpoint_file
        assert not re.search(r"OffsetCheckpoint\.build\(", text), name


def test_segment_files_are_read_only_through_segment():
    """Outside log/, a segment's file is read through Segment (walk, batches, read, translate_offset,
    ...): no module opens a walk over a path itself. BatchScanner stays only where the bytes are no
    segment file of a partition: object-store buffers (the Spark source), the positions an index
    names in a mapped file (dump's index check) and the fuzz harness; the harness's sample builder
    reads the files it has just written."""
    scanners = {"storage.py", "spark_source.py", "dump.py", "fuzz.py"}
    for root, _dirs, files in os.walk(PACKAGE):
        if os.path.relpath(root, PACKAGE).split(os.sep)[0] == "log":   # log/ and its packages (log/remote/)
            continue
        for name in files:
            if not name.endswith(".py") or name == "damaged_sample.py":
                continue
            with open(os.path.join(root, name)) as f:
                text = f.read()
            assert "open_walk(" not in text and "iter_batches(" not in text, name
            assert name in scanners or "BatchScanner(" not in text, name
