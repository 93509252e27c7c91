"""Issue 28, do no harm: hostile segments (CRC-valid batches whose headers lie) end in a located
problem, never a traceback, hang or an allocation sized from a header; every repair keeps a backup
that ``kfx restore`` puts back byte-identical; dry runs name no backup and leave nothing behind."""
import json
import os
import shutil
import struct
import tracemalloc

import pytest

from kafkaforensics import fsutil
from kafkaforensics.harness.fuzz import fix_crcs
from kafkaforensics.log.record_columns import decode_columns
from kafkaforensics.log.segment import iter_batches
from kafkaforensics.records.batch import Record
from kafkaforensics.records.builder import build_v2
from kafkaforensics.log.writer import write_partition
from kafkaforensics.repair.cleaner import CompactOptions, compact
from kafkaforensics.repair.recovery import recover
from kafkaforensics.repair.reindex import reindex
from kafkaforensics.repair.restore import restore
from kafkaforensics.repair.retention import retention
from tests.corruption import INTERVAL, layout, make_partition
from tests.conftest import COMPACTED

#: the issue's reproducers, byte for byte
COUNT_2G = bytes.fromhex("00000000000000000000003a0000000002a58dcca800000000000000000000000000000000000000000000"
                         "ffffffffffffffffffffffffffff7ffffffe10000000026b027600")
TS_OVERFLOW = bytes.fromhex("00000000000000000000003a00000000025277dda30000000000007fffffffffffffff7fffffffffffff"
                            "ffffffffffffffffffffffffffffff0000000110000200026b027600")
NOW = 1_700_000_000_000 + 10**9


def _one_segment(tmp_path, data: bytes) -> str:
    part = tmp_path / "logs" / "t-0"
    part.mkdir(parents=True)
    (part / "00000000000000000000.log").write_bytes(data)
    return str(part)


def _tree(d) -> dict:
    """Every file under ``d`` but backups, by relative path -> bytes."""
    out = {}
    for root, dirs, files in os.walk(d):
        dirs[:] = [x for x in dirs if x != fsutil.BACKUP_DIR_NAME]
        for f in files:
            p = os.path.join(root, f)
            out[os.path.relpath(p, d)] = open(p, "rb").read()
    return out


def test_claimed_two_billion_records_take_no_gigabyte(tmp_path, kfx):
    part = _one_segment(tmp_path, COUNT_2G)
    before = _tree(os.path.dirname(part))
    tracemalloc.start()
    try:
        rep = compact(part, CompactOptions(include_active=True), dry_run=True)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 32 << 20, peak
    (p,) = rep.problems
    assert p.file == os.path.join(part, "00000000000000000000.log") and p.position == 0 and p.offset == 0
    assert _tree(os.path.dirname(part)) == before  # nothing created in the log dir
    r = kfx("compact", *COMPACTED, "--dry-run", "--include-active", part)
    assert r.exit_code == 1 and "record count 2147483646" in r.output and "Traceback" not in r.output
    assert sorted(os.listdir(os.path.dirname(part))) == ["t-0"] and os.listdir(part) == ["00000000000000000000.log"]


def _with_count(batch: bytes, count: int) -> bytes:
    data = bytearray(batch)
    struct.pack_into(">i", data, 57, count)
    fix_crcs(data)
    return bytes(data)


def test_negative_record_count_in_a_later_segment_does_not_hang(tmp_path):
    """A later segment's batch claims -2^31 records: the offset map is not sized from it, the
    cleaning makes progress, and the batch is reported where it is."""
    recs = [build_v2([Record(i, 1000 + i, b"k%d" % (i % 3), b"v", [])], base_offset=i) for i in range(30)]
    bad = _with_count(build_v2([Record(30, 2000, b"k1", b"v", [])], base_offset=30), -2**31)
    part = write_partition(str(tmp_path / "logs" / "t-0"), recs + [bad] + [build_v2([Record(31, 3000, b"k", b"v", [])],
                                                                                  base_offset=31)],
                           segment_bytes=500, index_interval_bytes=INTERVAL)
    rep = compact(part, CompactOptions(include_active=True, now=NOW), dry_run=True)
    assert rep.problems and rep.problems[0].offset == 30 and "record count" in rep.problems[0].detail
    assert rep.problems[0].file.startswith(part)


