"""Start-up: `kfx --help` and `kfx verify`/`dump` of a small segment import only what they use.

Each test runs a fresh interpreter under ``-X importtime`` (which lists every module a process
imports) and checks the heavy modules stay out. No timings are asserted: the figures are in
`make bench` (benchmarks/run.py, the start-up rows) and benchmarks/README.md.
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
    assert "cli" in mods and "inspect" in mods  # the check sees the imports at all (cli/declare.py's)
    assert "typer" not in mods  # the declarations are typer's arguments, kept until typer parses a line
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


def test_a_command_line_imports_only_its_own_command_module():
    """cli/main.py registers every command by its module: a line imports the one it names, help none."""
    for argv, own in ((["verify", SMALL], {"verify"}), (["dump", SMALL], {"dump"}), (["--help"], set()),
                      (["serve", "--help"], {"serve"}), (["recover", os.path.join(ROOT, "no-such-dir")], {"recover"})):
        proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "cli.main", *argv], cwd=ROOT,
                              capture_output=True, text=True, timeout=120)
        names = {line.rsplit("|", 1)[1].strip() for line in proc.stderr.splitlines()
                 if line.startswith("import time:") and "|" in line}
        assert "cli.main" in names or "cli.fastpath" in names, proc.stderr[-2000:]
        assert {n.split(".")[2] for n in names if n.startswith("cli.commands.")} == own, argv


def test_dump_small_segment_skips_spark_stack_and_numpy():
    code, out, mods = imported("-m", "cli.main", "dump", SMALL)
    assert code == 0 and "baseOffset: 225" in out
    assert not mods & (SPARK | {"numpy"}), sorted(mods & (SPARK | {"numpy"}))


#: what only a write needs (fsutil's temp files, copies and crash hook): log/partition.py imports
#: fsutil, checkpoint_file, leader_epochs and load_walk plainly, and a read-only line pays for none of these
WRITERS = {"shutil", "tempfile", "uuid", "datetime", "bz2", "lzma", "random", "signal", "platform"}


def test_read_only_lines_import_no_writer_modules():
    for argv in (["verify", SMALL], ["dump", SMALL]):
        proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "cli.main", *argv], cwd=ROOT,
                              capture_output=True, text=True, timeout=120)
        names = {line.rsplit("|", 1)[1].strip() for line in proc.stderr.splitlines()
                 if line.startswith("import time:") and "|" in line}
        assert proc.returncode == 0 and "kafkaforensics.log.load_walk" in names, proc.stderr[-2000:]
        assert not names & WRITERS, (argv, sorted(names & WRITERS))


def test_backup_dir_stamp_is_utc_to_the_microsecond(tmp_path):
    """fsutil's backup dir name: ``<partition>/.kfx-backup/YYYYmmddTHHMMSS.ffffffZ``, UTC now."""
    import datetime
    import re
    from kafkaforensics import fsutil
    before = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    stamp = os.path.basename(fsutil.default_backup_dir(str(tmp_path)))
    assert re.fullmatch(r"\d{8}T\d{6}\.\d{6}Z", stamp), stamp
    at = datetime.datetime.strptime(stamp, "%Y%m%dT%H%M%S.%fZ").replace(tzinfo=datetime.timezone.utc)
    assert before <= at <= datetime.datetime.now(datetime.timezone.utc)


#: not needed to verify or dump a small segment at all: a shell loop's `kfx dump F`/`kfx verify F` runs
#: on the standard library and the project's own modules (typer: the quick parse; numpy: a small
#: segment's checks in lists; construct: the schemas in specs/schemas/, which the fast paths never
#: import; rich: plain lines; crc32c: its extension loaded without the package's import-time work)
LIGHT = HEAVY | SPARK | {"typer", "click", "rich", "crc32c", "importlib_metadata"}


