"""`kfx recover`: the corruption corpus, dry runs, idempotency, Kafka's leftover rules."""
import json
import os
import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkaforensics.records import walks
from kafkaforensics.repair.recovery import LoadOptions, recover
from kafkaforensics.inspect.verify import verify
from tests.corruption import INTERVAL, all_records, layout, make_partition, snapshot_files


@pytest.fixture
def part(tmp_path):
    return make_partition(tmp_path / "events-0")


def _recover(p, **kw):
    kw.setdefault("index_interval_bytes", INTERVAL)
    return recover(p, **kw)


def _assert_repaired(p, rep, expect_pos, expect_segment, keep_records):
    assert rep.truncated_at is not None
    assert rep.truncated_at["segment"] == os.path.basename(expect_segment)
    assert rep.truncated_at["position"] == expect_pos
    assert os.path.getsize(expect_segment) == expect_pos
    v = verify([p])
    assert v.ok, v.problems
    assert all_records(p) == keep_records
    again = _recover(p)
    assert again.actions == [] and again.truncated_at is None


def _damage_and_check(p, mutate, seg_index, batch_index):
    """Damage batch ``batch_index`` of segment ``seg_index``; the log must end where that batch began."""
    lay = layout(p)
    seg, batches = lay[seg_index]
    pos = batches[batch_index][0]
    before = all_records(p)
    keep_last = batches[batch_index - 1][3] if batch_index else lay[seg_index - 1][1][-1][3] if seg_index else -1
    mutate(seg, batches, batch_index)
    dry = _recover(p, dry_run=True)
    files = snapshot_files(p)
    assert _recover(p, dry_run=True).to_json()["actions"] == dry.to_json()["actions"]
    assert snapshot_files(p) == files, "a dry run changed bytes"
    rep = _recover(p)
    assert [a.to_json() for a in rep.actions] == [a.to_json() for a in dry.actions]
    _assert_repaired(p, rep, pos, seg, [r for r in before if r[0] <= keep_last])
    later = [os.path.basename(s) for s, _ in lay[seg_index + 1:]]
    assert rep.removed_segments == later
    return rep


def test_torn_last_batch(part):
    def tear(seg, batches, i):
        os.truncate(seg, batches[i][0] + batches[i][1] - 9)
    lay = layout(part)
    last = len(lay) - 1
    _damage_and_check(part, tear, last, len(lay[last][1]) - 1)


def test_zeroed_tail_inode_grew_before_data(part):
    lay = layout(part)
    seg, batches = lay[-1]
    size = os.path.getsize(seg)
    with open(seg, "ab") as f:
        f.write(b"\0" * 5000)
    before = all_records(part)
    rep = _recover(part)
    assert rep.truncated_at["position"] == size and "zeroed-tail" in rep.truncated_at["reason"]
    assert verify([part]).ok and all_records(part) == before


def test_flipped_byte_in_a_middle_batch(part):
    def flip(seg, batches, i):
        with open(seg, "r+b") as f:
            f.seek(batches[i][0] + 40)
            b = f.read(1)
            f.seek(batches[i][0] + 40)
            f.write(bytes([b[0] ^ 0x10]))
    rep = _damage_and_check(part, flip, 1, 2)
    assert "CRC" in rep.truncated_at["reason"]


def test_garbage_appended(part):
    lay = layout(part)
    seg = lay[-1][0]
    size = os.path.getsize(seg)
    before = all_records(part)
    with open(seg, "ab") as f:
        f.write(b"\x00\x00\x00\x00\x00\x00\x00\x99\x00\x00\x01\x00" + os.urandom(300))
    rep = _recover(part)
    assert rep.truncated_at["position"] == size
    assert verify([part]).ok and all_records(part) == before


def test_bad_size_field(part):
    def bad_size(seg, batches, i):
        with open(seg, "r+b") as f:
            f.seek(batches[i][0] + 8)
            f.write((3).to_bytes(4, "big"))
    _damage_and_check(part, bad_size, 0, 3)


