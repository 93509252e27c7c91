"""CreateTopics, CreatePartitions and auto-creation as Kafka 4.x answers them: Topic.validate's names (a
trailing newline included), '.'/'_' collisions, the controller's records-per-request cap (POLICY_VIOLATION,
so NumPartitions 2^31-1 is refused at once), and partition dirs made in a worker thread: every other
connection is answered within a second while thousands are made."""
import os
import threading
import time

import pytest

from kafkaforensics.broker.topic_creation import MAX_RECORDS_PER_REQUEST, valid_topic
from kafkaforensics.broker.server import BrokerThread
from specs import kafka_errors as E
from tests.test_serve_transactions import Raw

BAD = ["ok\n", "ok\r\n", "", ".", "..", "x" * 250, "a/b", "../up", "ä", "a b", "ok\x00", "\nok"]


@pytest.fixture
def cbroker(tmp_path):
    d = tmp_path / "logs"
    d.mkdir()
    with BrokerThread(str(d), writable=True, state_path=str(tmp_path / "s.json")) as b:
        b.dir = str(d)
        yield b


def _create(raw, topics, version=5):
    body = {"Topics": [{"Name": n, "NumPartitions": p, "ReplicationFactor": 1, "Assignments": [], "Configs": []}
                       for n, p in topics], "timeoutMs": 30000}
    return {t["Name"]: t for t in raw.call(19, version, body)["Topics"]}


def test_topic_validate_is_kafkas():
    assert all(not valid_topic(n) for n in BAD)
    assert all(valid_topic(n) for n in ["x" * 249, "a.b_c-D9", "...", "_"])


@pytest.mark.parametrize("name", BAD, ids=[repr(n) for n in BAD])
def test_illegal_names_are_refused_by_create_topics_and_auto_create(cbroker, name):
    raw = Raw(cbroker.port)
    before = sorted(os.listdir(cbroker.dir))
    r = _create(raw, [(name, 1)])
    assert r[name]["ErrorCode"] == E.INVALID_TOPIC_EXCEPTION
    md = raw.call(3, 12, {"Topics": [{"Name": name, "TopicId": "AAAAAAAAAAAAAAAAAAAAAA"}], "AllowAutoTopicCreation": True})
    assert md["Topics"][0]["ErrorCode"] == E.INVALID_TOPIC_EXCEPTION
    raw.s.close()
    assert sorted(os.listdir(cbroker.dir)) == before


def test_colliding_names_and_existing_topics(cbroker):
    raw = Raw(cbroker.port)
    assert _create(raw, [("a.b", 1)])["a.b"]["ErrorCode"] == E.NONE
    assert _create(raw, [("a_b", 1)])["a_b"]["ErrorCode"] == E.INVALID_TOPIC_EXCEPTION
    assert _create(raw, [("a.b", 1)])["a.b"]["ErrorCode"] == E.TOPIC_ALREADY_EXISTS
    assert _create(raw, [("z", 0)])["z"]["ErrorCode"] == E.INVALID_PARTITIONS
    assert _create(raw, [("z", -2)])["z"]["ErrorCode"] == E.INVALID_PARTITIONS
    raw.s.close()
    assert not os.path.exists(os.path.join(cbroker.dir, "a_b-0"))


@pytest.mark.parametrize("n", [2**31 - 1, MAX_RECORDS_PER_REQUEST])
def test_a_request_over_the_controllers_record_cap_is_refused_at_once(cbroker, n):
    raw = Raw(cbroker.port)
    start = time.monotonic()
    r = _create(raw, [("huge", n), ("small", 1)])
    assert time.monotonic() - start < 1.0
    # Kafka's controller refuses the whole request: "Unable to perform excessively large batch operation."
    assert r["huge"]["ErrorCode"] == E.POLICY_VIOLATION and r["small"]["ErrorCode"] == E.POLICY_VIOLATION
    assert _create(raw, [("p", 1)])["p"]["ErrorCode"] == E.NONE
    cp = raw.call(37, 3, {"Topics": [{"Name": "p", "Count": 2**31 - 1, "Assignments": None}], "TimeoutMs": 1000,
                          "ValidateOnly": False})
    assert cp["Results"][0]["ErrorCode"] == E.POLICY_VIOLATION
    raw.s.close()
    assert sorted(os.listdir(cbroker.dir)) == ["p-0"]


