"""The replay broker with REAL clients (kafka-python, aiokafka, confluent-kafka, kcat) on 127.0.0.1."""
import asyncio
import json
import os
import shutil
import socket
import struct
import subprocess
import time

import pytest

from kafkaforensics.inspect.dump import DumpOptions, dump
from kafkaforensics.broker.server import BrokerThread
from tests.clients import drain
from tests.conftest import SAMPLE


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    d = tmp_path_factory.mktemp("serve") / "logs"
    shutil.copytree(SAMPLE, d)
    with BrokerThread(str(d)) as b:
        yield b


def expected(topic, start=0):
    """(offset, key, value) of every data record of a served sample partition, from `kfx dump`."""
    import io
    logs = sorted(os.path.join(SAMPLE, f"{topic}-0", f) for f in os.listdir(os.path.join(SAMPLE, f"{topic}-0"))
                  if f.endswith(".log"))
    out = io.StringIO()
    dump(logs, DumpOptions(fmt="json", deep=True, encoding="hex"), out=out, err=io.StringIO())
    recs = []
    for line in out.getvalue().splitlines():
        b = json.loads(line)
        if b["isControl"]:
            continue
        for r in b["records"]:
            if r["offset"] >= start:
                recs.append((r["offset"], None if r["key"] is None else bytes.fromhex(r["key"]),
                             None if r["value"] is None else bytes.fromhex(r["value"]), r["timestamp"]))
    return recs


def _kp(broker, topic, *, offset=None, timestamp=None):
    from kafka import KafkaConsumer, TopicPartition
    c = KafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False, consumer_timeout_ms=3000)
    tp = TopicPartition(topic, 0)
    c.assign([tp])
    if timestamp is not None:
        offset = c.offsets_for_times({tp: timestamp})[tp].offset
    if offset is None:
        c.seek_to_beginning(tp)
    else:
        c.seek(tp, offset)
    got = [(m.offset, m.key, m.value, m.timestamp) for m in c]
    c.close()
    return got


def _aio(broker, topic, *, offset=None, timestamp=None):
    from aiokafka import AIOKafkaConsumer, TopicPartition

    async def run():
        c = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False)
        await c.start()
        tp = TopicPartition(topic, 0)
        c.assign([tp])
        off = offset
        if timestamp is not None:
            off = (await c.offsets_for_times({tp: timestamp}))[tp].offset
        if off is None:
            await c.seek_to_beginning(tp)
        else:
            c.seek(tp, off)
        got = []
        while True:
            r = await c.getmany(tp, timeout_ms=1500)
            if not r:
                break
            got += [(m.offset, m.key, m.value, m.timestamp) for ms in r.values() for m in ms]
        await c.stop()
        return got
    return asyncio.run(run())


def _ck(broker, topic, *, offset=None, timestamp=None, isolation="read_uncommitted"):
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "ck", "enable.auto.commit": False,
                  "isolation.level": isolation})
    if timestamp is not None:
        offset = c.offsets_for_times([TopicPartition(topic, 0, timestamp)], timeout=10)[0].offset
    c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING if offset is None else offset)])
    got = [(m.offset(), m.key(), m.value(), m.timestamp()[1]) for m in drain(c)]
    c.close()
    return got


