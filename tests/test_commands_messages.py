"""Commands and messages (issue 50, part C): errors are one line with exit 2, no-ops say why, a
header is printed once, dry runs speak of what they would do, output is never wrapped when piped."""
import io
import json
import os
import shutil

from kafkaforensics.inspect.dump import DumpOptions, dump
from kafkaforensics.log import time_index
from tests.conftest import SAMPLE

NOW = "1700000000000"


# -- analyze --html: where the report cannot go is a usage error, an existing file needs --overwrite

def test_analyze_html_into_a_missing_dir_is_one_line_and_exit_2(kfx, tmp_path):
    target = tmp_path / "no" / "such" / "r.html"
    r = kfx("analyze", SAMPLE, "--html", target, "--now", NOW)
    assert r.exit_code == 2, r.output
    assert r.stderr.strip().count("\n") == 0 and "no such directory" in r.stderr, r.stderr
    assert not target.exists()


def test_analyze_html_onto_a_dir_is_refused(kfx, tmp_path):
    r = kfx("analyze", SAMPLE, "--html", tmp_path, "--now", NOW)
    assert r.exit_code == 2 and "is a directory" in r.stderr, r.output


def test_analyze_html_refuses_to_overwrite_without_overwrite(kfx, tmp_path):
    target = tmp_path / "r.html"
    target.write_text("mine")
    r = kfx("analyze", SAMPLE, "--html", target, "--now", NOW)
    assert r.exit_code == 2 and "--overwrite" in r.stderr, r.output
    assert target.read_text() == "mine"
    r = kfx("analyze", SAMPLE, "--html", target, "--overwrite", "--now", NOW)
    assert r.exit_code in (0, 1) and "</html>" in target.read_text(), r.output


def test_analyze_html_that_cannot_be_written_is_one_line(kfx, tmp_path, monkeypatch):
    from kafkaforensics import fsutil

    def refuse(path, data, **kw):
        raise PermissionError(13, "Permission denied", str(path))
    monkeypatch.setattr(fsutil, "atomic_write", refuse)
    r = kfx("analyze", SAMPLE, "--html", tmp_path / "r.html", "--now", NOW)
    assert r.exit_code == 2 and "cannot write the report" in r.stderr, r.output


# -- groups: nothing to show says so

def test_groups_without_commits_says_so(kfx):
    r = kfx("groups", SAMPLE)
    assert r.exit_code == 0
    assert r.stdout.strip() == f"no consumer group commits found in {SAMPLE} (no __consumer_offsets partition there)"


# -- dump: a time index's "not found in the log" header once, as kafka-dump-log prints it

def test_dump_prints_the_not_found_header_once(tmp_path):
    part = tmp_path / "orders-0"
    shutil.copytree(os.path.join(SAMPLE, "orders-0"), part)
    ti = part / "00000000000000000000.timeindex"
    ti.write_bytes(time_index.to_bytes([(1, 10_001), (2, 10_002), (3, 10_003)], 0))
    err = io.StringIO()
    res = dump([str(ti)], DumpOptions(), out=io.StringIO(), err=err)
    text = err.getvalue()
    assert text.count("The following indexed offsets are not found in the log.") == 1, text
    assert [line for line in text.splitlines() if line.startswith("Indexed offset")] == [
        f"Indexed offset: {o}, found log offset: -1" for o in (10_001, 10_002, 10_003)]
    assert len(res.problems) == 3
