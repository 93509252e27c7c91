"""`kfx compact`: a plain-dict reference model agrees with the cleaner on what survives."""
import json
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkaforensics.records import walks
from kafkaforensics import fsutil
from kafkaforensics.records.batch import Record
from kafkaforensics.records.builder import BatchProducer, build_v2, control_record_key, end_txn_marker_value
from kafkaforensics.repair.cleaner import CompactOptions, compact
from kafkaforensics.repair.recovery import recover
from kafkaforensics.log.segment import iter_batches
from kafkaforensics.inspect.verify import verify
from kafkaforensics.log.writer import write_partition
from tests.conftest import COMPACTED

T0 = 1_700_000_000_000
RET = 86_400_000


# ------------------------------------------------------------------ log generation ----
@st.composite
def logs(draw):
    """A list of 'ops' turned into batches: plain batches, transactions (commit/abort/open)."""
    ops = draw(st.lists(st.one_of(
        st.tuples(st.just("plain"), st.lists(st.tuples(st.sampled_from(["a", "b", "c", "d", None]),
                                                        st.sampled_from(["v1", "v2", None])), min_size=1, max_size=4),
                  st.integers(0, 4), st.sampled_from([-1, 1, 2])),
        st.tuples(st.just("txn"), st.lists(st.tuples(st.sampled_from(["a", "b", "e"]), st.sampled_from(["t1", None])),
                                           min_size=1, max_size=3),
                  st.sampled_from(["commit", "abort"]), st.integers(10, 12)),
    ), min_size=3, max_size=25))
    open_txn = draw(st.booleans())
    return ops, open_txn


def build(ops, open_txn):
    batches, off, ts = [], 0, T0
    seqs = {}
    for op in ops:
        if op[0] == "plain":
            _, recs, codec, pid = op
            rs = []
            for k, v in recs:
                rs.append(Record(off, ts, None if k is None else k.encode(), None if v is None else v.encode(),
                                 [("h", b"x")] if v == "v2" else []))
                off += 1
                ts += 1000
            seq = seqs.get(pid, 0)
            batches.append(build_v2(rs, base_offset=rs[0].offset, codec=codec,
                                    producer=BatchProducer(producer_id=pid, producer_epoch=0 if pid >= 0 else -1, base_sequence=seq if pid >= 0 else -1)))
            seqs[pid] = seq + len(rs)
        else:
            _, recs, outcome, pid = op
            rs = []
            for k, v in recs:
                rs.append(Record(off, ts, k.encode(), None if v is None else v.encode(), []))
                off += 1
                ts += 1000
            batches.append(build_v2(rs, base_offset=rs[0].offset, transactional=True,
                                    producer=BatchProducer(producer_id=pid, producer_epoch=0, base_sequence=seqs.get(pid, 0))))
            seqs[pid] = seqs.get(pid, 0) + len(rs)
            m = [Record(off, ts, control_record_key(0 if outcome == "abort" else 1), end_txn_marker_value(1))]
            batches.append(build_v2(m, base_offset=off, transactional=True, control=True,
                                    producer=BatchProducer(producer_id=pid, producer_epoch=0)))
            off += 1
            ts += 1000
    if open_txn:  # a hanging transaction pins the last stable offset
        rs = [Record(off, ts, b"z", b"open", [])]
        batches.append(build_v2(rs, base_offset=off, transactional=True,
                                producer=BatchProducer(producer_id=99, producer_epoch=0, base_sequence=0)))
        off += 1
        ts += 1000
    for j in range(3):  # a tail that becomes the active segment
        batches.append(build_v2([Record(off, ts, b"tail", b"t%d" % j, [])], base_offset=off))
        off += 1
        ts += 1000
    return batches


