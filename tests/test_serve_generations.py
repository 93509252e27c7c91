"""The replay broker with older client generations and with requests it does not serve.

kafka-python 2.0.2 (still in wide use) runs from its own ``pip install --target`` directory in a
subprocess, beside the 3.x the rest of the suite imports; ``make install`` puts it in
``.clients/kafka-python-2.0.2`` and the fixture installs it there when it is missing."""
import os
import shutil
import socket
import struct
import subprocess
import sys

import pytest

from kafkaforensics.log.segment import iter_batches
from kafkaforensics.broker.server import BrokerThread
from specs import kafka_errors as E
from specs import protocol_messages as P
from tests.conftest import SAMPLE
from tests.test_replay_protocol import frame
from tests.test_serve import broker  # noqa: F401  (the module's read-only broker over a copy of the sample)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KP202 = os.path.join(ROOT, ".clients", "kafka-python-2.0.2")




@pytest.fixture(scope="module")
def kafka_python_202():
    if not os.path.exists(os.path.join(KP202, "kafka", "__init__.py")):
        r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--target", KP202, "kafka-python==2.0.2"],
                           capture_output=True, text=True, timeout=300)
        if r.returncode:
            pytest.skip(f"kafka-python 2.0.2 could not be installed (no package index?): {r.stderr[-300:]}")
    return KP202


CONSUME = r"""
import sys, kafka
from kafka import KafkaConsumer, TopicPartition
c = KafkaConsumer(bootstrap_servers=sys.argv[1], enable_auto_commit=False, consumer_timeout_ms=3000,
                  request_timeout_ms=10000)
tp = TopicPartition(sys.argv[2], 0)
c.assign([tp])
c.seek_to_beginning(tp)
print(kafka.__version__, *[m.offset for m in c])
"""


def test_kafka_python_2_0_2_starts_and_consumes(broker, kafka_python_202):
    from tests.test_serve import expected
    env = dict(os.environ, PYTHONPATH=kafka_python_202)
    r = subprocess.run([sys.executable, "-c", CONSUME, broker.bootstrap, "orders"], env=env, capture_output=True,
                       text=True, timeout=90)
    assert r.returncode == 0, r.stderr[-2000:]
    version, *offsets = r.stdout.split()
    data = [o for o, *_ in expected("orders")]
    # kafka-python 2.0.2 also hands out the transaction markers (3.x skips them, as Kafka's clients do): every
    # data record once, in order, and the extras exactly the control records of the log
    controls = sorted(b.base_offset for f in sorted(os.listdir(os.path.join(SAMPLE, "orders-0")))
                      if f.endswith(".log") for b in iter_batches(os.path.join(SAMPLE, "orders-0", f)) if b.is_control)
    assert version == "2.0.2" and sorted(map(int, offsets)) == sorted(data + controls) and controls


def _exchange(broker, data):
    """Send one frame; the framed answer, or None when the broker closed the connection."""
    with socket.create_connection(("127.0.0.1", broker.port), timeout=10) as s:
        s.sendall(data)
        head = b""
        while len(head) < 4:
            chunk = s.recv(4 - len(head))
            if not chunk:
                return None
            head += chunk
        (size,) = struct.unpack(">i", head)
        body = b""
        while len(body) < size:
            chunk = s.recv(size - len(body))
            assert chunk, "truncated answer"
            body += chunk
        return body


def _with_version(api_key, version, body, real):
    return frame(api_key, version, body).replace(struct.pack(">hh", api_key, version),
                                                 struct.pack(">hh", api_key, real), 1)


@pytest.mark.parametrize("api_key,version", [(3, 14), (1, 3), (0, 2), (2, 0), (42, 0)])
def test_unsupported_request_closes_the_connection(broker, api_key, version):
    known = P.REQUESTS.get(api_key, P.MetadataRequest)
    data = _with_version(known.api_key, known.valid[0], {}, version)
    if api_key == 42:
        data = data[:4] + struct.pack(">h", 42) + data[6:]
    assert _exchange(broker, data) is None