def test_huge_size_field_runs_past_the_end(part):
    def huge(seg, batches, i):
        with open(seg, "r+b") as f:
            f.seek(batches[i][0] + 8)
            f.write((2**31 - 1).to_bytes(4, "big"))
    _damage_and_check(part, huge, 1, 1)


def test_truncated_and_stale_indexes_are_rebuilt(part):
    lay = layout(part)
    idx = lay[0][0].replace(".log", ".index")
    with open(idx, "r+b") as f:
        f.truncate(os.path.getsize(idx) - 5)
    # a stale index from a longer log: points past the end of the (shortened) last segment
    seg, batches = lay[-1]
    good = open(seg.replace(".log", ".index"), "rb").read()
    os.truncate(seg, batches[-1][0])
    with open(seg.replace(".log", ".index"), "wb") as f:
        f.write(good + (10_000).to_bytes(4, "big") + (99_999).to_bytes(4, "big"))
    assert not verify([part]).ok
    rep = _recover(part)
    assert rep.truncated_at is None  # the log itself is sound: only indexes change
    assert os.path.basename(idx) in rep.rebuilt_indexes
    assert verify([part]).ok


def test_orphan_index_and_clean_dir(part, kfx):
    shutil.copy(os.path.join(part, "00000000000000000000.index"), os.path.join(part, "00000000000099999999.index"))
    r = kfx("recover", part, "--json", "--index-interval-bytes", INTERVAL)
    assert r.exit_code == 1
    out = json.loads(r.stdout)
    assert [a["action"] for a in out["actions"]] == ["delete"]
    r = kfx("recover", part, "--json", "--index-interval-bytes", INTERVAL)
    assert r.exit_code == 0 and json.loads(r.stdout)["actions"] == []


def test_leftover_deleted_cleaned_and_swap(part):
    """An interrupted compaction: segments 0 and 1 were cleaned into a .swap, .cleaned and .deleted remain."""
    lay = layout(part)
    (s0, b0), (s1, b1) = lay[0], lay[1]
    # the "cleaned" segment: segment 0's and 1's bytes back to back (offsets and batches preserved)
    merged = open(s0, "rb").read() + open(s1, "rb").read()
    with open(s0 + ".swap", "wb") as f:
        f.write(merged)
    with open(s0.replace(".log", ".index") + ".swap", "wb") as f:
        f.write(b"")
    shutil.copy(s1, s1 + ".deleted")
    cleaned = lay[2][0] + ".cleaned"
    with open(cleaned, "wb") as f:
        f.write(b"partial")
    # a swap at/above the lowest .cleaned offset belongs to an interrupted split: deleted
    bad_swap = lay[3][0] + ".swap"
    shutil.copy(lay[3][0], bad_swap)
    before = all_records(part)
    rep = _recover(part)
    acts = [(a.action, os.path.basename(a.file)) for a in rep.actions]
    assert ("delete", os.path.basename(s1 + ".deleted")) in acts
    assert ("delete", os.path.basename(cleaned)) in acts
    assert ("delete", os.path.basename(bad_swap)) in acts
    assert ("delete", os.path.basename(s1)) in acts  # replaced by the swap
    assert ("rename", os.path.basename(s0 + ".swap")) in acts
    names = os.listdir(part)
    assert not any(n.endswith((".swap", ".cleaned", ".deleted")) for n in names)
    assert os.path.basename(s1) not in names
    assert open(s0, "rb").read() == merged
    assert verify([part]).ok
    assert all_records(part) == before
    assert _recover(part).actions == []


