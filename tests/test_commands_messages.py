"""Commands and messages (issue 50, part C): errors are one line with exit 2, no-ops say why, a
header is printed once, dry runs speak of what they would do, output is never wrapped when piped."""
import io
import json
import os
import shutil

from kafkaforensics.harness.damaged_sample import make_damaged_logdir
from kafkaforensics.inspect.dump import DumpOptions, dump
from kafkaforensics.log import time_index
from tests.conftest import COMPACTED, SAMPLE
from tests.corruption import snapshot_files

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


# -- recover of a whole log dir: the dry run names no backup, --json is one document, one run is undone
# by one restore, and a dry restore counts what the restore does

def _damaged_log_dir(tmp_path):
    """The demo's damaged log dir (kafkaforensics.harness.damaged_sample)."""
    logs = str(tmp_path / "logs")
    make_damaged_logdir(logs)
    return logs


def test_recover_dry_run_of_a_log_dir_names_no_backup(kfx, tmp_path):
    logs = _damaged_log_dir(tmp_path)
    r = kfx("recover", "--dry-run", logs)
    assert r.exit_code == 1 and "backup" not in r.stdout, r.stdout
    doc = json.loads(kfx("recover", "--dry-run", "--json", logs).stdout)
    assert [d["backup"] for d in doc["logDirs"]] == [None]
    assert not os.path.exists(logs + ".kfx-backup")


def test_recover_json_of_a_log_dir_is_one_document(kfx, tmp_path):
    logs = _damaged_log_dir(tmp_path)
    r = kfx("recover", "--dry-run", "--json", logs)
    doc = json.loads(r.stdout)  # the whole output: one document
    (d,) = doc["logDirs"]
    assert d["logDir"] == logs and doc["dryRun"] and doc["changed"]
    assert sorted(p["partition"] for p in d["partitions"]) == ["clients-0", "legacy-0", "orders-0", "payments-0"]


def test_one_restore_undoes_a_whole_log_dir_recover(kfx, tmp_path):
    logs = _damaged_log_dir(tmp_path)
    before = snapshot_files(logs)
    r = kfx("recover", logs)
    assert r.exit_code == 1
    (run,) = [os.path.join(logs + ".kfx-backup", n) for n in os.listdir(logs + ".kfx-backup")]
    assert f"backup of this run: {run}" in " ".join(r.stdout.split()) and f"kfx restore {run}" in r.stdout, r.stdout
    dry = kfx("restore", "--dry-run", run)
    assert dry.exit_code == 0
    r = kfx("restore", run)
    assert r.exit_code == 0
    after = {k: v for k, v in snapshot_files(logs).items() if ".kfx-backup" not in k}
    assert after == before  # every partition's changes and the log dir's checkpoint undone
    n = int(r.stdout.splitlines()[-1].split()[0])
    assert n >= 5 and dry.stdout.splitlines()[-1] == f"{n} change(s) would be undone (dry run)", (dry.stdout, r.stdout)


def test_restore_of_a_log_dir_undoes_its_newest_recover_run(kfx, tmp_path):
    logs = _damaged_log_dir(tmp_path)
    before = snapshot_files(logs)
    assert kfx("recover", logs).exit_code == 1
    r = kfx("restore", logs)
    assert r.exit_code == 0 and "undoing the newest recover run" in r.stderr, r.output
    assert {k: v for k, v in snapshot_files(logs).items() if ".kfx-backup" not in k} == before
    other = tmp_path / "other"
    shutil.copytree(os.path.join(SAMPLE), other)
    r = kfx("restore", other)
    assert r.exit_code == 2 and "no run of `kfx recover`" in r.stderr


def test_a_dry_restore_counts_what_the_restore_undoes(kfx, tmp_path):
    """A recover that completes a swap (delete, then rename into place): undoing the rename frees the
    name the deleted file goes back to, so a dry run that looks only at the disk counts too few."""
    logs = _damaged_log_dir(tmp_path)
    part = os.path.join(logs, "orders-0")
    assert kfx("recover", "--backup-dir", tmp_path / "bk", part).exit_code == 1
    dry, real = kfx("restore", "--dry-run", tmp_path / "bk"), kfx("restore", tmp_path / "bk")
    would = [line.split(": ")[0].replace("would restore", "restored") for line in dry.stdout.splitlines()[:-1]]
    assert would == [line.split(": ")[0] for line in real.stdout.splitlines()[:-1]] and len(would) == 9, \
        (dry.stdout, real.stdout)


# -- diff: two dirs named after different topic-partitions are no replicas of one

