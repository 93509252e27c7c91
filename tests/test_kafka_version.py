"""Which Kafka generation wrote a log dir (kafka_version) and the rules table (kafka_rules)."""
import os
import tarfile

import pytest

from kafkaforensics.log.kafka_rules import RULES, AppliedRules, rules_markdown
from kafkaforensics.log.kafka_version import infer_kafka_version, kafka_version, parse_kafka_version

from tests.realdirs import REAL
README = os.path.join(os.path.dirname(__file__), "..", "README.md")

# tarball -> (the version PROVENANCE.md gives, the narrowest range its files allow: low, high)
PROVENANCE = {
    # what is absent proves nothing (issue 51): no leader-epoch-checkpoint (deleted from 2.2 on the old
    # message format) and no partition.metadata (an inter.broker.protocol below 2.8) bound neither
    "magic1-kafka0101-zk": ((0, 10), (0, 10), (2, 4)),
    "kafka27-zk-compacted-offsets": ((2, 7), (2, 4), (4, 0)),
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


def _log_dir(tmp_path, meta: str, parts=("t-0",), topic_ids=True):
    root = tmp_path / "logs"
    root.mkdir(parents=True)
    (root / "meta.properties").write_text(meta)
    (root / "log-start-offset-checkpoint").write_text("0\n0\n")
    for p in parts:
        (root / p).mkdir()
        (root / p / "leader-epoch-checkpoint").write_text("0\n0\n")
        if topic_ids:
            (root / p / "partition.metadata").write_text("version: 0\ntopic_id: KSqXCsh0SDOAYm1yUOQfpQ\n")
    return root


def test_clean_shutdown_json_is_37_or_later(tmp_path):
    root = _log_dir(tmp_path, "version=0\nbroker.id=1\ncluster.id=bhKx9kzDTW6IYAX6MriLZQ\n")
    (root / ".kafka_cleanshutdown").write_text('{"version":0,"brokerEpoch":12}')
    kv = infer_kafka_version(str(root))
    assert (kv.low, kv.high) == ((3, 7), (4, 0)) and kv.rules().write("time-index-offset") == "batch"
    (root / ".kafka_cleanshutdown").write_text("")
    assert infer_kafka_version(str(root)).high == (3, 7)


def test_meta_properties_fields(tmp_path):
    root = _log_dir(tmp_path, "version=1\nnode.id=1\ncluster.id=bhKx9kzDTW6IYAX6MriLZQ\n"
                              "directory.id=Teb3PFb009qvAZgMDEFH4g\n")
    assert infer_kafka_version(str(root)).low == (3, 7)
    (root / "meta.properties").write_text("version=1\nnode.id=1\ncluster.id=bhKx9kzDTW6IYAX6MriLZQ\n")
    kv = infer_kafka_version(str(root))
    assert (kv.low, kv.high) == ((2, 8), (3, 7))


def test_index_contents_tell_base_or_last_offsets(tmp_path):
    """An offset index of batch base offsets (batches of several records) is 1.1 or older; a time
    index naming a record inside an uncompressed batch was written by a 3.6 or older leader."""
    from tests.test_kafka_generations import batches, broker_files
    appends = [[b] for b in batches(8)]
    for entry, time_offset, want in (("base", "record", ((0, 11), (2, 0))), ("last", "record", ((2, 4), (3, 7))),
                                     ("last", "batch", ((2, 4), (4, 0)))):
        root = _log_dir(tmp_path / f"{entry}-{time_offset}", "version=0\nbroker.id=0\n" if entry == "base" else
                        "version=0\nbroker.id=0\ncluster.id=bhKx9kzDTW6IYAX6MriLZQ\n", topic_ids=False)
        log, idx, tidx = broker_files(appends, entry=entry, time_offset=time_offset)
        for suf, data in ((".log", log), (".index", idx), (".timeindex", tidx)):
            (root / "t-0" / f"{0:020d}{suf}").write_bytes(data)
        kv = infer_kafka_version(str(root))
        assert (kv.low, kv.high) == want, (entry, time_offset, kv.line())
        assert ("time-index entries name records" in kv.line()) is (time_offset == "record")


def test_real_27_snapshot_at_the_log_start_goes_as_every_load_deletes_it(tmp_path):
    """Kafka 2.7.1's myTopic-0: every batch gone to retention (an empty segment at 38), its snapshot at
    38 holds 3 producers. Inferred 2.4-3.9 (no partition.metadata proves nothing); whatever the version, Kafka's load deletes a snapshot at or
    below the log start (ProducerStateManager.truncateAndReload) and takes none there."""
    from kafkaforensics.repair.recovery import recover
    root = unpack_real(tmp_path, "kafka27-zk-compacted-offsets")
    part = os.path.join(root, "myTopic-0")
    snap = "00000000000000000038.snapshot"
    assert os.path.getsize(os.path.join(part, snap)) == 148
    for told in (None, "2.3", "3.9"):
        rep = recover(part, dry_run=True, kafka_version=told)
        assert told or rep.kafka.label() == "≥2.4, <4.0"
        acts = [(a.action, os.path.basename(a.file)) for a in rep.actions if a.file.endswith(".snapshot")]
        assert acts == [("delete", snap)], (told, acts)


def test_damaged_files_only_leave_facts_unknown(tmp_path):
    """Garbage in the metadata log, its snapshot, an index and the clean-shutdown file: inference
    neither raises nor invents a bound from them."""
    import random
    import shutil
    from tests.conftest import FIXTURES
    root = tmp_path / "kraft"
    shutil.copytree(os.path.join(FIXTURES, "kraft-logdir"), root)
    rnd = random.Random(29)
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            if f.endswith((".log", ".checkpoint", ".index", ".timeindex")):
                p = os.path.join(dirpath, f)
                data = bytearray(open(p, "rb").read())
                for _ in range(max(1, len(data) // 50)):
                    if data:
                        data[rnd.randrange(len(data))] = rnd.randrange(256)
                open(p, "wb").write(bytes(data) + bytes(rnd.randrange(256) for _ in range(37)))
    kv = infer_kafka_version(str(root))
    assert kv.contains((4, 0)), kv.line()