def test_thousands_of_partitions_are_made_off_the_event_loop(cbroker):
    """While 3000 partition dirs are made (a worker thread), another connection's requests are answered
    within a second each; then every partition is served."""
    n = 3000
    result = {}

    def create():
        raw = Raw(cbroker.port)
        raw.s.settimeout(300)
        result.update(_create(raw, [("many", n)]))
        raw.s.close()

    t = threading.Thread(target=create)
    t.start()
    # the other connection asks once the creation has begun: asked before, its Metadata (auto-creation
    # allowed) would make "many" with one partition and the CreateTopics would find it there
    deadline = time.monotonic() + 60
    while t.is_alive() and time.monotonic() < deadline and not any(
            d.startswith("many-") for d in os.listdir(cbroker.dir)):
        time.sleep(0.001)
    other = Raw(cbroker.port)
    slowest, asked = 0.0, 0
    while t.is_alive():
        start = time.monotonic()
        assert other.call(18, 3, {"ClientSoftwareName": "o", "ClientSoftwareVersion": "1"})["ErrorCode"] == 0
        md = other.call(3, 12, {"Topics": [{"Name": "many", "TopicId": "AAAAAAAAAAAAAAAAAAAAAA"}], "AllowAutoTopicCreation": True})
        slowest, asked = max(slowest, time.monotonic() - start), asked + 1
        assert md["Topics"][0]["ErrorCode"] in (E.NONE, E.UNKNOWN_TOPIC_OR_PARTITION)
        time.sleep(0.05)
    t.join()
    assert asked >= 2 and slowest < 1.0, (asked, slowest)
    assert result["many"]["ErrorCode"] == E.NONE and result["many"]["NumPartitions"] == n
    md = other.call(3, 12, {"Topics": [{"Name": "many", "TopicId": "AAAAAAAAAAAAAAAAAAAAAA"}], "AllowAutoTopicCreation": False})
    assert len(md["Topics"][0]["Partitions"]) == n
    other.s.close()
    assert sum(1 for d in os.listdir(cbroker.dir) if d.startswith("many-")) == n


def test_create_topics_configs_are_checked_and_become_the_topics(cbroker):
    import time as _t
    from kafkaforensics.records.batch import Record
    from kafkaforensics.records.builder import build_v2
    raw = Raw(cbroker.port)

    def create(name, configs):
        body = {"Topics": [{"Name": name, "NumPartitions": 1, "ReplicationFactor": 1, "Assignments": [],
                            "Configs": [{"Name": k, "Value": v} for k, v in configs.items()]}], "timeoutMs": 30000}
        return raw.call(19, 5, body)["Topics"][0]

    assert create("c1", {"no.such.config": "1"})["ErrorCode"] == E.INVALID_CONFIG
    assert create("c2", {"retention.ms": "soon"})["ErrorCode"] == E.INVALID_CONFIG
    assert create("c3", {"cleanup.policy": "shred"})["ErrorCode"] == E.INVALID_CONFIG
    assert create("kept", {"cleanup.policy": "compact", "retention.ms": "1000"})["ErrorCode"] == E.NONE
    cfg = raw.call(32, 4, {"Resources": [{"ResourceType": 2, "ResourceName": "kept", "ConfigurationKeys": None}],
                           "IncludeSynonyms": True, "IncludeDocumentation": False})["Results"][0]["Configs"]
    by = {c["Name"]: c for c in cfg}
    assert (by["cleanup.policy"]["Value"], by["cleanup.policy"]["ConfigSource"]) == ("compact", 1)  # TOPIC_CONFIG
    assert by["retention.ms"]["Synonyms"][0] == {"Name": "retention.ms", "Value": "1000", "Source": 1}
    batch = build_v2([Record(0, int(_t.time() * 1000), None, b"v", [])], base_offset=0)
    topic = {"Name": "kept", "PartitionData": [{"Index": 0, "Records": batch}]}
    body = raw.call(0, 9, {"TransactionalId": None, "Acks": -1, "TimeoutMs": 5000, "TopicData": [topic]})
    assert body["Responses"][0]["PartitionResponses"][0]["ErrorCode"] == E.INVALID_RECORD  # compacted: keys needed
    raw.s.close()
    assert not any(d.startswith(("c1-", "c2-", "c3-")) for d in os.listdir(cbroker.dir))


def test_auto_creation_of_many_partitions_is_off_the_event_loop_too(tmp_path):
    d = tmp_path / "logs"
    d.mkdir()
    with BrokerThread(str(d), writable=True, partitions=2000, state_path=str(tmp_path / "s.json")) as b:
        result = {}

        def ask():
            raw = Raw(b.port)
            raw.s.settimeout(300)
            result["md"] = raw.call(3, 12, {"Topics": [{"Name": "auto", "TopicId": "AAAAAAAAAAAAAAAAAAAAAA"}],
                                            "AllowAutoTopicCreation": True})
            raw.s.close()

        t = threading.Thread(target=ask)
        t.start()
        other = Raw(b.port)
        slowest, asked = 0.0, 0
        while t.is_alive():
            start = time.monotonic()
            other.call(18, 3, {"ClientSoftwareName": "o", "ClientSoftwareVersion": "1"})
            slowest, asked = max(slowest, time.monotonic() - start), asked + 1
            time.sleep(0.05)
        t.join()
        other.s.close()
    assert asked >= 2 and slowest < 1.0, (asked, slowest)
    (topic,) = result["md"]["Topics"]
    assert topic["ErrorCode"] == E.NONE and len(topic["Partitions"]) == 2000
