"""Admin tools pointed at the replay: confluent-kafka's AdminClient and kafka-python's admin client
ask for groups, configs, the cluster, log dirs, producers, transactions and leader epochs, and get
what the log holds."""
import os
import shutil
import struct

import pytest

from kafkaforensics.records.batch import Record
from kafkaforensics.records.builder import build_v2
from kafkaforensics.broker.server import BrokerThread
from kafkaforensics.log.writer import write_partition
from specs import kafka_messages as K
from tests.conftest import SAMPLE
from tests.test_serve_writable import wbroker  # noqa: F401  (the writable broker fixture)


def _txn_record(offset, tid, pid, status, partitions, start=1_700_000_000_000):
    key = struct.pack(">h", 0) + K.TransactionLogKey.build({"TransactionalId": tid}, 0)
    value = struct.pack(">h", 0) + K.TransactionLogValue.build(
        {"ProducerId": pid, "ProducerEpoch": 3, "TransactionTimeoutMs": 60000, "TransactionStatus": status,
         "TransactionPartitions": [{"Topic": t, "PartitionIds": ps} for t, ps in partitions],
         "TransactionLastUpdateTimestampMs": start, "TransactionStartTimestampMs": start}, 0)
    return Record(offset, start, key, value, [])


@pytest.fixture(scope="module")
def admin_broker(tmp_path_factory):
    d = tmp_path_factory.mktemp("admin") / "logs"
    shutil.copytree(SAMPLE, d)
    recs = [_txn_record(0, "tx-open", 5001, 1, [("orders", [0])]),      # Ongoing
            _txn_record(1, "tx-done", 5002, 4, []),                     # CompleteCommit
            _txn_record(2, "tx-open", 5001, 1, [("orders", [0]), ("clients", [0])])]
    write_partition(str(d / "__transaction_state-0"), [build_v2(recs, base_offset=0, partition_leader_epoch=0)])
    with BrokerThread(str(d), state_path=str(d / ".." / "state.json")) as b:
        b.dir = str(d)
        yield b


def test_confluent_admin_cluster_configs_groups(admin_broker):
    from confluent_kafka import Consumer
    from confluent_kafka.admin import AdminClient, ConfigResource
    b = admin_broker
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "g-admin", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    c.subscribe(["orders"])
    for _ in range(40):
        if c.poll(0.5) is not None:
            break
    c.commit(asynchronous=False)
    a = AdminClient({"bootstrap.servers": b.bootstrap})
    cl = a.describe_cluster().result(10)
    assert cl.cluster_id == "kfx-sample-cluster" and [n.id for n in cl.nodes] == [0]
    groups = a.list_consumer_groups().result(10)
    assert "g-admin" in {g.group_id for g in groups.valid} and not groups.errors
    desc = a.describe_consumer_groups(["g-admin"])["g-admin"].result(10)
    assert desc.state.name == "STABLE" and len(desc.members) == 1
    assert desc.members[0].assignment.topic_partitions[0].topic == "orders"
    c.close()
    configs = {r.name: {k: v.value for k, v in f.result(10).items()}
               for r, f in a.describe_configs([ConfigResource("topic", "orders"),
                                               ConfigResource("broker", "0")]).items()}
    assert configs["orders"]["message.timestamp.type"] == "CreateTime"
    assert configs["0"]["log.dirs"] == os.path.abspath(b.dir)
    assert all(v.is_read_only for v in a.describe_configs([ConfigResource("broker", "0")])[
        ConfigResource("broker", "0")].result(10).values())


