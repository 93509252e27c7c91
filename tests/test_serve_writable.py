"""`kfx serve --writable`: real producers of every codec, idempotent retries, transactions, CreateTopics."""
import asyncio
import os
import socket
import struct
import subprocess

import pytest

from kafkaforensics.log.segment import iter_batches
from kafkaforensics.broker.server import BrokerThread
from kafkaforensics.inspect.verify import verify
from tests.clients import drain
from tests.corruption import snapshot_files
from kafkaforensics.records.builder import BatchProducer

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


@pytest.fixture
def wbroker(tmp_path):
    d = tmp_path / "logs"
    d.mkdir()
    with BrokerThread(str(d), writable=True, state_path=str(tmp_path / "state.json")) as b:
        b.dir = str(d)
        yield b


def _create(b, topic, partitions=1):
    from kafka.admin import KafkaAdminClient, NewTopic
    a = KafkaAdminClient(bootstrap_servers=b.bootstrap)
    res = a.create_topics([NewTopic(topic, partitions, 1)])
    a.close()
    return res


def _records(d, topic, p=0):
    part = os.path.join(d, f"{topic}-{p}")
    out = []
    for f in sorted(os.listdir(part)):
        if f.endswith(".log"):
            for b in iter_batches(os.path.join(part, f)):
                if not b.is_control:
                    out += [(r.offset, r.key, r.value) for r in b.records()]
    return out


def _batch_codecs(d, topic, p=0):
    part = os.path.join(d, f"{topic}-{p}")
    return [b.compression_name for f in sorted(os.listdir(part)) if f.endswith(".log")
            for b in iter_batches(os.path.join(part, f)) if b.count]


def produce_kp(b, topic, codec, values):
    from kafka import KafkaProducer
    p = KafkaProducer(bootstrap_servers=b.bootstrap, compression_type=None if codec == "none" else codec,
                      enable_idempotence=True, acks="all", linger_ms=50)
    for v in values:
        p.send(topic, key=b"k", value=v, partition=0)
    p.flush()
    p.close()


def produce_aio(b, topic, codec, values):
    from aiokafka import AIOKafkaProducer

    async def run():
        p = AIOKafkaProducer(bootstrap_servers=b.bootstrap, compression_type=None if codec == "none" else codec,
                             enable_idempotence=True, linger_ms=50)
        await p.start()
        batch = p.create_batch()
        for v in values:
            batch.append(key=b"k", value=v, timestamp=None)
        fut = await p.send_batch(batch, topic, partition=0)
        await fut
        await p.stop()
    asyncio.run(run())


def produce_ck(b, topic, codec, values):
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": b.bootstrap, "compression.type": codec, "enable.idempotence": True,
                  "linger.ms": 50, "acks": "all"})
    for v in values:
        p.produce(topic, key=b"k", value=v, partition=0)
    assert p.flush(15) == 0


