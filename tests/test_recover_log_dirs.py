"""`kfx recover LOG_DIR...` as Kafka's LogManager.loadLogs + LogLoader: on the real brokers' log dirs
(unpacked per test, never modified in place), on a crashed log dir built here, and refused on a log
dir a running broker holds."""
import glob
import json
import os
import random
import shutil
import subprocess
import sys
import tarfile
import textwrap

import pytest

from kafkaforensics.log.partition import LogDir
from kafkaforensics.repair.load_logs import recover_log_dirs
from kafkaforensics.repair.recovery import LoadOptions, recover
from tests.corruption import INTERVAL, layout, make_partition

from tests.realdirs import REAL
TARBALLS = sorted(glob.glob(os.path.join(REAL, "*.tar.gz")))
CLEAN = os.path.join(REAL, "kafka3x-zk-bitnami-gzip-cleanshutdown.tar.gz")
needs_real = pytest.mark.skipif(not TARBALLS, reason=f"the real log dirs are not on this machine ({REAL})")


def unpack(tarball, into) -> tuple[str, str]:
    """(the unpacked tree's root, the log dir in it)."""
    with tarfile.open(tarball) as t:
        t.extractall(into, filter="tar")
    for root, dirs, files in os.walk(into):
        if "meta.properties" in files or any(d.startswith("__consumer_offsets-") for d in dirs):
            return str(into), root
    raise AssertionError(f"no log dir in {tarball}")


def tree(path) -> dict:
    """{relative path: bytes} of every file under ``path`` but kfx's own backups."""
    out = {}
    for root, dirs, files in os.walk(path):
        dirs[:] = [d for d in dirs if d != ".kfx-backup"]
        for f in files:
            p = os.path.join(root, f)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, path)] = fh.read()
    return out


def missing_indexes(tarball, root, log_dir) -> set:
    """The index files `<name>.missing.txt` lists (whose segment exists), as paths in the log dir."""
    out = set()
    with open(tarball[: -len(".tar.gz")] + ".missing.txt") as f:
        for line in f:
            rel = line.split(" (")[0].strip()
            if not rel.endswith((".index", ".timeindex")):
                continue
            for base in (root, log_dir):
                p = os.path.join(base, rel)
                if os.path.isdir(os.path.dirname(p)):
                    break
            seg = p.rsplit(".", 1)[0] + ".log"
            if os.path.exists(seg):
                out.add(os.path.relpath(p, log_dir))
    return out


def rebuilt(outs) -> set:
    return {os.path.relpath(os.path.join(r.path, n), o.log_dir) for o in outs for r in o.partitions
            for n in r.rebuilt_indexes}


def as_kafka_loads_clean(before: dict) -> dict:
    """The clean-shutdown image as Kafka's load leaves it: the empty tesot-0's epoch entry `0 0`, at its
    log end 0, goes (LogLoader: leaderEpochCache.truncateFromEnd(logEndOffset)); nothing else changes."""
    epochs = os.path.join("tesot-0", "leader-epoch-checkpoint")
    assert before[epochs] == b"0\n1\n0 0\n"
    return {**before, epochs: b"0\n0\n"}


@needs_real
def test_clean_shutdown_log_dir_is_left_as_it_is(tmp_path):
    _root, ld = unpack(CLEAN, tmp_path)
    before = tree(ld)
    outs = recover_log_dirs([ld], jobs=2)
    assert outs[0].clean_shutdown and outs[0].marker["format"] == "empty"
    assert len(outs[0].partitions) == 57
    # but for what Kafka's load changes after a clean shutdown too: the empty tesot-0's epoch entry
    # `0 0`, at its log end 0, goes (LogLoader: leaderEpochCache.truncateFromEnd(logEndOffset))
    changed = {r.partition: r.done for r in outs[0].partitions if r.actions}
    assert changed == {"tesot-0": ["leader epochs"]} and not outs[0].checkpoint_actions
    assert tree(ld) == as_kafka_loads_clean(before)  # the file list and every other byte


@needs_real
def test_clean_shutdown_indexes_rebuilt_byte_identical(tmp_path):
    _root, ld = unpack(CLEAN, tmp_path)
    before = tree(ld)
    indexes = [k for k in before if k.endswith((".index", ".timeindex"))]
    assert len(indexes) == 114
    for k in indexes:
        os.unlink(os.path.join(ld, k))
    outs = recover_log_dirs([ld], jobs=2, backup=False)
    assert rebuilt(outs) == set(indexes)
    # every rebuilt index as the broker wrote it, nothing else changed but what Kafka's load changes
    assert tree(ld) == as_kafka_loads_clean(before)


