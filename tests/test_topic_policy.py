"""Kafka's rules per topic (issue 50, part A): one effective LogConfig per partition (the log dir's
ConfigRecords, --config, internal topics' creation configs, Kafka's defaults), and the commands that
delete or compact obey its cleanup.policy; compact, retention, reindex and salvage follow the path rules."""
import json
import os

import pytest

from kafkaforensics.log.kafka_version import parse_kafka_version
from kafkaforensics.log.log_config import LogConfig, PolicyRefusal, parse_config_flags
from tests.corruption import snapshot_files
from tests.realdirs import REAL, unpack
from tests.test_noop_reasons import DAY, T0, TOPIC_ID, _config, _metadata, _partition
from specs import kafka_messages as K


def _real(tmp_path, name):
    if not os.path.exists(os.path.join(REAL, name + ".tar.gz")):
        pytest.skip(f"{name}.tar.gz not present (the real log dirs live outside the repository)")
    return unpack(name, str(tmp_path)).log_dir


def _one_error_line(r):
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert r.exit_code == 2 and len(lines) == 1 and lines[0].startswith("error:"), r.output
    return lines[0]


# -- item 1: one LogConfig per partition --------------------------------------------------------------

def test_log_config_resolves_metadata_then_config_then_internal_topics_then_defaults(tmp_path):
    bare = tmp_path / "bare" / "orders-0"
    _partition(bare)
    cfg = LogConfig.of(str(bare))
    assert cfg.describe("cleanup.policy") == "cleanup.policy=delete (Kafka's default)"
    assert (cfg.get_int("retention.ms"), cfg.get_int("retention.bytes"), cfg.get_int("segment.bytes")) == \
        (604_800_000, -1, 1 << 30)
    assert cfg.deletes and not cfg.compacts
    assert cfg.get("message.timestamp.type") == "CreateTime" and cfg.get_int("index.interval.bytes") == 4096
    # the generation that wrote the dir: max.compaction.lag.ms came with 2.3 (KIP-354)
    assert "max.compaction.lag.ms" not in LogConfig.of(str(bare), kafka_version=parse_kafka_version("2.0")).values
    assert "max.compaction.lag.ms" in LogConfig.of(str(bare), kafka_version=parse_kafka_version("2.3")).values
    # internal topics: the configs Kafka creates them with
    for topic, policy in (("__consumer_offsets", "compact"), ("__transaction_state", "compact"),
                          ("__share_group_state", "delete"), ("__remote_log_metadata", "delete")):
        _partition(tmp_path / "bare" / f"{topic}-0")
        cfg = LogConfig.of(str(tmp_path / "bare" / f"{topic}-0"))
        assert cfg.policies == {policy} and "creates " + topic in cfg.sources["cleanup.policy"], topic
    assert LogConfig.of(str(tmp_path / "bare" / "__remote_log_metadata-0")).get_int("retention.ms") == -1
    assert LogConfig.of(str(tmp_path / "bare" / "__consumer_offsets-0")).get_int("segment.bytes") == 100 << 20
    # --config: for what the log dir does not hold, over the internal topic's and the default
    cfg = LogConfig.of(str(tmp_path / "bare" / "__consumer_offsets-0"), {"cleanup.policy": "compact,delete"})
    assert cfg.policies == {"compact", "delete"} and cfg.sources["cleanup.policy"] == "--config"
    # the log dir's ConfigRecords win over --config (a note says it was not applied)
    logdir = tmp_path / "logs"
    _partition(logdir / "orders-0")
    _metadata(logdir, [(K.TopicRecord, {"Name": "orders", "TopicId": TOPIC_ID}),
                       _config(2, "orders", "cleanup.policy", "compact")])
    cfg = LogConfig.of(str(logdir / "orders-0"), {"cleanup.policy": "delete", "retention.ms": "5"})
    assert cfg.policies == {"compact"} and cfg.get_int("retention.ms") == 5
    assert any("--config cleanup.policy=delete not applied" in n for n in cfg.notes())
    # the metadata log: never cleaned nor expired
    md = LogConfig.of(str(logdir / "__cluster_metadata-0"))
    assert md.metadata_log and not md.deletes and not md.compacts
    copy = tmp_path / "copy" / "meta-0"  # any dir holding KRaft snapshots is the metadata log
    _partition(copy)
    (copy / "00000000000000000005-0000000001.checkpoint").write_bytes(b"")
    assert LogConfig.of(str(copy), {"cleanup.policy": "compact"}).metadata_log


