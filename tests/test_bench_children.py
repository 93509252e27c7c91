"""`make bench` times each figure in a child process of its own (benchmarks/run.py --child NAME ARG):
a child that cannot run breaks the whole run only when `make bench` is called, so two cheap ones run
here -- a plain library figure and the whole `kfx scan` process with no Spark -- and must give their
measurements."""
import json
import os
import subprocess
import sys

from tests.conftest import SAMPLE

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _child(name: str, arg: str) -> dict:
    r = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "run.py"), "--child", name, arg], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_bench_children_run_and_measure():
    verify = _child("verify", os.path.join(SAMPLE, "orders-0"))
    assert verify["seconds"] > 0 and verify["bytes"] > 0
    scan = _child("scan-small-fleet-here", SAMPLE)
    assert scan["seconds"] > 0 and scan["records"] == 668  # every record of the sample, read back from the export
