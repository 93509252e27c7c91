"""Nothing corrupt is exported or served as good data, nothing valid hidden: a batch whose CRC fails
is flagged by `kfx dump --deep` (every record of it, exit 1), refused by `kfx write`, and served by
`kfx serve` as a Kafka broker serves it -- its stored bytes, the log going on past it, logged at
start -- so that the client's CRC check meets it (kafka-python, confluent-kafka)."""
import json
import os
import struct

import pytest

from kafkaforensics.broker.server import BrokerThread
from tests.corruption import layout, make_partition


@pytest.fixture
def damaged(tmp_path):
    """A partition (several segments) whose 3rd batch of its first segment has a flipped value byte."""
    part = str(make_partition(tmp_path / "logs" / "bad-0"))
    seg, batches = layout(part)[0]
    pos, size, base, last = batches[2]
    with open(seg, "r+b") as f:
        f.seek(pos + size - 3)
        byte = f.read(1)
        f.seek(pos + size - 3)
        f.write(bytes([byte[0] ^ 0xFF]))
    return part, seg, pos, base, last, batches


def test_dump_deep_flags_every_record_of_a_bad_crc_batch(damaged, kfx):
    part, seg, pos, base, last, _ = damaged
    r = kfx("dump", "--deep", "--format", "json", seg)
    assert r.exit_code == 1
    objs = [json.loads(x) for x in r.stdout.splitlines()]
    bad = [o for o in objs if not o["crcValid"]]
    assert [o["baseOffset"] for o in bad] == [base]
    assert bad[0]["records"] and all(rec["crcValid"] is False for rec in bad[0]["records"])
    assert all("crcValid" not in rec for o in objs if o["crcValid"] for rec in o["records"])
    assert f"{seg} @ byte {pos} (offset {base}): crc-mismatch" in r.stderr
    r = kfx("dump", "--deep", "--print-data", "--encoding", "hex", seg)
    assert r.exit_code == 1
    flagged = [x for x in r.stdout.splitlines() if x.startswith("| offset:") and x.endswith("isvalid: false")]
    assert [int(x.split()[2]) for x in flagged] == list(range(base, last + 1))


def test_write_refuses_a_batch_whose_crc_failed(damaged, kfx, tmp_path):
    _part, seg, _pos, base, _last, _ = damaged
    dumped = kfx("dump", "--deep", "--format", "json", seg).stdout
    r = kfx("write", "--out", tmp_path / "out-0", input=dumped)
    assert r.exit_code != 0 and "crcValid" in r.output and str(base) in r.output
    assert not os.path.exists(tmp_path / "out-0")
    # the operator decides: dropping the batch writes the rest
    kept = "\n".join(x for x in dumped.splitlines() if json.loads(x)["crcValid"]) + "\n"
    assert kfx("write", "--out", tmp_path / "out2-0", input=kept).exit_code == 0


def _fetch(port, offset):
    import socket

    from specs import protocol_messages as P
    from tests.test_serve_hostile import frame
    req = frame(1, 12, {"ReplicaId": -1, "MaxWaitMs": 0, "MinBytes": 1, "MaxBytes": 1 << 20, "IsolationLevel": 0,
                        "Topics": [{"Topic": "bad", "Partitions": [{"Partition": 0, "FetchOffset": offset,
                                                                     "PartitionMaxBytes": 1 << 20}]}]}, corr=5)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(req)
        data = b""
        while len(data) < 4 or len(data) < 4 + struct.unpack(">i", data[:4])[0]:
            chunk = s.recv(1 << 16)
            assert chunk
            data += chunk
    body = P.REQUESTS and P.RESPONSES[1].read(data[4 + 4 + 1:], 12)  # size, correlation id, tagged fields
    return body["Responses"][0]["Partitions"][0]


def _kafka_python(bootstrap, start, until_error=True):
    """(offsets read, the exception that ended the read or None) of a kafka-python consumer from ``start``."""
    from kafka import KafkaConsumer, TopicPartition
    c = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, consumer_timeout_ms=2000)
    tp = TopicPartition("bad", 0)
    c.assign([tp])
    c.seek(tp, start)
    got, err = [], None
    try:
        for m in c:
            got.append(m.offset)
    except Exception as e:  # noqa: BLE001 -- what the client raises is the point
        err = e
    c.close()
    return got, err


