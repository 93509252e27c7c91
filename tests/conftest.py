import os
import shutil

import pytest
from typer.testing import CliRunner

from cli.main import app

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")
SAMPLE = os.path.join(FIXTURES, "sample-logdir")


@pytest.fixture
def sample(tmp_path):
    """A private copy of the bundled sample log dir (tests may damage it)."""
    dst = tmp_path / "logdir"
    shutil.copytree(SAMPLE, dst)
    return str(dst)


class Kfx:
    def __init__(self):
        self.runner = CliRunner()

    def __call__(self, *args, input=None):
        return self.runner.invoke(app, [str(a) for a in args], input=input, catch_exceptions=False)


@pytest.fixture
def kfx():
    return Kfx()