def _kcat(broker, topic, *, offset=None, timestamp=None):
    o = "beginning" if offset is None else (f"s@{timestamp}" if timestamp is not None else str(offset))
    if timestamp is not None:
        o = f"s@{timestamp}"
    r = subprocess.run(["kcat", "-b", broker.bootstrap, "-X", "isolation.level=read_uncommitted", "-C", "-t", topic,
                        "-p", "0", "-o", o, "-e", "-q",
                        "-f", "%o\\t%k\\t%T\\n"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return [(int(a), b, int(t)) for a, b, t in (line.split("\t") for line in r.stdout.splitlines())]


CLIENTS = {"kafka-python": _kp, "aiokafka": _aio, "confluent-kafka": _ck}


@pytest.mark.parametrize("client,topic", [
    (c, t) for c in sorted(CLIENTS) for t in ("orders", "clients", "legacy")
    # aiokafka refuses magic-0 LZ4 outright (UnsupportedCodecError), from any broker
    if not (c == "aiokafka" and t == "legacy")])
def test_consume_from_beginning(broker, client, topic):
    got = CLIENTS[client](broker, topic)
    want = expected(topic)
    if topic == "legacy":  # magic 0 carries no timestamp: clients report their own notion of "none"
        got, want = [g[:3] for g in got], [w[:3] for w in want]
    assert got == want


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_consume_from_offset_and_timestamp(broker, client):
    want = expected("orders", start=300)
    assert CLIENTS[client](broker, "orders", offset=300) == want
    ts = want[0][3]  # the first record at or after this time is offset 300's (timestamps rise here)
    first = [r for r in expected("orders") if r[3] >= ts][0]
    got = CLIENTS[client](broker, "orders", timestamp=ts)
    assert got[0][0] == first[0]


def aborted_offsets(topic):
    import io
    logs = sorted(os.path.join(SAMPLE, f"{topic}-0", f) for f in os.listdir(os.path.join(SAMPLE, f"{topic}-0"))
                  if f.endswith(".txnindex"))
    out = io.StringIO()
    dump(logs, DumpOptions(fmt="json"), out=out, err=io.StringIO())
    return [(e["producerId"], e["firstOffset"], e["lastOffset"]) for e in map(json.loads, out.getvalue().splitlines())]


def test_read_committed_skips_aborted_transactions(broker):
    (pid, first, last), = aborted_offsets("orders")
    committed = _ck(broker, "orders", isolation="read_committed")
    uncommitted = _ck(broker, "orders")
    skipped = sorted(set(r[0] for r in uncommitted) - set(r[0] for r in committed))
    assert skipped and all(first <= o < last for o in skipped)
    assert len(committed) == len(uncommitted) - len(skipped)
    # kafka-python with read_committed agrees
    from kafka import KafkaConsumer, TopicPartition
    c = KafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False, consumer_timeout_ms=3000,
                      isolation_level="read_committed")
    c.assign([TopicPartition("orders", 0)])
    c.seek_to_beginning(TopicPartition("orders", 0))
    assert [m.offset for m in c] == [r[0] for r in committed]
    c.close()


def test_kcat(broker):
    want = expected("orders")
    got = _kcat(broker, "orders")
    assert [(o, t) for o, _k, t in got] == [(w[0], w[3]) for w in want]
    assert [k for _o, k, _t in got] == [("" if w[1] is None else w[1].decode()) for w in want]
    got = _kcat(broker, "orders", offset=300)
    assert [g[0] for g in got] == [w[0] for w in want if w[0] >= 300]
    ts = expected("orders", start=200)[0][3]
    got = _kcat(broker, "orders", offset=0, timestamp=ts)
    assert got[0][0] == [w for w in want if w[3] >= ts][0][0]


def _raw(broker, payload: bytes, read: bool = True) -> bytes:
    s = socket.create_connection(("127.0.0.1", broker.port), timeout=5)
    s.sendall(payload)
    data = b""
    if read:
        try:
            s.settimeout(2)
            data = s.recv(65536)
        except socket.timeout:
            pass
    s.close()
    return data


def test_robustness_then_a_client_still_works(broker):
    from specs import protocol_messages as P
    _raw(broker, b"\x00\x00", read=False)                               # truncated frame
    _raw(broker, os.urandom(4096))                                        # garbage
    _raw(broker, struct.pack(">i", 2**31 - 1) + b"x" * 100)              # a 2 GiB length prefix
    hdr = P.RequestHeader.build({"RequestApiKey": 999, "RequestApiVersion": 0, "CorrelationId": 5,
                                 "ClientId": "t"}, 1)
    resp = _raw(broker, struct.pack(">i", len(hdr)) + hdr)               # unknown API key: closed, as
    assert resp == b""                                                    # Kafka does (never a bad frame)
    hdr = P.RequestHeader.build({"RequestApiKey": 18, "RequestApiVersion": 99, "CorrelationId": 6,
                                 "ClientId": "t"}, 2)
    resp = _raw(broker, struct.pack(">i", len(hdr)) + hdr)               # unknown ApiVersions version
    body = P.ApiVersionsResponse.read(resp[8:], 0)
    assert struct.unpack(">i", resp[4:8])[0] == 6 and body["ErrorCode"] == 35 and body["ApiKeys"]
    # a path-like topic name never reaches the file system
    from kafka import KafkaConsumer, TopicPartition
    c = KafkaConsumer(bootstrap_servers=broker.bootstrap, consumer_timeout_ms=1000)
    assert not c.partitions_for_topic("../x")
    c.close()
    md = broker.broker.read_path.metadata(12, {"Topics": [{"Name": "../x"}, {"Name": "orders-0/../../etc"}]})
    assert [t.error_code for t in md.topics] == [17, 17]  # INVALID_TOPIC_EXCEPTION
    assert len(_kp(broker, "legacy")) == 64


# ------------------------------------------------------------------------------ consumer groups ----
def _multi(tmp_path, partitions=4, n=10):
    from kafkaforensics.records.batch import Record
    from kafkaforensics.records.builder import build_v2
    from kafkaforensics.log.writer import write_partition
    d = tmp_path / "glogs"
    for p in range(partitions):
        write_partition(str(d / f"multi-{p}"), [build_v2([Record(i, 1_700_000_000_000 + i, b"k", b"p%d-%d" % (p, i), [])
                                                          for i in range(n)], base_offset=0)])
    return str(d)


def _commit_rest(got, done, commit_at, commit, wait) -> None:
    """Commit ``commit_at`` for the partitions consumed (``got``) but not committed yet (``done``):
    the other member leaving may start a rebalance, so rejoin (``wait``) and try again."""
    parts = sorted({p for p, _ in got} - done)
    if commit_at is not None and parts:
        for _ in range(20):
            try:
                commit(parts)
                break
            except Exception:
                wait()


def _group_kp(b, group, out, name, commit_at):
    from kafka import KafkaConsumer, OffsetAndMetadata, TopicPartition
    c = KafkaConsumer("multi", bootstrap_servers=b.bootstrap, group_id=group, auto_offset_reset="earliest",
                      consumer_timeout_ms=5000, enable_auto_commit=False)
    got, done = [], set()
    for m in c:
        got.append((m.partition, m.offset))
        if commit_at is not None and m.offset == 9:  # commit while the group is stable
            try:
                c.commit({TopicPartition("multi", m.partition): OffsetAndMetadata(commit_at, "", -1)})
                done.add(m.partition)
            except Exception:
                pass
    _commit_rest(got, done, commit_at, lambda parts: c.commit(
        {TopicPartition("multi", p): OffsetAndMetadata(commit_at, "", -1) for p in parts}), lambda: c.poll(500))
    c.close()
    out[name] = got


def _group_ck(b, group, out, name, commit_at):
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False, "session.timeout.ms": 6000})
    c.subscribe(["multi"])
    got, idle, done = [], 0, set()
    while idle < 5:
        m = c.poll(1.0)
        if m is None:
            idle += 1
            continue
        assert not m.error(), m.error()
        got.append((m.partition(), m.offset()))
        if commit_at is not None and m.offset() == 9:  # commit while the group is stable
            try:
                c.commit(offsets=[TopicPartition("multi", m.partition(), commit_at)], asynchronous=False)
                done.add(m.partition())
            except Exception:
                pass
    _commit_rest(got, done, commit_at, lambda parts: c.commit(
        offsets=[TopicPartition("multi", p, commit_at) for p in parts], asynchronous=False), lambda: c.poll(0.5))
    c.close()
    out[name] = got