def test_timestamp_past_int64_wraps_as_java_reads_it(tmp_path, kfx):
    (b,) = list(iter_batches(_one_segment(tmp_path, TS_OVERFLOW) + "/00000000000000000000.log"))
    cols = decode_columns([b])
    want = (b.first_timestamp + 1 + 2**63) % 2**64 - 2**63  # firstTimestamp + delta, a Java long sum
    assert cols.timestamp.tolist() == [want] and cols.create_time.tolist() == [want]
    r = kfx("compact", *COMPACTED, "--dry-run", "--include-active", str(tmp_path / "logs" / "t-0"))
    assert r.exit_code == 0 and "Traceback" not in r.output


def test_records_that_do_not_decompress_stop_compact_located_and_unchanged(tmp_path, kfx):
    recs = [build_v2([Record(3 * i + j, 1000 + i, b"k%d" % (i % 2), b"v" * 40, []) for j in range(3)],
                     base_offset=3 * i, codec=1) for i in range(10)]
    data = bytearray(recs[5])
    data[61 + 10:61 + 20] = b"\xff" * 10  # inside the gzip stream, CRC recomputed
    fix_crcs(data)
    recs[5] = bytes(data)
    part = write_partition(str(tmp_path / "logs" / "t-0"), recs, segment_bytes=400, index_interval_bytes=INTERVAL)
    before = _tree(os.path.dirname(part))
    for args in (("--dry-run",), ()):
        r = kfx("compact", *COMPACTED, "--include-active", "--now", str(NOW), "--json", *args, part)
        assert r.exit_code == 1, r.output
        out = json.loads(r.output)
        (p,) = out["problems"]
        assert p["offset"] == 15 and p["file"].startswith(part) and p["kind"] in ("compression", "record")
        assert out["backup"] is None  # nothing was changed, so nothing was kept
    assert _tree(os.path.dirname(part)) == before


# ------------------------------------------------------------------ backups and restore ----
def _damage_tail(part):
    lay = layout(part)
    seg, batches = lay[2]
    with open(seg, "r+b") as f:
        f.seek(batches[1][0] + 70)
        f.write(b"\x00\x01\x02")


def _leftovers(part):
    lay = layout(part)
    with open(lay[0][0], "rb") as a, open(lay[1][0], "rb") as b:
        merged = a.read() + b.read()
    with open(lay[0][0] + ".swap", "wb") as f:
        f.write(merged)
    with open(lay[3][0] + ".cleaned", "wb") as f:
        f.write(b"partial")
    with open(os.path.join(part, ".00000000000000000000.index.x1.kfx-tmp"), "wb") as f:
        f.write(b"half")


