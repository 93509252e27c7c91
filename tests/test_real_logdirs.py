"""The read commands on the log dirs real brokers wrote (Kafka 0.10.1 to 4.2, ZooKeeper and KRaft:
``../shared/real-logdirs``, see its PROVENANCE.md), each unpacked to a temp dir.

What is proven, on every tarball:
* ``verify`` reports no problem and no warning but what git did not keep: a missing offset index
  of a segment with batches (the tarball's ``.missing.txt``), and, on the images of running brokers
  (no clean-shutdown marker), checkpoints written from memory ahead of the log the copy holds --
  each checked here against the log end ``dump`` shows; exit 0;
* ``analyze`` agrees with verify on every file (the same warnings) and finds nothing else amiss;
* ``dump`` of every internal topic's partition, decoders chosen by the dir's name, decodes every record;
* ``groups`` gives the latest commit of each group/topic/partition the offsets log holds;
* ``scan`` exports every record ``dump`` reads from the segments, with no anomaly, and an inventory
  row per partition dir.
"""
from __future__ import annotations

import io
import json
import os

import pytest

from kafkaforensics.inspect.analyzer import AnalyzeOptions, analyze
from kafkaforensics.inspect.dump import TOPIC_DECODERS, DumpOptions, dump
from kafkaforensics.inspect.groups import committed_offsets
from kafkaforensics.inspect.verify import verify
from kafkaforensics.log.partition import parse_partition_dir_name
from tests.realdirs import tarballs, unpack

NAMES = tarballs()
pytestmark = pytest.mark.skipif(not NAMES, reason="the real brokers' log dirs (../shared/real-logdirs beside the repository, or $KFX_REAL_LOGDIRS) are not here")
NOW = 1_800_000_000_000   # after every tarball's last write: no far-future timestamp by the clock


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("real"))
    return {n: unpack(n, root) for n in NAMES}


def _partitions(log_dir):
    return sorted(n for n in os.listdir(log_dir) if parse_partition_dir_name(n) and os.path.isdir(os.path.join(log_dir, n)))


def _records(partition_dir, **kw):
    """Every batch of a partition as ``kfx dump --format json --deep`` prints it (decoders by name)."""
    out = io.StringIO()
    res = dump([partition_dir], DumpOptions(fmt="json", deep=True, **kw), out=out, err=io.StringIO())
    assert not res.problems, res.problems
    return [json.loads(line) for line in out.getvalue().splitlines() if '"baseOffset"' in line]


def _log_end(partition_dir) -> int:
    batches = _records(partition_dir)
    if batches:
        return batches[-1]["lastOffset"] + 1
    logs = sorted(n for n in os.listdir(partition_dir) if n.endswith(".log"))
    return int(logs[-1][:20]) if logs else 0


def _checkpoint(log_dir, name) -> dict:
    """An offset checkpoint read here by its format (version, count, "topic partition offset" lines)."""
    p = os.path.join(log_dir, name)
    if not os.path.exists(p):
        return {}
    lines = open(p).read().split("\n")[2:]
    return {(t, int(n)): int(o) for t, n, o in (ln.split(" ") for ln in lines if ln)}


def _expected_missing_index(rd) -> set:
    return {rd.path(m) for m in rd.missing
            if m.endswith(".index") and os.path.exists(rd.path(m[: -len(".index")] + ".log"))
            and os.path.getsize(rd.path(m[: -len(".index")] + ".log")) > 0}


def _check_warning(rd, w) -> None:
    """A warning verify gives must be one git's copy explains."""
    if w.kind == "missing-index":
        assert w.file in _expected_missing_index(rd), w
        return
    # the copy of a running broker: a checkpoint written from memory runs ahead of the log copied
    assert not rd.clean_shutdown, w
    if w.kind == "log-behind-checkpoint":
        name = os.path.basename(w.file)
        pdir = w.detail.split(":")[0]
        tp = parse_partition_dir_name(pdir)
        assert _checkpoint(rd.log_dir, name)[tp] == w.offset > _log_end(rd.path(pdir)), w
    else:
        assert w.kind == "epoch-beyond-log-end", w
        assert w.offset > _log_end(os.path.dirname(w.file)), w


@pytest.mark.parametrize("name", NAMES)
def test_verify_reports_only_what_git_did_not_keep(real, name, kfx):
    rd = real[name]
    rep = verify([rd.log_dir])
    assert rep.problems == []
    for w in rep.warnings:
        _check_warning(rd, w)
    # every missing offset index of a segment with batches is reported (and nothing it rebuilds is called damage)
    assert {w.file for w in rep.warnings if w.kind == "missing-index"} == _expected_missing_index(rd)
    assert {n.kind for n in rep.notes} <= {"clean-shutdown", "preallocated-index", "live-log-dir"}
    assert ("clean-shutdown" in {n.kind for n in rep.notes}) == rd.clean_shutdown
    assert kfx("verify", rd.log_dir).exit_code == 0


