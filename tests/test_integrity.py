"""Nothing corrupt is exported or served as good data: a batch whose CRC fails is flagged by
`kfx dump --deep` (every record of it, exit 1), refused by `kfx write`, and never handed out by the
replay broker's Fetch (CORRUPT_MESSAGE for that partition, the batches before it served)."""
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


def test_fetch_never_hands_out_a_bad_crc_batch(damaged, tmp_path):
    from kafkaforensics.log.segment import BatchScanner
    part, _seg, pos, base, _last, batches = damaged
    with BrokerThread(os.path.dirname(part), state_path=str(tmp_path / "s.json")) as b:
        first = _fetch(b.port, 0)
        assert first["ErrorCode"] == 0
        served = list(BatchScanner(bytes(first["Records"])))
        assert served and all(x.crc_valid() for x in served) and served[-1].last_offset == base - 1
        at_bad = _fetch(b.port, base)
        assert at_bad["ErrorCode"] == 2 and not at_bad["Records"]  # CORRUPT_MESSAGE
        assert at_bad["HighWatermark"] > base  # the log goes on past it (later segments)
        # a real client is told, not silently given the bytes or skipped past them
        from kafka import KafkaConsumer, TopicPartition
        c = KafkaConsumer(bootstrap_servers=b.bootstrap, enable_auto_commit=False, consumer_timeout_ms=2000)
        tp = TopicPartition("bad", 0)
        c.assign([tp])
        c.seek(tp, base)
        with pytest.raises(Exception) as e:
            for m in c:
                raise AssertionError(f"a record was handed out: {m.offset}")
        assert "AssertionError" not in type(e.value).__name__, e.value
        c.close()