def test_kafka_python_admin_log_dirs_producers_transactions(admin_broker):
    from kafka import TopicPartition
    from kafka.admin import KafkaAdminClient
    a = KafkaAdminClient(bootstrap_servers=admin_broker.bootstrap)
    try:
        dirs = a.describe_log_dirs()
        text = repr(dirs)
        assert "orders" in text and os.path.abspath(admin_broker.dir) in text
        prod = repr(a.describe_producers([TopicPartition("orders", 0)]))
        assert "2020" in prod and "2040" in prod   # the transactional producers the sample log holds
        listed = a.list_transactions()
        assert "tx-open" in repr(listed) and "tx-done" in repr(listed)
        assert "tx-done" not in repr(a.list_transactions(state_filters=["Ongoing"]))
        desc = repr(a.describe_transactions(["tx-open"]))
        assert "clients" in desc and "Ongoing" in desc
        from kafka.errors import TransactionalIdNotFoundError
        with pytest.raises(TransactionalIdNotFoundError):   # error 105, as Kafka answers
            a.describe_transactions(["tx-missing"])
        groups = repr(a.list_groups())
        assert "g-admin" in groups   # left, but its committed offsets keep it listed (Empty)
    finally:
        a.close()


def test_offset_for_leader_epoch_follows_the_checkpoint(admin_broker):
    b = admin_broker.broker
    r = b.admin.offset_for_leader_epoch(4, {"Topics": [{"Topic": "orders", "Partitions": [
        {"Partition": 0, "LeaderEpoch": e} for e in (0, 1, 5)]}, {"Topic": "nope", "Partitions": [
            {"Partition": 0, "LeaderEpoch": 0}]}]})
    got = [(p.leader_epoch, p.end_offset, p.error_code) for t in r.topics for p in t.partitions]
    # orders-0's leader-epoch-checkpoint: epoch 0 from 0, epoch 1 from 203; log end 404
    assert got == [(0, 203, 0), (1, 404, 0), (-1, -1, 0), (-1, -1, 3)]


def test_send_offsets_to_transaction_commits_with_the_transaction(wbroker):
    from confluent_kafka import Consumer, Producer, TopicPartition
    b = wbroker
    p = Producer({"bootstrap.servers": b.bootstrap, "transactional.id": "eos-1"})
    p.init_transactions(15)
    for offset, commit in ((7, False), (5, True)):
        p.begin_transaction()
        p.produce("eos-out", value=b"x")
        c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "eos-group"})
        meta = c.consumer_group_metadata()
        p.send_offsets_to_transaction([TopicPartition("eos-in", 0, offset)], meta, 15)
        (p.commit_transaction if commit else p.abort_transaction)(15)
        c.close()
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "eos-group"})
    (got,) = c.committed([TopicPartition("eos-in", 0)], timeout=15)
    c.close()
    assert got.offset == 5  # the committed transaction's offset; the aborted one's (7) never applies
    from kafkaforensics.inspect.groups import committed_offsets
    assert [(r["group"], r["topic"], r["offset"]) for r in committed_offsets(b.dir)] == [("eos-group", "eos-in", 5)]


def test_delete_records_delete_topics_create_partitions(wbroker):
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient, NewPartitions
    from tests.test_serve_writable import produce_kp
    b = wbroker
    produce_kp(b, "keep", "none", [b"%d" % i for i in range(10)])
    produce_kp(b, "gone", "none", [b"x"])
    a = AdminClient({"bootstrap.servers": b.bootstrap})
    (res,) = a.delete_records([TopicPartition("keep", 0, 4)]).values()
    assert res.result(15).low_watermark == 4
    assert b.broker.partitions[("keep", 0)].log_start_offset == 4
    a.create_partitions([NewPartitions("keep", 3)])["keep"].result(15)
    assert sorted(p for t, p in b.broker.partitions if t == "keep") == [0, 1, 2]
    with pytest.raises(Exception):
        a.create_partitions([NewPartitions("keep", 2)])["keep"].result(15)   # INVALID_PARTITIONS
    a.delete_topics(["gone"])["gone"].result(15)
    assert ("gone", 0) not in b.broker.partitions
    kept = [n for n in os.listdir(b.dir) if n.startswith("gone-0.")]
    assert len(kept) == 1 and kept[0].endswith("-delete")   # renamed as Kafka renames it, data kept
    # a restart keeps the moved log start (log-start-offset-checkpoint) and leaves the deleted copy out
    from kafkaforensics.broker.replay import ReplayBroker
    again = ReplayBroker(b.dir, writable=True)
    assert again.partitions[("keep", 0)].log_start_offset == 4 and ("gone", 0) not in again.partitions