def test_small_segment_dump_and_verify_import_nothing_heavy(tmp_path):
    import shutil
    damaged = tmp_path / "t-0"
    damaged.mkdir()
    for suffix in (".log", ".index", ".timeindex"):
        shutil.copy(SMALL[:-4] + suffix, damaged / ("00000000000000000225" + suffix))
    with open(damaged / "00000000000000000225.log", "r+b") as f:  # a record byte: a CRC mismatch
        f.seek(200)
        byte = f.read(1)
        f.seek(200)
        f.write(bytes([byte[0] ^ 0xFF]))
    bad = str(damaged / "00000000000000000225.log")
    lines = [(["verify", SMALL], 0, "5 files, 28 batches, 10684 bytes: OK\n"),
             (["verify", "--json", SMALL], 0, '"ok": true'),
             (["verify", SMALL[:-4] + ".index"], 0, "OK"),
             (["verify", bad], 1, "crc-mismatch"),
             (["dump", SMALL], 0, "baseOffset: 225"),
             (["dump", "--format", "json", SMALL], 0, '"baseOffset": 225'),
             (["dump", "--deep", "--print-data", SMALL], 0, "payload:")]
    for argv, want_code, want_out in lines:
        code, out, mods = imported("-m", "cli.main", *argv)
        assert code == want_code and want_out in out, (argv, out[-500:])
        assert "kafkaforensics" in mods and not mods & LIGHT, (argv, sorted(mods & LIGHT))
    assert "importlib.metadata" not in subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "cli.main", "verify", SMALL], cwd=ROOT, capture_output=True,
        text=True, timeout=120).stderr


def test_large_segment_verify_imports_no_numpy(tmp_path):
    """Above the small-file walk, verify goes over runs of header tuples: still no numpy (its import
    costs a whole process more than the checks it would vectorise), and the report is the one of
    the batch-by-batch walk."""
    from kafkaforensics.records.batch import Record
    from kafkaforensics.records.builder import build_v2
    seg = tmp_path / "00000000000000000000.log"
    with open(seg, "wb") as f:
        for b in range(300):  # ~3 MiB: past SMALL_SEGMENT_BYTES
            f.write(build_v2([Record(b * 10 + i, 1700000000000 + b, b"k", bytes(1000), []) for i in range(10)],
                             base_offset=b * 10,
                             producer=BatchProducer(producer_id=7 if b % 3 else -1, producer_epoch=0, base_sequence=b * 10 if b % 3 else -1)))
    assert os.path.getsize(seg) > 2 << 20
    code, out, mods = imported("-m", "cli.main", "verify", "--json", str(seg))
    assert code == 0 and '"batches": 300' in out
    assert not mods & LIGHT, sorted(mods & LIGHT)
    by_batch = subprocess.run([sys.executable, "-c", "import json, sys; from kafkaforensics.inspect import verify as v; "
                                "v.SMALL_SEGMENT_BYTES = 1 << 40; print(json.dumps(v.verify([sys.argv[1]]).to_json()))", str(seg)],
                               cwd=ROOT, capture_output=True, text=True, timeout=120)
    import json
    assert json.loads(out) == json.loads(by_batch.stdout) and json.loads(out)["problems"] == []


# ------------------------------------------------------- the quick parse equals typer's own ----
import functools  # noqa: E402

import typer  # noqa: E402
from hypothesis import HealthCheck, example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from cli.fastpath import plan, _params  # noqa: E402
from cli.main import app, commands  # noqa: E402


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
    ["scan", "in", "--out", "o", "--level", "records", "--topic", "a", "--partition", "3", "--search=x"],
]
DECLINED = [
    [], ["--help"], ["verify"], ["verify", "--help", SMALL], ["verify", "-x", SMALL], ["verify", "--jsn", SMALL],
    ["verify", "--max-message-bytes", "13", SMALL], ["verify", "--max-message-bytes", "1e3", SMALL],
    ["verify", "--max-message-bytes", SMALL], ["dump", "--format", "yaml", SMALL], ["dump", "--deep=1", SMALL],
    ["dump", "--max-bytes", "-1", SMALL], ["write"], ["nope", SMALL],
]


def test_plain_lines_get_typers_values():
    for argv in PLAIN_LINES:
        found = plan(commands, argv)
        assert found is not None, argv
        code, kwargs = typer_kwargs(argv)
        assert code == 0 and found[1] == kwargs, argv


def test_unusual_lines_are_left_to_typer():
    for argv in DECLINED:
        assert plan(commands, argv) is None, argv


VALUES = ["0", "1", "13", "14", "4096", "-1", "007", "1e3", "x", "json", "text", "yaml", "hex", "base64",
          "batches", "records", "-", "--", "-x", "--help", SMALL]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_any_line_the_quick_parse_takes_typer_takes_alike(data):
    """Whatever line plan() accepts, typer accepts too and passes the very same values."""
    cmd = data.draw(st.sampled_from(commands.commands))
    own = sorted((_params(cmd.callback) or ({}, []))[0])
    tokens = st.sampled_from(VALUES) | (st.sampled_from(own) if own else st.nothing()) | (
        st.tuples(st.sampled_from(own), st.sampled_from(VALUES)).map("=".join) if own else st.nothing())
    argv = [cmd.name, *data.draw(st.lists(tokens, max_size=7))]
    found = plan(commands, argv)
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