def produce_kcat(b, topic, codec, values):
    r = subprocess.run(["kcat", "-b", b.bootstrap, "-P", "-t", topic, "-p", "0", "-z", codec, "-K", ":"],
                       input=b"".join(b"k:" + v + b"\n" for v in values), capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr


PRODUCERS = {"kafka-python": produce_kp, "aiokafka": produce_aio, "confluent-kafka": produce_ck, "kcat": produce_kcat}


@pytest.mark.parametrize("client", sorted(PRODUCERS))
def test_produce_every_codec_then_verify_and_dump(wbroker, client):
    topic = f"p-{client}"
    _create(wbroker, topic)
    sent = []
    for codec in CODECS:
        values = [f"{client}-{codec}-{i}-".encode() + b"x" * 200 for i in range(20)]
        PRODUCERS[client](wbroker, topic, codec, values)
        sent += values
    got = _records(wbroker.dir, topic)
    assert [v for _o, _k, v in got] == sent
    assert [o for o, _k, _v in got] == list(range(len(sent)))
    assert all(k == b"k" for _o, k, _v in got)
    if client != "kcat":  # librdkafka may decide a batch is not worth compressing; the others obey
        assert set(_batch_codecs(wbroker.dir, topic)) == set(CODECS)
    v = verify([wbroker.dir])
    assert v.ok, v.problems


def _raw_produce(b, topic, batch: bytes, corr: int) -> dict:
    from specs import protocol_messages as P
    from kafkaforensics.broker.protocol import encode_response  # noqa: F401 (the same module frames requests)
    body = P.ProduceRequest.build({"TransactionalId": None, "Acks": -1, "TimeoutMs": 5000,
                                   "TopicData": [{"Name": topic, "PartitionData": [{"Index": 0, "Records": batch}]}]}, 8)
    hdr = P.RequestHeader.build({"RequestApiKey": 0, "RequestApiVersion": 8, "CorrelationId": corr, "ClientId": "t"}, 1)
    s = socket.create_connection(("127.0.0.1", b.port), timeout=5)
    s.sendall(struct.pack(">i", len(hdr) + len(body)) + hdr + body)
    size = struct.unpack(">i", s.recv(4))[0]
    data = b""
    while len(data) < size:
        data += s.recv(size - len(data))
    s.close()
    return P.ProduceResponse.read(data[4:], 8)["Responses"][0]["PartitionResponses"][0]


def test_idempotent_retries_do_not_duplicate_and_gaps_are_refused(wbroker):
    from kafkaforensics.records.batch import Record
    from kafkaforensics.records.builder import build_v2
    _create(wbroker, "idem")
    mk = lambda seq, n: build_v2([Record(i, 1, b"k", b"v%d" % (seq + i), []) for i in range(n)], base_offset=0,
                                 producer=BatchProducer(producer_id=4242, producer_epoch=0, base_sequence=seq))
    first = _raw_produce(wbroker, "idem", mk(0, 3), 1)
    assert (first["ErrorCode"], first["BaseOffset"]) == (0, 0)
    retry = _raw_produce(wbroker, "idem", mk(0, 3), 2)      # the same batch again: a retry
    assert (retry["ErrorCode"], retry["BaseOffset"]) == (0, 0)
    nxt = _raw_produce(wbroker, "idem", mk(3, 2), 3)
    assert (nxt["ErrorCode"], nxt["BaseOffset"]) == (0, 3)
    gap = _raw_produce(wbroker, "idem", mk(9, 1), 4)        # sequence 5..8 never came
    assert gap["ErrorCode"] == 45                           # OUT_OF_ORDER_SEQUENCE_NUMBER
    assert [o for o, _k, _v in _records(wbroker.dir, "idem")] == [0, 1, 2, 3, 4]


def test_transactions_commit_and_abort(wbroker):
    from confluent_kafka import Consumer, Producer, TopicPartition
    _create(wbroker, "tx")
    p = Producer({"bootstrap.servers": wbroker.bootstrap, "transactional.id": "tx-1"})
    p.init_transactions(15)
    p.begin_transaction()
    for i in range(3):
        p.produce("tx", value=b"commit-%d" % i)
    p.commit_transaction(15)
    p.begin_transaction()
    for i in range(3):
        p.produce("tx", value=b"abort-%d" % i)
    p.flush(15)
    p.abort_transaction(15)
    got = {}
    for iso in ("read_committed", "read_uncommitted"):
        c = Consumer({"bootstrap.servers": wbroker.bootstrap, "group.id": iso, "isolation.level": iso})
        c.assign([TopicPartition("tx", 0, 0)])
        got[iso] = [m.value() for m in drain(c)]
        c.close()
    assert got["read_committed"] == [b"commit-0", b"commit-1", b"commit-2"]
    assert got["read_uncommitted"] == got["read_committed"] + [b"abort-0", b"abort-1", b"abort-2"]
    v = verify([wbroker.dir])
    assert v.ok, v.problems
    txn = os.path.join(wbroker.dir, "tx-0", "00000000000000000000.txnindex")
    assert os.path.getsize(txn) == 34  # one aborted transaction indexed


def test_read_only_broker_refuses_produce_and_changes_nothing(tmp_path):
    import shutil
    from tests.conftest import SAMPLE
    d = tmp_path / "ro"
    shutil.copytree(SAMPLE, d)
    before = snapshot_files(str(d))
    with BrokerThread(str(d)) as b:
        from kafka import KafkaProducer
        from kafka.errors import KafkaError
        p = KafkaProducer(bootstrap_servers=b.bootstrap, retries=0, acks=1)
        with pytest.raises(KafkaError):
            p.send("orders", value=b"nope", partition=0).get(timeout=10)
        p.close()
    assert snapshot_files(str(d)) == before


def test_group_commits_land_in_consumer_offsets_and_decode(wbroker, kfx):
    """Offsets committed by real clients through the writable broker are real __consumer_offsets
    records: `kfx groups` and `kfx dump --offsets-decoder` read them back."""
    import json
    from confluent_kafka import Consumer, TopicPartition
    from kafka import KafkaConsumer, OffsetAndMetadata
    from kafka import TopicPartition as KTP
    from kafkaforensics.broker.group_coordinator import offsets_partition_for
    _create(wbroker, "work", partitions=2)
    produce_kp(wbroker, "work", "none", [b"a", b"b", b"c"])
    c = Consumer({"bootstrap.servers": wbroker.bootstrap, "group.id": "ck-group", "enable.auto.commit": False})
    c.assign([TopicPartition("work", 0, 0)])
    c.commit(offsets=[TopicPartition("work", 0, 2)], asynchronous=False)
    c.close()
    k = KafkaConsumer(bootstrap_servers=wbroker.bootstrap, group_id="kp-group", enable_auto_commit=False)
    k.assign([KTP("work", 0)])
    k.commit({KTP("work", 0): OffsetAndMetadata(3, "meta", -1)})
    k.close()
    r = kfx("groups", wbroker.dir, "--json")
    rows = {(x["group"], x["topic"], x["partition"]): x for x in json.loads(r.stdout)["offsets"]}
    assert rows[("ck-group", "work", 0)]["offset"] == 2 and rows[("ck-group", "work", 0)]["lag"] == 1
    assert rows[("kp-group", "work", 0)]["offset"] == 3 and rows[("kp-group", "work", 0)]["metadata"] == "meta"
    n = offsets_partition_for("kp-group")
    seg = os.path.join(wbroker.dir, f"__consumer_offsets-{n}", "00000000000000000000.log")
    r = kfx("dump", seg, "--offsets-decoder", "--format", "json")
    decoded = [rec["decoded"] for line in r.stdout.splitlines() for rec in json.loads(line)["records"]]
    assert {"key": {"type": "1", "kind": "offset_commit", "data": {"group": "kp-group", "topic": "work", "partition": 0}},
            "value": {"version": "3", "data": {"offset": 3, "leaderEpoch": -1, "metadata": "meta",
                                               "commitTimestamp": decoded[-1]["value"]["data"]["commitTimestamp"]
                                               }}} in decoded  # exactly v3's fields: no expireTimestamp (v1), no topicId tag
    assert verify([wbroker.dir]).ok


def test_acks_zero_gets_no_response_but_lands(wbroker):
    from kafka import KafkaProducer
    _create(wbroker, "fire")
    p = KafkaProducer(bootstrap_servers=wbroker.bootstrap, acks=0)
    for i in range(5):
        p.send("fire", value=b"f%d" % i, partition=0)
    p.flush()
    p.close()
    import time
    for _ in range(50):  # nothing acknowledges acks=0: wait for the bytes to land
        if len(_records(wbroker.dir, "fire")) == 5:
            break
        time.sleep(0.1)
    assert [v for _o, _k, v in _records(wbroker.dir, "fire")] == [b"f%d" % i for i in range(5)]


def test_long_poll_fetch_wakes_up_when_data_arrives(wbroker):
    """A consumer at the log end waits in the broker (MaxWaitMs) and gets the record produced meanwhile."""
    import threading
    import time
    from confluent_kafka import Consumer, TopicPartition
    _create(wbroker, "lp")
    c = Consumer({"bootstrap.servers": wbroker.bootstrap, "group.id": "lp", "fetch.wait.max.ms": 5000})
    c.assign([TopicPartition("lp", 0, 0)])
    assert c.poll(1.0) is None  # nothing yet: its fetch is parked in the broker
    t = threading.Timer(0.5, produce_kp, args=(wbroker, "lp", "none", [b"late"]))
    t.start()
    start = time.monotonic()
    m = None
    while m is None and time.monotonic() - start < 20:
        m = c.poll(1.0)
    t.join()
    c.close()
    assert m is not None and not m.error() and m.value() == b"late"