def _bad_indexes(part):
    for f in sorted(os.listdir(part)):
        p = os.path.join(part, f)
        if f.endswith(".index"):
            with open(p, "r+b") as fh:
                fh.truncate(os.path.getsize(p) // 2)
        elif f.endswith(".timeindex"):
            os.remove(p)


REPAIRS = {
    "recover-truncation": (_damage_tail, lambda p, **kw: recover(p, index_interval_bytes=INTERVAL, **kw)),
    "recover-leftovers": (_leftovers, lambda p, **kw: recover(p, index_interval_bytes=INTERVAL, **kw)),
    "reindex": (_bad_indexes, lambda p, **kw: reindex(p, index_interval_bytes=INTERVAL, **kw)),
    "compact": (lambda p: None, lambda p, **kw: compact(p, CompactOptions(now=NOW, index_interval_bytes=INTERVAL,
                                                                          segment_bytes=8000), **kw)),
    "retention": (lambda p: None, lambda p, **kw: retention(p, retention_bytes=9000, now=NOW, **kw)),
}


@pytest.mark.parametrize("kind", sorted(REPAIRS))
def test_restore_puts_the_partition_back_byte_identical(tmp_path, kind):
    damage, run = REPAIRS[kind]
    logs = tmp_path / "logs"
    part = str(make_partition(logs / "t-0"))
    (logs / "log-start-offset-checkpoint").write_text("0\n1\nt 0 0\n")
    damage(part)
    before = _tree(str(logs))
    dry = run(part, dry_run=True)
    assert dry.backup is None and _tree(str(logs)) == before  # a dry run names no backup, changes nothing
    assert not os.path.exists(os.path.join(part, fsutil.BACKUP_DIR_NAME))
    rep = run(part)
    assert rep.backup and os.path.isfile(os.path.join(rep.backup, fsutil.MANIFEST))
    changed = _tree(str(logs))
    assert changed != before
    undone = restore(rep.backup)
    assert undone.restored
    assert _tree(str(logs)) == before
    again = restore(rep.backup)  # a second restore changes nothing
    assert not again.restored and _tree(str(logs)) == before


def test_truncation_backup_holds_the_cut_bytes_only(tmp_path):
    part = str(make_partition(tmp_path / "logs" / "t-0"))
    _damage_tail(part)
    seg = layout(part)[2][0]
    whole = open(seg, "rb").read()
    later = sum(os.path.getsize(s) for s, _ in layout(part)[3:])
    rep = recover(part, index_interval_bytes=INTERVAL)
    cut = rep.truncated_at["position"]
    changes = json.load(open(os.path.join(rep.backup, fsutil.MANIFEST)))["changes"]
    (t,) = [c for c in changes if c["op"] == "truncate"]
    assert t["file"] == seg and t["at"] == cut and t["size"] == len(whole)
    assert open(os.path.join(rep.backup, t["copy"]), "rb").read() == whole[cut:]
    segments_kept = [c for c in changes if c["op"] == "delete" and c["file"].endswith(".log")]
    assert sum(os.path.getsize(os.path.join(rep.backup, c["copy"])) for c in segments_kept) == later
    logs_in_backup = sum(os.path.getsize(os.path.join(rep.backup, n)) for n in os.listdir(rep.backup) if ".log" in n)
    assert logs_in_backup == later + len(whole) - cut  # no whole copy of the truncated segment


def test_restore_cli(tmp_path, kfx):
    part = str(make_partition(tmp_path / "logs" / "t-0"))
    _damage_tail(part)
    before = _tree(part)
    r = kfx("recover", part, "--json", "--backup-dir", str(tmp_path / "bk"))
    assert r.exit_code == 1 and json.loads(r.output)["backup"] == str(tmp_path / "bk")
    r = kfx("restore", str(tmp_path / "bk"), "--dry-run")
    assert r.exit_code == 0 and "would restore" in r.output and _tree(part) != before
    r = kfx("restore", str(tmp_path / "bk"))
    assert r.exit_code == 0 and _tree(part) == before
    assert kfx("restore", str(tmp_path)).exit_code == 2  # not a backup: one line, exit 2


def test_compact_and_retention_take_the_backup_options(tmp_path, kfx):
    part = str(make_partition(tmp_path / "a" / "t-0"))
    r = kfx("compact", *COMPACTED, part, "--now", str(NOW), "--segment-bytes", "8000", "--json", "--no-backup")
    assert r.exit_code == 0 and json.loads(r.output)["backup"] is None
    assert not os.path.exists(os.path.join(part, fsutil.BACKUP_DIR_NAME))
    part = str(make_partition(tmp_path / "b" / "t-0"))
    r = kfx("retention", part, "--retention-bytes", "9000", "--now", str(NOW), "--json",
            "--backup-dir", str(tmp_path / "bk"))
    assert r.exit_code == 0 and json.loads(r.output)["backup"] == str(tmp_path / "bk")
    assert kfx("compact", *COMPACTED, part, "--no-backup", "--backup-dir", "x").exit_code == 2
    shutil.rmtree(tmp_path / "bk")


# --------------------------------------------------------------------- streamed JSON ----
_BUILD = """
import sys
from kafkaforensics.records.builder import build_v2
from kafkaforensics.records.batch import Record
recs = [Record(i, 1700000000000, b'key-%d' % i, (b'value-%08d-' % i) * 85, []) for i in range(96 * 1024)]
open(sys.argv[1], 'wb').write(build_v2(recs, base_offset=0, codec=4))
"""
# the peak is this process's own VmHWM: getrusage's ru_maxrss carries over exec the peak of the
# process that started it (the pytest process, ~400 MB late in a full run), not the dump's
_DUMP_PEAK = """
import atexit, sys
def peak():
    hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM:')][0].split()[1]
    sys.stderr.write('peak-kb %s\\n' % hwm)
atexit.register(peak)
sys.argv = ['kfx', 'dump', '--deep', '--format', 'json', sys.argv[1]]
from cli.main import main
main()
"""


def test_deep_json_dump_streams_a_batch_of_96_mib_record_by_record(tmp_path):
    """One zstd batch holding 96 MiB (120 MiB with keys and framing) of records, in a frame that
    does not state its size (as the Java producer writes them): the dump's peak memory stays near
    the decompressed records once (the columns are views of that body; 177 MB measured), where
    building the batch's JSON whole took 728 MB and joining the decompressed pieces 282-404 MB;
    the output is the same lines as before."""
    import subprocess
    import sys
    seg = str(tmp_path / "00000000000000000000.log")
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    subprocess.run([sys.executable, "-c", _BUILD, seg], check=True, env=env, timeout=300)
    out = tmp_path / "dump.json"
    with open(out, "wb") as f:
        r = subprocess.run([sys.executable, "-c", _DUMP_PEAK, seg], stdout=f, stderr=subprocess.PIPE, env=env,
                           timeout=300)
    assert r.returncode == 0, r.stderr
    peak_mb = int(r.stderr.split()[-1]) / 1024
    assert peak_mb < 330, peak_mb
    with open(out) as f:
        (line,) = f.readlines()
    obj = json.loads(line)
    assert obj["count"] == len(obj["records"]) == 96 * 1024 and obj["records"][-1]["offset"] == 96 * 1024 - 1


# ------------------------------------------------------------------ what a repair drops ----
def test_recover_dry_run_counts_what_the_truncation_drops_and_salvage_can_copy(tmp_path, kfx):
    """The dry run reports the bytes cut and removed, and the batches in them that still pass their
    CRC: exactly what `kfx salvage` recovers from those bytes."""
    from kafkaforensics.repair.salvage import salvage
    part = str(make_partition(tmp_path / "logs" / "t-0"))
    _damage_tail(part)
    lay = layout(part)
    r = kfx("recover", part, "--dry-run", "--json")
    out = json.loads(r.output)
    d, cut = out["dropped"], out["truncatedAt"]["position"]
    assert out["backup"] is None and not os.path.exists(os.path.join(part, fsutil.BACKUP_DIR_NAME))
    seg = lay[2][0]
    (tmp_path / "tail.log").write_bytes(open(seg, "rb").read()[cut:])
    later = [s for s, _ in lay[3:]]
    assert d["bytes"] == os.path.getsize(seg) - cut + sum(os.path.getsize(s) for s in later)
    sv = salvage([str(tmp_path / "tail.log"), *later], str(tmp_path / "out"), dry_run=True)
    assert (d["batches"], d["records"]) == (sv.batches, sv.records) and sv.batches > 30
    assert d["firstOffset"] == sv.recovered[0]["first"] and d["lastOffset"] == sv.recovered[-1]["last"]
    assert d["damagedBytes"] == sum(s["bytes"] for s in sv.skipped) > 0
    text = kfx("recover", part, "--dry-run").output
    assert f"would drop {d['bytes']} bytes" in text and f"{d['batches']} valid batches" in text
    assert "backup" not in text
    # done: what it dropped is in the backup, and salvage copies exactly those batches out of it
    rep = recover(part, index_interval_bytes=INTERVAL)
    assert rep.dropped.to_json() == d
    sv = salvage([rep.backup], str(tmp_path / "out2"), dry_run=True)
    assert (sv.batches, sv.records) == (d["batches"], d["records"])


def test_retention_and_compact_report_what_they_delete(tmp_path):
    from kafkaforensics.log.segment import iter_batches
    part = str(make_partition(tmp_path / "logs" / "t-0"))
    rep = retention(part, retention_bytes=9000, now=NOW, dry_run=True)
    gone = [os.path.join(part, x["segment"]) for x in rep.deleted]
    batches = [b for s in gone for b in iter_batches(s)]
    assert rep.dropped.bytes == sum(os.path.getsize(s) for s in gone) and rep.dropped.batches == len(batches)
    assert rep.dropped.records == sum(b.count for b in batches)
    assert (rep.dropped.first_offset, rep.dropped.last_offset) == (batches[0].base_offset, batches[-1].last_offset)
    c = compact(part, CompactOptions(now=NOW, segment_bytes=8000), dry_run=True).to_json()
    assert c["dropped"]["records"] == c["records"]["before"] - c["records"]["after"] > 0
    assert c["dropped"]["bytes"] == c["bytes"]["before"] - c["bytes"]["after"] > 0


# ------------------------------------------------------------------ temp artefacts ----
def test_temp_artefacts_are_reported_by_verify_and_removed_by_recover(tmp_path, kfx):
    logs = tmp_path / "logs"
    part = str(make_partition(logs / "t-0"))
    made = [logs / ".kfx-compact-abcd1234", logs / ".compact.999999.x1y2.kfx-tmp",
            logs / ".recovery-point-offset-checkpoint.q1w2.kfx-tmp", logs / "t-0" / ".00000000000000000000.index.z.kfx-tmp"]
    for p in made[:2]:
        (p / "t-0").mkdir(parents=True)
        (p / "t-0" / "00000000000000000000.log").write_bytes(b"copy")
    for p in made[2:]:
        p.write_bytes(b"half")
    r = kfx("verify", str(logs), "--json")
    assert r.exit_code == 1
    out = json.loads(r.output)
    temps = [p for p in out["problems"] if p["kind"] == "kfx-temp"]
    assert sorted(p["file"] for p in temps) == sorted(map(str, made))
    assert all(p["remedy"].startswith("kfx recover ") for p in temps)
    rep = recover(part, dry_run=True)
    assert {a.file for a in rep.actions if a.action == "delete"} >= set(map(str, made))
    assert all(p.exists() for p in made)  # a dry run removes nothing
    recover(part)
    assert not any(p.exists() for p in made)
    assert kfx("verify", str(logs)).exit_code == 0


def test_every_writing_command_cleans_up_what_a_killed_run_left(tmp_path):
    for name, run in (("compact", lambda p: compact(p, CompactOptions(now=NOW, segment_bytes=8000))),
                      ("retention", lambda p: retention(p, retention_bytes=9000, now=NOW))):
        logs = tmp_path / name
        part = str(make_partition(logs / "t-0"))
        (logs / ".kfx-compact-abcd1234" / "t-0").mkdir(parents=True)
        (logs / "t-0" / ".leader-epoch-checkpoint.a1.kfx-tmp").write_bytes(b"x")
        run(part)
        assert not fsutil.temp_artefacts(str(logs)) and not fsutil.temp_artefacts(part), name


def test_killed_dry_run_leaves_nothing_in_the_log_dir_and_its_work_dir_is_reclaimed(tmp_path):
    from tests.test_crash_points import killed_at
    logs = tmp_path / "logs"
    part = str(make_partition(logs / "t-0"))
    before = _tree(str(logs))
    run = lambda: compact(part, CompactOptions(now=NOW, segment_bytes=8000), dry_run=True)  # noqa: E731
    calls = []
    fsutil.FAULT_HOOK = calls.append
    try:
        run()
    finally:
        fsutil.FAULT_HOOK = None
    assert len(calls) > 5
    import tempfile
    for n in (1, len(calls) // 2, len(calls)):
        assert killed_at(run, n)
        assert _tree(str(logs)) == before and sorted(os.listdir(logs)) == ["t-0"]
    # the killed runs' work dirs, outside the log dir (those of live processes are another test's, running beside)
    left = [p for p in fsutil.temp_artefacts(tempfile.gettempdir(), live=False) if ".compact." in p]
    assert left
    run()  # the next run reclaims those of dead processes
    assert not [p for p in fsutil.temp_artefacts(tempfile.gettempdir()) if p in left]


# ------------------------------------------------------------------ no space, no permission ----
def _records(part):
    from tests.test_crash_points import records
    return records(part)


def _temps_under(d) -> list:
    return [os.path.join(r, n) for r, ds, fs in os.walk(d) for n in ds + fs if fsutil.is_temp(n)]


@pytest.mark.parametrize("kind", sorted(REPAIRS))
@pytest.mark.parametrize("err", ["ENOSPC", "EACCES"])
def test_a_failed_write_at_any_step_is_one_line_and_leaves_no_temp(tmp_path, kind, err):
    """ENOSPC/EACCES injected at each file-system step of each repair (fsutil.FAULT_HOOK): the
    repair raises one WriteFailed line (what, where; bytes needed for a write), leaves no temp file
    anywhere (log dir, partition, backup), and one `recover` later no record is lost."""
    import errno as E
    damage, run = REPAIRS[kind]
    code = getattr(E, err)

    def fresh(name):
        logs = tmp_path / name / "logs"
        part = str(make_partition(logs / "t-0"))
        damage(part)
        return part
    ref = fresh("ref")
    before = _records(ref)
    calls = []
    fsutil.FAULT_HOOK = calls.append
    try:
        run(ref)
    finally:
        fsutil.FAULT_HOOK = None
    after = _records(ref)
    stride = 1 if os.environ.get("KFX_CRASH_ALL") else max(1, len(calls) // 12)  # `make crashpoints`: every step
    tried = 0
    for n in sorted(set(range(0, len(calls), stride)) | {len(calls) - 1}):
        part = fresh(f"n{n}")
        planted = set(_temps_under(tmp_path / f"n{n}"))  # the damage's own leftovers of a "killed" run

        def hook(name, left=[n]):
            if left[0] == 0:
                raise OSError(code, os.strerror(code))
            left[0] -= 1
        fsutil.FAULT_HOOK = hook
        try:
            with pytest.raises(fsutil.WriteFailed) as ei:
                run(part)
        finally:
            fsutil.FAULT_HOOK = None
        msg = str(ei.value)
        assert "\n" not in msg and os.strerror(code) in msg and str(tmp_path) in msg, msg
        if calls[n] in ("write", "backup") and msg.startswith(("writing", "backing up")):
            assert "bytes needed" in msg, msg
        assert set(_temps_under(tmp_path / f"n{n}")) <= planted, (n, calls[n])
        recover(part, index_interval_bytes=INTERVAL, backup=False)
        assert after <= _records(part) <= before, (n, calls[n])
        shutil.rmtree(tmp_path / f"n{n}")
        tried += 1
    print(f"\n{err} at {tried} of {len(calls)} steps: {kind} (one line each, no temp left, records lost 0)")


def test_no_space_on_a_real_small_filesystem(tmp_path, kfx):
    """A 512 KiB tmpfs (root only) nearly full: `kfx compact` (and its backup) fails with one line,
    exit 2, saying how many bytes it needed; nothing of the attempt is left but the backup of what
    it already did, and the partition's records are all still there."""
    import subprocess
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root; test_a_failed_write_at_any_step_is_one_line covers ENOSPC")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", str(mnt)]).returncode:
        pytest.skip("this machine does not allow mounting a tmpfs")
    ref = str(make_partition(tmp_path / "ref" / "logs" / "t-0"))
    compact(ref, CompactOptions(now=NOW, segment_bytes=8000), backup=False)
    after = _records(ref)  # what a compaction that had the space leaves
    try:
        part = str(make_partition(mnt / "logs" / "t-0"))
        before = _records(part)
        assert after < before
        st = os.statvfs(str(mnt))
        with open(mnt / "filler", "wb") as f:
            f.write(b"\0" * (st.f_bavail * st.f_frsize - 6 * 4096))
        r = kfx("compact", *COMPACTED, part, "--now", str(NOW), "--segment-bytes", "8000")
        assert r.exit_code == 2, r.output
        (line,) = r.output.strip().splitlines()
        assert "No space left on device" in line and "bytes needed" in line and str(mnt) in line, line
        assert not _temps_under(mnt)
        recover(part, backup=False)
        assert after <= _records(part) <= before  # a group may have been swapped in before the space ran out
        os.remove(mnt / "filler")
    finally:
        subprocess.run(["umount", str(mnt)])


# ------------------------------------------------------------------ modes and owners ----
def _owned_by(d, uid, gid):
    for root, dirs, files in os.walk(d):
        for n in dirs + files:
            p = os.path.join(root, n)
            os.chown(p, uid, gid, follow_symlinks=False)
    os.chown(d, uid, gid)


@pytest.mark.parametrize("kind", sorted(REPAIRS))
def test_new_files_take_kafkas_modes_and_the_partitions_owner(tmp_path, kind):
    """Under umask 022 every file a repair creates is 0644 and every dir 0755 (Kafka's: 0666/0777
    less the umask), and run as root on a partition a `kafka` user owns (uid 4321 here) they belong
    to that user, so the broker can open, rename and delete them."""
    damage, run = REPAIRS[kind]
    logs = tmp_path / "logs"
    part = str(make_partition(logs / "t-0"))
    (logs / "log-start-offset-checkpoint").write_text("0\n1\nt 0 0\n")
    damage(part)
    for r, dirs, files in os.walk(logs):  # what was there before: Kafka's modes too
        for n in files:
            os.chmod(os.path.join(r, n), 0o644)
    root = os.geteuid() == 0
    if root:
        _owned_by(str(logs), 4321, 4322)
    old = os.umask(0o022)
    try:
        rep = run(part)
    finally:
        os.umask(old)
    assert rep.backup
    made = 0
    for r, dirs, files in os.walk(logs):
        for n in dirs + files:
            p = os.path.join(r, n)
            st = os.lstat(p)
            if root:
                assert (st.st_uid, st.st_gid) == (4321, 4322), p
            if os.path.isdir(p):
                assert st.st_mode & 0o777 == 0o755, (p, oct(st.st_mode))
            else:
                assert st.st_mode & 0o777 == 0o644, (p, oct(st.st_mode))
            made += 1
    assert made


# ------------------------------------------------------------------ analyze past damage ----
@pytest.mark.parametrize("damage", ["crc", "framing"])
def test_analyze_reads_past_a_bad_batch_and_reports_the_valid_batches_after_it(tmp_path, damage):
    from kafkaforensics.inspect.analyzer import AnalyzeOptions, analyze
    part = str(make_partition(tmp_path / "logs" / "t-0", n=120))
    seg, batches = max(layout(part), key=lambda x: len(x[1]))
    pos, size, base, last = batches[1]
    with open(seg, "r+b") as f:
        if damage == "crc":
            f.seek(pos + size - 3)
            f.write(b"\xff\xee")
        else:
            f.seek(pos + 8)
            f.write(b"\x7f\xff\xff\xf0")  # a size past the segment's end: framing breaks here
    rep = analyze([part], AnalyzeOptions(now=NOW))
    after = batches[2:]
    (f,) = [x for x in rep.findings if x.kind == "valid-after-damage"]
    assert (f.first_offset, f.last_offset, f.position) == (after[0][2], after[-1][3], pos)
    assert f"{len(after)} valid batches" in f.explanation and "kfx salvage" in f.remedy
    p = rep.partitions[0]
    if damage == "crc":  # stepped over: everything after it analysed, no gap invented for it
        assert p.log_end_offset == layout(part)[-1][1][-1][3] + 1
        assert not [x for x in rep.findings if x.kind == "offset-gap"]


def test_a_cleaning_stopped_by_a_bad_batch_says_it_drops_nothing(tmp_path):
    part = _one_segment(tmp_path, COUNT_2G)
    c = compact(part, CompactOptions(include_active=True), dry_run=True).to_json()
    assert c["problems"] and c["dropped"] == {"batches": 0, "records": 0, "bytes": 0, "segmentsRewritten": 0}


def test_a_record_attributes_byte_above_127_is_rewritten_as_kafka_writes_it(tmp_path):
    """Found by fuzzing compact: a record whose (unused) attributes byte is >= 0x80 made the rebuild
    of its batch raise struct.error; Kafka's DefaultRecord.writeTo writes 0 there."""
    from kafkaforensics.records.builder import encode_record
    assert encode_record(0, 0, b"k", b"v", (), 0x90)[1] == 0x90  # any int8 bit pattern encodes
    batch = build_v2([Record(i, 1000 + i, b"k", b"v%d" % i, [], attributes=0x90) for i in range(4)], base_offset=0)
    part = write_partition(str(tmp_path / "logs" / "t-0"), [batch], index_interval_bytes=INTERVAL)
    rep = compact(part, CompactOptions(include_active=True, now=NOW))
    assert not rep.problems and rep.stats.records_after == 1
    (b,) = list(iter_batches(os.path.join(part, "00000000000000000000.log")))
    assert [(r.offset, r.attributes) for r in b.records()] == [(3, 0)]  # rebuilt: attributes 0, as Kafka


def test_restore_refuses_a_log_dir_a_running_broker_holds(tmp_path):
    part = str(make_partition(tmp_path / "logs" / "t-0"))
    _damage_tail(part)
    rep = recover(part, index_interval_bytes=INTERVAL)
    before = _tree(part)
    import subprocess
    import sys
    lock = str(tmp_path / "logs" / ".lock")
    open(lock, "w").close()
    holder = subprocess.Popen([sys.executable, "-c", "import fcntl, sys, time; f = open(sys.argv[1], 'r+'); "
                               "fcntl.lockf(f, fcntl.LOCK_EX); print('locked', flush=True); time.sleep(60)", lock],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(ValueError, match="running broker"):
            restore(rep.backup)
        assert _tree(part) == before
    finally:
        holder.kill()
        holder.wait()
    assert restore(rep.backup).restored



def test_the_work_dir_of_a_running_kfx_is_left_alone(tmp_path):
    logs = tmp_path / "logs"
    part = str(make_partition(logs / "t-0"))
    mine = logs / f".compact.{os.getpid()}.abc123.kfx-tmp"  # this process is alive
    dead = logs / ".compact.999999999.abc123.kfx-tmp"
    for d in (mine, dead):
        d.mkdir()
    acts = {a.file for a in recover(part, dry_run=True).actions}
    assert str(dead) in acts and str(mine) not in acts
    retention(part, retention_bytes=9000, now=NOW)
    assert mine.exists() and not dead.exists()


def test_restore_puts_back_only_the_partitions_entries_of_a_shared_checkpoint(tmp_path):
    """Retention on a-0, then on b-0 (same log dir): restoring a-0's backup gives a-0 its
    log-start-offset entry back and leaves b-0's as b-0's own retention set it."""
    from kafkaforensics.log.checkpoint_file import read_offsets
    logs = tmp_path / "logs"
    a, b = str(make_partition(logs / "a-0")), str(make_partition(logs / "b-0", seed=2))
    ck = logs / "log-start-offset-checkpoint"
    ck.write_text("0\n2\na 0 0\nb 0 0\n")
    before_a = _tree(a)
    ra = retention(a, retention_bytes=9000, now=NOW)
    rb = retention(b, retention_bytes=9000, now=NOW)
    assert ra.log_start_offset > 0 and rb.log_start_offset > 0
    undone = restore(ra.backup)
    assert any("entries of a-0" in r["detail"] for r in undone.restored)
    assert read_offsets(str(ck)) == {("a", 0): 0, ("b", 0): rb.log_start_offset}
    assert _tree(a) == before_a


def test_restore_skips_a_truncation_whose_copy_the_manifest_lacks(tmp_path):
    """A manifest's truncate entry without its copy of the bytes cut (a hand-edited or damaged
    manifest) is skipped as not undoable, as a replace without its copy is (was a TypeError)."""
    f, bdir = tmp_path / "00000000000000000000.log", tmp_path / "backup"
    f.write_bytes(b"x" * 100)
    fsutil.truncate_file(str(f), 40, backup_dir=str(bdir))
    manifest = bdir / fsutil.MANIFEST
    doc = json.loads(manifest.read_text())
    assert [c["op"] for c in doc["changes"]] == ["truncate"]
    del doc["changes"][0]["copy"]
    manifest.write_text(json.dumps(doc))
    rep = restore(str(bdir))
    assert not rep.restored and [s["op"] for s in rep.skipped] == ["truncate"]
    assert f.read_bytes() == b"x" * 40


def test_an_action_without_what_it_needs_is_refused_by_name(tmp_path):
    """A truncate without its size (a write without its data, a rename without its target) is a
    ValueError naming the action and the field, and the file is untouched (was a TypeError)."""
    from kafkaforensics.repair.actions import Action, apply_actions
    f = tmp_path / "00000000000000000000.log"
    f.write_bytes(b"x" * 10)
    for action, field in (("truncate", "size"), ("write", "data"), ("rename", "target")):
        with pytest.raises(ValueError, match=f"{action} .*: the action has no {field}"):
            apply_actions([Action(action, str(f), "planned")], None)
    assert f.read_bytes() == b"x" * 10
