"""Crash points: ``recover``, ``reindex``, ``compact`` (in place and dry run) and ``retention`` killed with SIGKILL
at every step of the shared atomic-write path (``KFX_CRASH_AT=N`` in ``fsutil``: between each
write, fsync, rename and delete), then ``kfx recover`` as a broker restart would run it. Whatever
the point: no valid record is lost (the record set is the state after, the state before, or --
for commands that work segment by segment -- between the two, never less than after), the log dir
holds nothing but Kafka's own files (no ``.cleaned``/``.swap``/``.deleted``, no kfx temp file or
dir, in the partition or the log dir; the partition's backup dir aside), and ``kfx verify`` is clean.

``make crashpoints`` runs this file and prints the number of crash points each command survived.
"""
import os
import shutil
import signal
import subprocess
import sys

import pytest

from kafkaforensics import fsutil
from kafkaforensics.repair.cleaner import CompactOptions, compact
from kafkaforensics.repair.recovery import recover
from kafkaforensics.repair.reindex import reindex
from kafkaforensics.repair.retention import retention
from kafkaforensics.inspect.verify import verify
from tests.corruption import INTERVAL, layout, make_partition
from kafkaforensics.log.segment import iter_batches

NOW = 1_700_000_000_000 + 10**9
LEFTOVER = (".swap", ".cleaned", ".deleted", ".kfx-tmp")


def records(part):
    """Every valid record of a partition (as a broker would read it: up to the first bad batch)."""
    out = set()
    for f in sorted(os.listdir(part)):
        if f.endswith(".log"):
            for b in iter_batches(os.path.join(part, f)):
                if not b.crc_valid():
                    break
                out.update((r.offset, r.key, r.value) for r in b.records())
    return out


def killed_at(fn, n: int) -> bool:
    """Run ``fn`` in a forked child with ``KFX_CRASH_AT=n``: True when the hook killed it (SIGKILL),
    False when it finished first."""
    pid = os.fork()
    if pid == 0:  # the child: no pytest teardown, no flush -- it dies or it exits
        code = 0
        try:
            os.environ[fsutil.CRASH_ENV] = str(n)
            fsutil.reset_crash_counter()
            fn()
        except BaseException:  # noqa: BLE001
            import traceback
            traceback.print_exc()
            code = 3
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        assert os.WTERMSIG(status) == signal.SIGKILL
        return True
    assert os.WEXITSTATUS(status) == 0, f"the command failed at crash point {n} without being killed"
    return False


def _damaged(tmp, name):
    """A partition with a torn tail, an interrupted swap (the merged first two segments as .swap,
    a .deleted), a stray .cleaned, a lost time index and a temp file of a killed kfx write."""
    part = str(make_partition(tmp / name / "t-0"))
    lay = layout(part)
    with open(lay[0][0], "rb") as a, open(lay[1][0], "rb") as b:
        merged = a.read() + b.read()
    with open(lay[0][0] + ".swap", "wb") as f:
        f.write(merged)
    with open(lay[2][0] + ".deleted", "wb") as f:
        f.write(open(lay[2][0], "rb").read())
    with open(lay[-1][0], "ab") as f:
        f.write(os.urandom(40))
    with open(lay[3][0] + ".cleaned", "wb") as f:
        f.write(b"partial")
    os.remove(lay[4][0].replace(".log", ".timeindex"))
    with open(os.path.join(part, ".00000000000000000000.index.x1.kfx-tmp"), "wb") as f:
        f.write(b"half")
    return part


def _fresh(tmp, name):
    return str(make_partition(tmp / name / "t-0"))


