"""`kfx serve --writable` creates the topics clients name (Kafka's auto.create.topics.enable), with
--no-auto-create and --partitions N; names are validated as Kafka validates them."""
import os
import subprocess

import pytest

from kafkaforensics.log.partition import Partition
from kafkaforensics.broker.replay import ReplayBroker
from kafkaforensics.broker.topic_creation import valid_topic
from kafkaforensics.broker.server import BrokerThread
from kafkaforensics.inspect.verify import verify
from specs import kafka_errors as E
from tests.clients import drain


def _broker(tmp_path, **kw):
    d = tmp_path / "logs"
    d.mkdir()
    b = BrokerThread(str(d), writable=True, state_path=str(tmp_path / "state.json"), **kw)
    b.dir = str(d)
    return b


def _dirs(d):
    """The partition dirs (the clean shutdown's checkpoint and marker are files beside them)."""
    return sorted(n for n in os.listdir(d) if not n.startswith("__") and os.path.isdir(os.path.join(d, n)))


def test_kcat_produces_to_a_new_topic(tmp_path):
    with _broker(tmp_path, partitions=3) as b:
        r = subprocess.run(["kcat", "-b", b.bootstrap, "-P", "-t", "fresh", "-p", "2"], input=b"a\nb\nc\n",
                           capture_output=True, timeout=60)
        assert r.returncode == 0, r.stderr
        r = subprocess.run(["kcat", "-b", b.bootstrap, "-C", "-t", "fresh", "-p", "2", "-e", "-q", "-f", "%s\n"],
                           capture_output=True, timeout=60)
        assert r.stdout.split() == [b"a", b"b", b"c"]
    assert _dirs(b.dir) == ["fresh-0", "fresh-1", "fresh-2"]
    ids = {Partition.scan(os.path.join(b.dir, n)).partition_metadata()["topicId"] for n in _dirs(b.dir)}
    assert len(ids) == 1 and "AAAAAAAAAAAAAAAAAAAAAA" not in ids
    v = verify([b.dir])
    assert v.ok, v.problems


def test_transactional_producer_to_a_new_topic(tmp_path):
    from confluent_kafka import Consumer, Producer, TopicPartition
    with _broker(tmp_path) as b:
        p = Producer({"bootstrap.servers": b.bootstrap, "transactional.id": "auto-1"})
        p.init_transactions(15)
        p.begin_transaction()
        for i in range(3):
            p.produce("brand-new", value=b"v%d" % i)
        p.commit_transaction(15)
        c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "g", "isolation.level": "read_committed"})
        c.assign([TopicPartition("brand-new", 0, 0)])
        assert [m.value() for m in drain(c)] == [b"v0", b"v1", b"v2"]
        c.close()
    assert _dirs(b.dir) == ["brand-new-0"]


def test_no_auto_create_refuses_unknown_topics(tmp_path):
    with _broker(tmp_path, auto_create=False) as b:
        r = subprocess.run(["kcat", "-b", b.bootstrap, "-P", "-t", "nope", "-p", "0", "-X", "message.timeout.ms=3000"],
                           input=b"a\n", capture_output=True, timeout=60)
        assert r.returncode != 0 or b"Unknown topic" in r.stderr
    assert _dirs(b.dir) == []


@pytest.mark.parametrize("name,ok", [("a" * 249, True), ("a" * 250, False), (".", False), ("..", False),
                                     ("a.b_c-D9", True), ("a/b", False), ("", False), ("ä", False),
                                     ("..x", True)])
def test_topic_names_as_kafka_validates_them(tmp_path, name, ok):
    assert valid_topic(name) is ok
    b = ReplayBroker(str(tmp_path), writable=True)
    r = b.read_path.metadata(12, {"Topics": [{"Name": name}], "AllowAutoTopicCreation": True})
    assert r.topics[0].error_code == (E.NONE if ok else E.INVALID_TOPIC_EXCEPTION)
    assert os.path.isdir(os.path.join(str(tmp_path), f"{name}-0")) is ok


def test_metadata_without_allow_auto_creation_and_read_only_create_nothing(tmp_path):
    b = ReplayBroker(str(tmp_path), writable=True)
    r = b.read_path.metadata(12, {"Topics": [{"Name": "x"}], "AllowAutoTopicCreation": False})
    assert r.topics[0].error_code == E.UNKNOWN_TOPIC_OR_PARTITION
    r = ReplayBroker(str(tmp_path)).read_path.metadata(12, {"Topics": [{"Name": "x"}], "AllowAutoTopicCreation": True})
    assert r.topics[0].error_code == E.UNKNOWN_TOPIC_OR_PARTITION
    assert ReplayBroker(str(tmp_path), writable=True).read_path.metadata(
        12, {"Topics": [{"Name": "__consumer_offsets"}]}).topics[0].error_code == E.UNKNOWN_TOPIC_OR_PARTITION
    assert os.listdir(str(tmp_path)) == []
