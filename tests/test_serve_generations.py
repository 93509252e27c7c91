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

from kafkaforensics.segment import iter_batches
from kafkaforensics.server import BrokerThread
from specs import kafka_errors as E
from specs import protocol_messages as P
from tests.conftest import SAMPLE
from tests.test_replay_protocol import frame

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KP202 = os.path.join(ROOT, ".clients", "kafka-python-2.0.2")


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    d = tmp_path_factory.mktemp("gen") / "logs"
    shutil.copytree(SAMPLE, d)
    with BrokerThread(str(d)) as b:
        yield b


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