# ------------------------------------------------- plain lines are the bytes rich prints ----
import io  # noqa: E402
from types import SimpleNamespace  # noqa: E402

from cli.commands.verify import verify_report_lines  # noqa: E402
from cli.plain import console_width, render  # noqa: E402
from kafkaforensics.errors import Problem  # noqa: E402
from kafkaforensics.records.builder import BatchProducer

TEXT = st.text(alphabet="abz AZ09:.-_/\\[]()@\t\né", max_size=90) | st.sampled_from(
    [":smile:", "[red]x[/red]", "x [/dim] y", "s3://b/k:v:", "a" * 79, "b" * 81, "tail ", " lead", ""])


def _report(draw_problems, notes, counts):
    drawn = [Problem(f, pos, off, kind, detail) for f, pos, off, kind, detail in draw_problems]
    problems, warnings = drawn[::2], drawn[1::2]  # every other one a warning: both kinds of line are drawn
    return SimpleNamespace(notes=[Problem(f, None, None, "note", d) for f, d in notes], problems=problems,
                           warnings=warnings, files=counts[0], batches=counts[1], bytes=counts[2], ok=not problems)


def _rich(lines, width):
    from rich.console import Console
    buf = io.StringIO()
    out = Console(file=buf, width=width, force_terminal=False, force_jupyter=False, legacy_windows=False)
    for line in lines:
        out.print(line.rich_text, **line.options)
    return buf.getvalue()


KINDS = st.sampled_from(["crc-mismatch", "index-mismatch", "truncated-batch", "leftover-file", "odd"])


@settings(max_examples=400, deadline=None)
@example(problems=[], notes=[("", "\\")], counts=(0, 0, 0), width=31)  # a backslash before [/dim]
@given(problems=st.lists(st.tuples(TEXT, st.none() | st.integers(0, 10**9), st.none() | st.integers(0, 10**12),
                                   KINDS, TEXT), max_size=3),
       notes=st.lists(st.tuples(TEXT, TEXT), max_size=3),
       counts=st.tuples(st.integers(0, 10**6), st.integers(0, 10**9), st.integers(0, 10**15)),
       width=st.integers(10, 200))
def test_plain_verify_lines_are_the_bytes_rich_prints(problems, notes, counts, width):
    """Whenever `kfx verify` prints its lines without rich, they are byte for byte what rich prints
    on a console of that width that is no terminal."""
    lines = verify_report_lines(_report(problems, notes, counts))
    got = render(lines, width)
    if got is not None:
        assert got == _rich(lines, width)


def test_plain_lines_taken_for_ordinary_reports():
    """The plain way is taken for an ordinary report (so the test above compares something)."""
    rep = _report([("/d/t-0/00000000000000000000.log", 120, 5, "crc-mismatch", "stored CRC 1 does not match")],
                  [("/d/t-0/00000000000000000000.index", "3 preallocated zero entries")], (5, 28, 10684))
    lines = verify_report_lines(rep)
    got = render(lines, 80)
    assert got is not None and got == _rich(lines, 80)
    assert got.endswith("5 files, 28 batches, 10684 bytes: 1 problem(s)\n") and "  remedy: " in got
    assert render(verify_report_lines(_report([], [], (1, 2, 3))), 80) == "1 files, 2 batches, 3 bytes: OK\n"
    assert render(lines, 20) is None  # a note longer than the width: rich wraps it


def test_console_width_is_richs(monkeypatch):
    from rich.console import Console
    for columns in (None, "57", "200", "x"):
        if columns is None:
            monkeypatch.delenv("COLUMNS", raising=False)
        else:
            monkeypatch.setenv("COLUMNS", columns)
        assert console_width() == Console(file=io.StringIO()).size.width, columns


def test_a_verify_without_remote_never_loads_the_tier_reader():
    """The remote tier's reader and reconciliation (the plugin's codecs, hashlib's OpenSSL, ~15 ms) are
    loaded by ``kfx verify --remote`` lines only (cli/heavy.py): a plain verify imports none of them."""
    tier_modules = {"kafkaforensics.log.remote", "kafkaforensics.log.tier_reconcile", "kafkaforensics.log.unified_log",
                    "kafkaforensics.inspect.both_tiers", "hashlib"}
    for argv in (["verify", SMALL], ["verify", os.path.dirname(os.path.dirname(SMALL))]):
        code, out, mods = imported("-m", "cli.main", *argv)
        assert code == 0 and not mods & tier_modules, (argv, sorted(mods & tier_modules))


