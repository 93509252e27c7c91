"""A KRaft 3.x/4.x log dir with each file kind (tests/fixtures/kraft-logdir, built by
tests/fixtures/generate.py:kraft_main from specs/): snapshots, bootstrap.checkpoint and quorum-state
read and checked; __share_group_state / __remote_log_metadata decoders; tiered-storage cache indexes at
their real base; meta.properties, partition.metadata and .kafka_cleanshutdown identity checks."""
import filecmp
import json
import os
import shutil
import sys

import pytest

from kafkaforensics.log import kraft
from kafkaforensics.errors import KafkaFormatError
from kafkaforensics.log.kraft import metadata_topic_ids
from kafkaforensics.log.partition import check_log_dirs, read_meta_properties
from kafkaforensics.inspect.verify import verify
from tests.conftest import FIXTURES, private_copy

KRAFT = os.path.join(FIXTURES, "kraft-logdir")
MD = os.path.join(KRAFT, "__cluster_metadata-0")
SNAP = os.path.join(MD, "00000000000000000005-0000000001.checkpoint")


@pytest.fixture
def logdir(tmp_path):
    return private_copy(tmp_path, KRAFT, "kraft")


def _lines(out):
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def test_fixture_is_what_the_generator_builds(tmp_path):
    sys.path.insert(0, FIXTURES)
    try:
        import generate
    finally:
        sys.path.remove(FIXTURES)
    built = generate.kraft_main(str(tmp_path / "again"))
    cmp = filecmp.dircmp(KRAFT, built)
    stack = [cmp]
    while stack:
        c = stack.pop()
        assert not c.left_only and not c.right_only, (c.left_only, c.right_only)
        _, mismatch, errors = filecmp.cmpfiles(c.left, c.right, c.common_files, shallow=False)
        assert not mismatch and not errors, (c.left, mismatch, errors)
        stack.extend(c.subdirs.values())


