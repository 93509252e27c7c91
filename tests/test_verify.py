"""`kfx verify`: each kind of damage is found where it was planted; clean data gives no problem."""
import json
import os
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkaforensics.records import walks
from kafkaforensics.inspect.verify import verify
from tests.conftest import SAMPLE

SEG0 = "orders-0/00000000000000000000"
SEG1 = "orders-0/00000000000000000225"


def kinds(rep):
    return sorted({p.kind for p in rep.problems})


def test_clean_sample_is_clean(kfx):
    rep = verify([SAMPLE])
    assert rep.ok, rep.problems
    assert {p["partition"] for p in rep.partitions} == {"orders-0", "clients-0", "legacy-0"}
    r = kfx("verify", SAMPLE, "--json")
    assert r.exit_code == 0
    out = json.loads(r.stdout)
    assert out["ok"] is True and out["problems"] == []


def _path(sample, rel):
    return os.path.join(sample, rel)


def _patch(path, pos, data):
    with open(path, "r+b") as f:
        f.seek(pos)
        f.write(data)


def _second_batch_position(log):
    from kafkaforensics.log.segment import iter_batches
    return [b.position for b in iter_batches(log)][1]


def test_flipped_byte_in_middle_batch(sample, kfx):
    log = _path(sample, SEG0 + ".log")
    pos = _second_batch_position(log)
    _patch(log, pos + 70, b"\xff")
    rep = verify([sample])
    (p,) = rep.problems
    assert p.kind == "crc-mismatch" and p.position == pos and p.file == log and p.offset == 11
    r = kfx("verify", sample, "--json")
    assert r.exit_code == 1
    out = json.loads(r.stdout)
    assert out["ok"] is False
    assert set(out["problems"][0]) == {"file", "position", "offset", "kind", "detail", "remedy"}


def test_torn_last_batch(sample):
    log = _path(sample, SEG1 + ".log")
    size = os.path.getsize(log)
    os.truncate(log, size - 7)
    rep = verify([sample])
    assert "truncated-batch" in kinds(rep)
    p = next(p for p in rep.problems if p.kind == "truncated-batch")
    assert p.file == log and p.position < size - 7


def test_zeroed_tail(sample):
    log = _path(sample, SEG1 + ".log")
    size = os.path.getsize(log)
    with open(log, "ab") as f:
        f.write(b"\0" * 8192)
    rep = verify([sample])
    p = next(p for p in rep.problems if p.kind == "zeroed-tail")
    assert p.position == size


def test_garbage_appended(sample):
    log = _path(sample, SEG1 + ".log")
    size = os.path.getsize(log)
    with open(log, "ab") as f:
        f.write(os.urandom(20) + b"\x7f" * 100)
    rep = verify([sample])
    assert any(p.position == size and p.file == log for p in rep.problems)


def test_bad_size_field(sample):
    log = _path(sample, SEG0 + ".log")
    pos = _second_batch_position(log)
    _patch(log, pos + 8, (5).to_bytes(4, "big"))
    rep = verify([sample])
    p = next(p for p in rep.problems if p.kind == "bad-size")
    assert p.position == pos and p.offset == 11


def test_truncated_index_and_stale_index(sample):
    idx = _path(sample, SEG0 + ".index")
    data = open(idx, "rb").read()
    with open(idx, "wb") as f:
        f.write(data[:-3])
    assert "index-size" in kinds(verify([sample]))
    # a stale index pointing past the end of a truncated log
    with open(idx, "wb") as f:
        f.write(data)
    log = _path(sample, SEG0 + ".log")
    from kafkaforensics.log.segment import iter_batches
    cut = [b.position for b in iter_batches(log)][5]
    os.truncate(log, cut)
    rep = verify([sample])
    assert "index-past-end" in kinds(rep)
    assert all(p.position >= cut for p in rep.problems if p.kind == "index-past-end")


def test_zero_tail_in_rolled_index_is_a_problem_but_not_in_active(sample):
    with open(_path(sample, SEG0 + ".index"), "ab") as f:
        f.write(b"\0" * 80)
    rep = verify([sample])
    assert "index-zero-tail" in kinds(rep)
    sample2 = sample + "-2"
    import shutil
    shutil.copytree(SAMPLE, sample2)
    with open(os.path.join(sample2, SEG1 + ".index"), "ab") as f:
        f.write(b"\0" * 80)
    with open(os.path.join(sample2, SEG1 + ".timeindex"), "ab") as f:
        f.write(b"\0" * 120)
    rep = verify([sample2])
    assert rep.ok, rep.problems
    assert {n.kind for n in rep.notes} == {"preallocated-index"}


