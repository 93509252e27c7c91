"""`kfx scan`'s replica view classifies the four outcomes of the compaction--replication race (issue 54,
part 3) by the rule `kfx diff` of a fleet uses (kafkaforensics/log/replica_race.py): each planted with the
fleet tests' builders, found with its class, replica and evidence with no Spark, by Spark's tasks and from
a summary Spark held in the driver; a replica merely behind, or a single broker, has none."""
import json
import os
import pathlib

import pyarrow.parquet as pq
import pytest

from kafkaforensics.inspect.fleet import fleet_diff
from kafkaforensics.log.replica_race import RACE_CLASSES
from tests.test_analyzer import marker, v2
from tests.test_diff_fleet import _p, resurrection_fleet
from tests.test_explain import _txn


def _aborted_served(tmp_path):
    a = [_txn(0, 2, 1), marker(2, 1, abort=True, epoch=1), _txn(3, 2, 1, epoch=1), marker(5, 1, epoch=2), v2(6, 2)]
    return [_p(tmp_path, "a", a), _p(tmp_path, "b", a[:1] + a[2:])], ("aborted-served-as-committed", "b", 2)


def _committed_hidden(tmp_path):
    a = [_txn(0, 2, 1), marker(2, 1), _txn(3, 2, 1), marker(5, 1, abort=True), v2(6, 2)]
    return [_p(tmp_path, "a", a), _p(tmp_path, "b", a[:1] + a[2:])], ("committed-hidden", "b", 2)


def _lso_frozen(tmp_path):
    a = [_txn(0, 2, 1), marker(2, 1, abort=True), v2(3, 4)]
    return [_p(tmp_path, "a", a), _p(tmp_path, "b", [a[0], a[2]]), _p(tmp_path, "c", a[:1])], ("lso-frozen", "b", 2)


def _resurrected(tmp_path):
    return list(resurrection_fleet(tmp_path)), ("deleted-key-resurrected", "b", 0)


PLANTED = {"aborted-served-as-committed": _aborted_served, "committed-hidden": _committed_hidden,
           "lso-frozen": _lso_frozen, "deleted-key-resurrected": _resurrected}


def _log_dirs(parts):
    return [str(pathlib.Path(p).parent) for p in parts]


def _races(out):
    return pq.read_table(str(out / "races")).to_pylist()


def _check(rows, tmp_path, want):
    cls, replica, offset = want
    found = [r for r in rows if r["class"] == cls]
    assert len(found) == 1, rows
    r = found[0]
    assert r["logDir"] == str(tmp_path / replica) and r["offset"] == offset
    assert (r["topic"], r["partition"]) == ("t", 0)
    ev = json.loads(r["evidence"])
    assert ev and all(e["file"].endswith(".log") and e["position"] >= 0 for e in ev if "file" in e), ev
    assert not [x for x in rows if x["logDir"] == str(tmp_path / "c")]  # a replica merely behind
    return r


def _pieces(evidence):
    """The pieces of evidence, told by file, byte and offsets (a scan names a replica by its log dir,
    `kfx diff` by its partition dir; a scan reads no cleaner checkpoint)."""
    return sorted((os.path.basename(e.get("file", "")), e.get("position"), e.get("baseOffset"), e.get("markerOffset"))
                  for e in evidence if "cleanerCheckpoint" not in e and "lastStableOffset" not in e)


def _diff_classes(parts):
    """What `kfx diff` of the same fleet classifies as the race's outcomes (the same rule)."""
    return sorted({d["class"] for d in fleet_diff(_log_dirs(parts)).divergences if d["class"] in RACE_CLASSES})


@pytest.mark.parametrize("planted", sorted(PLANTED))
def test_the_race_outcomes_of_a_scan_with_no_spark(tmp_path, planted, kfx):
    parts, want = PLANTED[planted](tmp_path)
    r = kfx("scan", *_log_dirs(parts), "--out", str(tmp_path / "out"))
    assert r.exit_code == 1, r.output
    assert "needs no Spark" in r.output and "replica race outcome(s)" in r.output
    rows = _races(tmp_path / "out")
    got = _check(rows, tmp_path, want)
    assert sorted({x["class"] for x in rows}) == _diff_classes(parts)
    d = next(x for x in fleet_diff(_log_dirs(parts)).divergences if x["class"] == want[0])
    assert _pieces(json.loads(got["evidence"])) == _pieces(d["evidence"])


def test_a_scan_of_one_broker_or_of_replicas_behind_has_no_races(tmp_path, kfx):
    full = [_txn(0, 2, 1), marker(2, 1, abort=True), v2(3, 4)]
    parts = [_p(tmp_path, "a", full), _p(tmp_path, "c", full[:1])]
    for dirs in (_log_dirs(parts), _log_dirs(parts[:1])):
        out = tmp_path / f"out{len(dirs)}"
        r = kfx("scan", *dirs, "--out", str(out))
        assert r.exit_code == 0 and "race" not in r.output, r.output
        assert _races(out) == []


@pytest.mark.parametrize("held", [False, True], ids=["by-the-tasks", "held-in-the-driver"])
def test_the_race_outcomes_of_a_scan_on_spark(tmp_path, spark, held):  # noqa: F811
    from spark_jobs.scan import ScanRequest, scan
    for planted in sorted(PLANTED):
        root = tmp_path / planted
        parts, want = PLANTED[planted](root)
        out = root / "out"
        res = scan(spark, ScanRequest(_log_dirs(parts), str(out)), driver_bytes=1 << 30 if held else 0,
                   summary_rows=10**6 if held else 0, tasks_write=held)
        rows = _races(out)
        assert res.races == len(rows)
        got = _check(rows, root, want)
        assert sorted({x["class"] for x in rows}) == _diff_classes(parts)
        d = next(x for x in fleet_diff(_log_dirs(parts)).divergences if x["class"] == want[0])
        assert _pieces(json.loads(got["evidence"])) == _pieces(d["evidence"])

from tests.test_spark import spark  # noqa: E402,F401  (the session fixture)


@pytest.mark.parametrize("planted", sorted(PLANTED))
def test_a_streamed_records_export_keeps_what_the_races_need(tmp_path, planted):
    """A records export with no Spark is streamed split by split (never held whole): the races are judged
    on what it keeps of each batch as it streams by -- the same rows as a batches scan's."""
    from spark_jobs.scan import ScanRequest, scan_here
    parts, want = PLANTED[planted](tmp_path)
    got = {}
    for level in ("records", "batches"):
        r = scan_here(ScanRequest(_log_dirs(parts), str(tmp_path / level), level))
        got[level] = _races(tmp_path / level)
        assert r.races == len(got[level])
    assert got["records"] == got["batches"]
    _check(got["records"], tmp_path, want)
