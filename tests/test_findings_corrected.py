"""Findings that misled, corrected (issue 31): a group commit past the log end is flagged, a replica with
bad-CRC batches is reported corrupt (not divergent), a zeroed tail carries the offset the walk stands at,
and `kfx write` keeps the topic id its input carries."""
import json
import os
import shutil

from kafkaforensics.inspect.diff import diff
from kafkaforensics.inspect.groups import committed_offsets
from kafkaforensics.inspect.verify import verify
from kafkaforensics.log.writer import write_partition
from kafkaforensics.records.batch import Record
from kafkaforensics.records.builder import build_v2
from kafkaforensics.records.internal_topics import encode_offset_commit

T0 = 1_700_000_000_000
BASE = 123456789012


def _batches(base=0, n=4, per=3):
    return [build_v2([Record(base + b * per + i, T0 + b, b"k", b"v" * 30, []) for i in range(per)],
                     base_offset=base + b * per) for b in range(n)]


def test_groups_flag_a_commit_past_the_log_end(tmp_path, kfx):
    logdir = tmp_path / "logs"
    write_partition(str(logdir / "orders-0"), _batches())  # log end offset 12
    commits = [encode_offset_commit("billing", "orders", 0, 50, commit_ts=T0),
               encode_offset_commit("audit", "orders", 0, 7, commit_ts=T0)]
    write_partition(str(logdir / "__consumer_offsets-0"),
                    [build_v2([Record(i, T0, k, v, []) for i, (k, v) in enumerate(commits)], base_offset=0)])
    rows = {r["group"]: r for r in committed_offsets(str(logdir))}
    assert rows["billing"]["pastLogEnd"] and rows["billing"]["lag"] is None and rows["billing"]["logEndOffset"] == 12
    assert not rows["audit"]["pastLogEnd"] and rows["audit"]["lag"] == 5
    r = kfx("groups", logdir)
    assert r.exit_code == 1 and "past log end" in r.stdout
    assert "group billing committed offset 50 of orders-0, past its log end offset 12" in r.stderr
    assert "unclean leader election" in r.stderr and "audit committed" not in r.stderr
    j = json.loads(kfx("groups", logdir, "--json").stdout)
    assert [x["pastLogEnd"] for x in j["offsets"]] == [False, True]


def _commits_on_a_log_gone(tmp_path, commits):
    """A log dir whose orders-0 had 12 records and lost its segments (its dir left), beside a
    __consumer_offsets-0 holding ``commits``."""
    logdir = tmp_path / "logs"
    p = write_partition(str(logdir / "orders-0"), _batches())
    write_partition(str(logdir / "__consumer_offsets-0"),
                    [build_v2([Record(i, T0, k, v, []) for i, (k, v) in enumerate(commits)], base_offset=0)])
    for f in os.listdir(p):
        if f.endswith((".log", ".index", ".timeindex")):
            os.remove(os.path.join(p, f))
    return logdir


def test_groups_flag_a_commit_on_a_partition_whose_log_is_gone(tmp_path, kfx):
    """orders-0's segments deleted (its dir left): Kafka loads it empty at its log start (0), so a commit
    of 7 there is past its log end -- flagged, exit 1, and the JSON and text say the log is gone. A
    partition with no dir at all (another broker's) stays unjudged."""
    logdir = _commits_on_a_log_gone(tmp_path, [encode_offset_commit("audit", "orders", 0, 7, commit_ts=T0),
                                               encode_offset_commit("audit", "orders", 1, 3, commit_ts=T0)])
    r = kfx("groups", logdir, "--json")
    assert r.exit_code == 1
    rows = {x["partition"]: x for x in json.loads(r.stdout)["offsets"]}
    assert (rows[0]["logEndOffset"], rows[0]["pastLogEnd"], rows[0]["noLog"], rows[0]["lag"]) == (0, True, True, None)
    assert (rows[1]["logEndOffset"], rows[1]["pastLogEnd"], rows[1]["noLog"]) == (None, False, False)
    r = kfx("groups", logdir)
    assert r.exit_code == 1 and "0 (no log)" in r.stdout and "past log end" in r.stdout
    assert ("group audit committed offset 7 of orders-0, past its log end offset 0 (its partition dir holds no log: "
            "its segments are gone)") in r.stderr