def test_timeindex_mismatch(sample):
    t = _path(sample, SEG0 + ".timeindex")
    _patch(t, 0, (1).to_bytes(8, "big"))
    assert "timeindex-mismatch" in kinds(verify([sample]))


def test_txnindex_missing_and_extra(sample):
    t = _path(sample, SEG1 + ".txnindex")
    data = open(t, "rb").read()
    os.unlink(t)
    assert kinds(verify([sample])) == ["txnindex-missing"]
    with open(_path(sample, SEG0 + ".txnindex"), "wb") as f:
        f.write(data)
    assert "txnindex-extra" in kinds(verify([sample]))


@pytest.mark.parametrize("suffix", [".log.swap", ".log.cleaned", ".log.deleted", ".index.deleted"])
def test_leftover_files(sample, suffix):
    src = _path(sample, SEG0 + ".log")
    import shutil
    shutil.copy(src, _path(sample, "orders-0/00000000000000000500" + suffix))
    rep = verify([sample])
    assert kinds(rep) == ["leftover-file"]


def test_orphan_index(sample, kfx):
    """An index with no .log is what Kafka's LogLoader deletes at load ("Found an orphaned index file"):
    a warning with that remedy, never a problem -- verify exits 0 (issue 50: it was an error, exit 1)."""
    import shutil
    for suffix in (".index", ".timeindex"):
        shutil.copy(_path(sample, SEG0 + suffix), _path(sample, "orders-0/00000000000000000999" + suffix))
    rep = verify([sample])
    assert kinds(rep) == [] and rep.ok
    assert [(os.path.basename(w.file), w.kind) for w in rep.warnings] == \
        [("00000000000000000999.index", "orphan-index"), ("00000000000000000999.timeindex", "orphan-index")]
    r = kfx("verify", sample, "--json")
    assert r.exit_code == 0
    (w, _) = [w for w in json.loads(r.stdout)["warnings"] if w["kind"] == "orphan-index"]
    assert "deletes it" in w["detail"] and w["remedy"].startswith("nothing needed")
    r = kfx("analyze", sample, "--json")  # (its exit code is the sample's own warnings')
    assert {f["severity"] for f in json.loads(r.stdout)["findings"] if f["kind"] == "orphan-index"} == {"warning"}


def test_checkpoints_beyond_log_end(sample):
    with open(os.path.join(sample, "recovery-point-offset-checkpoint"), "w") as f:
        f.write("0\n1\norders 0 9999\n")
    with open(_path(sample, "orders-0/leader-epoch-checkpoint"), "w") as f:
        f.write("0\n2\n0 0\n1 5000\n")
    rep = verify([sample])
    assert kinds(rep) == ["checkpoint-beyond-log-end"]
    # Kafka drops leader-epoch entries past the log end when it loads the log: a warning
    assert sorted({p.kind for p in rep.warnings}) == ["epoch-beyond-log-end"]


def test_corrupt_snapshot_and_snapshot_beyond_end(sample):
    snap = _path(sample, "orders-0/00000000000000000404.snapshot")
    _patch(snap, 20, b"\x01\x02")
    import shutil
    shutil.copy(_path(sample, "orders-0/00000000000000000225.snapshot"), _path(sample, "orders-0/00000000000000009000.snapshot"))
    rep = verify([sample])
    assert kinds(rep) == ["snapshot", "snapshot-beyond-log-end"]


def test_single_files_and_usage_errors(kfx, tmp_path):
    assert kfx("verify", os.path.join(SAMPLE, SEG0 + ".log")).exit_code == 0
    assert kfx("verify", os.path.join(SAMPLE, SEG0 + ".index")).exit_code == 0
    assert kfx("verify", os.path.join(SAMPLE, "orders-0", "leader-epoch-checkpoint")).exit_code == 0
    assert kfx("verify", str(tmp_path / "nope")).exit_code == 2
    r = kfx("verify", SAMPLE)
    assert r.exit_code == 0 and "OK" in r.stdout and "orders-0" in r.stdout


def test_segment_overlap(sample):
    import shutil
    # a copy of segment 0 named as if it started at 100: overlapping offsets
    shutil.copy(_path(sample, SEG0 + ".log"), _path(sample, "orders-0/00000000000000000100.log"))
    rep = verify([sample])
    assert "segment-overlap" in kinds(rep) or "offset-before-segment-base" in kinds(rep)


