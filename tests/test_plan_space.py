"""`kfx recover --plan-space LOG_DIR`: the bytes Kafka's start-up would write (an active segment's indexes
preallocated to segment.index.bytes, a rolled segment's rebuilt index trimmed to its entries, a swap
completed by a rename), the bytes free (os.statvfs, faked), and the segments that could be moved: only
those below every group's commit and past retention, oldest first, the fewest that cover the shortfall.
Nothing is written."""
import json
import os
import shutil
from collections import namedtuple

import pytest

from kafkaforensics.records.batch import Record
from kafkaforensics.records.builder import build_v2
from kafkaforensics.log.partition import find_partitions
from kafkaforensics.log.writer import write_partition
from kafkaforensics.repair import plan_space
from tests import realdirs
from tests.test_analyzer import T0
from tests.test_explain import _commit

MINUTE = 60_000
DAY = 24 * 60 * MINUTE
MAX_INDEX = 10 << 20  # segment.index.bytes' default
FakeVfs = namedtuple("FakeVfs", "f_bavail f_frsize")


def _minutes(path, n=40, start=0):
    """``n`` batches of ~1 KB a minute apart from T0; 10 KB segments (9 batches each: two offset-index
    entries at Kafka's default index.interval.bytes)."""
    batches = [build_v2([Record(i, T0 + i * MINUTE, b"k%d" % i, b"x" * 1000)], base_offset=i)
               for i in range(start, start + n)]
    return write_partition(path, batches, segment_bytes=10000)


def _segments(p):
    return sorted(int(f[:-4]) for f in os.listdir(p) if f.endswith(".log"))


def _name(base, suffix):
    return "%020d%s" % (base, suffix)


@pytest.fixture
def planted(tmp_path):
    """A log dir: ``ret-0`` (the active segment's .index missing, a rolled segment's .index missing, a
    swap file completing the segment before it), ``other-0`` (committed by one group only), ``lone-0``
    (no group committed for it), and the groups' commits: g at ret 0 offset 30, h at ret 0 offset 27."""
    logs = tmp_path / "logs"
    ret = _minutes(str(logs / "ret-0"))
    other = _minutes(str(logs / "other-0"))
    _minutes(str(logs / "lone-0"))
    write_partition(str(logs / "__consumer_offsets-0"),
                    [_commit(0, "g", "ret", 0, 30), _commit(1, "h", "ret", 0, 27), _commit(2, "g", "other", 0, 20)])
    segs = _segments(ret)
    sizes = {"rolled": os.path.getsize(os.path.join(ret, _name(segs[1], ".index"))),
             "swapped": os.path.getsize(os.path.join(ret, _name(segs[3], ".index"))),
             "active_time": os.path.getsize(os.path.join(ret, _name(segs[-1], ".timeindex")))}
    os.remove(os.path.join(ret, _name(segs[-1], ".index")))
    os.remove(os.path.join(ret, _name(segs[1], ".index")))
    # a swap of segment 3's bytes (as the cleaner leaves it after renaming .cleaned to .swap, before the rest)
    shutil.copy(os.path.join(ret, _name(segs[3], ".log")), os.path.join(ret, _name(segs[3], ".log.swap")))
    return str(logs), ret, other, segs, sizes


def _state(path):
    """Every file under ``path``: (size, mtime_ns, bytes)."""
    out = {}
    for root, _dirs, files in os.walk(path):
        for f in files:
            p = os.path.join(root, f)
            st = os.stat(p)
            with open(p, "rb") as fh:
                out[p] = (st.st_size, st.st_mtime_ns, fh.read())
    return out


def _fake_free(monkeypatch, free):
    real = os.statvfs
    monkeypatch.setattr(os, "statvfs", lambda p: FakeVfs(free, 1) if "logs" in str(p) else real(p))


def _plan(kfx, logs, *extra):
    r = kfx("recover", "--plan-space", logs, "--json", *extra)
    return r.exit_code, json.loads(r.stdout)["logDirs"][0]