def test_groups_measure_an_empty_partition_from_its_checkpointed_log_start(tmp_path, kfx):
    """orders-0's segments all gone, its log start checkpointed at 12 (retention deleted them): Kafka
    (2.3+) loads it as one empty segment at 12, so a commit of 12 is caught up and one of 7 lags by 5,
    neither past the log end (with a log end of 0, both were flagged as lost records)."""
    logdir = _commits_on_a_log_gone(tmp_path, [encode_offset_commit("audit", "orders", 0, 12, commit_ts=T0),
                                               encode_offset_commit("billing", "orders", 0, 7, commit_ts=T0)])
    (logdir / "log-start-offset-checkpoint").write_text("0\n1\norders 0 12\n")
    r = kfx("groups", logdir, "--json")
    rows = {x["group"]: x for x in json.loads(r.stdout)["offsets"]}
    assert (rows["audit"]["logEndOffset"], rows["audit"]["pastLogEnd"], rows["audit"]["lag"]) == (12, False, 0), rows
    assert (rows["billing"]["logEndOffset"], rows["billing"]["pastLogEnd"], rows["billing"]["lag"]) == (12, False, 5), rows
    assert r.exit_code == 0, r.stdout


def _flip_record_byte(seg, position, size):
    with open(seg, "r+b") as f:  # a byte of the records: the CRC fails, the framing holds
        f.seek(position + size - 5)
        byte = f.read(1)
        f.seek(position + size - 5)
        f.write(bytes([byte[0] ^ 0xFF]))


def test_diff_of_a_replica_with_a_bad_crc_batch_reports_corruption(tmp_path, kfx):
    a, b = tmp_path / "a" / "orders-0", tmp_path / "b" / "orders-0"
    batches = _batches()
    write_partition(str(a), batches)
    shutil.copytree(a, b)
    seg = str(b / "00000000000000000000.log")
    _flip_record_byte(seg, len(batches[0]), len(batches[1]))  # batch 2: offsets 3..5
    rep = diff(str(a), str(b))
    assert rep.first_diverging_offset is None and not rep.only_in_a and not rep.different
    assert [(c["baseOffset"], c["lastOffset"], c["position"], c["kind"]) for c in rep.corrupt_b] == \
        [(3, 5, len(batches[0]), "crc-mismatch")]
    assert rep.same_batches == 3 and rep.truncate_b_to == 3 and not rep.identical
    r = kfx("diff", a, b)
    assert r.exit_code == 1 and "replica B is corrupt: the batch at offsets 3..5" in r.stdout
    assert "first diverging offset" not in r.stdout and "no divergence besides the corruption" in r.stdout
    # a real divergence after the corruption is still one
    write_partition(str(tmp_path / "c" / "orders-0"), batches[:3] + _batches(9, 1, per=2))
    c = tmp_path / "c" / "orders-0"
    _flip_record_byte(str(c / "00000000000000000000.log"), len(batches[0]), len(batches[1]))
    rep = diff(str(a), str(c))
    assert rep.first_diverging_offset == 9 and rep.corrupt_b and rep.truncate_b_to == 3


def test_zeroed_tail_is_reported_at_the_offset_the_walk_stands_at(tmp_path):
    part = tmp_path / "t-0"
    write_partition(str(part), _batches(BASE, 2, per=3))
    seg = part / f"{BASE:020d}.log"
    size = os.path.getsize(seg)
    with open(seg, "ab") as f:
        f.write(bytes(8192))
    p = next(p for p in verify([str(part)]).problems if p.kind == "zeroed-tail")
    assert (p.position, p.offset) == (size, BASE + 6)
    assert "(offset 0)" not in str(p) and f"(offset {BASE + 6})" in str(p)
    # a segment zeroed from its first byte: the segment's base offset
    with open(seg, "r+b") as f:
        f.write(bytes(size))
    p = next(p for p in verify([str(part)]).problems if p.kind == "zeroed-tail")
    assert (p.position, p.offset) == (0, BASE)


def test_write_keeps_the_topic_id_its_input_carries(tmp_path, kfx):
    src = tmp_path / "src" / "orders-0"
    write_partition(str(src), _batches(), topic_id="q3Bq1nEAR5uD4qPQ0Kh0bw")
    files = [str(src / n) for n in sorted(os.listdir(src)) if n.endswith(".log") or n == "partition.metadata"]
    dumped = kfx("dump", "--deep", "--format", "json", *files).stdout
    r = kfx("write", "--out", tmp_path / "out" / "orders-0", input=dumped)
    assert r.exit_code == 0, r.output
    assert "topic_id: q3Bq1nEAR5uD4qPQ0Kh0bw" in (tmp_path / "out" / "orders-0" / "partition.metadata").read_text()
    other = dumped + '{"version": 0, "topicId": "AAAAAAAAAAAAAAAAAAAABw"}\n'
    r = kfx("write", "--out", tmp_path / "out2" / "orders-0", input=other)
    assert r.exit_code == 2 and "differs" in r.output and not (tmp_path / "out2" / "orders-0").exists()