def test_index_entry_pointing_past_its_offset(sample):
    """A lookup would start after the offset it is asked for: the entry is wrong."""
    from kafkaforensics.log.segment import iter_batches
    log = _path(sample, SEG0 + ".log")
    later = [b.position for b in iter_batches(log)][-2]
    idx = _path(sample, SEG0 + ".index")
    _patch(idx, 4, later.to_bytes(4, "big"))
    assert "index-mismatch" in kinds(verify([sample]))


# ---------------------------------------------------------------- runs == batch by batch ----
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(data=st.data())
def test_verify_over_header_runs_equals_batch_by_batch(tmp_path_factory, monkeypatch, data):
    """Whatever the damage (bytes of logs and indexes, header fields, cuts), verify over header
    runs -- in small windows and short runs, so that batches straddle windows and runs end
    anywhere, their copies read ahead or not -- reports exactly what the batch-by-batch walk reports."""
    from kafkaforensics.log import segment as seg_mod
    from kafkaforensics.inspect import verify as verify_mod
    from tests.corruption import damaged_partition

    part = str(tmp_path_factory.mktemp("runs") / "t-0")
    damaged_partition(part, data)
    from kafkaforensics.log import read_ahead
    monkeypatch.setattr(seg_mod, "RUN_WINDOW", data.draw(st.sampled_from([128, 700, 1 << 20])))
    idle = data.draw(st.booleans())  # the copies read ahead on a second thread, or by the walk itself
    monkeypatch.setattr(read_ahead, "idle_core", lambda: idle)
    monkeypatch.setattr(seg_mod, "RUN_BYTES", data.draw(st.sampled_from([100, 2000, 16 << 20])))
    limit = data.draw(st.sampled_from([None, None, 1000]))
    monkeypatch.setattr(verify_mod, "SMALL_SEGMENT_BYTES", -1)  # every segment over runs
    runs = verify([part], max_batch_bytes=limit).to_json()
    with walks.use_speedups(False):  # the reference: batch by batch
        assert verify([part], max_batch_bytes=limit).to_json() == runs


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(data=st.data())
def test_verify_of_small_segments_equals_runs(tmp_path_factory, monkeypatch, data):
    """A small segment is walked batch by batch, a large one in runs of header tuples: whatever the
    damage, the report is exactly the same either way, for a partition and for each file alone."""
    from kafkaforensics.inspect import verify as verify_mod
    from tests.corruption import damaged_partition

    part = str(tmp_path_factory.mktemp("small") / "t-0")
    damaged_partition(part, data)
    limit = data.draw(st.sampled_from([None, None, 1000]))
    monkeypatch.setattr(verify_mod, "SMALL_SEGMENT_BYTES", -1)
    runs_report = verify([part], max_batch_bytes=limit).to_json()
    monkeypatch.setattr(verify_mod, "SMALL_SEGMENT_BYTES", 1 << 40)
    assert verify([part], max_batch_bytes=limit).to_json() == runs_report
    for name in sorted(os.listdir(part)):  # each file alone, as `kfx verify FILE` reads it
        if name.endswith((".log", ".index", ".timeindex")):
            f = os.path.join(part, name)
            monkeypatch.setattr(verify_mod, "SMALL_SEGMENT_BYTES", 1 << 40)
            small = verify([f], max_batch_bytes=limit).to_json()
            monkeypatch.setattr(verify_mod, "SMALL_SEGMENT_BYTES", -1)
            assert verify([f], max_batch_bytes=limit).to_json() == small, name


def test_index_lists_equal_numpy_columns():
    """The list reading of an index is the numpy reading: entries up to the zero tail, the tail's length."""
    import random
    from kafkaforensics.log import offset_index, time_index
    rng = random.Random(7)
    for _ in range(500):
        for module in (offset_index, time_index):
            size = module.ENTRY_SIZE
            entries = [bytes(size) if rng.random() < 0.3 else
                       bytes(rng.choice([0, rng.randrange(256)]) for _ in range(size)) for _ in range(rng.randrange(12))]
            data = b"".join(entries) + bytes(rng.randrange(256) for _ in range(rng.randrange(size)))
            base = rng.choice([0, 225, 1 << 40])
            *cols, tail = module.read_columns(data, base)
            got = module.read_lists(data, base, 1 << 16)
            assert [c.tolist() for c in cols] == list(got[:-1]) and tail == got[-1]
            assert module.read_entries(data, base) == (list(zip(*(c.tolist() for c in cols))), tail)
            kept = len(got[0])
            assert module.read_lists(data, base, kept) == got
            assert kept == 0 or module.read_lists(data, base, kept - 1) is None