def test_recovery_point_and_clean_shutdown(tmp_path):
    logdir = tmp_path / "logs"
    p = make_partition(logdir / "events-0")
    lay = layout(p)
    # damage in segment 0, but the checkpoint says segments before the last are flushed
    with open(lay[0][0], "r+b") as f:
        f.seek(lay[0][1][1][0] + 30)
        f.write(b"\xee")
    last_base = int(os.path.basename(lay[-1][0])[:20])
    (logdir / "recovery-point-offset-checkpoint").write_text(f"0\n1\nevents 0 {last_base}\n")
    rep = _recover(p)
    assert rep.recovery_point == last_base and rep.truncated_at is None  # Kafka would not look
    (logdir / ".kafka_cleanshutdown").write_text("")
    assert _recover(p).truncated_at is None
    rep = _recover(p, full=True)
    assert rep.truncated_at["segment"] == os.path.basename(lay[0][0])
    assert rep.removed_segments == [os.path.basename(s) for s, _ in lay[1:]]


def test_backups_keep_every_changed_file(part, tmp_path):
    lay = layout(part)
    seg = lay[1][0]
    original = open(seg, "rb").read()
    with open(seg, "r+b") as f:
        f.seek(lay[1][1][1][0] + 50)
        f.write(b"\x00\x01")
    damaged = open(seg, "rb").read()
    removed = {os.path.basename(s): open(s, "rb").read() for s, _ in lay[2:]}
    bdir = tmp_path / "bk"
    rep = _recover(part, backup_dir=str(bdir))
    assert rep.backup == str(bdir)
    cut = rep.truncated_at["position"]
    # the truncated segment's cut bytes (not a whole copy), and each removed segment itself
    assert open(bdir / f"{os.path.basename(seg)}.from-byte-{cut}", "rb").read() == damaged[cut:]
    for name, data in removed.items():
        assert open(bdir / name, "rb").read() == data
    assert original[:cut] == open(seg, "rb").read()
    from kafkaforensics.repair.restore import restore
    restore(str(bdir))
    assert open(seg, "rb").read() == damaged
    for name, data in removed.items():
        assert open(os.path.join(part, name), "rb").read() == data


def test_no_backup_and_default_backup_location(part):
    lay = layout(part)
    with open(lay[-1][0], "ab") as f:
        f.write(b"junk" * 10)
    rep = _recover(part, backup=False)
    assert rep.backup is None and not os.path.exists(os.path.join(part, ".kfx-backup"))
    with open(lay[-1][0], "ab") as f:
        f.write(b"junk" * 10)
    rep = _recover(part)
    assert rep.backup.startswith(os.path.join(part, ".kfx-backup"))
    assert os.listdir(rep.backup)
    assert verify([part]).ok  # the backup dir inside the partition is invisible to Kafka and to us


def test_transaction_index_and_snapshots_rebuilt(part):
    lay = layout(part)
    for s, _ in lay:
        t = s.replace(".log", ".txnindex")
        if os.path.exists(t):
            os.unlink(t)
    for f in os.listdir(part):
        if f.endswith(".snapshot"):
            os.unlink(os.path.join(part, f))
    rep = _recover(part)
    assert any(n.endswith(".txnindex") for n in rep.rebuilt_indexes)
    assert any(f.endswith(".snapshot") for f in os.listdir(part))
    assert verify([part]).ok


def test_cli_recover_dry_run_and_json(part, kfx):
    lay = layout(part)
    with open(lay[-1][0], "ab") as f:
        f.write(os.urandom(100))
    files = snapshot_files(part)
    r = kfx("recover", part, "--dry-run", "--json", "--index-interval-bytes", INTERVAL)
    assert r.exit_code == 1
    out = json.loads(r.stdout)
    assert set(out) >= {"truncatedAt", "removedSegments", "rebuiltIndexes", "backup", "actions"}
    assert out["truncatedAt"]["segment"] == os.path.basename(lay[-1][0])
    assert snapshot_files(part) == files
    r = kfx("recover", part, "--index-interval-bytes", INTERVAL)
    assert r.exit_code == 1 and "truncated" in r.stdout
    assert kfx("recover", part, "--index-interval-bytes", INTERVAL).exit_code == 0
    assert kfx("recover", str(part) + "-nope").exit_code == 2
    assert kfx("recover", part, "--no-backup", "--backup-dir", "/tmp/x").exit_code == 2


