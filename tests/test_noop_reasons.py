"""No-ops say why and what would make them act; retention and compaction use the topic's configs from
the log dir's KRaft metadata (ConfigRecords) as Kafka would, flags overriding (issue 31)."""
import json

from kafkaforensics.log.topic_config import topic_configs
from kafkaforensics.log.writer import write_partition
from kafkaforensics.records.batch import Record
from kafkaforensics.records.builder import build_v2
from kafkaforensics.records.internal_topics import encode_metadata
from specs import kafka_messages as K
from tests.conftest import COMPACTED

T0 = 1_700_000_000_000
DAY = 86_400_000
TOPIC_ID = "AAAAAAAAAAAAAAAAAAAABw"


def _partition(path, n_batches=6, segment_bytes=1 << 30, t0=T0):
    batches = [build_v2([Record(b * 2 + i, t0 + b * DAY, b"k%d" % (i % 2), b"v" * 50, []) for i in range(2)],
                        base_offset=b * 2) for b in range(n_batches)]
    write_partition(str(path), batches, segment_bytes=segment_bytes)


def _metadata(logdir, records):
    """A __cluster_metadata-0 of these (schema, data) records, one batch each."""
    batches = [build_v2([Record(i, T0, None, encode_metadata(schema, 0, data), [])], base_offset=i)
               for i, (schema, data) in enumerate(records)]
    write_partition(str(logdir / "__cluster_metadata-0"), batches)


def _config(rtype, name, key, value):
    return K.ConfigRecord, {"ResourceType": rtype, "ResourceName": name, "Name": key, "Value": value}


def test_compact_of_an_active_segment_names_include_active(tmp_path, kfx):
    part = tmp_path / "logs" / "users-0"
    _partition(part)
    r = kfx("compact", *COMPACTED, "--dry-run", part)
    assert r.exit_code == 0
    assert "active segment 00000000000000000000.log" in r.stdout and "--include-active" in r.stdout, r.stdout
    assert "which Kafka never cleans" in r.stdout
    r = kfx("compact", *COMPACTED, "--dry-run", "--include-active", part)
    assert "nothing to clean" not in r.stdout and "records" in r.stdout


def test_compact_of_a_clean_log_names_ignore_checkpoint(tmp_path, kfx):
    part = tmp_path / "logs" / "users-0"
    _partition(part, segment_bytes=300)
    r = kfx("compact", *COMPACTED, "--dry-run", "--now", str(T0 + 10 * DAY), part)
    assert "nothing to clean" not in r.stdout
    assert kfx("compact", *COMPACTED, "--include-active", "--now", str(T0 + 10 * DAY), part).exit_code == 0
    r = kfx("compact", *COMPACTED, "--dry-run", "--include-active", "--now", str(T0 + 10 * DAY), part)
    assert "clean up to its end (cleaner-offset-checkpoint at 12)" in r.stdout and "--ignore-checkpoint" in r.stdout, r.stdout


def test_retention_without_a_limit_says_so_and_names_the_flags(tmp_path, kfx):
    # issue 50: a topic the log dir holds no config for: Kafka's built-in default (retention.ms=604800000) is
    # named but never deletes data (server.properties or ZooKeeper may set another); the flags say how to apply one
    part = tmp_path / "logs" / "orders-0"
    _partition(part, segment_bytes=300)
    r = kfx("retention", "--dry-run", part)
    assert r.exit_code == 0 and "older than" not in r.stdout and "nothing to delete" in r.stdout, r.stdout
    assert "retention.ms=604800000 (Kafka's default) not applied: the log dir holds no retention.ms for orders" \
        in r.stdout, r.stdout
    assert "--config retention.ms=VALUE" in r.stdout
    r = kfx("retention", "--dry-run", "--config", "retention.ms=604800000", part)
    assert r.exit_code == 0 and "older than retention.ms=604800000" in r.stdout, r.stdout
    r = kfx("retention", "--dry-run", "--config", "retention.ms=-1", part)
    assert r.exit_code == 0 and "retention.ms=-1 and retention.bytes=-1: unlimited" in r.stdout, r.stdout
    r = kfx("retention", "--dry-run", "--retention-ms", str(1000 * DAY), "--now", str(T0 + 10 * DAY), part)
    assert "no segment is past retention.ms=86400000000" in r.stdout, r.stdout


def test_retention_uses_the_topics_configs_and_flags_override(tmp_path, kfx):
    logdir = tmp_path / "logs"
    part = logdir / "orders-0"
    _partition(part, segment_bytes=300)
    _metadata(logdir, [(K.TopicRecord, {"Name": "orders", "TopicId": TOPIC_ID}),
                       _config(4, "", "log.retention.hours", "1000"),             # cluster default, overridden
                       _config(2, "orders", "retention.ms", str(3 * DAY)),
                       _config(2, "other", "retention.ms", "1")])
    cfg = topic_configs(str(part), "orders")
    assert cfg.values == {"retention.ms": str(3 * DAY)} and cfg.sources["retention.ms"] == "topic config"
    now = str(T0 + 6 * DAY)  # batches at days 0..5: those older than 3 days go
    r = kfx("retention", "--dry-run", "--json", "--now", now, part)
    j = json.loads(r.stdout)
    assert [d["reason"] for d in j["deletedSegments"]] and all("retention.ms=259200000" in d["reason"]
                                                               for d in j["deletedSegments"])
    assert "retention.ms=259200000 (topic config) from __cluster_metadata-0" in j["notes"][0]
    r = kfx("retention", "--dry-run", "--json", "--now", now, "--retention-ms", str(100 * DAY), part)
    assert json.loads(r.stdout)["deletedSegments"] == [] and json.loads(r.stdout)["notes"] == []
    r = kfx("retention", "--dry-run", "--now", now, part)
    assert "note: retention.ms=259200000 (topic config) from __cluster_metadata-0, as Kafka would use it" in r.stdout