@pytest.mark.parametrize("name", NAMES)
def test_analyze_agrees_with_verify_and_finds_nothing_false(real, name, kfx):
    rd = real[name]
    rep = analyze([rd.log_dir], AnalyzeOptions(now=NOW))
    vrep = verify([rd.log_dir])
    assert [f for f in rep.findings if f.severity == "error"] == []
    assert rep.problems == []   # no warning that is not one of verify's self-healing kinds
    got = sorted((f.kind, f.file, f.first_offset) for f in rep.findings if f.severity == "warning")
    assert got == sorted((w.kind, w.file, w.offset) for w in vrep.warnings)
    assert {f.kind for f in rep.findings if f.severity == "info"} <= {"clean-shutdown", "leader-epoch-boundaries",
                                                                       "live-log-dir"}
    # internal topics decoded by their dir's name: every record of them, by type
    for p in rep.partitions:
        topic = parse_partition_dir_name(p.partition)[0]
        if topic in TOPIC_DECODERS:
            assert sum(p.record_types.values()) == p.records, p.partition
        else:
            assert p.record_types is None
    r = kfx("analyze", rd.log_dir, "--now", NOW)
    assert r.exit_code == 0
    # the summary lists only the partitions that hold data, then one line counts the empty ones
    data = [p.partition for p in rep.partitions if p.batches]
    assert data == [p.partition for p in rep.partitions_with_data]
    empty = len(rep.partitions) - len(data)
    assert (f"{empty} partition(s) hold no batches" in r.stdout) == (empty > 0)


@pytest.mark.parametrize("name", NAMES)
def test_dump_decodes_every_record_of_every_internal_topic(real, name):
    rd = real[name]
    seen = 0
    for pname in _partitions(rd.log_dir):
        topic, _ = parse_partition_dir_name(pname)
        if topic not in TOPIC_DECODERS:
            continue
        for b in _records(rd.path(pname)):
            for r in b["records"]:
                d = r.get("decoded")
                assert d is not None and "error" not in d, (pname, b["baseOffset"], r)
                assert "undecoded" not in json.dumps(d), (pname, r["offset"], d)
                seen += 1
    assert seen > 0   # every tarball has a non-empty __consumer_offsets or __cluster_metadata partition


@pytest.mark.parametrize("name", NAMES)
def test_groups_gives_the_latest_commit_of_each_group_partition(real, name, kfx):
    rd = real[name]
    want = {}
    for pname in _partitions(rd.log_dir):
        if not pname.startswith("__consumer_offsets-"):
            continue
        for b in _records(rd.path(pname)):
            for r in b["records"]:
                k, v = r["decoded"].get("key"), r["decoded"].get("value")
                if not k or k.get("kind") != "offset_commit":
                    continue
                key = (k["data"]["group"], k["data"]["topic"], k["data"]["partition"])
                if v is None:
                    want.pop(key, None)
                else:
                    want[key] = v["data"]["offset"]
    rows = committed_offsets(rd.log_dir)
    assert {(r["group"], r["topic"], r["partition"]): r["offset"] for r in rows} == want
    r = kfx("groups", rd.log_dir, "--json")
    assert r.exit_code == 0 and len(json.loads(r.stdout)["offsets"]) == len(want)
    # one __consumer_offsets partition dir alone gives the commits it holds
    for pname in sorted({p for p in _partitions(rd.log_dir) if p.startswith("__consumer_offsets-")}):
        one = committed_offsets(rd.path(pname))
        assert all(want[(x["group"], x["topic"], x["partition"])] == x["offset"] for x in one)


# -- serve: every data topic replayed to real clients exactly as dump shows it ----------------------

def _served_expectation(rd) -> tuple[dict, dict]:
    """What a replay of the log dir must serve, from dump: (topic, partition) -> [(offset, key, value)] of
    every data record from the log start Kafka serves (the log-start checkpoint: records below it were
    deleted by DeleteRecords), and (topic, partition) -> (earliest, latest offset) of every data partition,
    empty ones included (an empty partition after retention starts at its segment's base offset)."""
    starts = _checkpoint(rd.log_dir, "log-start-offset-checkpoint")
    want, bounds = {}, {}
    for pname in _partitions(rd.log_dir):
        tp = parse_partition_dir_name(pname)
        if tp[0].startswith("__") or pname != f"{tp[0]}-{tp[1]}":
            continue
        logs = sorted(n for n in os.listdir(rd.path(pname)) if n.endswith(".log"))
        start = max(starts.get(tp, 0), int(logs[0][:20]) if logs else 0)
        recs = []
        for b in _records(rd.path(pname), encoding="hex"):
            if b["isControl"]:
                continue
            for r in b["records"]:
                if r["offset"] >= start:
                    recs.append((r["offset"], None if r["key"] is None else bytes.fromhex(r["key"]),
                                 None if r["value"] is None else bytes.fromhex(r["value"])))
        bounds[tp] = (start, _log_end(rd.path(pname)))
        if recs:
            want[tp] = recs
    return want, bounds