def test_verify_the_kraft_logdir_is_clean(kfx):
    rep = verify([KRAFT])
    assert rep.ok, [str(p) for p in rep.problems]
    assert [n.kind for n in rep.notes] == ["clean-shutdown"]
    r = kfx("verify", KRAFT, "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["ok"]


def test_snapshot_dump_text_and_json(kfx):
    r = kfx("dump", SNAP)
    assert r.exit_code == 0
    assert "controlType: SNAPSHOT_HEADER" in r.stdout and "SNAPSHOT_FOOTER" in r.stdout
    assert '"LogDirs": ["7V8tY5gLQk2vN3cFq1o8Zw"]' in r.stdout        # tagged field 0 of RegisterBrokerRecord v3
    r = kfx("dump", SNAP, "--format", "json")
    objs = _lines(r.stdout)
    snap = objs[-1]["snapshot"]
    assert snap["snapshotId"] == {"endOffset": 5, "epoch": 1}
    assert snap["recordTypes"] == {"FeatureLevelRecord": 2, "RegisterBrokerRecord": 1, "UnfenceBrokerRecord": 1,
                                   "TopicRecord": 1}
    assert objs[0]["records"][0]["decoded"]["control"]["type"] == "SnapshotHeaderRecord"
    r = kfx("dump", os.path.join(KRAFT, "bootstrap.checkpoint"), "--format", "json")
    assert r.exit_code == 0 and _lines(r.stdout)[-1]["snapshot"]["snapshotId"] == {"endOffset": 0, "epoch": 0}


def test_metadata_log_decodes_clear_elr_and_leader_change(kfx):
    r = kfx("dump", os.path.join(MD, "00000000000000000000.log"), "--cluster-metadata-decoder")
    assert r.exit_code == 0
    assert '"type": "ClearElrRecord", "version": 0, "data": {"TopicName": "orders"}' in r.stdout
    assert '"type": "LeaderChangeMessage"' in r.stdout and "UNKNOWN" not in r.stdout


def test_quorum_state_dump_and_errors(kfx, tmp_path):
    qs = os.path.join(MD, "quorum-state")
    r = kfx("dump", qs, "--format", "json")
    assert r.exit_code == 0
    assert json.loads(r.stdout) == {"version": 1, "data": {"LeaderId": 1, "LeaderEpoch": 1, "VotedId": 1,
                                                           "VotedDirectoryId": "7V8tY5gLQk2vN3cFq1o8Zw"}}
    bad = tmp_path / "quorum-state"
    bad.write_text('{"leaderId":1,"leaderEpoch":2,"votedId":-1,"appliedOffset":0,"data_version":0}')
    with pytest.raises(KafkaFormatError, match="clusterId missing"):
        kraft.read_quorum_state(str(bad))
    v0 = '{"clusterId":"","leaderId":1,"leaderEpoch":2,"votedId":-1,"appliedOffset":0,"currentVoters":[{"voterId":1}],' \
         '"data_version":0}'
    bad.write_text(v0)
    assert kraft.read_quorum_state(str(bad))["data"]["CurrentVoters"] == [{"VoterId": 1}]
    bad.write_text(v0.replace('"leaderEpoch":2', '"leaderEpoch":"2"'))
    r = kfx("verify", str(bad))
    assert r.exit_code == 1 and "leaderEpoch is str, not int32" in r.stdout + r.stderr
    bad.write_text("{not json")
    r = kfx("dump", str(bad))
    assert r.exit_code != 0 and "not JSON" in r.stdout + r.stderr


def test_truncated_snapshot_has_no_footer(logdir, kfx):
    snap = os.path.join(logdir, "__cluster_metadata-0", os.path.basename(SNAP))
    data = open(snap, "rb").read()
    footer_at = kraft.read_snapshot(snap)
    assert footer_at["footer"] == {"Version": 0}
    with open(snap, "r+b") as f:
        f.truncate(377)                      # the footer batch starts at byte 377
    got = kraft.read_snapshot(snap)
    assert [p.kind for p in got["problems"]] == ["missing-footer"]
    r = kfx("verify", logdir, "--json")
    assert r.exit_code == 1
    assert [p["kind"] for p in json.loads(r.stdout)["problems"]] == ["missing-footer"]
    assert len(data) > 377
    with open(snap, "wb") as f:
        f.write(data[:380])                  # torn inside the footer batch
    kinds = [p.kind for p in kraft.read_snapshot(snap)["problems"]]
    assert kinds[-1] == "missing-footer" and len(kinds) == 2 and kinds[0] != "missing-footer"
    r = kfx("dump", snap)
    assert r.exit_code == 1 and "@ byte 377" in r.stderr
    os.rename(snap, snap.replace(".checkpoint", "-8152.checkpoint.part"))   # as Kafka names one being written
    rep = json.loads(kfx("verify", logdir, "--json").stdout)
    assert rep["ok"] and "partial-snapshot" in [n["kind"] for n in rep["notes"]]


def test_share_group_state_and_remote_log_metadata_decoders(kfx):
    r = kfx("dump", os.path.join(KRAFT, "__share_group_state-0", "00000000000000000000.log"),
            "--share-group-state-decoder", "--format", "json")
    rec = _lines(r.stdout)[0]["records"][0]["decoded"]
    assert rec["key"]["kind"] == "share_snapshot" and rec["value"]["data"]["StateBatches"][0]["DeliveryCount"] == 1
    assert "layout" not in rec["value"] and rec["value"]["data"]["CreateTimestamp"] == 1_700_000_000_000
    upd = _lines(r.stdout)[0]["records"][1]["decoded"]   # written by Kafka 4.0: uint16 SnapshotEpoch
    assert upd["key"]["kind"] == "share_update" and upd["value"]["layout"] == "4.0"
    assert upd["value"]["data"] == {"SnapshotEpoch": 0, "LeaderEpoch": 0, "StartOffset": 5, "StateBatches": []}
    r = kfx("dump", os.path.join(KRAFT, "__remote_log_metadata-0", "00000000000000000000.log"),
            "--remote-log-metadata-decoder", "--format", "json")
    recs = [x["decoded"]["value"] for x in _lines(r.stdout)[0]["records"]]
    assert [x["type"] for x in recs] == ["RemoteLogSegmentMetadataRecord", "RemoteLogSegmentMetadataUpdateRecord"] * 2
    assert recs[2]["data"]["EndOffset"] == 199 and recs[3]["data"]["RemoteLogSegmentState"] == 1


def test_remote_index_cache_file_read_at_its_base_offset(kfx):
    path = os.path.join(KRAFT, "remote-log-index-cache", "100_Rm9yZW5zaWNTZWdtZW50Ag.index")
    r = kfx("dump", path)
    assert r.exit_code == 0 and "offset: 100 position: 0" in r.stdout and "offset: 180 position: 8192" in r.stdout
    assert "Mismatches" not in r.stdout + r.stderr
    r = kfx("verify", path, "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["notes"] == []


def test_remote_index_below_its_base_is_a_problem(tmp_path, kfx):
    from kafkaforensics.log import offset_index
    path = tmp_path / "500_Rm9yZW5zaWNTZWdtZW50Ag.index"
    path.write_bytes(offset_index.to_bytes([(100, 0)], 0))     # relative 100 -> absolute 600 ...
    assert kfx("verify", str(path)).exit_code == 0
    path.write_bytes(offset_index.to_bytes([(600, 0), (550, 10)], 500))   # ... a decreasing entry is not
    r = kfx("verify", str(path), "--json")
    assert r.exit_code == 1 and json.loads(r.stdout)["problems"][0]["kind"] == "index-order"


def test_meta_properties_validation_and_cross_check(logdir, tmp_path):
    assert read_meta_properties(os.path.join(logdir, "meta.properties")) == {
        "version": 1, "clusterId": "kfxKRaftClusterId00001", "nodeId": 1, "directoryId": "7V8tY5gLQk2vN3cFq1o8Zw"}
    other = tmp_path / "second"
    other.mkdir()
    mp = other / "meta.properties"
    mp.write_text("version=1\nnode.id=2\ncluster.id=elsewhere\ndirectory.id=7V8tY5gLQk2vN3cFq1o8Zw\n")
    problems, _ = check_log_dirs([logdir, str(other)])
    assert sorted(p.kind for p in problems) == ["cluster-id-mismatch", "duplicate-directory-id", "node-id-mismatch"]
    for text, msg in (("version=1\ncluster.id=c\n", "node.id was not specified"),
                      ("version=1\nnode.id=1\n", "cluster.id was not specified"),
                      ("version=2\n", "only 0 and 1"),
                      ("version=1\nnode.id=1\ncluster.id=c\ndirectory.id=AAAAAAAAAAAAAAAAAAAAAQ\n", "reserved"),
                      ("version=1\nnode.id=1\ncluster.id=c\ndirectory.id=nope\n", "not a Kafka Uuid")):
        mp.write_text(text)
        with pytest.raises(KafkaFormatError, match=msg):
            read_meta_properties(str(mp))
    mp.write_text("broker.id=3\n")                          # v0, as ZooKeeper-era brokers wrote it
    assert read_meta_properties(str(mp)) == {"version": 0, "clusterId": None, "nodeId": 3, "directoryId": None}


def test_partition_metadata_topic_id_against_the_metadata_log(logdir, kfx):
    assert metadata_topic_ids(os.path.join(logdir, "__cluster_metadata-0")) == {"orders": "q3Bq1nEAR5uD4qPQ0Kh0bw"}
    with open(os.path.join(logdir, "orders-0", "partition.metadata"), "w") as f:
        f.write("version: 0\ntopic_id: Zm9yZWlnblRvcGljSWQwMA\n")
    r = kfx("verify", logdir, "--json")
    assert r.exit_code == 1
    assert [p["kind"] for p in json.loads(r.stdout)["problems"]] == ["topic-id-mismatch"]
    with open(os.path.join(logdir, "__cluster_metadata-0", "partition.metadata"), "w") as f:
        f.write("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAg\n")     # not Kafka's fixed metadata topic id
    problems = json.loads(kfx("verify", logdir, "--json").stdout)["problems"]
    assert [p["kind"] for p in problems] == ["topic-id-mismatch", "topic-id-mismatch"]


def test_clean_shutdown_file(logdir, kfx):
    r = kfx("dump", os.path.join(logdir, ".kafka_cleanshutdown"), "--format", "json")
    assert json.loads(r.stdout) == {"version": 0, "brokerEpoch": 7}
    with open(os.path.join(logdir, ".kafka_cleanshutdown"), "w") as f:
        f.write("{}")
    # Kafka goes by the marker's existence (CleanShutdownFileHandler.exists); content it cannot read
    # only leaves the broker epoch unknown: a note, not a problem
    r = kfx("verify", logdir, "--json")
    notes = [n for n in json.loads(r.stdout)["notes"] if n["kind"] == "clean-shutdown"]
    assert r.exit_code == 0 and len(notes) == 1 and "no format Kafka writes" in notes[0]["detail"]


def test_analyze_lists_remote_segments_and_a_gap_between_tiers(logdir, kfx):
    from kafkaforensics.inspect.analyzer import AnalyzeOptions, analyze
    from kafkaforensics.records.batch import Record
    from kafkaforensics.records.builder import build_v2
    from kafkaforensics.log.writer import write_partition
    r = kfx("analyze", logdir, "--json", "--now", 1_700_000_000_000)
    assert r.exit_code == 0
    orders = next(p for p in json.loads(r.stdout)["partitions"] if p["partition"] == "orders-0")
    assert orders["logStartOffset"] == 200
    assert [(s["startOffset"], s["endOffset"], s["state"]) for s in orders["remoteSegments"]] == \
        [(0, 99, "COPY_SEGMENT_FINISHED"), (100, 199, "COPY_SEGMENT_FINISHED")]
    # the local log now begins at 250: 200..249 are in neither tier
    shutil.rmtree(os.path.join(logdir, "orders-0"))
    write_partition(os.path.join(logdir, "orders-0"), [build_v2([Record(250, 1, b"k", b"v", [])], base_offset=250)])
    rep = analyze([logdir], AnalyzeOptions(now=1_700_000_000_000))
    gap = [f for f in rep.findings if f.kind == "tiered-gap"]
    assert [(f.partition, f.first_offset, f.last_offset) for f in gap] == [("orders-0", 200, 249)]


def test_groups_of_the_kraft_logdir(kfx):
    """Classic, KIP-848 and streams members (topic ids named through the metadata log); the exactly-once
    application's aborted commit (offset 9) is not its committed offset."""
    r = kfx("groups", KRAFT, "--members", "--json")
    out = json.loads(r.stdout)
    assert {(x["group"], x["offset"], x["lag"]) for x in out["offsets"]} == \
        {("billing", 4, 206), ("eos-app", 6, 204), ("shipping", 5, 205)}
    assert [(m["group"], m["protocol"], m["assignment"]) for m in out["members"]] == \
        [("billing", "classic", ["orders:0"]), ("shipping", "consumer", ["orders:0"]), ("ledger", "streams", ["0:0"])]


def test_snapshot_id_epoch_against_the_metadata_log(logdir, kfx):
    md = os.path.join(logdir, "__cluster_metadata-0")
    os.rename(os.path.join(md, os.path.basename(SNAP)), os.path.join(md, kraft.snapshot_file_name(5, 3)))
    r = kfx("verify", logdir, "--json")
    assert r.exit_code == 1
    (p,) = json.loads(r.stdout)["problems"]
    assert p["kind"] == "snapshot-epoch" and p["offset"] == 4 and "not among the log's leader epochs" in p["detail"]
    os.remove(os.path.join(md, kraft.snapshot_file_name(5, 3)))
    assert kfx("verify", logdir).exit_code == 0            # a log from offset 0 needs no snapshot ...
    from kafkaforensics.records.batch import Record
    from kafkaforensics.records.builder import build_v2
    from kafkaforensics.log.partition import Partition
    from kafkaforensics.log.writer import write_partition
    shutil.rmtree(md)
    write_partition(md, [build_v2([Record(3, 1, None, b"x", [])], base_offset=3, partition_leader_epoch=1)])
    (p,) = kraft.check_snapshot_ids(Partition.scan(md))   # ... one from offset 3 does
    assert p.kind == "missing-snapshot" and p.offset == 3


STREAMS_FIELDS = {"streams_group_metadata": ("Epoch", "MetadataHash", "LastAssignmentConfigs"),
                  "streams_group_topology": ("Subtopologies", "StateChangelogTopics", "TopicConfigs"),
                  "streams_group_member_metadata": ("TopologyEpoch", "ProcessId", "UserEndpoint", "ClientTags"),
                  "streams_group_target_assignment_metadata": ("AssignmentEpoch", "AssignmentTimestamp"),
                  "streams_group_target_assignment_member": ("ActiveTasks", "StandbyTasks", "WarmupTasks"),
                  "streams_group_current_member_assignment": ("MemberEpoch", "ActiveTasksPendingRevocation",
                                                              "AssignmentEpochs")}


def test_streams_group_records_are_dumped_with_their_field_names(kfx):
    """The fixture's streams group (types 17, 19-23), text and JSON: each kind decoded, named fields,
    nothing undecoded."""
    seg = os.path.join(KRAFT, "__consumer_offsets-0", "00000000000000000000.log")
    r = kfx("dump", seg, "--offsets-decoder", "--format", "json")
    assert r.exit_code == 0
    decoded = [x["decoded"] for b in _lines(r.stdout) for x in b.get("records", []) if "key" in x.get("decoded", {})]
    streams = {d["key"]["kind"]: d for d in decoded if d["key"]["kind"].startswith("streams_group")}
    assert sorted(int(d["key"]["type"]) for d in streams.values()) == [17, 19, 20, 21, 22, 23]
    assert streams["streams_group_member_metadata"]["value"]["data"]["UserEndpoint"] == {"Host": "10.0.0.7",
                                                                                       "Port": 8080}
    assert streams["streams_group_current_member_assignment"]["value"]["data"]["ActiveTasks"] == \
        [{"SubtopologyId": "0", "Partitions": [0], "AssignmentEpochs": [3]}]
    for kind, fields in STREAMS_FIELDS.items():
        assert all(f in json.dumps(streams[kind]["value"]["data"]) for f in fields), kind
    text = kfx("dump", seg, "--offsets-decoder").stdout
    assert "undecoded" not in text and "undecoded" not in r.stdout
    for kind, fields in STREAMS_FIELDS.items():
        line = next(x for x in text.splitlines() if f'"kind": "{kind}"' in x)
        assert all(f'"{f}"' in line for f in fields), kind