# ------------------------------------------------------------------ the reference model ----
def model(part_dir, now, first_dirty, horizons, include_active=False, min_lag=0):
    """What survives, computed with a dict over all records -- no code shared with the cleaner."""
    segs = []
    data = []          # (offset, key, value, ts, headers, txn_id or None)
    txn_of = {}        # pid -> current txn id
    outcome = {}       # txn id -> "abort" | "commit"
    txn_first = {}
    n_txn = 0
    for f in sorted(os.listdir(part_dir)):
        if not f.endswith(".log"):
            continue
        seg_max, seg_next = -1, int(f[:20])
        for b in iter_batches(os.path.join(part_dir, f)):
            seg_max = max(seg_max, b.max_timestamp)
            seg_next = b.last_offset + 1
            if b.is_control:
                tid = txn_of.pop(b.producer_id, None)
                if tid is not None:
                    outcome[tid] = b.records()[0].control()["type"].lower()
                continue
            tid = None
            if b.is_transactional:
                if b.producer_id not in txn_of:
                    n_txn += 1
                    txn_of[b.producer_id] = n_txn
                    txn_first[n_txn] = b.base_offset
                tid = txn_of[b.producer_id]
            for r in b.records():
                data.append((r.offset, r.key, r.value, r.timestamp, list(r.headers), tid))
        if seg_max < 0:  # an empty segment's largest timestamp is its file's modification time
            seg_max = int(os.stat(os.path.join(part_dir, f)).st_mtime * 1000)
        segs.append((int(f[:20]), seg_next, seg_max))
    # a segment spans [its base, the next segment's base): an empty one still covers that range
    segs = [(b, segs[i + 1][0] if i + 1 < len(segs) else n, m) for i, (b, n, m) in enumerate(segs)]
    leo = segs[-1][1]
    open_firsts = [txn_first[t] for t in txn_of.values()]
    bound = min(open_firsts) if open_firsts else leo
    if not include_active:
        bound = min(bound, segs[-1][0])
    if min_lag:
        for base, nxt, mx in (segs if include_active else segs[:-1]):
            if nxt > first_dirty and mx > now - min_lag:
                bound = min(bound, base)
                break
    bound = max(bound, first_dirty)
    end = next((b for b, n, _ in segs if b <= bound < n), bound) if bound < leo else leo
    latest = {}
    for off, k, v, ts, h, tid in data:
        if first_dirty <= off < end and k is not None and outcome.get(tid) != "abort":
            latest[k] = off
    out = []
    for off, k, v, ts, h, tid in data:
        if off >= end:
            out.append((off, k, v, ts, h))
        elif outcome.get(tid) == "abort" or k is None or off < latest.get(k, -1):
            continue
        elif v is not None:
            out.append((off, k, v, ts, h))
        else:
            hz = horizons.get(off)
            if hz is None:
                horizons[off] = now + RET
                out.append((off, k, v, ts, h))
            elif now < hz:
                out.append((off, k, v, ts, h))
    return out, end


def survivors(part_dir):
    return [(r.offset, r.key, r.value, r.timestamp, list(r.headers))
            for f in sorted(os.listdir(part_dir)) if f.endswith(".log")
            for b in iter_batches(os.path.join(part_dir, f)) if not b.is_control for r in b.records()]


SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@SETTINGS
@given(logs(), st.sampled_from([0, RET // 2, RET + 1, 3 * RET]), st.booleans(), st.sampled_from([0, 20_000]))
def test_compaction_agrees_with_the_reference_model(tmp_path_factory, log, later, include_active, min_lag):
    d = tmp_path_factory.mktemp("c") / "t-0"
    part = write_partition(str(d), build(*log), segment_bytes=400, index_interval_bytes=100)
    now1 = T0 + 10**6
    horizons = {}
    want, end = model(part, now1, 0, horizons, include_active, min_lag)
    rep = compact(part, CompactOptions(now=now1, include_active=include_active, min_compaction_lag_ms=min_lag,
                                       index_interval_bytes=100, segment_bytes=400))
    assert survivors(part) == want
    v = verify([part])
    assert v.ok, v.problems
    # a second cleaning later, from the log start: tombstones past their horizon go
    now2 = now1 + later
    want2, _ = model(part, now2, 0, horizons, include_active, min_lag)
    compact(part, CompactOptions(now=now2, include_active=include_active, ignore_checkpoint=True,
                                 min_compaction_lag_ms=min_lag, index_interval_bytes=100, segment_bytes=400))
    assert survivors(part) == want2
    assert verify([part]).ok
    if rep.rounds:
        assert rep.end_offset == end


def _sample(tmp_path, name="s-0"):
    ops = [("plain", [("a", "v1"), ("b", "v1")], 0, -1), ("txn", [("a", "t1")], "abort", 10),
           ("plain", [("a", "v2"), (None, "v1")], 1, 1), ("txn", [("c", "t1")], "commit", 11),
           ("plain", [("b", None), ("d", "v1")], 3, -1), ("plain", [("a", "v1")], 4, 2)]
    return write_partition(str(tmp_path / name), build(ops, False), segment_bytes=300, index_interval_bytes=100)


def test_offsets_timestamps_headers_and_batch_metadata_are_preserved(tmp_path):
    part = _sample(tmp_path)
    before = {r[0]: r for r in survivors(part)}
    before_batches = {b.base_offset: b for f in sorted(os.listdir(part)) if f.endswith(".log")
                      for b in iter_batches(os.path.join(part, f))}
    compact(part, CompactOptions(now=T0 + 10**6, index_interval_bytes=100))
    for r in survivors(part):
        assert before[r[0]] == r
    for f in sorted(os.listdir(part)):
        if f.endswith(".log"):
            for b in iter_batches(os.path.join(part, f)):
                o = before_batches[b.base_offset]
                assert (b.last_offset, b.producer_id, b.producer_epoch, b.base_sequence,
                        b.is_transactional, b.is_control) == \
                    (o.last_offset, o.producer_id, o.producer_epoch, o.base_sequence,
                     o.is_transactional, o.is_control)
                # an emptied batch is a bare header (Kafka writes it uncompressed); others keep their codec
                assert b.compression == (o.compression if b.count else 0)


def test_out_leaves_input_untouched_and_dry_run_changes_nothing(tmp_path, kfx):
    from tests.corruption import snapshot_files
    part = _sample(tmp_path)
    files = snapshot_files(part)
    r = kfx("compact", *COMPACTED, part, "--now", T0 + 10**6, "--out", tmp_path / "out-0", "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert snapshot_files(part) == files
    assert out["records"]["after"] < out["records"]["before"]
    assert set(out) >= {"records", "bytes", "tombstones", "abortedRecordsRemoved", "markers", "dirtyRatio"}
    assert verify([str(tmp_path / "out-0")]).ok
    r = kfx("compact", *COMPACTED, part, "--now", T0 + 10**6, "--dry-run", "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["records"] == out["records"]
    assert snapshot_files(part) == files
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".kfx-compact")]


def test_cleaner_checkpoint_is_written_and_honoured(tmp_path):
    part = _sample(tmp_path)
    rep = compact(part, CompactOptions(now=T0 + 10**6, index_interval_bytes=100))
    ck = open(tmp_path / "cleaner-offset-checkpoint").read().split("\n")
    assert ck[0] == "0" and ck[2] == f"s 0 {rep.end_offset}"
    again = compact(part, CompactOptions(now=T0 + 10**6, index_interval_bytes=100))
    assert again.rounds == 0 and again.first_dirty_offset == rep.end_offset


def test_small_offset_map_cleans_in_several_rounds(tmp_path):
    ops = [("plain", [(f"k{(4 * i + j) % 70}", "v1") for j in range(4)], 0, -1) for i in range(30)]
    part = write_partition(str(tmp_path / "r-0"), build(ops, False), segment_bytes=300, index_interval_bytes=100)
    want, _ = model(part, T0 + 10**6, 0, {})
    rep = compact(part, CompactOptions(now=T0 + 10**6, dedupe_buffer_bytes=1024, index_interval_bytes=100))
    assert rep.rounds > 1
    assert survivors(part) == want


def test_refuses_leftovers(tmp_path, kfx):
    part = _sample(tmp_path)
    open(os.path.join(part, "00000000000000000000.log.swap"), "wb").close()
    r = kfx("compact", *COMPACTED, part)
    assert r.exit_code == 2 and "kfx recover" in r.output


class Crash(Exception):
    pass


def test_crash_at_every_step_of_the_swap_then_recover(tmp_path):
    ref = _sample(tmp_path, "ref-0")
    compact(ref, CompactOptions(now=T0 + 10**6, index_interval_bytes=100))
    kept = set(map(repr, survivors(ref)))
    steps = 0
    while True:
        part = _sample(tmp_path / f"run{steps}", "p-0") if os.makedirs(tmp_path / f"run{steps}") is None else None
        original = set(map(repr, survivors(part)))
        calls = {"n": 0}

        def hook(name, limit=steps):
            calls["n"] += 1
            if calls["n"] > limit:
                raise Crash(name)
        fsutil.FAULT_HOOK = hook
        try:
            compact(part, CompactOptions(now=T0 + 10**6, index_interval_bytes=100))
            finished = True
        except Crash:
            finished = False
        finally:
            fsutil.FAULT_HOOK = None
        for n in os.listdir(part):  # a crashed run leaves no temp files behind a broker would trip on
            assert not n.endswith(".kfx-tmp")
        recover(part, index_interval_bytes=100, full=True)
        assert verify([part]).ok
        now = set(map(repr, survivors(part)))
        assert kept <= now <= original, f"crash after {steps} steps"
        if finished:
            break
        steps += 1
    assert steps >= 5


@SETTINGS
@given(logs(), st.data())
def test_compaction_over_runs_equals_batch_by_batch(tmp_path_factory, monkeypatch, log, data):
    """Both passes a run of batches at a time (columnar decoder, keys hashed, put and looked up
    together) -- in runs so small or large that they end anywhere, with offset maps so small that
    rounds end inside runs, and now and then a damaged record -- leave exactly the partition, the
    report or the error that the batch-by-batch, record-by-record cleaner leaves."""
    import shutil

    from kafkaforensics.repair import cleaner

    from kafkaforensics.log import record_columns

    part = write_partition(str(tmp_path_factory.mktemp("src") / "t-0"), build(*log), segment_bytes=400,
                           index_interval_bytes=100)
    if data.draw(st.booleans()):  # one byte of some batch's records changed
        f = os.path.join(part, data.draw(st.sampled_from(sorted(n for n in os.listdir(part) if n.endswith(".log")))))
        b = data.draw(st.sampled_from([b for b in iter_batches(f) if b.size > 61] or [None]))
        if b is not None:
            at = b.position + 61 + data.draw(st.integers(0, b.size - 62))
            with open(f, "r+b") as fh:
                fh.seek(at)
                old = fh.read(1)[0]
                fh.seek(at)
                fh.write(bytes([old ^ data.draw(st.integers(1, 255))]))
    monkeypatch.setattr(record_columns, "CHUNK_BYTES", data.draw(st.sampled_from([1, 150, 1000, 1 << 22])))
    later = data.draw(st.sampled_from([0, RET + 1]))
    # now and then a cleaner checkpoint already there, anywhere (inside a segment too): the map
    # then takes only the records from it on
    first_dirty = data.draw(st.one_of(st.none(), st.integers(0, max(b.last_offset for f in os.listdir(part)
                                                                    if f.endswith(".log")
                                                                    for b in iter_batches(os.path.join(part, f))))))
    kw = dict(include_active=data.draw(st.booleans()), index_interval_bytes=100, segment_bytes=400,
              dedupe_buffer_bytes=data.draw(st.sampled_from([1 << 20, 24 * 20, 24 * 40])))
    outcomes = []
    for runs in (True, False):
        d = tmp_path_factory.mktemp("dst") / "t-0"
        shutil.copytree(part, d)
        with walks.use_speedups(runs):
            if first_dirty is not None:
                cleaner._write_cleaner_checkpoint(str(d), ("t", 0), first_dirty)
            reps = []
            for now in (T0 + 10**6, T0 + 10**6 + later):  # a second cleaning: horizons stamped by the first
                try:
                    rep = compact(str(d), CompactOptions(now=now, ignore_checkpoint=now > T0 + 10**6, **kw)).to_json()
                    rep.pop("partition")
                    rep.pop("backup")  # a new timestamped dir each run
                    for p in rep["problems"]:
                        p["file"] = p["file"].replace(str(d), "<part>")
                except Exception as e:  # the same error, at the same place, either way
                    rep = (type(e).__name__, str(e).replace(str(d), "<part>"))
                reps.append(rep)
            files = {n: (d / n).read_bytes() for n in sorted(os.listdir(d)) if (d / n).is_file()}
            outcomes.append((reps, files))
    assert outcomes[0] == outcomes[1]


def test_the_survey_rows_are_summary_rows_of_the_partitions_segments(tmp_path):
    """The cleaner's survey is made of the one summary row (issue 52 item 2: ``SegmentSummary``, no
    cleaner-only segment class): each row carries its file-backed ``Segment``, ends where the next
    begins, and the index sizes and modification time the grouping and the legacy horizon use are the
    files'."""
    from kafkaforensics.log.partition import Partition
    from kafkaforensics.log.segment import INDEX, TIMEINDEX, SegmentSummary
    from kafkaforensics.repair import cleaner
    from tests.corruption import make_partition
    p = str(tmp_path / "events-0")
    make_partition(p, seed=3, n=60)
    pd = Partition.scan(p)
    assert len(pd.segments) > 2
    rows, _state, _aborted, _active, records = cleaner._survey(pd, CompactOptions(), T0)
    assert all(isinstance(r, SegmentSummary) for r in rows)
    assert [r.segment.log for r in rows] == [s.log for s in pd.segments]
    assert [r.next_offset for r in rows[:-1]] == [s.base_offset for s in pd.segments[1:]]
    assert rows[-1].next_offset == pd.load().log_end_offset and sum(r.records for r in rows) == records
    for r in rows:
        assert cleaner._index_bytes(r, INDEX) == os.path.getsize(r.segment.path(INDEX))
        assert cleaner._index_bytes(r, TIMEINDEX) == os.path.getsize(r.segment.path(TIMEINDEX))
        assert r.segment.last_modified() == os.stat(r.segment.log).st_mtime