@pytest.fixture(scope="module")
def served(real, tmp_path_factory):
    """A read-only replay broker on each real log dir, and what dump says it must serve."""
    from kafkaforensics.broker.server import BrokerThread
    state = tmp_path_factory.mktemp("serve-state")
    out = {}
    brokers = []
    try:
        for n in NAMES:
            rd = real[n]
            b = BrokerThread(rd.log_dir, state_path=str(state / f"{n}.json")).__enter__()
            brokers.append(b)
            out[n] = (b, *_served_expectation(rd))
        yield out
    finally:
        for b in brokers:
            b.__exit__(None, None, None)


@pytest.mark.parametrize("name", NAMES)
def test_serve_replays_every_data_topic_to_kafka_python_as_dump_shows_it(served, name):
    from kafka import KafkaConsumer, TopicPartition
    b, want, bounds = served[name]
    c = KafkaConsumer(bootstrap_servers=b.bootstrap, enable_auto_commit=False, consumer_timeout_ms=4000,
                      max_partition_fetch_bytes=1 << 20)
    # every data partition, empty ones too: where it starts and ends
    tps = [TopicPartition(t, p) for t, p in bounds]
    first, end = c.beginning_offsets(tps), c.end_offsets(tps)
    assert {(tp.topic, tp.partition): (first[tp], end[tp]) for tp in tps} == bounds
    got = {}
    if want:
        tps = [TopicPartition(t, p) for t, p in want]
        c.assign(tps)
        c.seek_to_beginning(*tps)
        for m in c:
            got.setdefault((m.topic, m.partition), []).append((m.offset, m.key, m.value))
    c.close()
    assert got == want


@pytest.mark.parametrize("name", NAMES)
def test_serve_replays_every_data_topic_to_confluent_kafka_as_dump_shows_it(served, name):
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
    from tests.clients import drain
    b, want, bounds = served[name]
    assert bounds, name  # every real log dir holds a data partition, if only an empty one
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "real", "enable.auto.commit": False})
    try:  # closed whatever fails: a consumer left open goes on dialling the stopped broker
        # every data partition, empty ones too (a log dir with only internal topics' records among
        # them): where librdkafka's ListOffsets says it starts and ends
        edges = {tp: c.get_watermark_offsets(TopicPartition(*tp), timeout=10) for tp in bounds}
        got = {}
        if want:
            c.assign([TopicPartition(t, p, OFFSET_BEGINNING) for t, p in want])
            for m in drain(c, idle_polls=4):
                got.setdefault((m.topic(), m.partition()), []).append((m.offset(), m.key(), m.value()))
    finally:
        c.close()
    assert edges == {tp: tuple(e) for tp, e in bounds.items()}
    assert got == want


@pytest.mark.parametrize("name", NAMES)
def test_every_file_and_partition_alone(real, name, kfx):
    """Each path a user may give -- every file, every partition dir, every segment -- read alone: verify
    finds no problem, analyze no problem, dump of the whole log dir reads every file (exit 0)."""
    rd = real[name]
    from kafkaforensics.log.paths import partition_dirs
    for root, _dirs, files in os.walk(rd.log_dir):
        for f in files:
            rep = verify([os.path.join(root, f)])
            assert rep.problems == [], (f, rep.problems)
    for d in partition_dirs(rd.log_dir):
        for p in [d] + [os.path.join(d, f) for f in sorted(os.listdir(d)) if f.endswith(".log")]:
            rep = analyze([p], AnalyzeOptions(now=NOW))
            assert rep.problems == [] and not [f for f in rep.findings if f.severity == "error"], (p, rep.problems)
        # a partition dir alone: analyze says what verify says of it (the same check, not a second one)
        v = verify([d])
        a = analyze([d], AnalyzeOptions(now=NOW))
        assert sorted((f.kind, f.file) for f in a.findings if f.severity == "warning") == \
            sorted((w.kind, w.file) for w in v.warnings), d
    out = io.StringIO()
    res = dump([rd.log_dir], DumpOptions(), out=out, err=io.StringIO())
    assert res.problems == [] and res.files == sum(len(fs) for _r, _d, fs in os.walk(rd.log_dir)) - 1  # not .lock
    # as JSON lines: every line is JSON, each file announced by a {"file": ...} line
    out = io.StringIO()
    dump([rd.log_dir], DumpOptions(fmt="json"), out=out, err=io.StringIO())
    lines = [json.loads(ln) for ln in out.getvalue().splitlines()]
    assert sum(1 for x in lines if isinstance(x, dict) and set(x) == {"file"}) == res.files


