"""The walk kinds' protocols and their one switch (``kafkaforensics/records/walks.py``): every fast
path is its protocol, the switch off gives each walk's reference, and a whole `kfx` process run
with ``KFX_NO_SPEEDUPS=1`` reports exactly what the fast paths report."""
import ast
import json
import os
import pathlib
import subprocess
import sys

import kafkaforensics
from kafkaforensics.log.record_columns import decode_columns
from kafkaforensics.log.segment import BatchScanner, open_buffer
from kafkaforensics.records import walks
from kafkaforensics.records.batch import Batch, Record
from kafkaforensics.records.builder import BatchProducer, build_v2
from kafkaforensics.records.header_list import ListRun
from kafkaforensics.records.header_run import HeaderRun

ROOT = pathlib.Path(kafkaforensics.__file__).parent


def _segment(path, batches=60, records=5, value=b"v" * 100):
    with open(path, "wb") as f:
        for b in range(batches):
            f.write(build_v2([Record(b * records + i, 1700000000000 + b, b"k%d" % i, value, [("h", b"x")])
                              for i in range(records)],
                             base_offset=b * records,
                             producer=BatchProducer(producer_id=7 if b % 3 else -1, producer_epoch=0, base_sequence=b * records if b % 3 else -1)))
    return str(path)


def _items(path, monkeypatch, speedups, lists):
    with walks.use_speedups(speedups), open_buffer(path) as buf, open(path, "rb", buffering=0) as f:
        sc = BatchScanner(buf, file=path, base_offset=0)
        assert isinstance(sc, walks.BatchWalk)
        items = list(sc.iter_runs(f.fileno(), lists=lists))
        return items, sc.valid_bytes, sc.stop


def test_runs_are_their_protocol_and_the_switch_off_walks_batch_by_batch(tmp_path, monkeypatch):
    path = _segment(tmp_path / "00000000000000000000.log")
    with open(path, "ab") as f:
        f.write(b"\x00" * 30)  # a torn tail: both walks stop at the same byte for the same reason
    for lists, kind in ((True, ListRun), (False, HeaderRun)):
        fast, fast_valid, fast_stop = _items(path, monkeypatch, True, lists)
        assert fast and all(isinstance(r, kind) and isinstance(r, walks.HeaderRunLike) for r in fast)
        ref, ref_valid, ref_stop = _items(path, monkeypatch, False, lists)
        assert ref and all(isinstance(b, Batch) for b in ref)
        flat = [(r.position[i], r.base_offset[i], r.last_offset[i], r.size[i], bool(r.crc_ok[i]))
                for r in fast for i in range(len(r))]
        assert [tuple(int(x) for x in row[:4]) + row[4:] for row in flat] == \
               [(b.position, b.base_offset, b.last_offset, b.size, b.crc_valid()) for b in ref]
        assert (fast_valid, fast_stop) == (ref_valid, ref_stop) and ref_stop is not None


def test_list_and_numpy_runs_hold_the_same_headers(tmp_path, monkeypatch):
    """One walk loop fills both containers: the list run's rows are the numpy run's fields."""
    path = _segment(tmp_path / "00000000000000000000.log")
    with open_buffer(path) as buf:
        (lrun,) = BatchScanner(buf, file=path, base_offset=0).iter_runs(lists=True)
        (nrun,) = BatchScanner(buf, file=path, base_offset=0).iter_runs(lists=False)
        assert [tuple(row) for row in nrun.header.tolist()] == lrun.rows
        assert lrun.head(7).rows == lrun.rows[:7] and nrun.head(7).base_offset.tolist() == lrun.base_offset[:7]
        assert lrun.batch(3).base_offset == int(nrun.base_offset[3]) == 15


def test_record_decoder_switch_off_is_record_by_record(tmp_path, monkeypatch):
    path = _segment(tmp_path / "00000000000000000000.log", batches=200)
    decode: walks.RecordDecoder = decode_columns
    with open_buffer(path) as buf:
        batches = list(BatchScanner(buf, file=path, base_offset=0))
        fast = decode(batches)
        with walks.use_speedups(False):
            ref = decode_columns(batches)  # rebound here too: this module imported it by name
        assert list(ref.iter_records()) == list(fast.iter_records()) == [r for b in batches for r in b.records()]


def test_no_other_module_switch():
    """The switch is one: no module of the package declares a True/False constant at its top."""
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        for node in ast.parse(path.read_text()).body:
            value = getattr(node, "value", None)
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(value, ast.Constant) \
                    and isinstance(value.value, bool):
                found.append(f"{path.relative_to(ROOT)}: {ast.unparse(node)}")
    assert found == []


