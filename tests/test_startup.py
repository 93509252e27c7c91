"""What `kfx` imports before it does anything: heavy modules load only for the commands that use them
(start-up is part of the interface: operators run `kfx dump`/`verify` in shell loops)."""
import os
import subprocess
import sys

import pytest

from tests.conftest import SAMPLE

SEGMENT = os.path.join(SAMPLE, "orders-0", "00000000000000000225.log")
HEAVY = {"numpy", "pyspark", "pyarrow", "pandas", "construct", "rich", "zstandard", "lz4", "snappy"}


def _imported(*args) -> set[str]:
    """Top-level names of the modules `python -m kafkaforensics ARGS` imports (from -X importtime)."""
    r = subprocess.run([sys.executable, "-X", "importtime", "-m", "kafkaforensics", *args],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode in (0, 1), r.stderr[-2000:]
    names = set()
    for line in r.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip().split(".")[0])
    assert "kafkaforensics" in names and "typer" in names  # the parse saw the imports
    return names


def test_help_imports_nothing_heavy():
    assert not _imported("--help") & HEAVY


@pytest.mark.parametrize("command", ["dump", "verify"])
def test_small_file_commands_leave_spark_and_arrow_unloaded(command):
    names = _imported(command, SEGMENT)
    assert not names & {"pyspark", "pyarrow", "pandas"}
    if command == "dump":  # a segment's batch headers need no numpy columns, rich tables or codecs
        assert not names & {"numpy", "rich", "lz4", "snappy", "zstandard"}