def test_bytes_needed_as_kafka_writes_them(planted, kfx, monkeypatch):
    logs, ret, _other, segs, sizes = planted
    _fake_free(monkeypatch, 1 << 40)
    code, plan = _plan(kfx, logs, "--now", T0 + 8 * DAY)
    assert code == 0 and plan["fits"] and plan["dryRun"] and plan["moves"] == []
    needs = {os.path.relpath(n["file"], logs): n["bytes"] for n in plan["needs"]}
    # the active segment's indexes: preallocated to segment.index.bytes, rounded to 8- and 12-byte entries
    assert needs[os.path.join("ret-0", _name(segs[-1], ".index"))] == MAX_INDEX
    assert needs[os.path.join("ret-0", _name(segs[-1], ".timeindex"))] == MAX_INDEX - MAX_INDEX % 12 - sizes["active_time"]
    for part in ("other-0", "lone-0", "__consumer_offsets-0"):  # every log's active segment, missing index or not
        assert needs[os.path.join(part, "%020d.index" % _segments(os.path.join(logs, part))[-1])] > 0
    # a rolled segment's rebuilt index: trimmed to its entries (the size Kafka's recovery wrote it at)
    assert sizes["rolled"] > 0 and needs[os.path.join("ret-0", _name(segs[1], ".index"))] == sizes["rolled"]
    # the swap completes by a rename (no bytes); the segment it replaced loses its index, rebuilt trimmed
    assert os.path.join("ret-0", _name(segs[3], ".log")) not in needs
    assert needs[os.path.join("ret-0", _name(segs[3], ".index"))] == sizes["swapped"]
    assert plan["freedByStartupBytes"] >= os.path.getsize(os.path.join(ret, _name(segs[3], ".log")))
    # while a rolled segment is recovered both its indexes are reset to segment.index.bytes first
    assert plan["transientBytes"] == MAX_INDEX + MAX_INDEX - MAX_INDEX % 12
    assert "recovery-point-offset-checkpoint" in needs
    assert plan["neededBytes"] == sum(n["bytes"] for n in plan["needs"]) + plan["transientBytes"]


