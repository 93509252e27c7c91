"""Exit codes mean the same in every command (README, *Exit codes*): 0 clean or done, 1 problems found in
the input, 2 usage or I/O error. Each command is run through the CLI on a clean input, a damaged one
and a bad argument. (``kfx scan``'s 1 is in tests/test_spark_scan.py, which starts Spark.)"""
import json
import os
import shutil

import pytest

from tests.conftest import COMPACTED, SAMPLE

OK, PROBLEMS, USAGE = 0, 1, 2


@pytest.fixture
def clean(tmp_path):
    d = tmp_path / "clean"
    shutil.copytree(SAMPLE, d)
    return d


@pytest.fixture
def torn(tmp_path):
    """The sample log dir with the last batch of orders-0's active segment torn (its last 7 bytes gone)."""
    d = tmp_path / "torn"
    shutil.copytree(SAMPLE, d)
    seg = d / "orders-0" / "00000000000000000225.log"
    os.truncate(seg, os.path.getsize(seg) - 7)
    return d


def test_dump(kfx, clean, torn, tmp_path):
    assert kfx("dump", clean / "orders-0" / "00000000000000000225.log").exit_code == OK
    assert kfx("dump", torn / "orders-0" / "00000000000000000225.log").exit_code == PROBLEMS
    assert kfx("dump", tmp_path / "missing.log").exit_code == USAGE


def test_verify(kfx, clean, torn, tmp_path):
    assert kfx("verify", clean).exit_code == OK
    assert kfx("verify", torn).exit_code == PROBLEMS
    assert kfx("verify", tmp_path / "missing").exit_code == USAGE


def test_analyze(kfx, clean, torn, tmp_path):
    assert kfx("analyze", clean / "clients-0").exit_code == OK
    assert kfx("analyze", torn / "orders-0").exit_code == PROBLEMS
    assert kfx("analyze", tmp_path / "missing").exit_code == USAGE


def test_diff(kfx, clean, torn, tmp_path):
    assert kfx("diff", clean / "orders-0", SAMPLE + "/orders-0").exit_code == OK
    assert kfx("diff", clean / "orders-0", torn / "orders-0").exit_code == PROBLEMS
    assert kfx("diff", clean / "orders-0", tmp_path / "missing").exit_code == USAGE


INTERVAL = ("--index-interval-bytes", "1024")  # what the sample's orders-0 was written with


def test_recover_exits_1_when_it_repaired_and_0_once_nothing_is_left(kfx, clean, torn, tmp_path):
    assert kfx("recover", clean / "orders-0", "--no-backup", *INTERVAL).exit_code == OK
    assert kfx("recover", torn / "orders-0", "--dry-run", *INTERVAL).exit_code == PROBLEMS
    assert kfx("recover", torn / "orders-0", *INTERVAL).exit_code == PROBLEMS
    assert kfx("recover", torn / "orders-0", *INTERVAL).exit_code == OK
    assert kfx("recover", tmp_path / "missing").exit_code == USAGE


def test_reindex_exits_1_when_an_index_was_wrong(kfx, clean, tmp_path):
    part = clean / "orders-0"
    assert kfx("reindex", part, "--no-backup", *INTERVAL).exit_code == OK
    (part / "00000000000000000225.index").write_bytes(b"\1" * 16)
    assert kfx("reindex", part, "--dry-run", *INTERVAL).exit_code == PROBLEMS
    assert kfx("reindex", part, *INTERVAL).exit_code == PROBLEMS
    assert kfx("reindex", part, *INTERVAL).exit_code == OK
    assert kfx("reindex", tmp_path / "missing").exit_code == USAGE


def test_salvage(kfx, clean, torn, tmp_path):
    assert kfx("salvage", clean / "orders-0" / "00000000000000000225.log", "--out", tmp_path / "a").exit_code == OK
    assert kfx("salvage", torn / "orders-0" / "00000000000000000225.log", "--out", tmp_path / "b").exit_code == PROBLEMS
    assert kfx("salvage", clean / "orders-0", "--out", tmp_path / "a").exit_code == USAGE  # --out not empty


@pytest.mark.parametrize("command,args", [("compact", ["--dry-run", *COMPACTED]), ("retention", ["--retention-bytes", "1"])])
def test_compact_and_retention_exit_1_on_damage_they_leave_alone(kfx, clean, torn, tmp_path, command, args):
    r = kfx(command, clean / "orders-0", "--json", *args)
    assert r.exit_code == OK and json.loads(r.stdout)["problems"] == [], r.output
    r = kfx(command, torn / "orders-0", "--json", *args)
    assert r.exit_code == PROBLEMS
    (p,) = json.loads(r.stdout)["problems"]
    assert (p["kind"], p["file"]) == ("truncated-batch", str(torn / "orders-0" / "00000000000000000225.log"))
    r = kfx(command, torn / "orders-0", *args)  # the text output names the damage and the remedy
    assert r.exit_code == PROBLEMS and "kfx recover" in r.output
    assert kfx(command, tmp_path / "missing").exit_code == USAGE


def test_compact_refuses_leftovers_with_usage(kfx, clean):
    (clean / "orders-0" / "00000000000000000000.log.swap").write_bytes(b"")
    assert kfx("compact", *COMPACTED, clean / "orders-0").exit_code == USAGE


def test_write_groups_serve(kfx, clean, tmp_path):
    lines = kfx("dump", clean / "orders-0" / "00000000000000000000.log", "--deep", "--format", "json").stdout
    assert kfx("write", "--out", tmp_path / "w", input=lines).exit_code == OK
    assert kfx("write", "--out", tmp_path / "x", input="not json\n").exit_code == USAGE
    assert kfx("groups", clean).exit_code == OK
    assert kfx("groups", tmp_path / "missing").exit_code == USAGE
    assert kfx("serve", tmp_path / "missing").exit_code == USAGE


def test_serve_takes_only_a_log_dir(kfx, clean, tmp_path):
    """`kfx serve` of a partition dir, a segment, an empty dir or a dir with nothing Kafka wrote is one
    line and exit 2 before any socket opens; --writable may start on an empty dir (a new broker's)."""
    (tmp_path / "empty").mkdir()
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "notes.txt").write_text("x")
    for path, words in ((clean / "orders-0", "a partition dir"),
                        (clean / "orders-0" / "00000000000000000000.log", "a log file"),
                        (tmp_path / "empty", "an empty directory"), (tmp_path / "junk", "nothing Kafka wrote")):
        r = kfx("serve", path, "--port", "0")
        assert r.exit_code == USAGE and words in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    r = kfx("serve", tmp_path / "junk", "--writable", "--port", "0")
    assert r.exit_code == USAGE and "nothing Kafka wrote" in r.stderr