@needs_real
@pytest.mark.parametrize("tarball", TARBALLS, ids=lambda p: os.path.basename(p)[: -len(".tar.gz")])
def test_real_log_dirs_rebuild_what_git_did_not_keep(tmp_path, tarball):
    root, ld = unpack(tarball, tmp_path)
    before = tree(ld)
    outs = recover_log_dirs([ld], jobs=2, backup=False)
    assert rebuilt(outs) == missing_indexes(tarball, root, ld)
    after = tree(ld)
    logs = [k for k in before if k.endswith(".log")]
    assert logs and all(after.get(k) == before[k] for k in logs)  # no segment truncated or removed
    assert all(r.dropped.bytes == 0 and not r.removed_segments for o in outs for r in o.partitions)
    # no empty producer snapshot appears in an empty partition
    for o in outs:
        for r in o.partitions:
            if r.log_end_offset == r.log_start_offset:
                assert not any(a.file.endswith(".snapshot") and a.action == "write" for a in r.actions), r.partition
    again = recover_log_dirs([ld], jobs=2)
    assert not again[0].changed, [(r.partition, r.done) for r in again[0].partitions if r.actions]
    assert tree(ld) == after


# -- a crashed log dir ---------------------------------------------------------------------------
def crashed_log_dir(path, n=24, seed=7):
    """``n`` partitions of the corruption corpus in one log dir, no clean-shutdown marker: torn
    tails in some, garbage appended to others, missing indexes in others, the rest healthy; a
    recovery point checkpoint for some."""
    rnd = random.Random(seed)
    os.makedirs(path)
    damage = {}
    rps = []
    for i in range(n):
        p = os.path.join(path, f"events-{i}")
        make_partition(p, seed=i + 1)
        lay = layout(p)
        kind = ("torn", "garbage", "no-index", "no-timeindex", "healthy", "healthy")[i % 6]
        damage[f"events-{i}"] = kind
        seg, batches = lay[-1] if kind != "torn" or i % 4 else lay[len(lay) // 2]
        if kind == "torn":
            pos, size = batches[-1][0], batches[-1][1]
            os.truncate(seg, pos + rnd.randint(1, size - 1))
        elif kind == "garbage":
            with open(seg, "ab") as f:
                f.write(rnd.randbytes(rnd.randint(1, 300)))
        elif kind in ("no-index", "no-timeindex"):
            s, _ = rnd.choice(lay)
            os.unlink(s[: -len(".log")] + (".index" if kind == "no-index" else ".timeindex"))
        if i % 3 == 0:
            rps.append(f"events {i} {batches[0][2]}")
    with open(os.path.join(path, "recovery-point-offset-checkpoint"), "w") as f:
        f.write(f"0\n{len(rps)}\n" + "".join(r + "\n" for r in rps))
    return damage


def test_crashed_log_dir_recovers_as_each_partition_would(tmp_path):
    ld = str(tmp_path / "logs")
    damage = crashed_log_dir(ld)
    twin = str(tmp_path / "twin" / "logs")
    shutil.copytree(ld, twin)
    before = tree(ld)
    one_by_one = {os.path.basename(p): recover(p, index_interval_bytes=INTERVAL, backup=False)
                  for p in LogDir(twin).partition_dirs()}
    outs = recover_log_dirs([ld], LoadOptions(index_interval_bytes=INTERVAL), jobs=2, backup=False)
    got = {r.partition: r for r in outs[0].partitions}
    assert set(got) == set(one_by_one) == set(damage)
    after = tree(ld)
    for name, kind in damage.items():
        a, b = got[name], one_by_one[name]
        assert a.truncated_at == b.truncated_at, name
        assert a.removed_segments == b.removed_segments and a.rebuilt_indexes == b.rebuilt_indexes, name
        assert [(x.action, os.path.basename(x.file), x.detail) for x in a.actions] == \
            [(x.action, os.path.basename(x.file), x.detail) for x in b.actions], name
        mine = {k: v for k, v in after.items() if k.startswith(name + "/")}
        assert mine == {k: v for k, v in tree(twin).items() if k.startswith(name + "/")}, name
        if kind in ("torn", "garbage"):
            assert a.truncated_at is not None and a.dropped.bytes > 0, name
        elif kind == "healthy":
            assert not a.actions and mine == {k: v for k, v in before.items() if k.startswith(name + "/")}, name
        elif kind == "no-index":  # rebuilt whether or not the segment lies below the recovery point
            assert a.truncated_at is None and any(n.endswith(".index") for n in a.rebuilt_indexes), name
        else:  # below the recovery point Kafka creates the missing time index empty; above, recovery rebuilds it
            assert a.truncated_at is None and any(x.file.endswith(".timeindex") for x in a.actions), name
            assert ("time index created" in a.done) == (a.recovery_point > 0), name
    # torn batches are not counted as dropped batches; garbage may frame none either
    assert sum(r.dropped.batches for r in got.values()) >= sum(len(r.removed_segments) for r in got.values())
    again = recover_log_dirs([ld], LoadOptions(index_interval_bytes=INTERVAL), jobs=2)
    assert not again[0].changed
    assert tree(ld) == after


def test_recovery_points_checkpointed_as_logmanager_writes_them(tmp_path):
    ld = str(tmp_path / "logs")
    crashed_log_dir(ld, n=6)
    outs = recover_log_dirs([ld], LoadOptions(index_interval_bytes=INTERVAL), jobs=1, backup=False)
    from kafkaforensics.log.checkpoint_file import read_offsets
    table = read_offsets(os.path.join(ld, "recovery-point-offset-checkpoint"))
    assert len(table) == 6
    for r in outs[0].partitions:
        tp = ("events", int(r.partition.split("-")[1]))
        # after an unclean shutdown: the lower of the checkpointed recovery point (0 without one) and the log end
        assert table[tp] == min(r.recovery_point, r.log_end_offset), r.partition
    assert any(table[tp] > 0 for tp in table)


def test_cli_recover_log_dir_summary_json_and_dry_run(tmp_path, kfx):
    ld = str(tmp_path / "logs")
    crashed_log_dir(ld, n=7)
    before = tree(ld)
    r = kfx("recover", ld, "--dry-run", "--index-interval-bytes", INTERVAL)
    assert r.exit_code == 1 and "kfx recover (dry run)" in r.stdout and "events-0" in r.stdout
    assert tree(ld) == before
    r = kfx("recover", ld, "--dry-run", "--json", "--index-interval-bytes", INTERVAL)
    (doc,) = [json.loads(x) for x in r.stdout.splitlines()]  # one JSON document, as --json's help says
    (dir_doc,) = doc["logDirs"]
    lines = dir_doc["partitions"] + [dir_doc]
    assert {x["partition"] for x in lines if "partition" in x} == {f"events-{i}" for i in range(7)}
    assert dir_doc["logDir"] == ld and doc["dryRun"] and tree(ld) == before
    r = kfx("recover", ld, "--jobs", "2", "--index-interval-bytes", INTERVAL, "--json")
    assert r.exit_code == 1
    (done_doc,) = json.loads(r.stdout)["logDirs"]
    done = done_doc["partitions"] + [done_doc]

    def said(rows):  # what a run says it does, whether it does it or not
        return [(x.get("partition"), x.get("done"), x.get("dropped"),
                 [(a["action"], a["file"], a["detail"]) for a in x.get("actions", x.get("checkpoints", []))])
                for x in rows]
    assert said(done) == said(lines)  # the dry run said the same
    assert any(x.get("truncatedAt") for x in done) and tree(ld) != before
    r = kfx("recover", ld, "--index-interval-bytes", INTERVAL)
    assert r.exit_code == 0 and "0 changed" in r.stdout
    empty = tmp_path / "empty"
    empty.mkdir()
    r = kfx("recover", empty)
    assert r.exit_code == 2 and "an empty directory" in r.output
    from kafkaforensics.repair.load_logs import NotALogDir
    with pytest.raises(NotALogDir):
        recover_log_dirs([os.path.join(ld, "events-0")])  # a partition dir is no log dir: nothing written
    assert not os.path.exists(os.path.join(ld, "events-0", "recovery-point-offset-checkpoint"))


# -- a log dir in use ----------------------------------------------------------------------------
HOLDER = textwrap.dedent("""
    import fcntl, sys, time
    f = open(sys.argv[1], "r+")
    fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)  # what FileChannel.tryLock takes on Linux
    print("locked", flush=True)
    time.sleep(120)
""")


@pytest.fixture
def held(tmp_path):
    """A crashed log dir whose ``.lock`` another process holds, as a running broker does."""
    ld = str(tmp_path / "logs")
    crashed_log_dir(ld, n=3)
    open(os.path.join(ld, ".lock"), "w").close()
    child = subprocess.Popen([sys.executable, "-c", HOLDER, os.path.join(ld, ".lock")], stdout=subprocess.PIPE,
                             text=True)
    try:
        assert child.stdout.readline().strip() == "locked"
        yield ld, child.pid
    finally:
        child.kill()
        child.wait()


def test_every_writing_command_refuses_a_live_log_dir(held, kfx, tmp_path):
    ld, pid = held
    part = os.path.join(ld, "events-0")
    seg = sorted(glob.glob(os.path.join(part, "*.log")))[0]
    before = tree(ld)
    dump = kfx("dump", "--deep", "--format", "json", seg).stdout
    runs = [("recover", ld), ("recover", part), ("recover", "--dry-run", ld), ("reindex", part), ("reindex", seg),
            ("compact", part), ("retention", part, "--retention-ms", "1"),
            ("salvage", part, "--out", os.path.join(ld, "events-99")),
            ("compact", str(tmp_path), "--out", os.path.join(ld, "events-98"))]
    for args in runs:
        r = kfx(*args)
        line = f"a broker is running on {ld} (pid {pid}): stop it first"
        assert r.exit_code == 2 and line in " ".join(r.output.split()), (args, r.output)
        assert len(r.output.strip().splitlines()) == 1, (args, r.output)
    r = kfx("write", "--out", os.path.join(ld, "events-97"), input=dump)
    assert r.exit_code == 2 and "a broker is running on" in r.output
    env = dict(os.environ, PYTHONPATH=os.getcwd() + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.run([sys.executable, "-m", "cli.main", "serve", ld, "--writable", "--port", "0"],
                       capture_output=True, text=True, timeout=60, env=env)
    assert p.returncode == 2 and "a broker is running on" in p.stderr
    with pytest.raises(OSError, match="stop it first"):
        recover_log_dirs([ld])
    with pytest.raises(OSError, match="stop it first"):
        recover(part)
    assert tree(ld) == before


def test_delete_stray_and_future_dirs_as_logmanager_loads_them(tmp_path):
    """A ``-delete`` dir is left as it is (Kafka loads it only to delete it); ``-stray`` and
    ``-future`` dirs are recovered; only current and future logs are in the recovery-point checkpoint."""
    ld = tmp_path / "logs"
    uid = "0123456789abcdef0123456789abcdef"
    names = {"live": "events-0", "delete": f"events-1.{uid}-delete", "stray": f"events-2.{uid}-stray",
             "future": f"events-3.{uid}-future"}
    for kind, name in names.items():
        p = str(ld / name)
        make_partition(p, seed=len(kind))
        seg, batches = layout(p)[-1]
        os.truncate(seg, batches[-1][0] + 5)  # a torn last batch in each
    before = tree(str(ld))
    outs = recover_log_dirs([str(ld)], LoadOptions(index_interval_bytes=INTERVAL), jobs=1, backup=False)
    got = {r.partition: r for r in outs[0].partitions}
    assert got[names["delete"]].truncated_at is None and not got[names["delete"]].actions
    after = tree(str(ld))
    assert {k: v for k, v in before.items() if k.startswith(names["delete"] + "/")} == \
        {k: v for k, v in after.items() if k.startswith(names["delete"] + "/")}
    for kind in ("live", "stray", "future"):
        assert got[names[kind]].truncated_at is not None, kind
    from kafkaforensics.log.checkpoint_file import read_offsets
    assert set(read_offsets(str(ld / "recovery-point-offset-checkpoint"))) == {("events", 0), ("events", 3)}


def test_crash_at_every_step_then_recover_again(tmp_path):
    """Killed at any file step (KFX_CRASH_AT: SIGKILL, no cleanup) a log dir recovery run again ends
    exactly where an uninterrupted one does."""
    ref = str(tmp_path / "ref")
    crashed_log_dir(ref, n=6, seed=3)
    work = str(tmp_path / "work")
    recover_log_dirs([ref], LoadOptions(index_interval_bytes=INTERVAL), jobs=1, backup=False)
    want = tree(ref)
    env = dict(os.environ, PYTHONPATH=os.getcwd() + os.pathsep + os.environ.get("PYTHONPATH", ""))
    cmd = [sys.executable, "-m", "cli.main", "recover", "--jobs", "1", "--no-backup", "--index-interval-bytes",
           str(INTERVAL), work]
    kills = 0
    for step in range(1, 400, 9):
        if os.path.exists(work):
            shutil.rmtree(work)
        crashed_log_dir(work, n=6, seed=3)
        r = subprocess.run(cmd, env=dict(env, KFX_CRASH_AT=str(step)), capture_output=True, timeout=120)
        assert r.returncode in (-9, 0, 1), r.stderr
        subprocess.run(cmd, env=env, capture_output=True, timeout=120)
        assert tree(work) == want, step
        if r.returncode != -9:
            break
        kills += 1
    else:
        pytest.fail("the run was still being killed at the last step tried")
    assert kills > 5  # killed in the partitions' repairs and in the checkpoint writes


@needs_real
def test_clean_shutdown_full_check_changes_nothing_either(tmp_path):
    _root, ld = unpack(CLEAN, tmp_path)
    before = tree(ld)
    outs = recover_log_dirs([ld], LoadOptions(full=True), jobs=2)
    assert not outs[0].clean_shutdown and all(r.recovered_segments for r in outs[0].partitions)
    assert {r.partition: r.done for r in outs[0].partitions if r.actions} == {"tesot-0": ["leader epochs"]}
    assert tree(ld) == as_kafka_loads_clean(before)


def test_producer_snapshots_as_kafka_takes_them(tmp_path):
    """No snapshot is written into an empty partition (takeSnapshot writes only past the last one), and
    a snapshot holding the same entries in another order (Kafka writes hash-map order) is left as it is."""
    from kafkaforensics.log.producer_state import read_snapshot, snapshot_bytes
    ld = tmp_path / "logs"
    empty = ld / "empty-0"
    empty.mkdir(parents=True)
    (empty / "00000000000000000000.log").write_bytes(b"")
    p = str(ld / "events-0")
    make_partition(p, seed=4)
    snaps = sorted(n for n in os.listdir(p) if n.endswith(".snapshot"))
    last = os.path.join(p, snaps[-1])
    entries = read_snapshot(open(last, "rb").read())
    assert len(entries) > 1
    shuffled = snapshot_bytes(entries[::-1])
    with open(last, "wb") as f:
        f.write(shuffled)
    outs = recover_log_dirs([str(ld)], LoadOptions(index_interval_bytes=INTERVAL), jobs=1, backup=False)
    # its missing indexes are made (empty), no snapshot
    assert sorted(os.listdir(empty)) == ["00000000000000000000." + s for s in ("index", "log", "timeindex")]
    assert open(last, "rb").read() == shuffled
    got = {r.partition: r for r in outs[0].partitions}
    assert not got["events-0"].actions, got["events-0"].done


def test_missing_index_after_a_clean_shutdown_is_rebuilt_and_nothing_else_recovered(tmp_path):
    """After a clean shutdown only a segment without its offset index is recovered (LogLoader.
    loadSegmentFiles: "Could not find offset index file ... rebuilding"): garbage at the end of
    that segment is cut, a damaged later segment with its index is not looked at, and no segment
    is removed."""
    ld = tmp_path / "logs"
    p = str(ld / "events-0")
    make_partition(p, seed=9)
    (ld / ".kafka_cleanshutdown").write_text('{"version":0,"brokerEpoch":7}')
    lay = layout(p)
    (s1, _), (s_last, _) = lay[1], lay[-1]
    os.unlink(s1[: -len(".log")] + ".index")
    with open(s1, "ab") as f:
        f.write(b"\xff" * 40)
    with open(s_last, "ab") as f:
        f.write(b"\xff" * 40)
    last_before = open(s_last, "rb").read()
    outs = recover_log_dirs([str(ld)], LoadOptions(index_interval_bytes=INTERVAL), jobs=1, backup=False)
    (r,) = outs[0].partitions
    assert outs[0].clean_shutdown and outs[0].marker["brokerEpoch"] == 7
    assert r.recovered_segments == [os.path.basename(s1)] and not r.removed_segments
    assert r.truncated_at["segment"] == os.path.basename(s1) and r.dropped.bytes == 40
    assert open(s_last, "rb").read() == last_before  # past the recovery point, but the shutdown was clean
    assert os.path.exists(s1[: -len(".log")] + ".index")


def test_a_log_without_segments_gets_an_empty_one_at_its_log_start(tmp_path):
    ld = tmp_path / "logs"
    p = ld / "events-0"
    p.mkdir(parents=True)
    (p / "partition.metadata").write_text("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAg\n")
    (ld / "log-start-offset-checkpoint").write_text("0\n1\nevents 0 42\n")
    outs = recover_log_dirs([str(ld)], jobs=1, backup=False)
    assert sorted(os.listdir(p)) == ["00000000000000000042.index", "00000000000000000042.log",
                                     "00000000000000000042.timeindex", "partition.metadata"]
    assert all(os.path.getsize(p / n) == 0 for n in os.listdir(p) if n.startswith("000"))
    assert outs[0].partitions[0].log_end_offset == 42
    assert not recover_log_dirs([str(ld)], jobs=1)[0].changed