def test_not_fitting_plans_the_fewest_oldest_committed_expired_segments(planted, kfx, monkeypatch):
    logs, ret, other, segs, _sizes = planted
    before = _state(logs)
    _fake_free(monkeypatch, 0)
    code, plan = _plan(kfx, logs, "--now", T0 + 8 * DAY)
    needed = plan["neededBytes"]
    assert code == 1 and not plan["fits"] and plan["shortfallBytes"] == needed
    cands = [(m["partition"], m["baseOffset"]) for m in plan["candidates"]]
    # ret-0: below both groups' commits (the lower, h's 27); other-0: below g's 20; lone-0: no commit
    assert {p for p, _b in cands} == {"ret-0", "other-0"}
    assert all(m["nextOffset"] <= m["lowestCommittedOffset"] for m in plan["candidates"])
    assert [b for p, b in cands if p == "ret-0"] == [s for s, n in zip(segs, segs[1:]) if n <= 27]
    assert [b for p, b in cands if p == "other-0"] == [s for s, n in zip(segs, segs[1:]) if n <= 20]
    # oldest first by largest timestamp: the two partitions' segments interleave
    assert [m["largestTimestamp"] for m in plan["candidates"]] == sorted(m["largestTimestamp"] for m in plan["candidates"])
    # free space a little short: the fewest oldest segments that cover it
    first = plan["candidates"][0]["bytes"]
    _fake_free(monkeypatch, needed - first)
    code, plan = _plan(kfx, logs, "--now", T0 + 8 * DAY, "--move-to", "/mnt/spare")
    assert code == 1 and len(plan["moves"]) == 1 and plan["moves"][0] == plan["candidates"][0] and plan["enough"]
    files = [f["file"] for f in plan["moves"][0]["files"]]
    assert os.path.basename(files[0]).endswith(".log") and all(os.path.exists(f) for f in files)
    assert plan["commands"] == [f"mkdir -p /mnt/spare/{plan['moves'][0]['partition']} && mv {' '.join(files)} "
                                f"/mnt/spare/{plan['moves'][0]['partition']}/"]
    _fake_free(monkeypatch, needed - first - 1)
    assert len(_plan(kfx, logs, "--now", T0 + 8 * DAY)[1]["moves"]) == 2
    # retention: at T0 + 7 days + 10.5 minutes only the records of minutes 0..10 are past retention.ms (7 days)
    code, plan = _plan(kfx, logs, "--now", T0 + 7 * DAY + 10 * MINUTE + MINUTE // 2)
    assert code == 1 and plan["candidates"] and all(m["largestTimestamp"] < T0 + 11 * MINUTE for m in plan["candidates"])
    assert all(m["nextOffset"] <= 11 for m in plan["candidates"])
    text = kfx("recover", "--plan-space", logs, "--now", T0 + 8 * DAY)
    assert text.exit_code == 1 and "does NOT fit" in text.stdout and "would move them with" in text.stdout
    assert "mv " in text.stdout and "nothing was written" in text.stdout
    assert _state(logs) == before  # nothing written: every file's bytes and mtime as they were
    assert not os.path.exists(logs + ".kfx-backup")


def test_fits_and_bad_input(planted, kfx, monkeypatch, tmp_path):
    logs, ret, _other, _segs, _sizes = planted
    _fake_free(monkeypatch, 1 << 40)
    r = kfx("recover", "--plan-space", logs, "--now", T0 + 8 * DAY)
    assert r.exit_code == 0 and "start-up fits" in r.stdout and "if room is needed" in r.stdout
    r = kfx("recover", "--plan-space", ret)
    assert r.exit_code == 2 and "takes a log dir" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    r = kfx("recover", "--plan-space", str(tmp_path / "nope"))
    assert r.exit_code == 2 and len(r.stderr.strip().splitlines()) == 1
    r = kfx("recover", "--plan-space", logs, "--no-backup")
    assert r.exit_code == 2 and "writes nothing" in r.stderr


def test_log_dirs_on_one_filesystem_share_its_free_bytes(planted, kfx, monkeypatch, tmp_path):
    logs = planted[0]
    second = str(tmp_path / "logs2")
    _minutes(os.path.join(second, "solo-0"), n=5)
    _fake_free(monkeypatch, 1 << 40)
    one = _plan(kfx, logs)[1]["neededBytes"]
    two = _plan(kfx, second)[1]["neededBytes"]
    _fake_free(monkeypatch, max(one, two) + 1)  # enough for either alone, not for both
    assert _plan(kfx, logs)[0] == 0
    r = kfx("recover", "--plan-space", logs, second, "--json")
    out = json.loads(r.stdout)
    assert r.exit_code == 1 and not out["fits"]
    assert all(d["sharedNeededBytes"] == one + two and not d["fits"] for d in out["logDirs"])
    assert any("shares its filesystem with" in n for n in out["logDirs"][0]["notes"])


@pytest.mark.skipif(not realdirs.tarballs(), reason="the real log dirs (../shared/real-logdirs) are not on this machine")
def test_real_clean_log_dir_needs_only_its_active_indexes_grown(tmp_path, kfx):
    """A broker's log dir after a clean shutdown: start-up rebuilds nothing; it grows each log's active
    segment's indexes back to segment.index.bytes (trimmed at shutdown) and rewrites the checkpoints."""
    rd = realdirs.unpack("kafka3x-zk-bitnami-gzip-cleanshutdown", str(tmp_path))
    before = _state(rd.log_dir)
    code, plan = _plan(kfx, rd.log_dir)
    assert code == 0 and plan["transientBytes"] == 0
    live = [pd for pd in find_partitions(rd.log_dir) if pd.dir_state == "live"]
    want = {}
    for pd in live:
        active = _segments(pd.path)[-1]
        for suffix, entry in ((".index", 8), (".timeindex", 12)):
            p = os.path.join(pd.path, _name(active, suffix))
            want[p] = MAX_INDEX - MAX_INDEX % entry - (os.path.getsize(p) if os.path.exists(p) else 0)
    got = {n["file"]: n["bytes"] for n in plan["needs"] if not n["file"].endswith("checkpoint")}
    assert got == {p: b for p, b in want.items() if b > 0}
    assert _state(rd.log_dir) == before