def _indexes_damaged(tmp, name):
    part = _fresh(tmp, name)
    for f in sorted(os.listdir(part)):
        p = os.path.join(part, f)
        if f.endswith(".index"):
            with open(p, "r+b") as fh:
                fh.truncate(os.path.getsize(p) // 2)
        elif f.endswith(".timeindex"):
            os.remove(p)
    return part


COMMANDS = {
    # name: (make the partition, the command, strict: record set exactly before or after); every
    # repair keeps its backup (the default), so the backup's steps are crash points too
    "recover": (_damaged, lambda p: recover(p, index_interval_bytes=INTERVAL), True),
    "recover-no-backup": (_damaged, lambda p: recover(p, index_interval_bytes=INTERVAL, backup=False), True),
    "reindex": (_indexes_damaged, lambda p: reindex(p, index_interval_bytes=INTERVAL), True),
    "compact": (_fresh, lambda p: compact(p, CompactOptions(now=NOW, index_interval_bytes=INTERVAL,
                                                            segment_bytes=8000)), False),
    "compact-dry-run": (_fresh, lambda p: compact(p, CompactOptions(now=NOW, index_interval_bytes=INTERVAL,
                                                                    segment_bytes=8000), dry_run=True), True),
    "retention": (_fresh, lambda p: retention(p, retention_bytes=9000, now=NOW), False),
}


def _only_kafkas_files(part) -> list:
    """What in the log dir and the partition is not Kafka's own: temp files and dirs of kfx, leftovers
    of an interrupted swap or deletion (a backup dir inside the partition is allowed: Kafka's log
    loading reads only the files of a partition dir)."""
    logs = os.path.dirname(part)
    bad = fsutil.temp_artefacts(logs) + fsutil.temp_artefacts(part)
    bad += [n for n in os.listdir(part) if n.endswith(LEFTOVER) or (os.path.isdir(os.path.join(part, n))
                                                                     and n != fsutil.BACKUP_DIR_NAME)]
    bad += [n for n in os.listdir(logs) if n != os.path.basename(part) and os.path.isdir(os.path.join(logs, n))]
    return bad


#: ``make crashpoints`` kills at every point; ``make test`` at about this many points a command,
#: spread evenly over the run, the first and the last included.
QUICK_POINTS = 24


def _count_steps(run, part) -> int:
    calls = []
    fsutil.FAULT_HOOK = calls.append
    try:
        run(part)
    finally:
        fsutil.FAULT_HOOK = None
    return len(calls)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_killed_at_every_crash_point(tmp_path, command):
    make, run, strict = COMMANDS[command]
    ref = make(tmp_path, "ref")
    before = records(ref)
    total = _count_steps(run, ref)
    recover(ref, index_interval_bytes=INTERVAL, backup=False)
    after = records(ref)
    assert after <= before
    if command in ("compact", "retention"):
        assert after < before  # the command really removes records, so "never less" can fail
    if command == "compact-dry-run":
        assert after == before
    stride = 1 if os.environ.get("KFX_CRASH_ALL") else max(1, total // QUICK_POINTS)
    points = sorted(set(range(1, total + 1, stride)) | {total, total + 1})
    tried = 0
    for n in points:
        part = make(tmp_path, f"n{n}")
        if not killed_at(lambda: run(part), n):
            assert n == total + 1, f"{command} finished before crash point {n} of {total}"
            break
        tried += 1
        # the broker restarts: log loading is what kfx recover does
        recover(part, index_interval_bytes=INTERVAL, backup=False)
        now = records(part)
        assert after <= now <= before, f"{command}: records lost at crash point {n}"
        if strict:
            assert now in (before, after), f"{command}: crash point {n}"
        assert not _only_kafkas_files(part), f"{command}: crash point {n}: {_only_kafkas_files(part)}"
        rep = verify([part])
        assert rep.ok, (n, [str(p) for p in rep.problems])
        shutil.rmtree(os.path.dirname(part))
    assert total >= 4 and tried == len(points) - 1, f"{command} has only {total} crash points"
    print(f"\ncrash points survived: {command} {tried} of {total} (records lost 0)")


def test_crash_hook_through_the_cli(tmp_path):
    """KFX_CRASH_AT kills a real `kfx` process (SIGKILL: exit -9) mid-compaction; recover completes
    or rolls back what it left."""
    part = _fresh(tmp_path, "cli")
    before = records(part)
    env = dict(os.environ, **{fsutil.CRASH_ENV: "6"})
    r = subprocess.run([sys.executable, "-m", "kafkaforensics", "compact", part, "--now", str(NOW),
                        "--config", "cleanup.policy=compact"],
                       env=env, capture_output=True, timeout=120)
    assert r.returncode == -signal.SIGKILL
    r = subprocess.run([sys.executable, "-m", "kafkaforensics", "recover", part, "--no-backup"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode in (0, 1) and "Traceback" not in r.stderr, r.stdout + r.stderr  # 1: it repaired something
    assert records(part) <= before and verify([part]).ok
    assert not [f for f in os.listdir(part) if f.endswith(LEFTOVER)]


# ------------------------------------------------------------------ the broker in --writable ----
def _free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _produce_until_killed(port: int, proc, limit: int = 200) -> list:
    """Produce one batch a request (acks=1) until the broker dies; [(offset, value)] acknowledged."""
    import socket
    import struct
    import time

    from kafkaforensics.records.batch import Record
    from kafkaforensics.records.builder import build_v2
    from specs import protocol_messages as P
    from tests.test_serve_hostile import frame
    deadline = time.monotonic() + 30
    while True:
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            break
        except OSError:
            assert proc.poll() is None or proc.returncode == -signal.SIGKILL, proc.returncode
            if proc.poll() is not None:
                return []
            assert time.monotonic() < deadline, "the broker did not start"
            time.sleep(0.05)
    acked = []
    with s:
        for i in range(limit):
            values = [b"v%d-%d" % (i, j) for j in range(1 + i % 3)]
            batch = build_v2([Record(j, 1_700_000_000_000 + i, b"k", v, []) for j, v in enumerate(values)],
                             base_offset=0)
            body = {"Acks": 1, "TimeoutMs": 1000,
                    "TopicData": [{"Name": "w", "PartitionData": [{"Index": 0, "Records": batch}]}]}
            try:
                s.sendall(frame(0, 9, body, corr=i))
                data = b""
                while len(data) < 4 or len(data) < 4 + struct.unpack(">i", data[:4])[0]:
                    chunk = s.recv(1 << 16)
                    if not chunk:
                        return acked
                    data += chunk
            except OSError:
                return acked
            resp = P.RESPONSES[0].read(data[9:], 9)["Responses"][0]["PartitionResponses"][0]
            assert resp["ErrorCode"] == 0, resp
            acked += [(resp["BaseOffset"] + j, v) for j, v in enumerate(values)]
    return acked


def _writable_points(total_hint: int = 120) -> list[int]:
    if os.environ.get("KFX_CRASH_ALL"):
        return list(range(1, total_hint + 1))
    return [1, 2, 3, 5, 8, 13, 21, 34, 55, 89]


def test_writable_broker_killed_at_crash_points(tmp_path):
    """`kfx serve --writable` killed (SIGKILL, KFX_CRASH_AT) at a crash point of its appends and index
    writes while a producer sends acks=1 batches; after `kfx recover` every acknowledged record is
    there, nothing else but what was sent, no leftovers, and verify is clean."""
    from kafkaforensics.log.writer import write_partition
    from kafkaforensics.records.batch import Record
    from kafkaforensics.records.builder import build_v2
    survived = acked_total = 0
    for n in _writable_points():
        logs = tmp_path / f"n{n}" / "logs"
        part = str(logs / "w-0")
        write_partition(part, [build_v2([Record(0, 1_700_000_000_000, b"k", b"seed", [])], base_offset=0)])
        port = _free_port()
        env = dict(os.environ, **{fsutil.CRASH_ENV: str(n)})
        proc = subprocess.Popen([sys.executable, "-m", "kafkaforensics", "serve", str(logs), "--port", str(port),
                                 "--writable", "--state-file", str(tmp_path / f"n{n}" / "state.json")],
                                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            acked = _produce_until_killed(port, proc)
            assert proc.wait(30) == -signal.SIGKILL, f"crash point {n}: the broker was not killed"
        finally:
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(10)
        if n >= 13:  # by then appends were acknowledged: the check below has something to lose
            assert acked, f"crash point {n}: nothing was acknowledged"
        acked_total += len(acked)
        recover(part, index_interval_bytes=4096, backup=False)
        got = {(o, v) for o, _k, v in records(part)}
        assert set(acked) <= got, f"crash point {n}: acknowledged records lost"
        assert not [f for f in os.listdir(part) if f.endswith(LEFTOVER)]
        assert verify([part]).ok
        survived += 1
    print(f"\ncrash points survived: serve --writable {survived} ({acked_total} acknowledged records, lost 0)")


def test_a_scan_written_here_killed_at_any_step_leaves_whole_outputs_and_a_rerun_reclaims_the_rest(tmp_path):
    """`kfx scan`'s outputs written without Spark (spark_jobs.scan.scan_here) killed at every write,
    fsync and rename: each output dir in --out is whole (its part file and _SUCCESS) or absent, what
    is left beside them is a kfx temp dir, and the rerun `--overwrite` makes reclaims those."""
    from cli.spark_start import clear_outputs
    from spark_jobs.scan import ScanRequest, scan_here
    from tests.conftest import SAMPLE
    out = str(tmp_path / "out")
    run = lambda: scan_here(ScanRequest([SAMPLE], out, "records"))  # noqa: E731
    calls = []
    os.makedirs(out)
    fsutil.FAULT_HOOK = calls.append
    try:
        run()
    finally:
        fsutil.FAULT_HOOK = None
    whole = sorted(os.listdir(out))
    assert whole == ["anomalies", "inventory", "races", "records", "replicas"] and len(calls) >= 4 * len(whole)
    for n in range(1, len(calls) + 1):
        shutil.rmtree(out)
        os.makedirs(out)
        assert killed_at(run, n)
        for name in os.listdir(out):
            if fsutil.is_temp(name):
                continue
            files = sorted(os.listdir(os.path.join(out, name)))
            assert name in whole and files[0] == "_SUCCESS" and files[1].endswith(".parquet"), (n, name, files)
        clear_outputs(out)  # what --overwrite does first
        run()
        assert sorted(os.listdir(out)) == whole, n


def test_a_scan_s_outputs_killed_at_any_step_are_each_whole_or_a_temp_dir_a_rerun_reclaims(tmp_path):
    """`kfx scan --level records` over an earlier run's outputs, its driver killed at each step of the
    records export its tasks write (spark_jobs.output.write_planned: the temp dir made, each part
    and _SUCCESS fsynced, the old output renamed aside, the new one renamed in, the old one removed)
    and at each rename of the three outputs it then writes with pyarrow from the summary held in the
    driver (anomalies, inventory, replicas): each output in --out is its old version whole, its new
    one whole, or (between its two renames) absent; what is beside them is kfx temp dirs of dead
    runs; and the next run reclaims those.  Each killed run is a process of its own, its JVM and
    Python workers stopped with its process group."""
    from tests.conftest import SAMPLE
    out = str(tmp_path / "out")
    outputs = ("records", "anomalies", "inventory", "replicas", "races")
    old_part = "part-00000-0ld0ld-c000.snappy.parquet"

    def an_old_output(name):
        os.makedirs(os.path.join(out, name))
        for f in ("_SUCCESS", old_part):
            open(os.path.join(out, name, f), "wb").close()

    def run(env, steps=False):
        code = ("from kafkaforensics import fsutil; from spark_jobs.session import get_spark; "
                "from spark_jobs.scan import ScanRequest, scan; "
                "spark = get_spark('local[1]', console_progress=False, register_source=False); "
                + ("fsutil.FAULT_HOOK = lambda s: print('STEP', s, flush=True); " if steps else "")
                + f"scan(spark, ScanRequest([{SAMPLE!r}], {out!r}, 'records'), driver_bytes=0)")
        p = subprocess.Popen([sys.executable, "-c", code], env={**os.environ, **env},
                             cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        try:
            stdout, err = p.communicate(timeout=180)
        finally:
            try:
                os.killpg(p.pid, signal.SIGKILL)  # its JVM and workers, whatever they do
            except ProcessLookupError:
                pass
        assert p.returncode in (0, -signal.SIGKILL), err.decode()[-2000:]
        return p.returncode, [line.split()[1] for line in stdout.decode().splitlines() if line.startswith("STEP ")]

    for name in outputs:
        an_old_output(name)
    _, steps = run({}, steps=True)  # the driver's steps over earlier outputs, in order
    records_steps = steps.index("delete") + 1  # the records export's commit comes first
    assert steps[:records_steps] == ["write", "fsync", "fsync", "rename", "rename", "delete"]
    assert len(steps) == len(outputs) * records_steps, steps  # then the three outputs written here, alike
    # each step of the records export; each rename of the others, and the last step (the last old
    # output removed); and no kill at all
    points = [n for n in range(1, len(steps) + 2) if n <= records_steps or n >= len(steps) or steps[n - 1] == "rename"]
    seen = {name: set() for name in outputs}
    for n in points:
        for name in outputs:  # every run starts over the old outputs (their temp dirs are left as they are)
            shutil.rmtree(os.path.join(out, name), ignore_errors=True)
            an_old_output(name)
        rc, _ = run({fsutil.CRASH_ENV: str(n)})
        if rc == 0:
            assert n == len(steps) + 1
            break
        names = os.listdir(out)
        temps = [f for f in names if fsutil.is_temp(f)]
        assert temps and set(names) - set(temps) <= set(outputs), (n, names)
        for name in outputs:  # each output's earlier dead temp dirs are reclaimed when it is written
            assert len([t for t in temps if t.startswith(f".{name}.")]) <= 2, (n, names)
        assert all(t.split(".")[1] in outputs for t in temps), (n, names)
        for name in outputs:
            if name not in names:
                seen[name].add("neither")
                continue
            files = sorted(os.listdir(os.path.join(out, name)))
            assert files[0] == "_SUCCESS" and files[1:] and all(f.endswith(".snappy.parquet") for f in files[1:]), files
            seen[name].add("old" if files[1:] == [old_part] else "new")
    assert seen == {name: {"old", "new", "neither"} for name in outputs}, seen
    # the run that finished reclaimed the killed runs' temp dirs (each output's write reclaims its own)
    assert sorted(os.listdir(out)) == sorted(outputs)
    for name in outputs:
        assert old_part not in os.listdir(os.path.join(out, name))