def test_bytes_that_are_no_batch_header_give_no_offset(tmp_path, kfx):
    """A text file named 00000000000000000000.log: its first 8 bytes ("this is ") read as an offset would
    be 8388070249163485984; its magic byte is none of Kafka's, so verify, dump and analyze report the
    problem at byte 0 with the offset the walk stands at (the segment's base), never that number."""
    part = tmp_path / "notes-0"
    part.mkdir()
    log = part / "00000000000000000000.log"
    log.write_bytes(b"this is not a kafka log, just some text saved under a segment name.\nline two.\n")
    ghost = str(struct.unpack(">q", b"this is ")[0])
    for args in (("verify", part), ("dump", log), ("analyze", part), ("verify", part, "--json"),
                 ("analyze", part, "--json")):
        r = kfx(*args)
        assert r.exit_code == 1, r.output
        assert ghost not in r.output and "no batch header (magic byte 102" in r.output, r.output
    (p,) = json.loads(kfx("verify", part, "--json").stdout)["problems"]
    assert (p["position"], p["offset"], p["kind"]) == (0, 0, "truncated-batch")


def test_one_judge_of_the_dirs_a_broker_refuses(tmp_path, kfx):
    """A `.idea` dir in a log dir: Kafka's LogManager.loadLogs parses every dir's name
    (LocalLog.parseTopicPartitionName) and throws on it, so the broker does not start. verify says so (a
    problem, exit 1) and recover --dry-run names the same dirs, both by partition.refused_dirs; the
    tiered-storage index cache and names Kafka parses (-delete/-future/-stray copies) are no problem."""
    from kafkaforensics.log.partition import kafka_refuses_dir_name, refused_dirs
    from tests.conftest import private_copy
    logdir = private_copy(tmp_path, SAMPLE, "logdir")
    for name in (".idea", "notes-x", "t.abc-delete", "t-99999999999", "remote-log-index-cache", "orders-0.0a1b-delete",
                 "orders-3.zz-future"):
        os.mkdir(os.path.join(logdir, name))
    refused = [".idea", "notes-x", "t-99999999999", "t.abc-delete"]
    assert [os.path.basename(d) for d, _, _ in refused_dirs(logdir)] == refused
    assert not kafka_refuses_dir_name("t-+5") and kafka_refuses_dir_name("t-") and kafka_refuses_dir_name("-5")
    r = kfx("verify", logdir, "--json")
    assert r.exit_code == 1
    got = [p for p in json.loads(r.stdout)["problems"] if p["kind"] == "not-a-partition-dir"]
    assert [os.path.basename(p["file"]) for p in got] == refused and "refuses to start" in got[0]["detail"]
    assert "out of the log dir" in got[0]["remedy"]
    r = kfx("recover", "--dry-run", logdir)
    noted = [line.strip().removeprefix("note: ").split(":")[0] for line in r.output.splitlines() if "refuses to start" in line]
    assert noted == refused
    for name in refused:
        os.rmdir(os.path.join(logdir, name))
    r = kfx("verify", logdir, "--json")
    assert r.exit_code == 0 and "not-a-partition-dir" not in r.stdout


