"""The paths every read command takes (kafkaforensics/log/paths.py), and the files of real disks the
real set is thin on, built here from facts in Kafka's source:

* CheckpointFile/CheckpointReadBuffer: an empty checkpoint, or one with a version line only, holds no
  entries (CheckpointFile creates the file empty when it opens it);
* CleanShutdownFileHandler: the marker's existence means a clean shutdown; brokers up to 3.6 create it
  empty, later ones write the broker epoch (JSON with numbers, or with strings from the handler that
  serialised a string map, or ``version: 0``/``brokerEpoch: N`` lines);
* UnifiedLog's dir names: ``<topic>-<n>.<uuid>-delete`` / ``-future`` / ``-stray`` copies are never the
  live partition;
* LogManager.lockLogDirs: a running broker holds an fcntl lock on ``.lock``; what is being appended at
  the end of its active segment is an append in flight.
"""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import pytest

from kafkaforensics.inspect.analyzer import AnalyzeOptions, analyze
from kafkaforensics.inspect.dump import DumpOptions, dump
from kafkaforensics.inspect.groups import committed_offsets
from kafkaforensics.inspect.verify import verify
from kafkaforensics.log.partition import read_clean_shutdown
from kafkaforensics.log.paths import (FILE, LOG_DIR, PARTITION_DIR, PathUsageError, classify, partition_dirs,
                                      partition_files)
from kafkaforensics.log.writer import write_partition
from kafkaforensics.records.batch import Record
from kafkaforensics.records.builder import build_v2
from kafkaforensics.records.internal_topics import encode_offset_commit

T0 = 1_700_000_000_000
UUID = "5b2e0c1d9a8f4e3ab1c2d3e4f5a6b7c8"


def batch(base, n, value=b"v"):
    return build_v2([Record(base + i, T0 + base + i, b"k", value + b"%d" % (base + i), []) for i in range(n)],
                    base_offset=base)


def log_dir(tmp_path, **parts) -> str:
    """A log dir with meta.properties (v0, as a ZooKeeper-era broker writes it) and the given partitions
    (name -> number of records)."""
    d = tmp_path / "logs"
    d.mkdir()
    (d / "meta.properties").write_text("version=0\nbroker.id=0\n")
    for name, n in parts.items():
        write_partition(str(d / name), [batch(0, n)] if n else [])
    return str(d)


# -- one meaning for every path; a path with nothing Kafka wrote is a usage error ---------------------

def test_classify(tmp_path):
    d = log_dir(tmp_path, **{"t-0": 3})
    assert classify(d).kind == LOG_DIR
    assert classify(os.path.join(d, "t-0")).kind == PARTITION_DIR
    kp = classify(os.path.join(d, "t-0", "00000000000000000000.log"))
    assert (kp.kind, kp.file_kind, kp.log_dir, kp.partition_dir) == (FILE, "log", d, os.path.join(d, "t-0"))
    # salvaged segments in a folder of any name are a partition dir; a folder of app.log files is not
    ev = tmp_path / "evidence"
    ev.mkdir()
    (ev / "00000000000000000000.log").write_bytes(batch(0, 1))
    assert classify(str(ev)).kind == PARTITION_DIR
    apps = tmp_path / "apps"
    apps.mkdir()
    (apps / "server.log").write_text("INFO started\n")
    with pytest.raises(PathUsageError, match="nothing Kafka wrote"):
        classify(str(apps))
    # a parent of a log dir says where the log dir is
    with pytest.raises(PathUsageError, match="it holds the log dir"):
        classify(str(tmp_path))


@pytest.mark.parametrize("cmd", ["verify", "analyze", "dump", "groups"])
def test_nothing_kafka_wrote_is_a_usage_error(tmp_path, kfx, cmd):
    empty = tmp_path / "empty"
    empty.mkdir()
    junk = tmp_path / "junk"
    junk.mkdir()
    (junk / "notes.txt").write_text("x")
    for p, what in ((empty, "an empty directory"), (junk, "nothing Kafka wrote"), (tmp_path / "typo", "no such file"),
                    (junk / "notes.txt", "not a file Kafka writes")):
        r = kfx(cmd, p)
        assert r.exit_code == 2, (cmd, p, r.output)
        lines = [ln for ln in r.output.splitlines() if ln.strip()]
        assert str(p) in r.output and what in r.output and "Traceback" not in r.output
        assert len(" ".join(lines)) < 400


