"""Tables never cut a value (issue 31): every table-printing command is run under a pseudo-terminal of
80 and of 200 columns and piped, on a log dir whose partition has a long topic name and 12-digit
offsets, and the whole values must appear (on a narrow terminal as vertical records, piped as plain
lines at full width, one row a line)."""
import fcntl
import os
import re
import select
import struct
import subprocess
import sys
import termios
import time
import pty
import shutil

import pytest

from cli.tables import fits, plain_lines, record_lines
from kafkaforensics.log.writer import write_partition
from kafkaforensics.records.batch import Record
from kafkaforensics.records.builder import build_v2
from kafkaforensics.records.internal_topics import encode_offset_commit

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOPIC = "payments-settlement-reconciliation-eu-west-1"
PARTITION = f"{TOPIC}-0"
GROUP = "payments-settlement-reconciliation-consumers"
BASE = 123456789012
T0 = 1_700_000_000_000
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    d = tmp_path_factory.mktemp("wide") / "logs"
    batches = [build_v2([Record(BASE + b * 4 + i, T0 + b, b"key-%d" % i, b"v" * 40, []) for i in range(4)],
                        base_offset=BASE + b * 4) for b in range(6)]
    write_partition(str(d / PARTITION), batches, segment_bytes=700)
    commit = encode_offset_commit(GROUP, TOPIC, 0, BASE + 20, commit_ts=T0)
    write_partition(str(d / "__consumer_offsets-0"), [build_v2([Record(0, T0, *commit, [])], base_offset=0)])
    return d


def _pty(argv, cols):
    """Run kfx with stdin and stdout on a pseudo-terminal of ``cols`` columns: (exit code, text, stderr)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, cols, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "FORCE_COLOR", "NO_COLOR",
                                                            "TTY_COMPATIBLE", "TTY_INTERACTIVE")}
    env.update(TERM="xterm-256color", PYTHONPATH=ROOT)
    proc = subprocess.Popen([sys.executable, "-m", "cli.main", *map(str, argv)], stdin=slave, stdout=slave,
                            stderr=subprocess.PIPE, cwd=ROOT, env=env)
    os.close(slave)
    chunks, deadline = [], time.monotonic() + 120
    while time.monotonic() < deadline:
        if not select.select([master], [], [], 1)[0]:
            continue
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    else:
        proc.kill()
    err = proc.stderr.read().decode()
    proc.wait(timeout=120)
    os.close(master)
    return proc.returncode, ANSI.sub("", b"".join(chunks).decode()).replace("\r\n", "\n"), err


def _piped(argv):
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "FORCE_COLOR", "TTY_COMPATIBLE")}
    env["PYTHONPATH"] = ROOT
    proc = subprocess.run([sys.executable, "-m", "cli.main", *map(str, argv)], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=120)
    return proc.returncode, proc.stdout, proc.stderr


def _commands(logdir, tmp):
    part = logdir / PARTITION
    last = f"{BASE + 23}"
    torn = tmp / "torn" / PARTITION  # the last batch of the active segment torn: recover has actions
    if not torn.exists():
        shutil.copytree(part, torn)
    active = max(f for f in os.listdir(torn) if f.endswith(".log"))
    os.truncate(torn / active, os.path.getsize(torn / active) - 7)
    noindex = tmp / "noindex" / PARTITION  # an offset index lost: reindex has actions
    if not noindex.exists():
        shutil.copytree(part, noindex)
    os.remove(noindex / f"{BASE:020d}.index")
    return {
        "verify": ([logdir], [PARTITION, str(BASE), str(BASE + 24)]),
        "analyze": ([part], [PARTITION, f"{BASE}..{last}", "2023-11-14T22:13:20.000Z..2023-11-14T22:13:20.005Z"]),
        "groups": ([logdir], [GROUP, TOPIC, str(BASE + 20), str(BASE + 24)]),
        "retention": (["--dry-run", "--retention-bytes", "1", part], [f"{BASE:020d}.log", f"{BASE}..{BASE + 7}"]),
        "salvage": ([part, "--out", tmp / "salvaged", "--dry-run"], [str(BASE), last]),
        "recover": (["--dry-run", "--no-backup", torn], [active, f"{BASE + 20}"]),
        "reindex": (["--dry-run", "--no-backup", noindex], [f"{BASE:020d}.index"]),
        "compact": (["--dry-run", "--include-active", "--config", "cleanup.policy=compact", part], [PARTITION, "1614"]),
    }


@pytest.mark.parametrize("mode", ["pty80", "pty200", "piped"])
def test_table_values_are_never_cut(logdir, tmp_path, mode):
    for name, (args, values) in _commands(logdir, tmp_path).items():
        argv = [name, *args]
        if mode == "piped":
            code, out, err = _piped(argv)
        else:
            code, out, err = _pty(argv, int(mode[3:]))
        assert code in (0, 1) and "Traceback" not in err, (argv, err[-2000:])
        assert "…" not in out and "..." not in out.replace("..", ""), (argv, out)
        for v in values:
            assert v in out, (mode, argv, v, out)
        if mode == "piped" and name in ("verify", "analyze", "groups"):
            row = [line for line in out.splitlines() if values[0] in line]
            assert row and all(v in row[0] for v in values[1:3]), (argv, out)  # one row a line


def test_narrow_terminal_gets_records_wide_gets_a_table(logdir):
    code, narrow, _ = _pty(["verify", logdir], 80)
    assert f"partition: {PARTITION}" in narrow and "log start: " + str(BASE) in narrow
    code, wide, _ = _pty(["verify", logdir], 200)
    assert "partition:" not in wide and re.search(rf"│ {PARTITION}\s+│", wide), wide


def test_layouts_keep_every_value():
    cols = ("partition", "offsets")
    rows = [("t" * 70, "123456789012..123456789099"), ("u", "1..2")]
    assert not fits(cols, rows, 80) and fits(cols, rows[1:], 80)
    text = "\n".join(plain_lines("title", cols, rows))
    assert "t" * 70 + "  123456789012..123456789099" in text and text.splitlines()[0] == "title"
    rec = record_lines(None, cols, rows)
    assert f"partition: {'t' * 70}" in rec and "  offsets: 123456789012..123456789099" in rec


def test_wide_characters_take_two_columns():
    """A CJK name (a log dir's path: two terminal columns a character) keeps the plain table aligned,
    and a table whose wide name would not fit a terminal goes to records; combining marks and format
    characters (a zero-width joiner, a Thai vowel sign) take none."""
    cols = ("partition", "records")
    rows = [("支付-0", 10), ("orders-0", 20), ("cafe\u0301-0", 30), ("a\u200db\u0e34-0", 40)]
    lines = plain_lines(None, cols, rows, right=(1,))
    ends = {len(line) + sum(1 for ch in line if "\u4e00" <= ch <= "\u9fff")
            - sum(1 for ch in line if ch in "\u0301\u200d\u0e34") for line in lines}
    assert len(ends) == 1, lines  # every line ends in the same terminal column
    assert lines[1] == "支付-0          10", lines
    assert not fits(("t",), [("支" * 40,)], 80) and fits(("t",), [("t" * 40,)], 80)