def test_the_html_report_details_the_partitions_with_data_and_counts_the_empty_ones(real):
    from kafkaforensics.inspect.report_html import render, ticket_summary
    rd = real["kafka3x-zk-bitnami-gzip-cleanshutdown"]   # 57 partitions, 7 with data
    rep = analyze([rd.log_dir], AnalyzeOptions(now=NOW))
    page = render(rep, "kfx analyze", [rd.log_dir])
    assert page.count("<h2 id='p-") == 7 and "50 empty partition(s)" in page
    summary = ticket_summary(rep, [rd.log_dir])
    assert "50 empty partition(s): no batches, no problems found." in summary and "items-0" in summary


def test_a_producer_kept_past_retention_is_no_snapshot_mismatch(real):
    """kafka27 myTopic-0: retention left an empty segment at 38 and a producer snapshot at 38 with three
    producers whose batches are gone -- Kafka keeps producer state until producer.id.expiration.ms."""
    from kafkaforensics.log.producer_state import read_snapshot
    rd = real["kafka27-zk-compacted-offsets"]
    snap = rd.path("myTopic-0", "00000000000000000038.snapshot")
    entries = read_snapshot(open(snap, "rb").read(), file=snap)
    assert len(entries) == 3 and all(e.last_offset < 38 for e in entries)
    rep = analyze([rd.path("myTopic-0")], AnalyzeOptions(now=NOW))
    assert [f.kind for f in rep.findings if f.severity != "info"] == []


@pytest.mark.parametrize("name", NAMES)
def test_kfx_scan_exports_every_record_dump_reads_and_an_inventory_row_per_partition(real, name, kfx, tmp_path):
    """`kfx scan --level records` of the whole log dir (small enough to need no Spark: read and
    written by kfx itself, the outputs Spark's tasks would write, tests/test_spark_views.py): no
    anomaly, every record of every partition as ``dump --deep`` reads it (offsets, and the key and
    value bytes of the data topics), and one inventory row per partition dir, empty ones included,
    counting what was exported."""
    import base64

    import pyarrow.parquet as pq
    rd = real[name]
    out = tmp_path / "scan"
    r = kfx("scan", rd.log_dir, "--out", out, "--level", "records")
    assert r.exit_code == 0 and "needs no Spark" in r.output, r.output
    exported = {}
    for row in pq.read_table(str(out / "records"), columns=["partitionDir", "offset", "key", "value"]).to_pylist():
        exported.setdefault(row["partitionDir"], []).append((row["offset"], row["key"], row["value"]))
    inventory = {row["partitionDir"]: row for row in pq.read_table(str(out / "inventory")).to_pylist()}
    assert sorted(inventory) == _partitions(rd.log_dir)
    # each partition's logEndOffset is the load's, verify's (issue 52: one rule, load_walk.log_end_after)
    ends = {os.path.basename(p["path"]): p["logEndOffset"] for p in verify([rd.log_dir]).partitions}
    assert {pdir: row["logEndOffset"] for pdir, row in inventory.items()} == ends
    for pdir in _partitions(rd.log_dir):
        got = sorted(exported.get(pdir, []), key=lambda x: x[0])
        logs = sorted(os.path.join(rd.path(pdir), n) for n in os.listdir(rd.path(pdir)) if n.endswith(".log"))
        want = []  # the segments' records (a KRaft snapshot's .checkpoint holds records too: not a segment)
        if logs:
            text = io.StringIO()
            assert not dump(logs, DumpOptions(fmt="json", deep=True), out=text, err=io.StringIO()).problems
            want = [rec for line in text.getvalue().splitlines() if '"baseOffset"' in line
                    for rec in json.loads(line).get("records", [])]
        assert [o for o, _k, _v in got] == [rec["offset"] for rec in want], pdir
        if not pdir.startswith("__"):  # internal topics' keys and values are decoded by dump
            assert [(k, v) for _o, k, v in got] == [(None if rec["key"] is None else base64.b64decode(rec["key"]),
                                                    None if rec["value"] is None else base64.b64decode(rec["value"]))
                                                   for rec in want], pdir
        assert inventory[pdir]["records"] == len(got) and inventory[pdir]["anomalies"] == 0, pdir
