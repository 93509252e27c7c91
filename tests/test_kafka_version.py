"""Which Kafka generation wrote a log dir (kafka_version) and the rules table (kafka_rules)."""
import os
import tarfile

import pytest

from kafkaforensics.log.kafka_rules import RULES, AppliedRules, rules_markdown
from kafkaforensics.log.kafka_version import infer_kafka_version, kafka_version, parse_kafka_version

REAL = os.environ.get("KFX_REAL_LOGDIRS", "/work/shared/real-logdirs")
README = os.path.join(os.path.dirname(__file__), "..", "README.md")

# tarball -> (the version PROVENANCE.md gives, the narrowest range its files allow: low, high)
PROVENANCE = {
    "magic1-kafka0101-zk": ((0, 10), (0, 10), (0, 11)),
    "kafka27-zk-compacted-offsets": ((2, 7), (2, 4), (2, 8)),
    "snappy-xerial-kafka28-zk": ((2, 8), (2, 8), (4, 0)),
    "kafka3x-zk-bitnami-gzip-cleanshutdown": ((3, 4), (2, 8), (3, 7)),
    "ksqldb-txn-kafka34-kraft-bitnami": ((3, 4), (3, 4), (3, 5)),
    "kafka36-zk-windows-local": ((3, 6), (2, 8), (4, 0)),
    "kafka39-kraft-cp79-live": ((3, 9), (3, 9), (4, 0)),
    "kafka42-kraft-apache-image": ((4, 2), (4, 2), (4, 3)),
}


def unpack_real(tmp_path, name: str) -> str:
    """The log-dir root of a real tarball unpacked under tmp_path (the folder with meta.properties)."""
    tar = os.path.join(REAL, name + ".tar.gz")
    if not os.path.exists(tar):
        pytest.skip(f"{tar} not present (the real log dirs live outside the repository)")
    with tarfile.open(tar) as t:
        t.extractall(tmp_path, filter="data")
    for root, _dirs, files in os.walk(tmp_path):
        if "meta.properties" in files:
            return root
    raise AssertionError(f"no meta.properties in {name}")


@pytest.mark.parametrize("name", sorted(PROVENANCE))
def test_inferred_version_matches_provenance(tmp_path, name):
    true, low, high = PROVENANCE[name]
    kv = infer_kafka_version(unpack_real(tmp_path, name))
    assert kv.contains(true), (name, kv.line())
    assert (kv.low, kv.high) == (low, high), (name, kv.line())
    assert kv.known and not kv.told


def test_inferred_from_a_partition_dir_or_segment(tmp_path):
    root = unpack_real(tmp_path, "kafka42-kraft-apache-image")
    part = os.path.join(root, "test-topic-0")
    assert kafka_version(part).label() == "4.2"
    assert kafka_version(os.path.join(part, "00000000000000000000.log")).label() == "4.2"


def test_told_version_overrides(tmp_path):
    root = unpack_real(tmp_path, "kafka42-kraft-apache-image")
    kv = kafka_version(root, "3.6.2")
    assert kv.told and (kv.low, kv.high) == ((3, 6), (3, 7))
    assert kv.rules().write("time-index-offset") == "record"
    with pytest.raises(ValueError):
        parse_kafka_version("3.x")
    with pytest.raises(ValueError):
        parse_kafka_version("9.9")


def test_no_evidence_means_newest_rules(tmp_path):
    kv = infer_kafka_version(str(tmp_path))
    assert not kv.known
    r = kv.rules()
    assert all(len(r.possible(rule.area)) == 1 for rule in RULES)
    assert r.write("index-entries-per") == "batch" and r.write("offset-index-entry") == "last"


def test_rules_by_version():
    def one(v, area):
        return AppliedRules(v, (v[0], v[1] + 1)).possible(area)
    assert one((1, 1), "offset-index-entry") == ["base"] and one((2, 0), "offset-index-entry") == ["last"]
    assert one((3, 6), "time-index-offset") == ["record"]
    assert one((3, 7), "time-index-offset") == ["append"]
    assert one((3, 8), "time-index-offset") == ["batch"]
    assert one((2, 2), "corrupt-index-below-recovery-point") == ["rebuild"]
    assert one((2, 3), "corrupt-index-below-recovery-point") == ["keep"]
    assert one((2, 8), "leftover-swap") == ["recover"] and one((3, 0), "leftover-swap") == ["rename"]
    assert one((2, 3), "producers-below-log-start") == ["evict"] and one((2, 4), "producers-below-log-start") == ["keep"]
    assert one((2, 7), "stray-snapshots") == ["keep"] and one((2, 8), "stray-snapshots") == ["remove"]
    assert one((3, 0), "cleaner-tombstones") == ["segment-mtime"] and one((3, 1), "cleaner-tombstones") == ["delete-horizon"]
    assert one((4, 0), "index-entries-per") == ["append"] and one((4, 1), "index-entries-per") == ["batch"]
    wide = AppliedRules((2, 8), (4, 0))
    assert wide.possible("time-index-offset") == ["record", "append", "batch"]
    assert wide.write("time-index-offset") == "batch"


def test_readme_table_is_the_code_table():
    with open(README, encoding="utf-8") as f:
        text = f.read()
    assert rules_markdown() in text
    for rule in RULES:  # every rule names its Kafka source
        assert rule.source and rule.behaviours


def test_cli_says_which_rules_and_real_indexes_are_kept(tmp_path, kfx):
    """A ZooKeeper 3.4 log dir shut down cleanly, every index present: the range and its rules in one
    line (a field in --json); reindex --dry-run keeps every index of every partition."""
    import json
    root = unpack_real(tmp_path, "kafka3x-zk-bitnami-gzip-cleanshutdown")
    r = kfx("verify", os.path.join(root, "test-0"))
    assert "Kafka ≥2.8, <3.7 (" in r.stdout and "time-index-offset=record" in r.stdout
    r = kfx("verify", os.path.join(root, "test-0"), "--json")
    assert json.loads(r.stdout)["kafkaVersion"]["range"] == "≥2.8, <3.7"
    parts = [p for p in sorted(os.listdir(root)) if os.path.isdir(os.path.join(root, p))]
    assert len(parts) == 57
    for p in parts:
        out = json.loads(kfx("reindex", os.path.join(root, p), "--dry-run", "--json").stdout)
        assert out["actions"] == [] and out["kafkaVersion"]["high"] == "3.7", p
    r = kfx("recover", os.path.join(root, "test-0"), "--dry-run", "--kafka-version", "3.x")
    assert r.exit_code == 2 and "--kafka-version" in r.output


def test_a_partition_kfx_wrote_has_no_generation(tmp_path):
    """No meta.properties: not a broker's log dir; its missing files say nothing (newest rules)."""
    from kafkaforensics.log.writer import write_partition
    from kafkaforensics.records.batch import Record
    from kafkaforensics.records.builder import build_v2
    part = write_partition(str(tmp_path / "t-0"), [build_v2([Record(0, 1, b"k", b"v")], base_offset=0)])
    kv = kafka_version(part)
    assert not kv.known and kv.label().startswith("unknown")