def imported_modules(*argv) -> tuple[int, set[str]]:
    """(exit code, every module, by its full dotted name, that ``python -X importtime *argv`` imports)."""
    proc = subprocess.run([sys.executable, "-X", "importtime", *argv], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    names = {line.rsplit("|", 1)[1].strip() for line in proc.stderr.splitlines()
             if line.startswith("import time:") and "|" in line}
    assert "cli" in names, proc.stderr[-2000:]
    return proc.returncode, names


#: the remote tier's reader and what walks it (full module names: a project module is one of many
#: kafkaforensics.* modules, so the top-level package names ``imported`` gives cannot tell it)
TIER_MODULES = {"kafkaforensics.log.remote", "kafkaforensics.log.remote.tier", "kafkaforensics.log.remote.unified",
                "kafkaforensics.log.tier_reconcile", "kafkaforensics.log.unified_log",
                "kafkaforensics.inspect.both_tiers", "hashlib"}


def test_a_dump_without_remote_never_loads_the_tier_reader():
    """As verify: the remote tier's reader (the plugin's codecs, hashlib's OpenSSL) is loaded by
    ``kfx dump --remote`` lines only (cli/heavy.py): a plain dump of a segment or a log dir imports
    none of it, and the check sees a project module at all (the dump module itself)."""
    for argv in (["dump", SMALL], ["dump", "--format", "json", os.path.dirname(os.path.dirname(SMALL))]):
        code, mods = imported_modules("-m", "cli.main", *argv)
        assert code == 0 and "kafkaforensics.inspect.dump" in mods, argv
        assert not mods & TIER_MODULES, (argv, sorted(mods & TIER_MODULES))


def test_a_verify_without_remote_never_loads_the_tier_reader_by_module_name():
    """The verify check above by full module names (it compares top-level names, which see hashlib only)."""
    for argv in (["verify", SMALL], ["verify", os.path.dirname(os.path.dirname(SMALL))]):
        code, mods = imported_modules("-m", "cli.main", *argv)
        assert code == 0 and "kafkaforensics.inspect.verify" in mods, argv
        assert not mods & TIER_MODULES, (argv, sorted(mods & TIER_MODULES))


#: what a plain `kfx verify` line has no use for: ctypes (dir_lock packs struct flock with struct), the
#: record builder (KRaft snapshots are written by log/writer.py), the analyzer (a clean report asks no
#: remedy), rich and typer (plain lines), and setuptools' editable import hook (a .pth path entry)
NOT_ON_VERIFYS_PATH = {"ctypes", "kafkaforensics.records.builder", "kafkaforensics.inspect.analyzer", "rich", "typer"}


def test_a_clean_verify_line_imports_only_its_path():
    """`kfx verify` of a clean segment and of a clean log dir imports none of the modules its path does
    not use (each a millisecond or more of start-up, which a verify of a small file is mostly made of)."""
    for argv in (["verify", SMALL], ["verify", "--json", os.path.dirname(SMALL)]):
        code, mods = imported_modules("-m", "cli.main", *argv)
        assert code == 0 and "kafkaforensics.inspect.verify" in mods, argv
        assert not mods & NOT_ON_VERIFYS_PATH, (argv, sorted(mods & NOT_ON_VERIFYS_PATH))


def test_a_verify_with_problems_gives_their_remedies_without_the_analyzer(tmp_path):
    """A damaged segment's verify report names each problem's remedy (inspect/remedies.py), and the
    line still never loads the analyzer (the last project module cli/heavy.py loaded lazily for it)."""
    seg = tmp_path / "orders-0" / os.path.basename(SMALL)
    seg.parent.mkdir()
    data = bytearray(open(SMALL, "rb").read())
    data[len(data) // 2] ^= 0xFF  # a record byte of a middle batch: its CRC fails
    seg.write_bytes(bytes(data))
    code, mods = imported_modules("-m", "cli.main", "verify", str(seg))
    assert code == 1 and "kafkaforensics.inspect.remedies" in mods
    assert "kafkaforensics.inspect.analyzer" not in mods
    proc = subprocess.run([sys.executable, "-m", "cli.main", "verify", "--json", str(seg)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    remedies = {p["kind"]: p.get("remedy") or "" for p in __import__("json").loads(proc.stdout)["problems"]}
    assert proc.returncode == 1 and "kfx recover --dry-run" in remedies["crc-mismatch"], proc.stdout
    assert all(r.startswith("kfx ") for r in remedies.values()), remedies