def test_leader_epoch_cache_stays_monotonic_like_kafkas(part):
    """An epoch newer than the cache's latest drops the entries that start at or after it."""
    from kafkaforensics.log.leader_epochs import LeaderEpochCache
    epochs = LeaderEpochCache([(0, 0), (1, 50), (3, 159)])
    epochs.assign_newer(7, 29)
    assert epochs.entries == [(0, 0), (7, 29)]
    epochs.assign_newer(5, 40)  # not newer than the latest: ignored
    assert epochs.entries == [(0, 0), (7, 29)]
    # on disk: a batch whose partitionLeaderEpoch (outside the CRC) was damaged to a huge value
    lay = layout(part)
    seg, batches = lay[1]
    with open(seg, "r+b") as f:
        f.seek(batches[0][0] + 12)
        f.write((1 << 24).to_bytes(4, "big"))
    _recover(part, full=True)
    v = verify([part])
    assert v.ok, v.problems
    text = open(os.path.join(part, "leader-epoch-checkpoint")).read().split("\n")
    entries = [tuple(map(int, line.split())) for line in text[2:] if line]
    assert entries == sorted(entries) and entries[-1][0] == 1 << 24


def _tree(d) -> dict:
    """Every file under ``d`` (backups aside) by relative path -> bytes."""
    out = {}
    for root, _dirs, files in os.walk(d):
        for f in files:
            p = os.path.join(root, f)
            out[os.path.relpath(p, d)] = open(p, "rb").read()
    return out


def _rebuilt_both_ways(root, src, monkeypatch, interval, limit=None) -> list:
    """recover and reindex copies of ``src`` over header runs, then batch by batch: for each way
    the reports (partition paths taken out) and every file both leave."""
    from kafkaforensics.repair.reindex import reindex

    results = []
    for runs in (True, False):
        with walks.use_speedups(runs):
            rec, rei = str(root / f"rec-{runs}" / "t-0"), str(root / f"rei-{runs}" / "t-0")
            shutil.copytree(src, rec)
            shutil.copytree(src, rei)
            r1 = recover(rec, LoadOptions(max_message_bytes=limit), backup=False, full=True, index_interval_bytes=interval).to_json()
            r2 = reindex(rei, backup=False, index_interval_bytes=interval).to_json()
            text = json.dumps([r1, r2]).replace(str(root / f"rec-{runs}"), "R").replace(str(root / f"rei-{runs}"), "R")
            results.append((json.loads(text), _tree(rec), _tree(rei)))
    return results


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(data=st.data())
def test_recover_and_reindex_over_header_runs_equal_batch_by_batch(tmp_path_factory, monkeypatch, data):
    """Whatever the damage, recover and reindex walking header runs -- in small windows and short
    runs -- leave exactly the files (and report exactly what) the batch-by-batch walk does."""
    from kafkaforensics.log import segment as seg_mod
    from tests.corruption import damaged_partition

    root = tmp_path_factory.mktemp("rebuild")
    src = str(root / "src" / "t-0")
    damaged_partition(src, data)
    if data.draw(st.booleans()):  # the leader-epoch cache is then rebuilt from the batches' epochs alone
        os.remove(os.path.join(src, "leader-epoch-checkpoint"))
    monkeypatch.setattr(seg_mod, "RUN_WINDOW", data.draw(st.sampled_from([128, 700, 1 << 20])))
    monkeypatch.setattr(seg_mod, "RUN_BYTES", data.draw(st.sampled_from([100, 2000, 16 << 20])))
    limit = data.draw(st.sampled_from([None, None, 1000]))
    interval = data.draw(st.sampled_from([1, 256, 4096]))
    runs, batches = _rebuilt_both_ways(root, src, monkeypatch, interval, limit)
    assert runs == batches


