"""`kfx diff` of N replicas (issue 54, part 3): every divergence class planted with the project's writers
and found with its class and evidence; a replica merely behind is consistent; three log dirs of several
partitions; the real log dirs against a copy of themselves."""
import json
import os
import shutil

import pytest

from kafkaforensics.inspect.fleet import fleet_diff
from kafkaforensics.log.partition import write_partition_metadata
from kafkaforensics.log.writer import write_partition
from kafkaforensics.records.batch import Record
from kafkaforensics.records.builder import build_v2
from kafkaforensics.repair.cleaner import CompactOptions, compact
from tests import realdirs
from tests.test_analyzer import T0, marker, recs, v2
from tests.test_explain import _txn


def _p(root, broker, batches, name="t-0"):
    return write_partition(str(root / broker / name), batches, index_interval_bytes=200)


def _classes(rep):
    return sorted({d["class"] for d in rep.divergences})


def _one(rep, cls):
    found = [d for d in rep.divergences if d["class"] == cls]
    assert len(found) == 1, (cls, rep.divergences)
    return found[0]


def _cleaner(log_dir, topic, part, offset):
    with open(os.path.join(log_dir, "cleaner-offset-checkpoint"), "w") as f:
        f.write(f"0\n1\n{topic} {part} {offset}\n")


