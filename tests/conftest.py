import os
import shutil

import pytest
from typer.testing import CliRunner

from cli.main import app

#: a `kfx scan` in a test never leaves a background process recording the driver JVM's class
#: archive behind (tests/test_spark_remote.py starts one on purpose and waits for it by its pid)
os.environ.setdefault("KFX_CLASS_ARCHIVE_RECORDING", "no")

#: the longest modules (a Spark standalone cluster and spark-submit; every file of every real log
#: dir), run first: under ``make test``'s workers (pytest-xdist, one module to a worker, in this
#: order) the others then fill the time beside them instead of leaving one worker to finish alone
LONGEST_FIRST = ("test_spark_remote.py", "test_real_logdirs.py")

#: what `kfx compact` on a fixture of a topic with no config in its log dir needs: Kafka's default
#: cleanup.policy is delete, which compact refuses (issue 50)
COMPACTED = ("--config", "cleanup.policy=compact")

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")
SAMPLE = os.path.join(FIXTURES, "sample-logdir")


def pytest_collection_modifyitems(items):
    """The modules of :data:`LONGEST_FIRST` first, in that order; the others as collected."""
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


def private_copy(tmp_path, src: str, name: str) -> str:
    """A copy of the bundled log dir ``src`` under ``tmp_path`` (tests may damage it)."""
    dst = tmp_path / name
    shutil.copytree(src, dst)
    return str(dst)


@pytest.fixture
def sample(tmp_path):
    """A private copy of the bundled sample log dir (tests may damage it)."""
    return private_copy(tmp_path, SAMPLE, "logdir")


class Kfx:
    def __init__(self):
        self.runner = CliRunner()

    def __call__(self, *args, input=None):
        return self.runner.invoke(app, [str(a) for a in args], input=input, catch_exceptions=False)


@pytest.fixture
def kfx():
    return Kfx()