def test_unsupported_api_versions_version_gets_error_35_and_the_list(broker):
    out = _exchange(broker, _with_version(18, 0, {}, 9))
    (corr,) = struct.unpack_from(">i", out)
    r = P.ApiVersionsResponse.read(out[4:], 0)
    assert corr == 7 and r["ErrorCode"] == E.UNSUPPORTED_VERSION == 35
    assert {a["ApiKey"] for a in r["ApiKeys"]} >= {0, 1, 2, 3, 18}
    # and the connection goes on: a supported request after it is answered
    assert _exchange(broker, frame(3, 0, {"Topics": []})) is not None


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_debians_kcat_keeps_its_batches_compressed(tmp_path, codec):
    """kcat 1.7.1 on librdkafka 2.0.2 enables gzip, snappy and lz4 only when it sees Produce v0
    listed (KAFKA-18659): listed, its batches land compressed, not silently plain."""
    if shutil.which("kcat") is None:
        pytest.skip("kcat is not installed (make install puts Debian's in)")
    d = tmp_path / "logs"
    d.mkdir()
    with BrokerThread(str(d), writable=True, state_path=str(tmp_path / "state.json")) as b:
        r = subprocess.run(["kcat", "-b", b.bootstrap, "-P", "-t", "z", "-p", "0", "-z", codec, "-X", "linger.ms=50"],
                           input=b"".join(b"value-%d-%s\n" % (i, b"x" * 50) for i in range(50)),
                           capture_output=True, timeout=60)
        assert r.returncode == 0, r.stderr
    codecs = [bt.compression_name for f in sorted(os.listdir(d / "z-0")) if f.endswith(".log")
              for bt in iter_batches(os.path.join(d, "z-0", f))]
    assert codecs and set(codecs) == {codec}


def test_every_api_and_version_with_empty_fields_is_answered_never_a_crash(tmp_path):
    """Each advertised API at each version, its fields at their defaults (empty names, no topics):
    an answer that parses, or -- Produce v0-2 only -- the connection closed; the server goes on."""
    d = tmp_path / "logs"
    shutil.copytree(SAMPLE, d)
    with BrokerThread(str(d), writable=True, state_path=str(tmp_path / "state.json")) as b:
        for key, (lo, hi) in sorted(P.ADVERTISED.items()):
            for v in range(lo, hi + 1):
                body = {"Acks": 1} if key == 0 else {}
                if key == 0 and v < 3:
                    assert _exchange(b, _with_version(0, 3, body, v)) is None
                    continue
                out = _exchange(b, frame(key, v, body))
                assert out is not None, (P.REQUESTS[key].name, v)
                m = P.RESPONSES[key]
                hv = 1 if m.is_flexible(v) and key != 18 else 0
                _h, used = P.ResponseHeader.read_prefix(out, hv)
                m.read(out[used:], v)
        assert b.broker.partitions[("orders", 0)].log_end_offset == 404   # and it still serves


def test_offset_commit_and_fetch_v10_name_topics_by_id(broker):
    tid = broker.broker.partitions[("orders", 0)].topic_id

    def ask(key, version, body):
        out = _exchange(broker, frame(key, version, body))
        _h, used = P.ResponseHeader.read_prefix(out, 1)
        return P.RESPONSES[key].read(out[used:], version)
    r = ask(8, 10, {"GroupId": "v10", "Topics": [{"TopicId": tid, "Partitions": [
        {"PartitionIndex": 0, "CommittedOffset": 77, "CommittedMetadata": "m"}]}]})
    assert [(x["TopicId"], x["Partitions"]) for x in r["Topics"]] == [(tid, [{"PartitionIndex": 0, "ErrorCode": 0}])]
    r = ask(9, 10, {"Groups": [{"GroupId": "v10", "Topics": [{"TopicId": tid, "PartitionIndexes": [0]}]}]})
    (t,) = r["Groups"][0]["Topics"]
    assert t["TopicId"] == tid and t["Partitions"][0]["CommittedOffset"] == 77
    r = ask(9, 9, {"Groups": [{"GroupId": "v10", "Topics": None}]})   # the same commit, by name
    assert [(x["Name"], x["Partitions"][0]["CommittedOffset"]) for x in r["Groups"][0]["Topics"]] == [("orders", 77)]