def test_diff_refuses_two_different_topic_partitions(kfx, tmp_path):
    a, b = tmp_path / "test-0", tmp_path / "items-0"
    shutil.copytree(os.path.join(SAMPLE, "orders-0"), a)
    shutil.copytree(os.path.join(SAMPLE, "orders-0"), b)
    r = kfx("diff", a, b)
    assert r.exit_code == 2 and r.stderr.count("\n") == 1, r.output
    assert "test-0" in r.stderr and "items-0" in r.stderr and "--different-partitions" in r.stderr
    r = kfx("diff", "--different-partitions", a, b)
    assert r.exit_code == 0 and "compared as replicas" in r.stdout, r.output


def test_diff_of_dirs_without_partition_names_says_so(kfx, tmp_path):
    a, b = tmp_path / "leader", tmp_path / "b" / "orders-0"
    shutil.copytree(os.path.join(SAMPLE, "orders-0"), a)
    shutil.copytree(os.path.join(SAMPLE, "orders-0"), b)
    r = kfx("diff", a, b)
    assert r.exit_code == 0 and f"note: {a}: no <topic>-<partition> name" in r.stdout, r.output
    assert "note" not in kfx("diff", b, os.path.join(SAMPLE, "orders-0")).stdout


# -- the report never prints None or a reversed range

def test_ticket_summary_prints_no_none_and_no_reversed_range():
    from kafkaforensics.inspect.analyzer import AnalysisReport, Finding, PartitionSummary
    from kafkaforensics.inspect.report_html import render, ticket_summary
    odd = PartitionSummary(partition="t-0", path="/x/t-0", batches=1, log_start_offset=505479, log_end_offset=1)
    bare = PartitionSummary(partition="u-0", path="/x/u-0", batches=1, log_start_offset=5, log_end_offset=9)
    rep = AnalysisReport(partitions=[odd, bare], findings=[
        Finding("offset-gap", "warning", part, 5, 6, None, None, "a gap") for part in ("t-0", "u-0")])
    text = ticket_summary(rep)
    assert "None" not in text and "505479..0" not in text, text
    assert "no offsets: log start offset 505479, log end offset 1" in text
    assert "u-0 (offsets 5..8" in text and "no open transaction" in text
    page = render(rep)
    assert "None" not in page and "505479..0" not in page


# -- analyze's text names the file of each finding

def test_analyze_finding_lines_name_their_file(kfx, tmp_path):
    logs = _damaged_log_dir(tmp_path)
    r = kfx("analyze", logs, "--now", NOW)
    lines = [ln for ln in r.stdout.splitlines() if ln.split(" ")[0] in ("error", "warning", "info")]
    assert lines
    for ln in lines:
        assert f" {logs}/" in ln, ln  # the file, else the partition dir
    seg = os.path.join(logs, "orders-0", "00000000000000000225.log")
    assert any(f"truncated-batch {seg} @ byte " in ln for ln in lines), lines


# -- piped output is full width: no line folded, a long path whole

def _piped(*args):
    import subprocess
    import sys
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "FORCE_COLOR", "TTY_COMPATIBLE")}
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return subprocess.run([sys.executable, "-m", "kafkaforensics", *map(str, args)], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, env=env, timeout=120)


def test_piped_output_is_not_folded_at_80_columns(tmp_path):
    logs = tmp_path / ("a-long-directory-name-" * 4) / "logs"
    shutil.copytree(SAMPLE, logs)
    (logs / ".kafka_cleanshutdown").write_bytes(b"")
    r = _piped("verify", logs)
    assert r.returncode == 0, r.stderr
    assert any(ln.startswith(f"note: {logs}/.kafka_cleanshutdown: ") for ln in r.stdout.splitlines()), r.stdout
    r = _piped("reindex", "--dry-run", logs / "orders-0")
    (kafka,) = [ln for ln in r.stdout.splitlines() if ln.startswith("Kafka ")]
    assert "; rules: " in kafka and kafka.endswith(f"leftover-swap={kafka.rsplit('leftover-swap=', 1)[-1]}"), r.stdout
    assert len(kafka) > 80 and r.stdout.splitlines()[-1] == kafka, r.stdout  # one line, not folded


# -- dry runs say what they would do, not what they did

PAST = ("index rebuilt", "rolled a new", "truncated 0", "cleaned [", "appended the", "removed the file", ": put back")


def _no_past_tense(text):
    return not any(p in text for p in PAST)