def test_config_flags_are_parsed_as_kafka_parses_them():
    assert parse_config_flags(["retention.ms=-1", "cleanup.policy=compact,delete"]) == {
        "retention.ms": "-1", "cleanup.policy": "compact,delete"}
    for bad in ("retention.ms", "retention.ms=-2", "retention.ms=x", "cleanup.policy=keep", "no.such=1",
                "message.timestamp.type=Now"):
        with pytest.raises(ValueError):
            parse_config_flags([bad])


def test_recover_and_reindex_ask_the_same_log_config(tmp_path, kfx):
    """index.interval.bytes given by --config reaches reindex (the indexes Kafka would build with it)."""
    from kafkaforensics.log.writer import write_partition
    from kafkaforensics.records.batch import Record
    from kafkaforensics.records.builder import build_v2
    part = tmp_path / "bare" / "orders-0"
    batches = [build_v2([Record(b, T0 + b, b"k", b"v" * 300, [])], base_offset=b) for b in range(20)]
    write_partition(str(part), batches, index_interval_bytes=1024)
    assert kfx("reindex", "--dry-run", part).exit_code == 1  # Kafka's default 4096 builds other indexes
    r = kfx("reindex", "--dry-run", "--config", "index.interval.bytes=1024", part)
    assert r.exit_code == 0 and "index.interval.bytes=1024 (--config)" in r.stdout, r.stdout
    assert _one_error_line(kfx("reindex", "--config", "index.interval.bytes=big", part))


# -- item 2: commands obey the topic's policy ---------------------------------------------------------

def test_retention_refuses_to_expire_a_compacted_internal_topic(tmp_path, kfx):
    """The reproducer: retention.ms on kafka39's __consumer_offsets-13 (cleanup.policy=compact) deleted all
    680 records and left `kfx groups` 1 group of 3."""
    root = _real(tmp_path, "kafka39-kraft-cp79-live")
    part = os.path.join(root, "__consumer_offsets-13")
    before = snapshot_files(part)
    line = _one_error_line(kfx("retention", "--retention-ms", "604800000", part))
    assert "cleanup.policy=compact" in line and "--ignore-topic-config" in line
    assert snapshot_files(part) == before
    offsets = json.loads(kfx("groups", "--json", root).stdout)["offsets"]
    assert len(offsets) == 3, offsets  # the three commits `kfx groups` lists (one left after the old deletion)
    r = kfx("retention", "--dry-run", "--retention-ms", "604800000", "--ignore-topic-config", part)
    assert r.exit_code == 0 and "acting against the topic's policy" in r.stdout and "680 records" in r.stdout
    r = kfx("retention", "--dry-run", "--ignore-topic-config", part)  # the topic's limits, against its policy
    assert r.exit_code == 0 and "acting against the topic's policy" in r.stdout, r.stdout
    r = kfx("retention", "--dry-run", part)  # no flags: only the log start offset applies, and it says why
    assert r.exit_code == 0 and "nothing to delete" in r.stdout and "only the log start offset applies" in r.stdout


def test_compact_refuses_the_metadata_log_even_with_the_flag(tmp_path, kfx):
    root = _real(tmp_path, "kafka42-kraft-apache-image")
    md = os.path.join(root, "__cluster_metadata-0")
    before = snapshot_files(md)
    for args in (["compact", "--dry-run"], ["compact", "--dry-run", "--ignore-topic-config"],
                 ["compact", "--dry-run", "--config", "cleanup.policy=compact"],
                 ["retention", "--dry-run"], ["retention", "--retention-ms", "1", "--ignore-topic-config"]):
        line = _one_error_line(kfx(*args, md))
        assert "KRaft metadata log" in line and "never" in line, (args, line)
    assert snapshot_files(md) == before
    with pytest.raises(PolicyRefusal):
        LogConfig.of(md).check("compact", ignore=True)