def _reads_of_the_switch(path: pathlib.Path) -> list[str]:
    """The functions of ``path`` whose body reads ``SPEEDUPS`` (a name or an attribute)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            if any(isinstance(n, ast.Name) and n.id == "SPEEDUPS" or isinstance(n, ast.Attribute)
                   and n.attr == "SPEEDUPS" for n in ast.walk(node)):
                found.append(getattr(node, "name", "<lambda>"))
    return found


def test_no_function_reads_the_switch_per_call():
    """The choice is made once, at import (``walks.bind``): no function of the project tests
    ``SPEEDUPS`` when it runs, but walks' own binding and rebinding (six did before)."""
    found = []
    for top in ("kafkaforensics", "cli", "spark_jobs", "specs"):
        for path in sorted((ROOT.parent / top).rglob("*.py")):
            found += [f"{path.relative_to(ROOT.parent)}: {name}" for name in _reads_of_the_switch(path)]
    assert found == ["kafkaforensics/records/walks.py: " + f for f in ("bind", "_rebind", "use_speedups")]


def test_use_speedups_rebinds_every_fast_path_and_puts_it_back():
    """Each bound name is its fast function or its reference, where it is defined and where it was
    imported by name; ``use_speedups`` switches them all, and back."""
    from kafkaforensics.log import record_columns, segment
    from kafkaforensics.repair import cleaner
    from kafkaforensics.spark import spark_source

    held = [(segment.BatchScanner, "iter_runs"), (record_columns, "decode_columns"),
            (cleaner, "decode_columns"), (spark_source, "decode_columns"), (cleaner, "_map_batches"),
            (cleaner._Filter, "judged"), (spark_source.KafkaSegmentsReader, "_fast"),
            (sys.modules[__name__], "decode_columns")]
    pairs = {b.name: (b.fast, b.reference) for b in walks.BOUND}
    assert sorted(pairs) == ["_fast", "_map_batches", "decode_columns", "iter_runs", "judged"]
    assert all(fast is not ref for fast, ref in pairs.values())

    def chosen(flag):
        return [getattr(owner, name) is pairs[name][0 if flag else 1] for owner, name in held]
    before = walks.SPEEDUPS
    assert all(chosen(before))
    for flag in (not before, before, False, True):
        with walks.use_speedups(flag):
            assert all(chosen(flag)) and walks.SPEEDUPS is flag
        assert all(chosen(before)) and walks.SPEEDUPS is before


def test_a_whole_process_without_speedups_reports_the_same(tmp_path):
    """`kfx verify`, `kfx reindex --dry-run` and `kfx dump --deep` of a segment past the small-file
    walk, with KFX_NO_SPEEDUPS=1 and without: the same output."""
    part = tmp_path / "t-0"
    part.mkdir()
    seg = _segment(part / "00000000000000000000.log", batches=900, records=4, value=bytes(300))
    assert os.path.getsize(seg) > 1 << 20  # past verify's SMALL_SEGMENT_BYTES: the runs are walked
    with open(seg, "r+b") as f:  # one bad CRC in the middle: a value byte of batch 450 (all are one size)
        f.seek(os.path.getsize(seg) // 900 * 450 + 1000)
        byte = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([byte[0] ^ 0xFF]))
    outs = {}
    for flag in ("0", "1"):
        env = dict(os.environ, KFX_NO_SPEEDUPS=flag)
        switch = subprocess.run([sys.executable, "-c", "from kafkaforensics.records import walks; print(walks.SPEEDUPS)"],
                                cwd=ROOT.parent, env=env, capture_output=True, text=True, timeout=60).stdout
        assert switch.strip() == ("True" if flag == "0" else "False")
        got = []
        for args in (["verify", "--json", str(part)], ["reindex", "--dry-run", "--json", str(part)],
                     ["dump", "--deep", "--format", "json", seg]):
            p = subprocess.run([sys.executable, "-m", "cli.main", *args], cwd=ROOT.parent, env=env,
                               capture_output=True, text=True, timeout=300)
            assert p.returncode in (0, 1), (args, p.stderr)
            got.append((p.returncode, p.stdout))
        outs[flag] = got
    assert outs["0"] == outs["1"]
    verified = json.loads(outs["0"][0][1])
    assert any(p["kind"] == "crc-mismatch" for p in verified["problems"])


def test_a_list_run_takes_the_headers_the_walk_unpacked(tmp_path, monkeypatch):
    """issue 52 (verify's speed): the walk loop unpacks each header once, into the list run's rows;
    the run neither re-reads header bytes nor transposes every field (a column is made when asked)."""
    from kafkaforensics.records import header_list
    from specs import record_batch as R
    path = _segment(tmp_path / "00000000000000000000.log")

    def no_second_unpack(_headers):
        raise AssertionError("the list run re-unpacked header bytes the walk had unpacked")

    monkeypatch.setattr(header_list, "_HEADER_ROWS", no_second_unpack)
    with open_buffer(path) as buf, open(path, "rb", buffering=0) as f:
        (run,) = BatchScanner(buf, file=path, base_offset=0).iter_runs(f.fileno(), lists=True)
        assert run.rows == [R.HEADER_STRUCT.unpack_from(buf, p) for p in run.position]
        assert run.columns.made.keys() == {header_list.FIELD[n] for n in ("baseOffset", "lastOffsetDelta", "batchLength")}
        assert [run.columns[i] for i in range(len(run.columns))] == [list(c) for c in zip(*run.rows)]