@pytest.mark.parametrize("run_bytes", [100, 2000, 16 << 20])
@pytest.mark.parametrize("rewound", [1, 3])
def test_rebuild_over_runs_where_offsets_go_back(tmp_path, monkeypatch, run_bytes, rewound):
    """Batches whose base offsets go back (outside the CRC): recover stops at the first of them
    wherever a run starts, reindex indexes past them; over runs exactly as batch by batch."""
    from kafkaforensics.log import segment as seg_mod
    from kafkaforensics.records.batch import Record
    from kafkaforensics.records.builder import build_v2
    from kafkaforensics.log.segment import BatchScanner
    from kafkaforensics.log.writer import write_partition

    src = str(tmp_path / "src" / "t-0")
    write_partition(src, [build_v2([Record(i * 2 + j, 1000 + i, b"k", b"v" * 50) for j in range(2)], base_offset=i * 2)
                          for i in range(30)], index_interval_bytes=100)
    log = os.path.join(src, "00000000000000000000.log")
    buf = bytearray(open(log, "rb").read())
    starts = [b.position for b in BatchScanner(bytes(buf))]
    for t in range(rewound):  # batches 12.. take the base offsets of batches 6..
        buf[starts[12 + t]:starts[12 + t] + 8] = buf[starts[6 + t]:starts[6 + t] + 8]
    open(log, "wb").write(bytes(buf))
    monkeypatch.setattr(seg_mod, "RUN_BYTES", run_bytes)
    runs, batches = _rebuilt_both_ways(tmp_path, src, monkeypatch, 100)
    assert runs[0][0]["truncatedAt"]["position"] == starts[12]
    assert runs == batches


#: LogLoader.load()'s passes, in Kafka's order (issue 52)
LOADER_PASSES = ["remove_temp_files_and_collect_swap_files", "load_segment_files", "recover_log",
                 "rebuild_producer_state", "truncate_leader_epochs"]


def test_recover_is_one_loader_whose_passes_are_kafkas(part, monkeypatch):
    """Issue 52: ``recover`` plans through :class:`LogLoader`, whose passes are methods named after
    Kafka's LogLoader, run once each in LogLoader.load()'s order; a pass changed changes the plan."""
    from kafkaforensics.log.log_loader import LogLoader
    lay = layout(part)
    seg, batches = lay[-1]
    os.truncate(seg, batches[-1][0] + batches[-1][1] - 9)   # a torn last batch: recoverLog truncates it
    calls = []
    for name in LOADER_PASSES:
        def traced(self, _name=name, _inner=getattr(LogLoader, name)):
            calls.append(_name)
            return _inner(self)
        monkeypatch.setattr(LogLoader, name, traced)
    rep = recover(part, LoadOptions(index_interval_bytes=INTERVAL), dry_run=True)
    assert calls == LOADER_PASSES
    assert rep.truncated_at["position"] == batches[-1][0]
    monkeypatch.setattr(LogLoader, "recover_log", lambda self: None)   # recoverLog settles the log end
    assert recover(part, LoadOptions(index_interval_bytes=INTERVAL), dry_run=True).log_end_offset == 0
    assert rep.log_end_offset == batches[-2][3] + 1


def test_load_options_carry_what_the_log_dir_would_say(part):
    """``LoadOptions.recovery_point``: segments below it are not recovered (the log dir's checkpoint
    otherwise, 0 without one); the shorthand keywords replace the options' fields."""
    lay = layout(part)
    seg, batches = lay[0]
    os.truncate(seg, batches[-1][0] + batches[-1][1] - 9)   # damage in the first segment
    past = lay[-1][1][-1][3] + 1
    untouched = recover(part, LoadOptions(index_interval_bytes=INTERVAL, recovery_point=past), dry_run=True)
    assert untouched.truncated_at is None and untouched.recovery_point == past
    full = recover(part, LoadOptions(recovery_point=past), dry_run=True, index_interval_bytes=INTERVAL, full=True)
    assert full.truncated_at["segment"] == os.path.basename(seg) and full.recovery_point == 0