@pytest.mark.parametrize("damage", ["torn-tail", "length-field"])
def test_the_root_cause_comes_first_with_what_it_causes_grouped_under_it(tmp_path, kfx, damage):
    """A torn tail (the segment cut in half), or one batch's length field grown by 700 bytes (its CRC fails and
    the walk then lands in the middle of a batch): one problem, the root cause, first, with the remedy of
    recovery; the index problems past it (and the later damage the corrupt length makes) grouped in its
    ``caused``, in verify's and analyze's text and JSON -- no `kfx reindex` remedy for them."""
    from tests.conftest import private_copy
    logdir = private_copy(tmp_path, SAMPLE, "logdir")
    seg = _path(logdir, SEG0 + ".log")
    data = bytearray(open(seg, "rb").read())
    if damage == "torn-tail":
        data, root = data[:len(data) // 2], ("truncated-batch", 6182)
    else:
        pos = 0
        for _ in range(5):
            pos += 12 + struct.unpack_from(">i", data, pos + 8)[0]
        struct.pack_into(">i", data, pos + 8, struct.unpack_from(">i", data, pos + 8)[0] + 700)
        root = ("crc-mismatch", pos)
    open(seg, "wb").write(bytes(data))
    r = kfx("verify", logdir, "--json")
    assert r.exit_code == 1
    (p,) = json.loads(r.stdout)["problems"]
    assert (p["kind"], p["position"]) == root and p["remedy"].startswith("kfx recover --dry-run")
    kinds = {c["kind"] for c in p["caused"]}
    assert len(p["caused"]) >= 12 and {"index-past-end", "timeindex-mismatch"} <= kinds
    assert all(c["position"] is None or c["position"] > root[1] for c in p["caused"])
    r = kfx("verify", logdir)
    assert "kfx reindex" not in r.output and f"caused by it: {len(p['caused'])} problem(s)" in r.output
    assert f"1 problem(s) (and {len(p['caused'])} they cause, grouped under them)" in r.output
    r = kfx("analyze", logdir, "--json")
    errors = [f for f in json.loads(r.stdout)["findings"] if f["severity"] == "error"]
    assert [(f["kind"], f["position"], len(f["caused"])) for f in errors] == [(*root, len(p["caused"]))]
    assert "kfx reindex" not in kfx("analyze", logdir).output


def test_the_walk_check_reads_the_segment_it_is_given(tmp_path):
    """verify's walk of a segment is the given ``Segment``'s walk (issue 52 item 2: no segment class of
    verify's own): the summary row names that segment, and a segment whose ``.log`` is a file of
    another name (``Segment.of_file``, as a remote tier's copy is) is walked there, not at the file its
    base offset names."""
    from kafkaforensics.inspect.verify import VerifyReport, verify_segment
    from kafkaforensics.log.partition import Partition
    from kafkaforensics.log.producer_state import ProducerState
    from kafkaforensics.log.segment import Segment
    from tests.corruption import make_partition
    p = str(tmp_path / "events-0")
    make_partition(p, seed=4, n=30)
    seg = Partition.scan(p).segments[0]
    rep = VerifyReport()
    summary = verify_segment(seg, rep, ProducerState(), active=False)
    assert summary.segment is seg and summary.batches > 0 and not rep.problems
    other = str(tmp_path / "copy.log")   # the same bytes under a name that says no offset
    with open(seg.log, "rb") as f, open(other, "wb") as g:
        g.write(f.read())
    copy = Segment.of_file(other, seg.base_offset)
    rep2 = VerifyReport()
    again = verify_segment(copy, rep2, ProducerState(), active=False, require_index=False)
    assert again.segment is copy and (again.batches, again.next_offset) == (summary.batches, summary.next_offset)
    assert rep2.bytes == rep.bytes


# ------------------------------------------------ verify's walk in runs, damage by damage ----
def _runs_and_reference(path, monkeypatch):
    """verify of ``path`` over header runs (every segment, 1 KiB windows so batches straddle them)
    and over the reference walk, batch by batch: both reports as JSON."""
    from kafkaforensics.inspect import verify as verify_mod
    from kafkaforensics.log import segment as seg_mod
    monkeypatch.setattr(verify_mod, "SMALL_SEGMENT_BYTES", -1)
    monkeypatch.setattr(seg_mod, "RUN_WINDOW", 1024)
    runs = verify([path]).to_json()
    with walks.use_speedups(False):
        return runs, verify([path]).to_json()


@pytest.mark.parametrize("damage", ["torn-tail", "bad-crc-mid-file", "corrupt-header"])
def test_runs_find_what_the_reference_walk_finds(tmp_path, monkeypatch, damage):
    """issue 52: verify's fast walk (header tuples unpacked once by the walk loop, columns made when
    asked) reports, for each damage, exactly the reference walk's findings, and finds the damage."""
    from kafkaforensics.log.segment import iter_batches
    from kafkaforensics.records.builder import build_v2
    from kafkaforensics.records.batch import Record
    log = str(tmp_path / "00000000000000000000.log")
    with open(log, "wb") as f:
        for b in range(40):
            f.write(build_v2([Record(b * 3 + i, 1700000000000 + b, b"k", b"v" * 300, []) for i in range(3)],
                             base_offset=b * 3))
    positions = [b.position for b in iter_batches(log)]
    if damage == "torn-tail":
        with open(log, "r+b") as f:
            f.truncate(os.path.getsize(log) - 100)
    elif damage == "bad-crc-mid-file":
        _patch(log, positions[20] + 200, b"\xff\xfe")
    else:  # the magic byte of a batch in the middle
        _patch(log, positions[17] + 16, b"\x07")
    runs, reference = _runs_and_reference(log, monkeypatch)
    assert runs == reference
    found = {p["kind"] for p in runs["problems"]}
    assert found & {"truncated-batch", "crc-mismatch", "bad-magic"}, found
