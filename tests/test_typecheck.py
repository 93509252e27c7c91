"""The type checker `make test` runs (`make typecheck`: mypy, configured in pyproject.toml's
[tool.mypy]): a wrong return annotation, as ``ReplayBroker.read``'s was (``tuple[bytes, int]``
returning a FileRegion), is an error, and no module is let off checking return annotations."""
import os
import pathlib
import subprocess
import sys

import pytest

tomllib = pytest.importorskip("tomllib", reason="pyproject.toml is read with tomllib (Python 3.11+)")
ROOT = pathlib.Path(__file__).resolve().parent.parent
CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text())

# FileRegion as kafkaforensics.broker.protocol declares it (a stand-in: the check then takes a
# second, not the whole package's analysis)
WRONG_RETURN = '''
class FileRegion:
    def __init__(self, path: str, offset: int, length: int) -> None:
        self.path, self.offset, self.length = path, offset, length


def read(path: str) -> tuple[bytes, int]:
    return FileRegion(path, 0, 10), 10
'''


def _mypy(*args: str) -> subprocess.CompletedProcess:
    pytest.importorskip("mypy", reason="mypy is in the test dependencies (pip install -e '.[test]')")
    return subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
                           "--no-incremental", "--cache-dir", os.devnull, *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_make_test_runs_the_type_checker_over_the_four_packages():
    makefile = (ROOT / "Makefile").read_text()
    assert "\ntest: install typecheck\n" in makefile and "\ntypecheck: install\n\t$(BIN)/python -m mypy\n" in makefile
    mypy = CONFIG["tool"]["mypy"]
    assert mypy["files"] == ["kafkaforensics", "specs", "cli", "spark_jobs"] and mypy["check_untyped_defs"]
    assert any(dep.startswith("mypy") for dep in CONFIG["project"]["optional-dependencies"]["test"])


#: the packages the checker covers: no module of theirs may be let off anything
PROJECT_PACKAGES = ("kafkaforensics", "specs", "cli", "spark_jobs")


def test_the_baseline_is_empty_and_stays_empty():
    """No module is let off an error code any more (the baseline issue 53's checker came in with,
    17 modules, is cleared): an override may only say a third-party package has no type
    information; one that turns codes off, ignores errors or names a project module fails here,
    and so does a code turned off for the whole tree."""
    mypy = CONFIG["tool"]["mypy"]
    assert not {"disable_error_code", "ignore_errors"} & set(mypy), sorted(mypy)
    for override in mypy.get("overrides", []):
        assert set(override) == {"module", "ignore_missing_imports"}, override
        modules = [override["module"]] if isinstance(override["module"], str) else override["module"]
        assert not [m for m in modules if m.split(".")[0] in PROJECT_PACKAGES], modules


def test_a_wrong_return_annotation_is_an_error(tmp_path):
    """The project's configuration, on a module as ``ReplayBroker.read`` was and as it is now."""
    wrong, right = tmp_path / "wrong_read.py", tmp_path / "right_read.py"
    wrong.write_text(WRONG_RETURN)
    right.write_text(WRONG_RETURN.replace("tuple[bytes, int]", "tuple[FileRegion | bytes, int]"))
    got = _mypy(str(wrong), str(right))
    errors = [line for line in got.stdout.splitlines() if ": error:" in line]
    assert got.returncode == 1 and len(errors) == 1, got.stdout + got.stderr
    assert "wrong_read.py:8: error: Incompatible return value type" in errors[0] and "[return-value]" in errors[0]


#: the modules issue 53's rounds cleared from the baseline, the last of it: checked with every error code on
CLEARED = ["kafkaforensics.broker.replay", "kafkaforensics.broker.server", "kafkaforensics.inspect.analyzer",
           "kafkaforensics.inspect.explain", "spark_jobs.races", "spark_jobs.scan", "cli.commands.scan",
           "kafkaforensics.log.live_log", "kafkaforensics.repair.recovery", "kafkaforensics.log.load_walk",
           "kafkaforensics.log.partition", "kafkaforensics.repair.load_logs", "kafkaforensics.spark.scan_plan",
           "kafkaforensics.spark.record_runs", "kafkaforensics.spark.spark_source", "kafkaforensics.log.segment",
           "kafkaforensics.inspect.verify"]


def test_the_cleared_modules_are_off_the_baseline_and_type_check():
    """None of them is let off an error code any more, and mypy finds no error in them (their
    annotations: a LiveLog's producer state, a LogView's partition, the analysis's fields...)."""
    baselined = {o["module"] for o in CONFIG["tool"]["mypy"].get("overrides", []) if "disable_error_code" in o}
    assert not baselined & set(CLEARED), sorted(baselined & set(CLEARED))
    files = [str(ROOT / (m.replace(".", "/") + ".py")) for m in CLEARED]
    got = _mypy(*files)
    assert got.returncode == 0 and "Success" in got.stdout, got.stdout[-3000:] + got.stderr[-2000:]