def _confluent(bootstrap, start, **conf):
    """(offsets read, [(error code, offset)]) of a confluent-kafka consumer from ``start`` to the end."""
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "g", "enable.auto.commit": False,
                  "enable.partition.eof": True, "isolation.level": "read_uncommitted", **conf})
    c.assign([TopicPartition("bad", 0, start)])
    got, errs = [], []
    try:
        while True:
            m = c.poll(5)
            if m is None:
                break
            if m.error():
                errs.append((m.error().code(), m.offset()))
                if m.error().code() == -191 or len(errs) > 2:  # _PARTITION_EOF
                    break
                continue
            got.append(m.offset())
    finally:
        c.close()
    return got, errs


def test_serve_serves_a_bad_batch_as_stored_and_clients_meet_it(damaged, tmp_path, caplog):
    """A bad-CRC batch in the middle of a partition: kfx serve logs it at start (file, byte, offset,
    what is past it, what Kafka's recovery would do), serves it as stored as Kafka does (the log end
    is past it), and a client's CRC check meets it; seeking past it reads everything after it."""
    import logging
    from kafkaforensics.log.segment import BatchScanner
    part, seg, pos, base, last, batches = damaged
    records_after = sum(1 for f, bs in layout(part) for b in BatchScanner(open(f, "rb").read()) if b.base_offset > last
                        for _ in b.records() if not b.is_control)
    end = layout(part)[-1][1][-1][3] + 1
    with caplog.at_level(logging.WARNING, logger="kfx.serve"):
        with BrokerThread(os.path.dirname(part), state_path=str(tmp_path / "s.json")) as b:
            first = _fetch(b.port, 0)
            assert first["ErrorCode"] == 0 and first["HighWatermark"] == end  # nothing after the damage hidden
            served = list(BatchScanner(bytes(first["Records"])))
            assert [x.base_offset for x in served if not x.crc_valid()] == [base]  # the stored bytes, as Kafka
            assert _fetch(b.port, base)["ErrorCode"] == 0
            # kafka-python: CorruptRecordError at the bad batch, after the records before it
            got, err = _kafka_python(b.bootstrap, 0)
            assert got == list(range(base)) and type(err).__name__ == "CorruptRecordError" and str(base) in str(err)
            got, err = _kafka_python(b.bootstrap, last + 1)  # the application seeks past it
            assert err is None and len(got) == records_after and got[-1] == end - 1
            # confluent-kafka with check.crcs=true: an error at the bad batch's offset
            got, errs = _confluent(b.bootstrap, 0, **{"check.crcs": True})
            assert got == list(range(base)) and errs[0][1] == base and errs[0][0] != -191
            got, errs = _confluent(b.bootstrap, last + 1, **{"check.crcs": True})
            assert len(got) == records_after and errs == [(-191, end)]
    logged = [r.getMessage() for r in caplog.records if r.name == "kfx.serve"]
    start_line = next(m for m in logged if f"@ byte {pos} (offset {base}): crc-mismatch" in m)
    assert seg in start_line and "served as stored" in start_line and "would truncate" in start_line
    assert f"offsets {last + 1}..{end - 1}" in start_line


def test_serve_stops_at_a_torn_tail_as_kafka_and_logs_it(tmp_path, caplog):
    """A torn tail (a cut append): the log end is after the last whole batch, as Kafka's is; clients
    read to there and see an ordinary end; the start-up log says where the tail is and what
    Kafka's recovery would truncate."""
    import logging
    part = str(make_partition(tmp_path / "logs" / "bad-0"))
    seg, batches = layout(part)[-1]
    whole = open(seg, "rb").read()
    pos, size, base, last = batches[-1]
    with open(seg, "r+b") as f:
        f.truncate(pos + size // 2)  # the last batch cut in half
    with caplog.at_level(logging.WARNING, logger="kfx.serve"):
        with BrokerThread(os.path.dirname(part), state_path=str(tmp_path / "s.json")) as b:
            assert _fetch(b.port, 0)["HighWatermark"] == base
            got, err = _kafka_python(b.bootstrap, 0)
            assert err is None and got[-1] < base
            got2, errs = _confluent(b.bootstrap, 0)
            assert errs == [(-191, base)] and max(got2) < base
    line = next(r.getMessage() for r in caplog.records if r.name == "kfx.serve" and f"@ byte {pos}" in r.getMessage())
    assert seg in line and "would truncate" in line and f"at byte {pos}" in line
    assert len(whole) > pos + size // 2