def _group_aio(b, group, out, name, commit_at):
    from aiokafka import AIOKafkaConsumer, TopicPartition

    async def run():
        c = AIOKafkaConsumer("multi", bootstrap_servers=b.bootstrap, group_id=group, auto_offset_reset="earliest",
                             enable_auto_commit=False)
        await c.start()
        got, idle, done = [], 0, set()
        while idle < 3:
            r = await c.getmany(timeout_ms=1500)
            if not r:
                idle += 1
                continue
            batch = [(m.partition, m.offset) for ms in r.values() for m in ms]
            got += batch
            ends = [p for p, o in batch if o == 9]
            if commit_at is not None and ends:  # commit while the group is stable
                try:
                    await c.commit({TopicPartition("multi", p): commit_at for p in ends})
                    done.update(ends)
                except Exception:
                    pass
        parts = sorted({p for p, _ in got} - done)
        if commit_at is not None and parts:
            for _ in range(20):  # the other member leaving may start a rebalance: rejoin, then commit
                try:
                    await c.commit({TopicPartition("multi", p): commit_at for p in parts})
                    break
                except Exception:
                    await c.getmany(timeout_ms=500)
        await c.stop()
        return got
    out[name] = asyncio.run(run())


GROUP_CLIENTS = {"kafka-python": _group_kp, "confluent-kafka": _group_ck, "aiokafka": _group_aio}


@pytest.mark.parametrize("client", sorted(GROUP_CLIENTS))
def test_consumer_group_splits_commits_restarts_and_resumes(tmp_path, client):
    import threading
    logs, state = _multi(tmp_path), str(tmp_path / "state" / "offsets.json")
    run = GROUP_CLIENTS[client]
    with BrokerThread(logs, state_path=state) as b:
        out = {}
        ts = [threading.Thread(target=run, args=(b, "g1", out, n, 6)) for n in ("m1", "m2")]
        for t in ts:
            t.start()
        for t in ts:
            t.join(90)
        parts = [sorted({p for p, _ in out[n]}) for n in ("m1", "m2")]
        assert sorted(parts[0] + parts[1]) == [0, 1, 2, 3] and parts[0] and parts[1], parts  # split, no overlap
        assert sorted(out["m1"] + out["m2"]) == [(p, o) for p in range(4) for o in range(10)]
    assert os.path.exists(state)
    with BrokerThread(logs, state_path=state) as b:  # a restarted server resumes the committed offsets
        out = {}
        run(b, "g1", out, "again", None)
        assert sorted(out["again"]) == [(p, o) for p in range(4) for o in range(6, 10)]