def test_dry_runs_speak_of_what_they_would_do(kfx, tmp_path):
    logs = _damaged_log_dir(tmp_path)
    r = kfx("recover", "--dry-run", logs)
    assert "orders-0    would complete leftover, would truncate, would rebuild index" in r.stdout, r.stdout
    assert "orders-0: would truncate 00000000000000000225.log at byte 10684" in r.stdout and _no_past_tense(r.stdout)
    r = kfx("recover", "--dry-run", os.path.join(logs, "clients-0"))
    assert "would write" in r.stdout and _no_past_tense(r.stdout), r.stdout
    r = kfx("reindex", "--dry-run", os.path.join(logs, "clients-0"))
    assert "would write" in r.stdout and "rebuild index from the segment's batches" in r.stdout, r.stdout
    assert _no_past_tense(r.stdout)
    r = kfx("retention", "--dry-run", "--retention-ms", "1", os.path.join(logs, "clients-0"))
    assert "would roll a new active segment 00000000000000000200.log" in r.stdout and _no_past_tense(r.stdout), r.stdout
    r = kfx("compact", "--dry-run", "--include-active", *COMPACTED, os.path.join(logs, "clients-0"))
    assert "would clean [0, 200)" in r.stdout and "tombstones: 4 to keep" in r.stdout and _no_past_tense(r.stdout)
    assert kfx("recover", "--backup-dir", tmp_path / "bk", os.path.join(logs, "orders-0")).exit_code == 1
    r = kfx("restore", "--dry-run", tmp_path / "bk")
    assert "would append the 40 bytes cut at byte 10684" in r.stdout and "would put back the old content" in r.stdout
    assert r.stdout.splitlines()[-1] == "9 change(s) would be undone (dry run)" and _no_past_tense(r.stdout), r.stdout


# -- serve: the broker id of the log dir, and no __cluster_metadata topic (no broker's metadata cache holds it)

def test_serve_advertises_the_log_dirs_node_id_and_hides_the_metadata_log(tmp_path):
    from kafkaforensics.broker.replay import ReplayBroker
    from specs.kafka_errors import UNKNOWN_TOPIC_OR_PARTITION
    from tests.conftest import FIXTURES
    logs = tmp_path / "kraft"
    shutil.copytree(os.path.join(FIXTURES, "kraft-logdir"), logs)  # meta.properties: node.id=1
    b = ReplayBroker(str(logs))
    md = b.read_path.metadata(12, {"Topics": None})
    assert [x.node_id for x in md.brokers] == [1] and md.controller_id == 1
    names = [t.name for t in md.topics]
    assert "orders" in names and "__cluster_metadata" not in names, names
    assert all(p.leader_id == 1 for t in md.topics for p in t.partitions)
    (asked,) = b.read_path.metadata(12, {"Topics": [{"Name": "__cluster_metadata"}]}).topics
    assert asked.error_code == UNKNOWN_TOPIC_OR_PARTITION  # as KafkaApis answers a topic its cache lacks
    fetched = b.read_path.fetch(4, {"Topics": [{"Topic": "__cluster_metadata", "Partitions": [
        {"Partition": 0, "FetchOffset": 0, "PartitionMaxBytes": 1 << 20}]}]})
    assert fetched.responses[0].partitions[0].error_code == UNKNOWN_TOPIC_OR_PARTITION
    assert ReplayBroker(str(logs), node_id=7).read_path.metadata(12, {"Topics": None}).brokers[0].node_id == 7
    (logs / "meta.properties").write_text("version=0\nbroker.id=1002\n")
    assert ReplayBroker(str(logs)).node_id == 1002  # a ZooKeeper-era broker's broker.id
    w = ReplayBroker(str(logs), writable=True)
    (made,) = w.topic_creation.create_topics(5, {"Topics": [{"Name": "__cluster_metadata", "NumPartitions": 1,
                                              "ReplicationFactor": 1}]}).topics
    assert made.error_code == 42 and "prohibited" in made.error_message  # INVALID_REQUEST, as Kafka


# -- README: what `make demo` and the Spark class archive cost

def test_readme_says_what_make_demo_and_the_class_archive_cost():
    readme = open(os.path.join(os.path.dirname(SAMPLE), "..", "..", "README.md"), encoding="utf-8").read()
    quick = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    (demo,) = [ln for ln in quick.splitlines() if ln.startswith("make demo")]
    assert "installs" in demo and "2.5 min on a fresh clone" in demo, demo
    spark = " ".join(readme.split("## Spark: scanning fleets", 1)[1].split())
    assert "189 MB" in spark and "checkouts sharing one virtualenv" in spark and "share one archive" in spark