def test_cluster_default_synonyms_and_removed_configs(tmp_path):
    logdir = tmp_path / "logs"
    part = logdir / "orders-0"
    _partition(part)
    _metadata(logdir, [(K.TopicRecord, {"Name": "orders", "TopicId": TOPIC_ID}),
                       _config(4, "", "log.retention.hours", "2"),
                       _config(4, "", "log.cleanup.policy", "compact"),
                       _config(2, "orders", "cleanup.policy", "delete"),
                       _config(2, "orders", "cleanup.policy", None)])  # removed: the broker default again
    cfg = topic_configs(str(part), "orders")
    assert cfg.get_int("retention.ms") == 2 * 3_600_000
    assert cfg.sources["retention.ms"] == "cluster-wide dynamic broker default, log.retention.hours"
    assert cfg.policies() == {"compact"}


def test_a_compacted_topic_is_not_deleted_by_its_retention_config(tmp_path, kfx):
    logdir = tmp_path / "logs"
    part = logdir / "users-0"
    _partition(part, segment_bytes=300)
    _metadata(logdir, [(K.TopicRecord, {"Name": "users", "TopicId": TOPIC_ID}),
                       _config(2, "users", "cleanup.policy", "compact"),
                       _config(2, "users", "retention.ms", "1"),
                       _config(2, "users", "min.compaction.lag.ms", str(DAY))])
    r = kfx("retention", "--dry-run", "--now", str(T0 + 10 * DAY), part)
    assert "nothing to delete" in r.stdout and "cleanup.policy=compact (topic config)" in r.stdout, r.stdout
    r = kfx("compact", *COMPACTED, "--dry-run", "--json", "--now", str(T0 + 10 * DAY), part)
    notes = json.loads(r.stdout)["notes"]
    assert any("min.compaction.lag.ms=86400000 (topic config)" in n for n in notes), notes


def test_reindex_recover_and_compact_use_the_topics_index_interval_and_segment_size(tmp_path, kfx):
    logdir = tmp_path / "logs"
    part = logdir / "orders-0"
    batches = [build_v2([Record(b * 2 + i, T0 + b, b"k%d" % i, b"v" * 300, []) for i in range(2)], base_offset=b * 2)
               for b in range(12)]
    write_partition(str(part), batches, index_interval_bytes=1024, segment_bytes=6000)
    bare = tmp_path / "bare" / "orders-0"  # the same partition, no metadata beside it
    write_partition(str(bare), batches, index_interval_bytes=1024, segment_bytes=6000)
    _metadata(logdir, [(K.TopicRecord, {"Name": "orders", "TopicId": TOPIC_ID}),
                       _config(2, "orders", "index.interval.bytes", "1024"),
                       _config(4, "", "log.segment.bytes", "4000")])
    r = kfx("reindex", "--dry-run", part)
    assert r.exit_code == 0, r.stdout  # the indexes are what Kafka builds with the topic's 1024
    assert "index.interval.bytes=1024 (topic config) from __cluster_metadata-0" in r.stdout
    assert kfx("reindex", "--dry-run", bare).exit_code == 1  # Kafka's default 4096 builds others
    assert kfx("reindex", "--dry-run", "--index-interval-bytes", "4096", part).exit_code == 1  # the flag wins
    j = json.loads(kfx("recover", "--dry-run", "--json", "--full", part).stdout)
    assert j["actions"] == [] and any("index.interval.bytes=1024" in n for n in j["notes"]), j
    j = json.loads(kfx("compact", *COMPACTED, "--dry-run", "--json", "--include-active", part).stdout)
    assert any("segment.bytes=4000 (cluster-wide dynamic broker default, log.segment.bytes)" in n for n in j["notes"])
    assert [len(g) for g in j["groups"]] == [1, 1]  # two segments of ~5.6 kB: no group of both within 4000
    j = json.loads(kfx("compact", *COMPACTED, "--dry-run", "--json", "--include-active", bare).stdout)
    assert len(j["groups"]) == 1  # Kafka's default segment.bytes: one group


def test_metadata_that_breaks_off_gives_what_came_before_and_says_so(tmp_path, monkeypatch):
    from kafkaforensics.errors import KafkaFormatError
    from kafkaforensics.log import topic_config
    from kafkaforensics.log.log_config import LogConfig
    part = tmp_path / "logs" / "orders-0"
    _partition(part)
    (tmp_path / "logs" / "__cluster_metadata-0").mkdir()

    def broken(_dir):
        yield {"type": "ConfigRecord", "data": {"ResourceType": 2, "ResourceName": "orders", "Name": "retention.ms",
                                                "Value": "5"}}
        raise KafkaFormatError("compression", "gzip payload does not decompress", file="x.log", position=9)
    monkeypatch.setattr(topic_config, "metadata_records", broken)
    cfg = LogConfig.of(str(part))
    got, notes = cfg.settle({"retention.ms": None})
    assert got == {"retention.ms": 5} and cfg.records.unreadable
    assert "could not be read to its end" in notes[0] and "gzip payload" in notes[0]
