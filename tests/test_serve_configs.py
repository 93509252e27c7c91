"""DescribeConfigs as Kafka 4.x answers it (what `kafka-configs.sh --describe --all` and confluent-kafka's
describe_configs show): every topic config with value, source and synonyms; in a real KRaft log dir the
topic's own configs come from its ConfigRecords (TOPIC_CONFIG), the rest are Kafka's defaults
(DEFAULT_CONFIG); Produce validation reads the same configs (a keyless record to a compacted topic is
refused)."""
import os
import tarfile
import time

import pytest

from kafkaforensics.broker import topic_configs as TC
from kafkaforensics.broker.server import BrokerThread
from kafkaforensics.records.batch import Record
from kafkaforensics.records.builder import build_v2
from specs import kafka_errors as E
from tests.test_serve_transactions import Raw

from tests.realdirs import REAL as _REAL_DIRS

REAL = os.path.join(_REAL_DIRS, "ksqldb-txn-kafka34-kraft-bitnami.tar.gz")


@pytest.fixture(scope="module")
def kraft_dir(tmp_path_factory):
    if not os.path.exists(REAL):
        pytest.skip(f"{REAL} (a real Kafka 3.4 KRaft log dir) is not on this machine")
    d = tmp_path_factory.mktemp("kraft")
    with tarfile.open(REAL) as t:
        t.extractall(d, filter="data")
    return str(d / "kafka_data")


def test_confluent_kafka_describe_configs_lists_every_topic_config_with_its_source(kraft_dir, tmp_path):
    from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource
    with BrokerThread(kraft_dir, state_path=str(tmp_path / "s.json")) as b:
        a = AdminClient({"bootstrap.servers": b.bootstrap})
        res = a.describe_configs([ConfigResource("topic", "locations"), ConfigResource("topic", "_schemas")])
        got = {r.name: f.result(10) for r, f in res.items()}
    loc, schemas = got["locations"], got["_schemas"]
    assert set(loc) == set(TC.TOPIC_CONFIGS) and len(loc) == 33
    # the topic's own (ConfigRecords in __cluster_metadata-0)
    assert (loc["retention.ms"].value, loc["retention.ms"].source) == ("604800000", ConfigSource.DYNAMIC_TOPIC_CONFIG.value)
    assert (loc["cleanup.policy"].value, loc["cleanup.policy"].source) == ("delete", ConfigSource.DYNAMIC_TOPIC_CONFIG.value)
    assert (schemas["cleanup.policy"].value, schemas["cleanup.policy"].source) == ("compact",
                                                                                  ConfigSource.DYNAMIC_TOPIC_CONFIG.value)
    # first synonym: the topic's own value, then the broker config it overrides, with Kafka's default
    syn = [(s.name, s.value, s.source) for s in loc["cleanup.policy"].synonyms.values()]
    assert syn == [("cleanup.policy", "delete", ConfigSource.DYNAMIC_TOPIC_CONFIG.value),
                   ("log.cleanup.policy", "delete", ConfigSource.DEFAULT_CONFIG.value)]
    # Kafka's defaults elsewhere
    seg = schemas["segment.bytes"]
    assert (seg.value, seg.source, seg.is_default) == ("1073741824", ConfigSource.DEFAULT_CONFIG.value, True)
    ret = schemas["retention.ms"]
    assert [(s.name, s.value) for s in ret.synonyms.values()] == [("log.retention.hours", "168")]
    assert schemas["message.timestamp.after.max.ms"].value == "3600000"
    assert schemas["leader.replication.throttled.replicas"].synonyms == {}


def test_a_topic_without_config_records_is_all_defaults_and_keys_filter(tmp_path):
    from tests.conftest import SAMPLE
    with BrokerThread(SAMPLE, state_path=str(tmp_path / "s.json")) as b:
        r = Raw(b.port)
        body = r.call(32, 4, {"Resources": [{"ResourceType": 2, "ResourceName": "orders",
                                             "ConfigurationKeys": ["retention.ms", "max.message.bytes", "nope"]}],
                              "IncludeSynonyms": False, "IncludeDocumentation": False})
        r.s.close()
    cfg = {c["Name"]: c for c in body["Results"][0]["Configs"]}
    assert sorted(cfg) == ["max.message.bytes", "retention.ms"]
    assert cfg["max.message.bytes"]["Value"] == "1048588" and cfg["max.message.bytes"]["ConfigType"] == TC.INT
    assert all(c["ConfigSource"] == TC.DEFAULT_CONFIG and c["Synonyms"] == [] for c in cfg.values())


def test_produce_reads_the_topic_configs_a_compacted_topic_needs_keys(kraft_dir, tmp_path):
    import shutil
    d = tmp_path / "logs"
    shutil.copytree(kraft_dir, d)
    now = int(time.time() * 1000)
    with BrokerThread(str(d), writable=True, state_path=str(tmp_path / "s.json")) as b:
        r = Raw(b.port)
        for key, want in ((None, E.INVALID_RECORD), (b"k", E.NONE)):
            batch = build_v2([Record(0, now, key, b"v", [])], base_offset=0)
            topic = {"Name": "_schemas", "PartitionData": [{"Index": 0, "Records": batch}]}
            body = r.call(0, 9, {"TransactionalId": None, "Acks": -1, "TimeoutMs": 5000, "TopicData": [topic]})
            p = body["Responses"][0]["PartitionResponses"][0]
            assert p["ErrorCode"] == want
            if want:
                assert p["RecordErrors"][0]["BatchIndex"] == 0
        r.s.close()