def test_identical_and_behind_are_consistent(tmp_path, kfx):
    full = [v2(0, 3), v2(3, 2), v2(5, 2, partition_leader_epoch=1)]
    a, b, c = _p(tmp_path, "a", full), _p(tmp_path, "b", full), _p(tmp_path, "c", full[:2])
    rep = fleet_diff([a, b, c])
    assert rep.consistent and rep.partitions[0]["reference"] == a
    assert any("is behind" in n and c in n for n in rep.partitions[0]["notes"])
    r = kfx("diff", a, b, c, "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["consistent"] is True
    assert "behind" in kfx("diff", a, b, c).stdout


def test_same_offsets_different_bytes_and_epoch_truncation(tmp_path, kfx):
    a = [v2(0, 3, partition_leader_epoch=0), v2(3, 2, partition_leader_epoch=0), v2(5, 2, partition_leader_epoch=1)]
    b = a[:2] + [build_v2(recs(5, 3), base_offset=5, partition_leader_epoch=0)]  # kept writing in epoch 0
    pa, pb, pc = _p(tmp_path, "a", a), _p(tmp_path, "b", b), _p(tmp_path, "c", a)
    rep = fleet_diff([pa, pb, pc])
    assert _classes(rep) == ["diverged", "epoch-truncation"]
    d = _one(rep, "diverged")
    assert d["replica"] == pb and d["offsets"] == [5, 7]
    assert [(e["replica"], e["baseOffset"], e["position"]) for e in d["evidence"]] == [
        (pa, 5, d["evidence"][0]["position"]), (pb, 5, d["evidence"][1]["position"])]
    assert d["evidence"][0]["position"] > 0 and d["evidence"][0]["file"].endswith("00000000000000000000.log")
    t = _one(rep, "epoch-truncation")
    assert t["replica"] == pb and t["epoch"] == 0 and t["truncateTo"] == 5
    assert t["evidence"][0]["file"].endswith("leader-epoch-checkpoint") and t["evidence"][1]["baseOffset"] == 5
    r = kfx("diff", pa, pb, pc, "--json")
    assert r.exit_code == 1 and json.loads(r.stdout)["classes"] == ["diverged", "epoch-truncation"]


def test_batches_on_one_side_only(tmp_path):
    a = [v2(0, 3), v2(3, 2), v2(5, 2)]
    pa, pb = _p(tmp_path, "a", a), _p(tmp_path, "b", [a[0], a[2]])  # B lacks 3..4 yet holds 5..6
    rep = fleet_diff([pa, pb, _p(tmp_path, "c", a)])
    d = _one(rep, "one-sided")
    assert d["replica"] == pa and d["other"] == pb and d["offsets"] == [3, 4]
    assert d["evidence"][0]["baseOffset"] == 3 and d["evidence"][0]["replica"] == pa


@pytest.mark.parametrize("bump", [0, 1], ids=["txn-v1", "txn-v2-epoch-bump-per-marker"])
def test_aborted_transaction_served_as_committed(tmp_path, kfx, bump):
    """(b) The ABORT marker at 2 is missing on B: producer 1's COMMIT at 5 commits 0..1 and 3..4 there
    (KIP-890's transactions v2 too: each marker bumps the epoch, the next transaction starts under it)."""
    a = [_txn(0, 2, 1), marker(2, 1, abort=True, epoch=bump), _txn(3, 2, 1, epoch=bump), marker(5, 1, epoch=2 * bump),
         v2(6, 2)]
    pa, pb = _p(tmp_path, "a", a), _p(tmp_path, "b", a[:1] + a[2:])
    rep = fleet_diff([pa, pb])
    d = _one(rep, "aborted-served-as-committed")
    assert d["replica"] == pb and d["transactionFirstOffset"] == 0 and d["markerOffset"] == 2
    assert d["evidence"][0]["marker"] == "ABORT" and d["evidence"][0]["file"].startswith(pa)
    assert any(e.get("markerOffset") == 5 and e["replica"] == pb for e in d["evidence"])
    assert "one-sided" in _classes(rep)  # the marker's batch itself
    assert kfx("diff", pa, pb).exit_code == 1  # two partition dirs: the 2-replica form, its own exit


def test_committed_data_hidden(tmp_path):
    """(c) The COMMIT marker at 2 is missing on B: producer 1's ABORT at 5 aborts 0..1 there too."""
    a = [_txn(0, 2, 1), marker(2, 1), _txn(3, 2, 1), marker(5, 1, abort=True), v2(6, 2)]
    pa, pb = _p(tmp_path, "a", a), _p(tmp_path, "b", a[:1] + a[2:])
    rep = fleet_diff([pa, pb, _p(tmp_path, "c", a)])
    d = _one(rep, "committed-hidden")
    assert d["replica"] == pb and d["markerOffset"] == 2 and d["evidence"][0]["marker"] == "COMMIT"
    assert "lso-frozen" not in _classes(rep)


def test_last_stable_offset_frozen_by_a_marker_on_one_replica(tmp_path):
    """(d) A's ABORT at 2 is missing on B: B's transaction stays open, its last stable offset frozen at 0;
    a replica that has not fetched the marker yet is merely behind."""
    a = [_txn(0, 2, 1), marker(2, 1, abort=True), v2(3, 4)]
    pa, pb = _p(tmp_path, "a", a), _p(tmp_path, "b", [a[0], a[2]])
    behind = _p(tmp_path, "c", a[:1])
    rep = fleet_diff([pa, pb, behind])
    d = _one(rep, "lso-frozen")
    assert d["replica"] == pb and d["lastStableOffset"] == 0 and d["markerOffset"] == 2
    assert any(e.get("lastStableOffset") == 0 for e in d["evidence"])
    assert not [x for x in rep.divergences if x["replica"] == behind]
    assert fleet_diff([pa, behind]).consistent


def resurrection_fleet(tmp_path):
    """Log dirs a and b of t-0: A's cleaner compacted key k's value at 0 away under its tombstone at 2; B
    lost the tombstone in the race, and its cleaner kept k's value at 0.  (their partition dirs)"""
    rec = lambda off, k, v: build_v2([Record(off, T0 + off, k, v)], base_offset=off)  # noqa: E731
    written = [(b"k", b"old"), (b"j", b"1"), (b"k", None), (b"j", b"2"), (b"m", b"1"), (b"m", b"2"), (b"n", b"1")]
    a = [rec(i, k, v) for i, (k, v) in enumerate(written)]
    pa = write_partition(str(tmp_path / "a" / "t-0"), a, segment_bytes=150)
    pb = write_partition(str(tmp_path / "b" / "t-0"), a[:2] + a[3:], segment_bytes=150)
    for p in (pa, pb):
        compact(p, CompactOptions(now=T0 + 10**6, delete_retention_ms=10**9), backup=False)
    return pa, pb


def test_deleted_key_older_value_resurrected(tmp_path, kfx):
    """(a) A's cleaner compacted key k's value at 0 away under its tombstone at 2; B lost the tombstone
    in the race, and its cleaner kept k's value at 0, which it still serves."""
    pa, pb = resurrection_fleet(tmp_path)
    ck = {d: int((tmp_path / d / "cleaner-offset-checkpoint").read_text().split()[-1]) for d in "ab"}
    assert min(ck.values()) > 2
    rep = fleet_diff([str(tmp_path / "a"), str(tmp_path / "b")])
    d = _one(rep, "deleted-key-resurrected")
    assert d["replica"] == pb and d["key"] == "k" and d["offset"] == 0
    assert d["evidence"][0]["baseOffset"] == 0 and d["evidence"][0]["replica"] == pb
    assert any(f"cleaner-offset-checkpoint: 't 0 {ck['b']}'" in e["text"] for e in d["evidence"])
    assert any(e.get("baseOffset") == 2 and e.get("replica") == pa for e in d["evidence"])
    assert _classes(rep) == ["deleted-key-resurrected"]  # the rest differs below the cleaner checkpoints
    r = kfx("diff", str(tmp_path / "a"), str(tmp_path / "b"))
    assert r.exit_code == 1 and "deleted-key-resurrected" in r.stdout


def test_three_log_dirs_of_several_partitions(tmp_path, kfx):
    """Three brokers: orders-0 on all three (broker 3 behind), orders-1 on two (broker 2's batch 3..4
    differs), items-0 on one; a topic of one name re-created with another id on broker 3."""
    base = [v2(0, 3), v2(3, 2), v2(5, 2)]
    for broker in ("b1", "b2", "b3"):
        _p(tmp_path, broker, base if broker != "b3" else base[:2], name="orders-0")
    _p(tmp_path, "b1", base, name="orders-1")
    _p(tmp_path, "b2", base[:1] + [build_v2(recs(3, 2, key=b"x"), base_offset=3)] + base[2:], name="orders-1")
    _p(tmp_path, "b1", base, name="items-0")
    _p(tmp_path, "b1", base, name="users-0")
    users3 = _p(tmp_path, "b3", base, name="users-0")
    write_partition_metadata(users3, "AAAAAAAAAAAAAAAAAAAAAQ")
    dirs = [str(tmp_path / b) for b in ("b1", "b2", "b3")]
    rep = fleet_diff(dirs)
    by = {p["partition"]: p for p in rep.partitions}
    assert sorted(by) == ["orders-0", "orders-1", "users-0"] and rep.single == [
        {"partition": "items-0", "replica": str(tmp_path / "b1" / "items-0")}]
    assert not by["orders-0"]["divergences"] and len(by["orders-0"]["replicas"]) == 3
    assert any("is behind" in n for n in by["orders-0"]["notes"])
    assert [(d["class"], d["offsets"]) for d in by["orders-1"]["divergences"]] == [("diverged", [3, 4])]
    t = by["users-0"]["divergences"]
    assert [d["class"] for d in t] == ["topic-id-mismatch"]
    assert {e["topicId"] for e in t[0]["evidence"]} == {"AAAAAAAAAAAAAAAAAAAAAQ", by["users-0"]["divergences"][0][
        "evidence"][0]["topicId"]} and len(t[0]["evidence"]) == 2
    r = kfx("diff", *dirs)
    assert r.exit_code == 1
    assert "orders-1: diverged: offsets 3..4" in r.stdout and "users-0: topic-id-mismatch" in r.stdout
    assert "3 partition(s) on 2+ replicas: 1 consistent, 2 diverged; 1 on one replica only" in r.stdout
    shutil.rmtree(str(tmp_path / "b2" / "orders-1"))
    shutil.rmtree(users3)
    assert kfx("diff", *dirs).exit_code == 0


def test_bad_input_is_one_line_exit_2(tmp_path, kfx):
    a = _p(tmp_path, "a", [v2(0, 2)])
    b = _p(tmp_path, "b", [v2(0, 2)])
    for args, want in (((str(tmp_path / "a"), b), "not both"), ((a, b, str(tmp_path / "missing")), "no such file"),
                       ((str(tmp_path / "a"),), "two or more"), ((a, a, b), "different dirs"),
                       ((a, b, os.path.join(a, "00000000000000000000.log")), "not a")):
        r = kfx("diff", *args)
        assert r.exit_code == 2 and want in r.output and "Traceback" not in r.output, (args, r.output)
        assert len([ln for ln in r.output.splitlines() if ln.strip()]) == 1, r.output
    other = _p(tmp_path, "c", [v2(0, 2)], name="u-0")
    r = kfx("diff", a, b, other)
    assert r.exit_code == 2 and "--different-partitions" in r.output
    assert kfx("diff", "--different-partitions", a, b, other).exit_code == 0


@pytest.mark.skipif(not realdirs.tarballs(), reason="the real log dirs (../shared/real-logdirs) are not on this machine")
@pytest.mark.parametrize("name", realdirs.tarballs())
def test_real_log_dirs_against_a_copy_of_themselves(tmp_path, name):
    rd = realdirs.unpack(name, str(tmp_path / "one"))
    copy = str(tmp_path / "copy")
    shutil.copytree(rd.log_dir, copy, symlinks=True)
    rep = fleet_diff([rd.log_dir, copy])
    assert rep.consistent, rep.divergences[:3]
    assert rep.partitions and not rep.single
    assert all(len(p["replicas"]) == 2 for p in rep.partitions)


def test_a_batch_failing_its_crc_is_corruption(tmp_path):
    a = [v2(0, 3), v2(3, 2), v2(5, 2)]
    pa, pb, pc = _p(tmp_path, "a", a), _p(tmp_path, "b", a), _p(tmp_path, "c", a)
    log = os.path.join(pb, "00000000000000000000.log")
    data = bytearray(open(log, "rb").read())
    data[-3] ^= 0xFF  # a value byte of the last batch: its CRC fails
    open(log, "wb").write(bytes(data))
    rep = fleet_diff([pa, pb, pc])
    d = _one(rep, "corrupt")
    assert d["replica"] == pb and d["evidence"][0]["baseOffset"] == 5 and d["evidence"][0]["file"] == log
    assert _classes(rep) == ["corrupt"]