def test_compact_refuses_a_delete_policy_topic_unless_told(tmp_path, kfx):
    part = tmp_path / "logs" / "users-0"
    _partition(part, segment_bytes=300)
    now = str(T0 + 10 * DAY)
    line = _one_error_line(kfx("compact", "--dry-run", "--now", now, part))
    assert "cleanup.policy=delete (Kafka's default)" in line and "--ignore-topic-config" in line, line
    r = kfx("compact", "--dry-run", "--json", "--now", now, "--ignore-topic-config", part)
    assert r.exit_code == 0 and any("acting against the topic's policy" in n for n in json.loads(r.stdout)["notes"])
    r = kfx("compact", "--dry-run", "--json", "--now", now, "--config", "cleanup.policy=compact", part)
    assert r.exit_code == 0 and json.loads(r.stdout)["dropped"]["records"] > 0
    assert "cleanup.policy=compact (--config), as Kafka would use it" in json.loads(r.stdout)["notes"]
    offsets = tmp_path / "zk" / "__consumer_offsets-0"  # an internal topic: compacted as Kafka creates it
    _partition(offsets, segment_bytes=300)
    r = kfx("compact", "--dry-run", "--json", "--now", now, offsets)
    assert r.exit_code == 0 and any("creates __consumer_offsets" in n for n in json.loads(r.stdout)["notes"]), r.output
    _metadata(tmp_path / "logs", [(K.TopicRecord, {"Name": "users", "TopicId": TOPIC_ID}),
                                  _config(2, "users", "cleanup.policy", "delete")])
    line = _one_error_line(kfx("compact", "--dry-run", "--config", "cleanup.policy=compact", part))
    assert "cleanup.policy=delete (topic config)" in line  # the log dir's own config wins over --config


def test_retention_minus_one_is_unlimited_and_says_so(tmp_path, kfx):
    part = tmp_path / "logs" / "orders-0"
    _partition(part, segment_bytes=300)
    r = kfx("retention", "--dry-run", "--retention-ms", "-1", "--retention-bytes", "-1", part)
    assert r.exit_code == 0 and "retention.ms=-1 and retention.bytes=-1: unlimited" in r.stdout, r.stdout
    assert "no retention limit was given" not in r.stdout
    r = kfx("retention", "--dry-run", "--json", "--config", "retention.ms=-1", part)
    j = json.loads(r.stdout)
    assert j["deletedSegments"] == [] and "retention.ms=-1: unlimited, as Kafka reads -1" in j["notes"]
    assert kfx("retention", "--retention-ms", "-2", part).exit_code == 2


def test_retention_names_kafkas_default_but_deletes_only_by_a_known_limit(tmp_path, kfx):
    # Kafka's built-in retention.ms may be overridden where the log dir cannot show it (server.properties,
    # ZooKeeper): without a flag or a config the log dir holds, nothing is deleted by it; it is named
    part = tmp_path / "logs" / "orders-0"
    _partition(part, segment_bytes=300)  # batches at days 0..5
    r = kfx("retention", "--dry-run", "--json", "--now", str(T0 + 12 * DAY), part)
    j = json.loads(r.stdout)
    assert j["deletedSegments"] == []
    assert any(n.startswith("retention.ms=604800000 (Kafka's default) not applied") for n in j["notes"]), j["notes"]
    r = kfx("retention", "--dry-run", "--json", "--now", str(T0 + 12 * DAY), "--config", "retention.ms=604800000",
            part)
    j = json.loads(r.stdout)
    assert [d["baseOffset"] for d in j["deletedSegments"]] == [0, 2, 4, 6, 8]  # days 0..4: older than 7 days


def test_salvage_refuses_a_log_dir_and_partitions_merged(tmp_path, kfx, sample):
    line = _one_error_line(kfx("salvage", "--out", tmp_path / "out", sample))
    assert "a log dir" in line and "partition dirs" in line and "own --out" in line
    parts = sorted(n for n in os.listdir(sample) if os.path.isdir(os.path.join(sample, n)) and n[-1].isdigit())
    a, b = (os.path.join(sample, n) for n in parts[:2])
    line = _one_error_line(kfx("salvage", "--out", tmp_path / "out", a, b))
    assert "different partitions" in line
    assert not os.path.exists(tmp_path / "out")
    segs = [os.path.join(d, n) for d in (a, b) for n in sorted(os.listdir(d)) if n.endswith(".log")]
    assert kfx("salvage", "--dry-run", "--out", tmp_path / "out", *segs).exit_code in (0, 1)  # raw files: taken


# -- path rules ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("command,args", [("compact", ["--dry-run"]), ("retention", ["--retention-ms", "1"]),
                                          ("reindex", ["--dry-run"])])
def test_compact_retention_reindex_follow_the_path_rules(tmp_path, kfx, sample, command, args):
    empty = tmp_path / "empty"
    empty.mkdir()
    other = tmp_path / "notes"
    other.mkdir()
    (other / "readme.txt").write_text("hello")
    before = snapshot_files(sample)
    for path, words in ((empty, "an empty directory"), (other, "nothing Kafka wrote"),
                        (sample, "not a log dir"), (tmp_path / "missing", "no such file")):
        line = _one_error_line(kfx(command, *args, path))
        assert words in line, (path, line)
    assert snapshot_files(sample) == before
