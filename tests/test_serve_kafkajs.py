"""KafkaJS (npm) against the replay broker: consumes a topic of every codec read_committed through a
consumer group, looks offsets up by timestamp and lists groups with its admin client.  ``make
install`` puts KafkaJS and pure-JS codecs in ``.clients/node``; the fixture installs them when missing."""
import json
import os
import shutil
import subprocess

import pytest

from kafkaforensics.broker.server import BrokerThread
from tests.clients import npm_install
from tests.conftest import SAMPLE

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NODE_DIR = os.path.join(ROOT, ".clients", "node")
PACKAGES = ["kafkajs@2.2.4", "kafkajs-snappy@1.1.0", "lz4js@0.2.0", "fzstd@0.1.1"]


@pytest.fixture(scope="module")
def kafkajs():
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are needed for the KafkaJS test (apt-get install nodejs npm)")
    mods = os.path.join(NODE_DIR, "node_modules")
    if not all(os.path.isdir(os.path.join(mods, p.rsplit("@", 1)[0])) for p in PACKAGES):
        npm_install(NODE_DIR, PACKAGES, 300, "KafkaJS")
    return mods


def test_kafkajs_consumes_every_codec_and_uses_its_admin(tmp_path, kafkajs):
    from tests.test_serve import _ck
    d = tmp_path / "logs"
    shutil.copytree(SAMPLE, d)
    with BrokerThread(str(d), state_path=str(tmp_path / "state.json")) as b:
        expected = _ck(b, "orders", isolation="read_committed")
        r = subprocess.run(["node", os.path.join(ROOT, "tests", "kafkajs_client.js"), b.bootstrap, "orders", "kjs"],
                           env=dict(os.environ, NODE_PATH=kafkajs), capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr[-3000:]
        out = json.loads(r.stdout.strip().splitlines()[-1])
        by_time = b.broker.read_path.list_offsets(7, {"Topics": [{"Name": "orders", "Partitions": [
            {"PartitionIndex": 0, "Timestamp": 1700000104889}]}]}).topics[0].partitions[0].offset
    assert out["offsets"] == [{"partition": 0, "offset": "404", "high": "404", "low": "0"}]
    assert out["count"] == len(expected) and out["first"] == expected[0][0] and out["last"] == expected[-1][0]
    assert "kjs" in out["groups"]
    assert out["byTime"] == [{"partition": 0, "offset": str(by_time)}]
