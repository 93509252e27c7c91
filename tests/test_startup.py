"""Start-up: `kfx --help` and `kfx verify`/`dump` of a small segment import only what they use.

Each test runs a fresh interpreter under ``-X importtime`` (which lists every module a process
imports) and checks the heavy modules stay out. No timings are asserted: the figures are in
`make bench` (benchmarks/run.py, the start-up rows) and the README.
"""
import os
import subprocess
import sys

from tests.conftest import SAMPLE

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SMALL = os.path.join(SAMPLE, "orders-0", "00000000000000000225.log")
#: never needed to print help or parse a command line
HEAVY = {"numpy", "pyspark", "pyarrow", "pandas", "construct"}
#: never needed to verify or dump a segment (construct builds the specs; numpy checks runs);
#: pydantic is typer's coercion, which a plain command line skips (cli/fastpath.py)
SPARK = {"pyspark", "pyarrow", "pandas", "pydantic"}


def imported(*argv):
    """Run ``python -X importtime *argv``: (exit code, stdout, set of top-level packages imported)."""
    proc = subprocess.run([sys.executable, "-X", "importtime", *argv], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    mods = set()
    for line in proc.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            name = line.rsplit("|", 1)[1].strip()
            if name and name != "package":  # the header line
                mods.add(name.split(".")[0])
    assert "cli" in mods or argv[0] == "-c", proc.stderr[-2000:]
    return proc.returncode, proc.stdout, mods


def test_import_cli_main_is_light():
    code, _, mods = imported("-c", "import cli.main")
    assert code == 0
    assert "typer" in mods  # the check sees the imports at all
    assert not mods & HEAVY, sorted(mods & HEAVY)
    assert "rich" not in mods and "kafkaforensics" in mods  # rich: on first output only


def test_help_imports_nothing_heavy():
    code, out, mods = imported("-m", "cli.main", "--help")
    assert code == 0 and "verify" in out and "dump" in out
    assert not mods & HEAVY, sorted(mods & HEAVY)


def test_command_help_imports_nothing_heavy():
    code, out, mods = imported("-m", "cli.main", "verify", "--help")
    assert code == 0 and "--max-message-bytes" in out
    assert not mods & HEAVY, sorted(mods & HEAVY)


def test_verify_small_segment_skips_spark_stack():
    code, out, mods = imported("-m", "cli.main", "verify", "--json", SMALL)
    assert code == 0 and '"ok": true' in out
    assert not mods & SPARK, sorted(mods & SPARK)
    assert "rich" not in mods  # --json and stderr not a terminal: no table, no progress bar


def test_verify_small_segment_text_report():
    code, out, mods = imported("-m", "cli.main", "verify", SMALL)
    assert code == 0 and "28 batches" in out and "OK" in out
    assert not mods & SPARK, sorted(mods & SPARK)


def test_plain_line_exit_codes_are_the_commands():
    code, _, mods = imported("-m", "cli.main", "verify", os.path.join(ROOT, "no-such-segment.log"))
    assert code == 2 and "pydantic" not in mods  # the command's own usage error, through the quick parse
    code, _, mods = imported("-m", "cli.main", "verify", "--max-message-bytes", "3", SMALL)
    assert code == 2 and "pydantic" in mods  # typer's range error: typer parsed it


def test_dump_small_segment_skips_spark_stack_and_numpy():
    code, out, mods = imported("-m", "cli.main", "dump", SMALL)
    assert code == 0 and "baseOffset: 225" in out
    assert not mods & (SPARK | {"numpy"}), sorted(mods & (SPARK | {"numpy"}))


# ------------------------------------------------------- the quick parse equals typer's own ----
import functools  # noqa: E402

import typer  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from cli.fastpath import plan, _params  # noqa: E402
from cli.main import app  # noqa: E402


def typer_kwargs(argv):
    """(exit code, kwargs) typer passes the command for ``argv`` (the command itself not run)."""
    seen = {}
    rec_app = typer.Typer(add_completion=False, rich_markup_mode=None)
    for cmd in app.registered_commands:
        def recorder(cb):
            @functools.wraps(cb)
            def record(**kwargs):
                seen.update(kwargs)
            return record
        rec_app.command(name=cmd.name)(recorder(cmd.callback))
    r = CliRunner().invoke(rec_app, list(argv))
    return r.exit_code, seen


PLAIN_LINES = [
    ["verify", SMALL], ["verify", "--json", SMALL, SMALL], ["verify", SMALL, "--max-message-bytes", "1000"],
    ["verify", "--max-message-bytes=14", "--", "-odd-name"], ["dump", SMALL],
    ["dump", "--deep", "--format", "json", "--encoding=hex", SMALL], ["dump", "--max-bytes", "0", SMALL],
    ["dump", "--print-data-log", "--offsets-decoder", SMALL], ["diff", "a", "b"], ["groups", "x", "--json"],
    ["recover", "p", "--dry-run", "--recovery-point", "5"],
]
DECLINED = [
    [], ["--help"], ["verify"], ["verify", "--help", SMALL], ["verify", "-x", SMALL], ["verify", "--jsn", SMALL],
    ["verify", "--max-message-bytes", "13", SMALL], ["verify", "--max-message-bytes", "1e3", SMALL],
    ["verify", "--max-message-bytes", SMALL], ["dump", "--format", "yaml", SMALL], ["dump", "--deep=1", SMALL],
    ["dump", "--max-bytes", "-1", SMALL], ["diff", "a"], ["diff", "a", "b", "c"], ["write"], ["nope", SMALL],
]


def test_plain_lines_get_typers_values():
    for argv in PLAIN_LINES:
        found = plan(app, argv)
        assert found is not None, argv
        code, kwargs = typer_kwargs(argv)
        assert code == 0 and found[1] == kwargs, argv


def test_unusual_lines_are_left_to_typer():
    for argv in DECLINED:
        assert plan(app, argv) is None, argv


VALUES = ["0", "1", "13", "14", "4096", "-1", "007", "1e3", "x", "json", "text", "yaml", "hex", "base64",
          "batches", "records", "-", "--", "-x", "--help", SMALL]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_any_line_the_quick_parse_takes_typer_takes_alike(data):
    """Whatever line plan() accepts, typer accepts too and passes the very same values."""
    cmd = data.draw(st.sampled_from(app.registered_commands))
    own = sorted((_params(cmd.callback) or ({}, []))[0])
    tokens = st.sampled_from(VALUES) | (st.sampled_from(own) if own else st.nothing()) | (
        st.tuples(st.sampled_from(own), st.sampled_from(VALUES)).map("=".join) if own else st.nothing())
    argv = [cmd.name or cmd.callback.__name__, *data.draw(st.lists(tokens, max_size=7))]
    found = plan(app, argv)
    if found is not None:
        code, kwargs = typer_kwargs(argv)
        assert code == 0 and found[1] == kwargs, argv


def test_progress_bar_on_a_terminal():
    """FORCE_COLOR makes rich treat stderr as a terminal: the progress bar is rich's, on the lazy err."""
    env = dict(os.environ, FORCE_COLOR="1")
    for cmd in (["verify", SMALL], ["salvage", SMALL, "--out", os.path.join(ROOT, ".no-such-dir-x"), "--dry-run"]):
        proc = subprocess.run([sys.executable, "-m", "cli.main", *cmd], cwd=ROOT, capture_output=True, text=True,
                              env=env, timeout=120)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