def test_a_command_says_which_paths_it_cannot_act_on(tmp_path, kfx):
    d = log_dir(tmp_path, **{"t-0": 3, "u-0": 2})
    cases = [("analyze", os.path.join(d, "replication-offset-checkpoint"), "a log dir, a partition dir or a .log"),
             ("groups", os.path.join(d, "t-0"), "__consumer_offsets partition dir"),
             ("diff", d, "two partition dirs")]
    open(os.path.join(d, "replication-offset-checkpoint"), "w").write("0\n0\n")
    for cmd, p, want in cases:
        args = (cmd, p, os.path.join(d, "u-0")) if cmd == "diff" else (cmd, p)
        r = kfx(*args)
        assert r.exit_code == 2 and want in r.output, (cmd, r.output)
    assert kfx("diff", "--different-partitions", os.path.join(d, "t-0"), os.path.join(d, "u-0")).exit_code == 1   # two partition dirs: fine


# -- checkpoints as Kafka's CheckpointReadBuffer reads them ----------------------------------------

@pytest.mark.parametrize("text", ["", "0\n", "0"])
def test_empty_checkpoints_hold_no_entries(tmp_path, kfx, text):
    d = log_dir(tmp_path, **{"t-0": 3, "__consumer_offsets-0": 0})
    for name in ("cleaner-offset-checkpoint", "recovery-point-offset-checkpoint"):
        open(os.path.join(d, name), "w").write(text)
    open(os.path.join(d, "__consumer_offsets-0", "leader-epoch-checkpoint"), "w").write(text)
    rep = verify([d])
    assert rep.problems == [] and rep.warnings == []
    r = kfx("dump", os.path.join(d, "cleaner-offset-checkpoint"))
    assert r.exit_code == 0
    assert kfx("analyze", d).exit_code == 0


def test_a_malformed_checkpoint_is_still_a_problem(tmp_path):
    d = log_dir(tmp_path, **{"t-0": 3})
    open(os.path.join(d, "cleaner-offset-checkpoint"), "w").write("0\n2\nt 0 1\n")   # one entry of two
    assert [p.kind for p in verify([d]).problems] == ["checkpoint"]
    # ... and hides none of the other checkpoints' checks
    open(os.path.join(d, "recovery-point-offset-checkpoint"), "w").write("0\n1\nt 0 99\n")
    assert sorted(p.kind for p in verify([d]).problems) == ["checkpoint", "checkpoint-beyond-log-end"]


# -- the clean-shutdown marker in every form brokers wrote -----------------------------------------

@pytest.mark.parametrize("text, fmt, epoch", [
    ("", "empty", None),                                      # LogManager up to 3.6: an empty file
    ('{"version":0,"brokerEpoch":42}', "json", 42),            # CleanShutdownFileHandler's Content
    ('{"brokerEpoch":"42","version":"0"}', "json", 42),        # the handler that wrote a string map
    ("version: 0\nbrokerEpoch: 42", "text", 42),               # the handler that wrote two lines
    ("garbage", "unknown", None),                              # still a clean shutdown: Kafka checks exists()
])
def test_clean_shutdown_marker(tmp_path, kfx, text, fmt, epoch):
    d = log_dir(tmp_path, **{"t-0": 3})
    marker = os.path.join(d, ".kafka_cleanshutdown")
    open(marker, "w").write(text)
    cs = read_clean_shutdown(marker)
    assert (cs["format"], cs["brokerEpoch"]) == (fmt, epoch)
    rep = verify([d])
    assert rep.problems == [] and [n.kind for n in rep.notes if n.kind == "clean-shutdown"] == ["clean-shutdown"]
    a = analyze([d], AnalyzeOptions(now=T0))
    assert [f.kind for f in a.findings if f.kind == "clean-shutdown"] == ["clean-shutdown"] and a.problems == []
    r = kfx("dump", marker, "--format", "json")
    assert r.exit_code == 0 and json.loads(r.stdout)["brokerEpoch"] == epoch


# -- -delete / -future / -stray copies never shadow the live partition ------------------------------

def test_copies_never_shadow_the_live_partition(tmp_path, kfx):
    d = log_dir(tmp_path, **{"t-0": 5, f"t-0.{UUID}-delete": 9, f"t-0.{UUID}-future": 7, f"t-0.{UUID}-stray": 8})
    write_partition(os.path.join(d, "__consumer_offsets-0"),
                    [build_v2([Record(0, T0, *encode_offset_commit("g", "t", 0, 2, commit_ts=T0), [])], base_offset=0)])
    # groups: the lag is against the live t-0 (log end 5), not a copy's
    rows = committed_offsets(d)
    assert [(r["offset"], r["logEndOffset"], r["lag"]) for r in rows] == [(2, 5, 3)]
    # dump: the live dir first, each copy after it under its own name
    names = [os.path.basename(p) for p in partition_dirs(d)]
    assert names == ["__consumer_offsets-0", "t-0", f"t-0.{UUID}-delete", f"t-0.{UUID}-future", f"t-0.{UUID}-stray"]
    # verify and analyze: each copy under its own name, noted as a copy, never held to the live checkpoints
    open(os.path.join(d, "recovery-point-offset-checkpoint"), "w").write("0\n1\nt 0 5\n")
    rep = verify([d])
    assert rep.problems == [] and {n.kind for n in rep.notes} >= {"delete-copy", "future-copy", "stray-copy"}
    live = [p for p in rep.partitions if p["partition"] == "t-0"]
    assert len(live) == 1 and live[0]["logEndOffset"] == 5
    a = analyze([d], AnalyzeOptions(now=T0))
    assert [p.log_end_offset for p in a.partitions if p.partition == "t-0"] == [5]


# -- dump of a partition dir; internal topics decoded by their dir's name --------------------------

def test_dump_partition_dir_in_offset_order_with_decoders_by_name(tmp_path, kfx):
    d = str(tmp_path / "__consumer_offsets-7")
    c = [encode_offset_commit("g", "t", 0, o, commit_ts=T0) for o in range(6)]
    write_partition(d, [build_v2([Record(i, T0, *c[i], [])], base_offset=i) for i in range(6)],
                    segment_bytes=200, index_interval_bytes=1)
    files = partition_files(d)
    logs = [f for f in files if f.endswith(".log")]
    offs = [int(os.path.basename(f)[:20]) for f in files if os.path.basename(f)[:20].isdigit()]
    assert len(logs) > 1 and offs == sorted(offs)
    assert set(os.path.basename(f) for f in files[len(offs):]) <= {"leader-epoch-checkpoint", "partition.metadata"}
    r = kfx("dump", d)   # no flag: __consumer_offsets by its name
    assert r.exit_code == 0
    dumped = [ln.split("Dumping ")[1] for ln in r.stdout.splitlines() if ln.startswith("Dumping ")]
    assert dumped == files
    assert r.stdout.count('"kind": "offset_commit"') == 6
    # as JSON lines: a {"file": ...} line before each file's lines
    j = [json.loads(ln) for ln in kfx("dump", d, "--format", "json").stdout.splitlines()]
    assert [x["file"] for x in j if set(x) == {"file"}] == files
    assert sum(len(x["records"]) for x in j if "records" in x) == 6
    # the flag stays for a file outside such a dir
    loose = tmp_path / "evidence"
    loose.mkdir()
    seg = os.path.join(loose, "00000000000000000000.log")
    with open(logs[0], "rb") as src, open(seg, "wb") as dst:
        dst.write(src.read())
    assert "offset_commit" not in kfx("dump", seg).stdout
    assert "offset_commit" in kfx("dump", seg, "--offsets-decoder").stdout


def test_analyze_file_analyzes_that_segment(tmp_path, kfx):
    p = write_partition(str(tmp_path / "t-0"), [batch(0, 4), batch(4, 4), batch(8, 4)], segment_bytes=150)
    logs = sorted(n for n in os.listdir(p) if n.endswith(".log"))
    assert len(logs) >= 2
    rep = analyze([os.path.join(p, logs[1])], AnalyzeOptions(now=T0))
    assert len(rep.partitions) == 1 and rep.partitions[0].segments == 1
    assert rep.partitions[0].log_start_offset == int(logs[1][:20]) and rep.problems == []
    r = kfx("analyze", os.path.join(p, logs[1]), "--json", "--now", T0)
    assert r.exit_code == 0 and len(json.loads(r.stdout)["partitions"]) == 1


def test_missing_index_is_a_warning_with_the_remedy(tmp_path, kfx):
    d = log_dir(tmp_path, **{"t-0": 5})
    os.remove(os.path.join(d, "t-0", "00000000000000000000.index"))
    rep = verify([d])
    assert rep.problems == [] and [w.kind for w in rep.warnings] == ["missing-index"]
    r = kfx("verify", d)
    assert r.exit_code == 0 and "warning:" in r.stdout and "Kafka rebuilds" in r.stdout
    j = json.loads(kfx("verify", d, "--json").stdout)
    assert j["ok"] and [w["kind"] for w in j["warnings"]] == ["missing-index"] and "kfx reindex" in j["warnings"][0]["remedy"]
    a = analyze([d], AnalyzeOptions(now=T0))
    assert [(f.kind, f.severity) for f in a.findings if f.kind == "missing-index"] == [("missing-index", "warning")]
    assert a.problems == [] and kfx("analyze", d).exit_code == 0


# -- a log dir in use ---------------------------------------------------------------------------

HOLD = """
import fcntl, sys
f = open(sys.argv[1], "r+")
fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)   # F_SETLK, as the JVM's FileChannel.tryLock on Linux
print("locked", flush=True)
sys.stdin.read()
"""


def test_live_log_dir_and_an_append_in_flight(tmp_path, kfx):
    d = log_dir(tmp_path, **{"t-0": 5})
    open(os.path.join(d, ".lock"), "w").close()
    seg = os.path.join(d, "t-0", "00000000000000000000.log")
    whole = batch(5, 3)
    with open(seg, "ab") as f:
        f.write(whole[: len(whole) // 2])   # half of the next batch: the broker is writing it
    assert [p.kind for p in verify([d]).problems] == ["truncated-batch"]   # not live: a torn tail
    holder = subprocess.Popen([sys.executable, "-c", HOLD, os.path.join(d, ".lock")], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        rep = verify([d])
        assert rep.problems == []
        kinds = [n.kind for n in rep.notes]
        assert "live-log-dir" in kinds and "append-in-flight" in kinds
        r = kfx("verify", d)
        said = " ".join(r.stdout.split())  # the notes wrap at the console's width, wherever the path ends
        assert r.exit_code == 0 and "is live" in said and "append in flight" in said
        a = analyze([d], AnalyzeOptions(now=T0))
        assert a.problems == [] and {"live-log-dir", "append-in-flight"} <= {f.kind for f in a.findings}
        one = verify([seg])   # the active segment given alone: the same
        assert one.problems == [] and "append-in-flight" in [n.kind for n in one.notes]
        err = io.StringIO()
        res = dump([os.path.join(d, "t-0")], DumpOptions(), out=io.StringIO(), err=err)
        assert "is live" in err.getvalue() and "append in flight" in err.getvalue() and res.problems == []
        # a partial batch anywhere but at the end of the active segment is damage, live or not
        p2 = write_partition(os.path.join(d, "u-0"), [batch(0, 4), batch(4, 4)], segment_bytes=150)
        first = os.path.join(p2, sorted(n for n in os.listdir(p2) if n.endswith(".log"))[0])
        with open(first, "ab") as f:
            f.write(whole[:10])
        assert [p.file for p in verify([d]).problems] == [first]
        # the active .log preallocated (log.preallocate): zeros to its end are the broker's, not damage
        with open(seg, "r+b") as f:
            f.truncate(os.path.getsize(seg) - len(whole) // 2)
            f.seek(0, 2)
            f.write(bytes(8192))
        rep = verify([d])
        assert [p.file for p in rep.problems] == [first]
        assert any(n.kind == "append-in-flight" and "preallocated" in n.detail for n in rep.notes)
        with open(seg, "ab") as f:   # ... but zeros followed by bytes are damage, live or not
            f.write(b"\x01")
        assert sorted(p.file for p in verify([d]).problems) == sorted([first, seg])
    finally:
        holder.stdin.close()
        holder.wait(timeout=10)


def test_dump_of_lock_says_whether_a_broker_holds_it(tmp_path, kfx):
    d = log_dir(tmp_path, **{"t-0": 1})
    open(os.path.join(d, ".lock"), "w").close()
    out = io.StringIO()
    dump([os.path.join(d, ".lock")], DumpOptions(), out=out)
    assert "not held" in out.getvalue()


def test_analyze_decodes_internal_topics_by_their_dir_name(tmp_path):
    d = log_dir(tmp_path)
    c = encode_offset_commit("g", "t", 0, 3, commit_ts=T0)
    write_partition(os.path.join(d, "__consumer_offsets-4"),
                    [build_v2([Record(0, T0, *c, [])], base_offset=0),
                     build_v2([Record(1, T0, b"\x00\x01\x00\x05ab", b"\x00\x03xx", [])], base_offset=1)])
    rep = analyze([d], AnalyzeOptions(now=T0))
    (p,) = [p for p in rep.partitions if p.partition == "__consumer_offsets-4"]
    assert p.record_types == {"offset_commit": 1}
    bad = [(f.kind, f.first_offset, f.severity) for f in rep.findings if f.kind == "undecodable-record"]
    assert bad == [("undecodable-record", 1, "warning")] and len(rep.problems) == 1


def test_checkpoints_past_the_log_end_say_what_kafka_does(tmp_path):
    """LogLoader: a log end below the log-start checkpoint makes Kafka delete every segment (a problem);
    the high watermark is capped at the log end (a warning: records this copy does not hold)."""
    d = log_dir(tmp_path, **{"t-0": 3})
    open(os.path.join(d, "log-start-offset-checkpoint"), "w").write("0\n1\nt 0 7\n")
    open(os.path.join(d, "replication-offset-checkpoint"), "w").write("0\n1\nt 0 9\n")
    rep = verify([d])
    assert [(p.kind, p.offset) for p in rep.problems] == [("checkpoint-beyond-log-end", 7)]
    assert "deletes every segment" in rep.problems[0].detail
    assert [(w.kind, w.offset) for w in rep.warnings] == [("log-behind-checkpoint", 9)]


def test_missing_time_index_is_a_warning_and_recover_does_what_kafka_does(tmp_path, kfx):
    """A segment with its offset index but no .timeindex: verify and analyze both warn (Kafka creates
    it empty at load and rebuilds it only when it recovers the segment); recover of this dir (no
    clean-shutdown marker) recovers the segment and so rebuilds it; reindex rebuilds it whole."""
    d = log_dir(tmp_path, **{"t-0": 5})
    tidx = os.path.join(d, "t-0", "00000000000000000000.timeindex")
    full = open(tidx, "rb").read()
    os.remove(tidx)
    rep = verify([d])
    assert rep.problems == [] and [(w.kind, w.file) for w in rep.warnings] == [("missing-timeindex", tidx)]
    a = analyze([d], AnalyzeOptions(now=T0))
    assert [(f.kind, f.severity) for f in a.findings] == [("missing-timeindex", "warning")] and a.problems == []
    r = kfx("recover", os.path.join(d, "t-0"), "--no-backup")
    assert r.exit_code == 1 and "timeindex" in r.stdout and open(tidx, "rb").read() == full
    assert verify([d]).warnings == []
    os.remove(tidx)
    r = kfx("reindex", os.path.join(d, "t-0", "00000000000000000000.log"), "--no-backup")
    assert open(tidx, "rb").read() == full and verify([d]).warnings == []
