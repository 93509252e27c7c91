"""The package's layout: stages import only the stages before them, the README's table is the tree, and no
module lives under its old flat name."""
from __future__ import annotations

import ast
import importlib
import pathlib
import re
import sys
import tomllib

import pytest
from setuptools import find_packages
from setuptools.command import editable_wheel

import kafkaforensics
from kafkaforensics.inspect import verify
from kafkaforensics.log import segment

ROOT = pathlib.Path(kafkaforensics.__file__).parent
README = ROOT.parent / "README.md"
#: each stage, in order: a stage may import the root modules, specs, itself and the stages before it
STAGES = ["records", "log", "repair", "inspect", "spark", "broker", "harness"]
#: stages that sit side by side and must not import each other
SIBLINGS = {"repair": {"inspect", "spark"}, "inspect": {"repair", "spark"}, "spark": {"repair", "inspect"}}


def _imports(path: pathlib.Path) -> set[str]:
    """Every kafkaforensics.* module a file imports, at top level, inside functions or on first use
    (``lazy(<a project module's dotted name>, globals())``, specs/lazy.py)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "lazy" and node.args
                and isinstance(node.args[0], ast.Constant) and str(node.args[0].value).startswith("kafkaforensics.")):
            found.add(node.args[0].value)
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "kafkaforensics" or node.module.count(".") == 1 and _stage(node.module + ".x"):
                found |= {f"{node.module}.{a.name}" for a in node.names}
            elif node.module.startswith("kafkaforensics."):
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("kafkaforensics.")}
    return found


def _stage(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 2 and parts[1] in STAGES else None


def test_the_package_is_grouped_by_stage():
    flat = sorted(p.stem for p in ROOT.glob("*.py"))
    assert flat == ["__init__", "__main__", "defaults", "errors", "fsutil"], flat
    assert sorted(p.name for p in ROOT.iterdir() if p.is_dir() and (p / "__init__.py").exists()) == sorted(STAGES)


def test_no_stage_imports_a_later_stage_or_a_sibling():
    bad = []
    for stage in STAGES:
        for path in sorted((ROOT / stage).glob("*.py")):
            for module in _imports(path):
                target = _stage(module)
                if target is None:
                    assert module.split(".")[1] in {"defaults", "errors", "fsutil"}, (path, module)
                    continue
                if STAGES.index(target) > STAGES.index(stage) or target in SIBLINGS.get(stage, ()):
                    bad.append(f"{path.relative_to(ROOT)} imports {module}")
    for path in ROOT.glob("*.py"):
        if path.stem != "__main__":
            bad += [f"{path.name} imports {m}" for m in _imports(path) if _stage(m)]
    assert not bad, bad


def test_specs_import_nothing_of_the_library():
    specs = ROOT.parent / "specs"
    bad = [f"{p.name} imports {m}" for p in specs.rglob("*.py") for m in _imports(p)]
    bad += [p.name for p in specs.rglob("*.py") if re.search(r"^\s*(from|import) kafkaforensics\b", p.read_text(), re.M)]
    assert not bad, bad


def assert_readme_row_lists(folder: str) -> None:
    """README's layout row for ``folder`` (relative to the project) names exactly its modules."""
    row = re.search(rf"^\| `{folder}/` \|(.*)\|$", README.read_text(), re.M)
    assert row, f"README has no layout row for {folder}/"
    listed = set(re.findall(r"`(\w+)\.py`", row.group(1)))
    present = {p.stem for p in (ROOT.parent / folder).glob("*.py")} - {"__init__"}
    assert listed == present, (folder, listed ^ present)


def test_the_readme_layout_table_is_the_tree():
    for stage in STAGES:
        assert_readme_row_lists(f"kafkaforensics/{stage}")


def test_old_flat_names_are_gone():
    """Modules are imported by their stage's name: ``kafkaforensics.segment`` is no module (no finder aliases it)."""
    for old in ("segment", "verify", "batch", "replay"):
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module(f"kafkaforensics.{old}")
    assert not [f for f in sys.meta_path if getattr(f, "__module__", None) == "kafkaforensics"]


#: the imports that stay inside a function, and why a user would accept it
INSIDE_A_FUNCTION = {
    ("kafkaforensics/records/checksums.py", "_load"):
        "crc32c's package import, only when its extension cannot be loaded directly (its import-time work is avoided)",
}


def test_imports_are_declared_at_module_tops():
    """Every import is at its module's top, plain or through specs.lazy (the one lazy mechanism),
    in the library, the CLI and the Spark jobs; only the listed exceptions stay in a function."""
    found = set()
    for top in (ROOT, ROOT.parent / "cli", ROOT.parent / "spark_jobs"):
        for path in sorted(top.rglob("*.py")):
            for fn in ast.walk(ast.parse(path.read_text())):
                if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                        isinstance(n, (ast.Import, ast.ImportFrom)) for n in ast.walk(fn)):
                    found.add((str(path.relative_to(ROOT.parent)), fn.name))
    assert found == set(INSIDE_A_FUNCTION), sorted(found ^ set(INSIDE_A_FUNCTION))


def _code_files():
    """Every Python file of the library, the CLI and the Spark jobs, with its path from the repository."""
    for top in (ROOT, ROOT.parent / "cli", ROOT.parent / "spark_jobs"):
        for path in sorted(top.rglob("*.py")):
            yield str(path.relative_to(ROOT.parent)), ast.parse(path.read_text())


#: where the segment's file kinds are defined: log/segment.py's registry (INDEX_KINDS, SEGMENT_FILE_RE)
SEGMENT_REGISTRY = "kafkaforensics/log/segment.py"
_INDEX_NAMES = {"INDEX", "TIMEINDEX", "TXNINDEX"}


def test_each_suffix_list_pattern_and_constant_is_defined_once():
    """A new index type touches the registry, not every module (issue 52): no module but log/segment.py
    spells an index suffix, lists the index suffixes or writes a pattern of 20-digit offsets, and no
    literal constant is defined under the same name in two modules."""
    bad, consts = [], {}
    for rel, tree in _code_files():
        for node in ast.walk(tree):
            if rel != SEGMENT_REGISTRY:
                if isinstance(node, ast.Constant) and node.value in (".index", ".timeindex", ".txnindex"):
                    bad.append(f"{rel}:{node.lineno} spells {node.value}")
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and r"\d{20}" in node.value:
                    bad.append(f"{rel}:{node.lineno} has its own file-name pattern")
                if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and len(
                        {e.id for e in node.elts if isinstance(e, ast.Name)} & _INDEX_NAMES) >= 2:
                    bad.append(f"{rel}:{node.lineno} lists index suffixes")
        for node in tree.body:
            if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                    and node.targets[0].id.lstrip("_").isupper()
                    and not any(isinstance(n, (ast.Name, ast.Attribute, ast.Call)) for n in ast.walk(node.value))):
                consts.setdefault((node.targets[0].id.lstrip("_"), ast.unparse(node.value)), []).append(rel)
    bad += [f"{name} = {value} in {', '.join(where)}" for (name, value), where in consts.items() if len(where) > 1]
    assert not bad, bad


#: the LogDir module and the codecs it reads a log dir's files with (Kafka's OffsetCheckpointFile, FileLock)
LOG_DIR_READERS = {"kafkaforensics/log/partition.py", "kafkaforensics/log/checkpoint_file.py",
                   "kafkaforensics/log/dir_lock.py"}
#: who else outside log/ may name or read such a file, and why a user would accept it
LOG_DIR_READ_EXCEPTIONS = {
    "kafkaforensics/repair/restore.py": "restores a backup's copy of a checkpoint (no log dir's own file)",
    "kafkaforensics/harness/damaged_sample.py": "builds the damaged demo log dir it then writes",
    "kafkaforensics/harness/fuzz.py": "feeds hostile bytes to the parsers themselves (meta.properties' among them)",
    "kafkaforensics/repair/recovery.py": "its loading pass moves into log/ this round (the LogLoader, another "
                                         "engineer's change): its checkpoint reads go with it",
    "kafkaforensics/inspect/verify.py": "reads through LogDir already; its checks chosen by file name stay while "
                                        "two other changes edit verify this round",
}
_LOG_DIR_FILE_NAMES = {"meta.properties", ".kafka_cleanshutdown", ".lock", "recovery-point-offset-checkpoint",
                       "replication-offset-checkpoint", "log-start-offset-checkpoint", "cleaner-offset-checkpoint"}
#: the names those files go by in the code (a module outside log/ asks LogDir: ``LogDir.CLEANER_OFFSET``)
_LOG_DIR_FILE_CONSTANTS = {"META_PROPERTIES_FILE", "OFFSET_CHECKPOINT_FILES", "CLEAN_SHUTDOWN_FILE", "LOCK_FILE",
                           "RECOVERY_POINT", "REPLICATION_OFFSET", "LOG_START_OFFSET", "CLEANER_OFFSET",
                           "LOG_DIR_OWN_FILES", "OffsetCheckpoint"}
#: the codecs of those files, called as functions (LogDir's methods of the same names are its door)
_LOG_DIR_CODECS = {"read_offsets", "read_checkpoint_offsets", "lock_holder", "partition_offset", "parse_properties",
                   "read_meta_properties", "read_clean_shutdown", "read_checkpoint", "checkpoint_path",
                   "update_offsets", "set_partition_offset", "write_offsets", "build_offsets", "offsets_of"}
#: modules whose attributes are those codecs and names (``checkpoint_file.read_offsets``, ``C.META_PROPERTIES_FILE``)
_CODEC_MODULES = {"checkpoint_file", "C", "checkpoints", "dir_lock", "partition"}


def log_dir_file_readers(files) -> list[str]:
    """Every place in ``files`` ((path, tree) outside log/) that names one of a log dir's own files (its
    name or constant, imported or spelt) or calls one of their codecs itself instead of asking LogDir."""
    bad = []
    for rel, tree in files:
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and node.value in _LOG_DIR_FILE_NAMES:
                bad.append(f"{rel}:{node.lineno} names {node.value}")
            elif isinstance(node, ast.ImportFrom):
                bad += [f"{rel}:{node.lineno} imports {a.name}" for a in node.names
                        if a.name in _LOG_DIR_FILE_CONSTANTS | _LOG_DIR_CODECS]
            elif isinstance(node, ast.Name) and node.id in _LOG_DIR_FILE_CONSTANTS:
                bad.append(f"{rel}:{node.lineno} names {node.id}")
            elif (isinstance(node, ast.Attribute) and node.attr in _LOG_DIR_FILE_CONSTANTS | _LOG_DIR_CODECS
                  and isinstance(node.value, ast.Name) and node.value.id in _CODEC_MODULES):
                bad.append(f"{rel}:{node.lineno} names {node.value.id}.{node.attr}")
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _LOG_DIR_CODECS:
                bad.append(f"{rel}:{node.lineno} calls {node.func.id}")
    return sorted(set(bad), key=lambda line: (int(line.split()[0].rsplit(":", 1)[1]), line))


def test_log_dir_is_the_only_reader_of_log_dir_files():
    """``meta.properties``, the offset checkpoints, the clean-shutdown marker and ``.lock`` are read (and
    written) through :class:`~kafkaforensics.log.partition.LogDir` (issue 52): no module outside log/
    names those files -- by name or by constant -- or calls the checkpoint, properties and lock codecs
    itself; the Spark planner reads them through ``LogDir.over`` its object store."""
    outside = [(rel, tree) for rel, tree in _code_files()
               if not rel.startswith("kafkaforensics/log/") and rel not in LOG_DIR_READ_EXCEPTIONS]
    assert log_dir_file_readers(outside) == []


def test_the_log_dir_check_catches_each_way_a_module_reads_a_log_dir_file():
    """The check above fails on a module that spells a file's name, imports or names its constant, or
    calls a codec; asking LogDir (its methods, its names) passes."""
    tree = ast.parse(
        "from specs import checkpoints as C\n"
        "from kafkaforensics.log.checkpoint_file import RECOVERY_POINT, update_offsets\n"
        "from kafkaforensics.log import checkpoint_file\n"
        "def a(d):\n    return open(os.path.join(d, 'meta.properties')).read()\n"
        "def b(d):\n    return os.path.join(d, C.META_PROPERTIES_FILE)\n"
        "def c(d, t):\n    update_offsets(d, t)\n"
        "def e(d):\n    return checkpoint_file.read_offsets(d)\n"
        "def f(text):\n    return C.OffsetCheckpoint.parse(text)\n"
        "def ok(d, tp):\n    ld = LogDir(d)\n"
        "    return ld.partition_offset(LogDir.CLEANER_OFFSET, tp), ld.identity(), ld.meta_properties_file\n")
    found = log_dir_file_readers([("kafkaforensics/inspect/rogue.py", tree)])
    assert [line.split(":")[1].split()[0] for line in found] == ["2", "2", "5", "7", "9", "11", "13"], found


def test_one_class_per_concept():
    """One class per concept (issue 52): no class name is defined twice (the Spark source reads a
    segment's index entries into log/indexing.py's ``SegmentIndexes``, not a second class of that
    name), and verify's walk of a segment gives one immutable summary row, ``SegmentSummary``."""
    where = {}
    for rel, tree in _code_files():
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                where.setdefault(node.name, []).append(rel)
    assert not {n: w for n, w in where.items() if len(w) > 1}
    assert verify.SegmentSummary.__dataclass_params__.frozen and not hasattr(verify, "SegmentScan")
    assert verify.SegmentSummary is segment.SegmentSummary  # one row, in the log stage (verify and the cleaner)


#: the classes whose names say segment, piece, batches, held, survey or scan (issue 52 item 2: a segment is
#: the file-backed ``Segment`` and one summary row; anything else is named after what it is), each with why
SEGMENTISH_CLASSES = {
    "Segment": "the segment, as Kafka's LogSegment (log/segment.py)",
    "SegmentSummary": "its one immutable summary row (log/segment.py): verify's report, the cleaner's survey",
    "BatchScanner": "a walk over a segment's bytes (Kafka's FileRecords.batches())",
    "FillingScanner": "that walk over a remote tier's chunks, filled as it reaches them",
    "SegmentIndexes": "a segment's three indexes as LogSegment.recover rebuilds them",
    "ScanEngine": "how a `kfx scan` runs (no segment)", "ScanPlan": "a `kfx scan`'s plan (no segment)",
    "ScanResult": "a `kfx scan`'s result (no segment)", "ScanRequest": "a `kfx scan`'s request (no segment)",
    "ScanAsk": "what a `kfx scan` was asked, parsed, that its engine is decided from (no segment)",
    "KafkaSegments": "the Spark data source's format name, `kafka_segments`",
    "KafkaSegmentsReader": "that data source's reader",
}
#: classes that were segments in disguise or segment-ish names for other things, and what each became
FOLDED_CLASSES = {"_SegmentSurvey": "SegmentSummary", "_SegmentScan": "_WalkCheck", "Piece": "PlanStep",
                  "HeldSegment": "LogSlice", "RunBatches": "BatchColumns", "_Batches": "_HeaderColumns",
                  "SegmentBytes": "LogSlice", "TierSegment": "UnifiedLog's segments and remote copies",
                  "RemoteSegment": "RemoteCopy", "LoadedSegment": "LoadFacts", "SegmentRebuild": "RecoveryWalk",
                  "_PlannedSegment": "a Segment with its planned files", "_PlannedPartition": "PlanFiles"}


def test_segment_classes_are_the_segment_and_its_summary_row():
    """Issue 52 item 2: no class outside :data:`SEGMENTISH_CLASSES` has a segment-ish name (the grep
    ``^class \\w*(Segment|Piece|Batches|Held|Survey|Scan)`` of the issue's count, over the library and
    the Spark jobs: the CLI's are commands), and none of the folded ones is left."""
    pattern = re.compile(r"(Segment|Piece|Batches|Held|Survey|Scan)")
    found = {node.name: rel for rel, tree in _code_files() for node in tree.body
             if isinstance(node, ast.ClassDef) and pattern.search(node.name) and not rel.startswith("cli/")}
    assert not {n: rel for n, rel in found.items() if n not in SEGMENTISH_CLASSES}
    assert not set(found) & set(FOLDED_CLASSES)


#: reads outside ``log/`` of files that are no segment or index, in binary: (module, function) -> why a user
#: would accept it.  A segment's or index's bytes are read through ``Segment`` (log/segment.py) only.
BINARY_READS_OF_OTHER_FILES = {
    ("kafkaforensics/fsutil.py", "fsync_dir"): "a directory, opened to fsync it",
    ("kafkaforensics/fsutil.py", "_write_new"): "a backup's copy of any file, byte for byte",
    ("kafkaforensics/fsutil.py", "keep_tail"): "a backup's copy of the tail a repair cuts, byte for byte",
    ("kafkaforensics/fsutil.py", "same_content"): "a file compared with the bytes a write would give it",
    ("kafkaforensics/repair/restore.py", "*"): "restores a backup's copies byte for byte",
    ("kafkaforensics/inspect/dump.py", "_dump_snapshot"): "a producer-state snapshot",
    ("kafkaforensics/inspect/verify.py", "_verify_file"): "a producer-state snapshot",
    ("kafkaforensics/inspect/verify.py", "verify_partition"): "a producer-state snapshot",
    ("kafkaforensics/inspect/analyzer.py", "_analyze_partition"): "a producer-state snapshot",
    ("kafkaforensics/spark/parquet_dir.py", "*"): "the output dir's commit marker (opened to write and fsync)",
    ("spark_jobs/class_archive.py", "*"): "the class archive's recording marker and inputs file, created to write",
    ("cli/commands/dump.py", "dump"): "/dev/null, opened to write (a closed pipe)",
    ("cli/fastpath.py", "*"): "/dev/null, opened to write",
}
#: the calls that read a file's bytes themselves; BatchScanner only over in-memory bytes, in the fuzz harness
_BYTE_READERS = {"open_buffer", "mmap", "memmap", "fromfile", "pread", "preadv", "read_bytes"}


def _binary_read(call: ast.Call) -> bool:
    """``open(x, "rb")``/``io.open`` (any mode reading bytes without writing) or ``os.open(x, ...)``."""
    f = call.func
    if isinstance(f, ast.Name) and f.id == "open" or isinstance(f, ast.Attribute) and f.attr == "open" and getattr(
            f.value, "id", None) == "io":
        mode = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "mode"), None)
        text = mode.value if isinstance(mode, ast.Constant) and isinstance(mode.value, str) else "r"
        return "b" in text and not set(text) & set("wax+")
    if isinstance(f, ast.Attribute) and f.attr == "open" and getattr(f.value, "id", None) == "os":
        return True
    return False


def _called(call: ast.Call) -> str | None:
    f = call.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None


def _calls_by_function(tree, name="<module>"):
    """(innermost enclosing function's name, call) for every call in ``tree``."""
    for child in ast.iter_child_nodes(tree):
        inner = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else name
        if isinstance(child, ast.Call):
            yield name, child
        yield from _calls_by_function(child, inner)


def segment_byte_reads(paths, root, listed_used: set | None = None) -> list[str]:
    """Every place in ``paths`` (files outside kafkaforensics/log/) that maps, opens in binary, preads or
    scans a file itself: each must be a listed read of a file that is no segment or index (the listed
    entries met are added to ``listed_used``)."""
    found, used = [], set() if listed_used is None else listed_used
    for path in paths:
        rel = str(path.relative_to(root))
        for name, call in _calls_by_function(ast.parse(path.read_text())):
            what = _called(call)
            if what == "BatchScanner" and not rel.startswith("kafkaforensics/harness/"):
                found.append(f"{rel}:{call.lineno} {name} builds a BatchScanner")
            elif what in _BYTE_READERS or _binary_read(call):
                listed = {(rel, name), (rel, "*")} & BINARY_READS_OF_OTHER_FILES.keys()
                used |= listed
                if not listed:
                    found.append(f"{rel}:{call.lineno} {name} reads a file itself ({what})")
    return sorted(set(found), key=lambda line: int(line.split()[0].rsplit(":", 1)[1]))


def _outside_log():
    tops = (ROOT, ROOT.parent / "cli", ROOT.parent / "spark_jobs")
    return [p for top in tops for p in sorted(top.rglob("*.py")) if (ROOT / "log") not in p.parents]


def test_segment_bytes_are_read_only_through_segment():
    """Nothing outside log/ maps, opens (in binary), preads or scans a segment or index file: every read
    of one goes through ``Segment``/``Partition`` (issue 52); the binary reads left are of other files."""
    used = set()
    assert segment_byte_reads(_outside_log(), ROOT.parent, used) == []
    assert set(BINARY_READS_OF_OTHER_FILES) - used == set(), "listed reads that are gone: shorten the list"


def test_the_door_check_catches_a_module_reading_segment_bytes(tmp_path):
    """The check above fails on each way a module could read a segment itself."""
    mod = tmp_path / "kafkaforensics" / "inspect" / "rogue.py"
    mod.parent.mkdir(parents=True)
    mod.write_text(
        "import mmap, os\n"
        "from kafkaforensics.log.segment import BatchScanner, open_buffer\n"
        "def a(p):\n    with open_buffer(p) as buf:\n        return buf\n"
        "def b(p):\n    with open(p, 'rb') as f:\n        return f.read()\n"
        "def c(p):\n    fd = os.open(p, os.O_RDONLY)\n    return os.pread(fd, 10, 0)\n"
        "def d(f):\n    return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)\n"
        "def e(buf):\n    return list(BatchScanner(buf))\n"
        "def f(p):\n    return p.read_bytes()\n"
        "def g(p):\n    return io.open(p, 'rb')\n"
        "def ok(p):\n    with open(p, 'w') as f:\n        f.write('x')\n")
    found = segment_byte_reads([mod], tmp_path)
    assert [line.split()[1] for line in found] == ["a", "b", "c", "c", "d", "e", "f", "g"], found


#: the function-size rule (issue 52): at most this many lines and parameters (self/cls not counted;
#: *args and **kwargs counted)
MAX_FUNCTION_LINES, MAX_FUNCTION_PARAMS = 80, 8


def _oversized(source: str, where: str) -> list[str]:
    """Every function of ``source`` over the function-size rule, as ``where:line name (lines, params)``."""
    found = []
    for fn in ast.walk(ast.parse(source)):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        a = fn.args
        params = [*a.posonlyargs, *a.args, *a.kwonlyargs]
        n = len(params) + (a.vararg is not None) + (a.kwarg is not None)
        if params and params[0].arg in ("self", "cls"):
            n -= 1
        lines = fn.end_lineno - fn.lineno + 1
        if lines > MAX_FUNCTION_LINES or n > MAX_FUNCTION_PARAMS:
            found.append(f"{where}:{fn.lineno} {fn.name} ({lines} lines, {n} params)")
    return found


def test_the_size_rule_sees_long_functions_and_many_parameters():
    """The check itself: 81 lines or 9 parameters (``*args``/``**kwargs`` counted, ``self`` not) fail."""
    long_body = "def f():\n" + "    x = 1\n" * 80
    assert _oversized(long_body, "m") == ["m:1 f (81 lines, 0 params)"]
    assert _oversized("def f():\n" + "    x = 1\n" * 79, "m") == []
    assert _oversized("def g(a, b, c, d, e, f, g, h, *rest): pass\n", "m") == ["m:1 g (1 lines, 9 params)"]
    assert _oversized("def g(a, b, c, d, e, f, g, *, h): pass\n", "m") == []
    assert _oversized("class C:\n    def m(self, a, b, c, d, e, f, g, **kw): pass\n", "m") == []
    assert _oversized("class C:\n    def m(self, a, b, c, d, e, f, g, h, **kw): pass\n", "m") == \
        ["m:2 m (1 lines, 9 params)"]


def test_no_function_in_the_package_is_over_80_lines_or_8_parameters():
    """Issue 52: functions are small (option dataclasses and named passes, not long parameter lists)."""
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        found += _oversized(path.read_text(), str(path.relative_to(ROOT.parent)))
    assert not found, found


#: the broker's class-size rule (issue 53 item 2: ReplayBroker split by concern, no class over it)
MAX_BROKER_CLASS_LINES = 400


def _large_classes(source: str, where: str) -> list[str]:
    """Every class of ``source`` over :data:`MAX_BROKER_CLASS_LINES`, as ``where:line name (lines)``."""
    return [f"{where}:{c.lineno} {c.name} ({c.end_lineno - c.lineno + 1} lines)" for c in ast.walk(ast.parse(source))
            if isinstance(c, ast.ClassDef) and c.end_lineno - c.lineno + 1 > MAX_BROKER_CLASS_LINES]


def test_no_class_in_the_broker_is_over_400_lines():
    """The check sees a 401-line class; none of broker/'s is one (GroupCoordinator's KIP-848 groups are
    ``consumer_groups.ConsumerGroupCoordinator``)."""
    assert _large_classes("class C:\n" + "    x = 1\n" * 400, "m") == ["m:1 C (401 lines)"]
    assert _large_classes("class C:\n" + "    x = 1\n" * 399, "m") == []
    found = []
    for path in sorted((ROOT / "broker").glob("*.py")):
        found += _large_classes(path.read_text(), str(path.relative_to(ROOT.parent)))
    assert not found, found


# ----------------------------------------------------------- the import graph has no cycle ----
PROJECT = ROOT.parent
#: the project's packages the graph is drawn over (benchmarks/ is left out: its scripts run as programs
#: and import the project, which never imports them)
GRAPH_TOPS = ("kafkaforensics", "cli", "spark_jobs", "specs")
#: cycles that remain, each owned by another issue's change (the test fails when one is broken and not
#: removed from here, as on any other cycle)
KNOWN_CYCLES: set[frozenset[str]] = set()


def _project_modules(tops=GRAPH_TOPS, root=PROJECT) -> dict[str, pathlib.Path]:
    mods = {}
    for top in tops:
        for path in (root / top).rglob("*.py"):
            parts = list(path.relative_to(root).with_suffix("").parts)
            mods[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return mods


def _module_of(name: str, mods) -> str | None:
    """The project module ``name`` is, or the package it is in (None: not the project's)."""
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name or None


def _edges(module: str, path: pathlib.Path, mods) -> set[str]:
    """The project modules ``module`` imports: ``import``/``from`` statements (relative ones too)
    wherever they are, at the top or inside a function, and the names given to ``lazy(...)``,
    ``__import__(...)`` and ``importlib.import_module(...)``."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {_module_of(a.name, mods) for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([node.module] if node.module else []))
            found |= {f"{base}.{a.name}" if f"{base}.{a.name}" in mods else _module_of(base, mods)
                      for a in node.names}
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
              and (getattr(node.func, "id", None) in ("lazy", "__import__")
                   or getattr(node.func, "attr", None) == "import_module")):
            found.add(_module_of(str(node.args[0].value), mods))
    return found - {None, module}


def import_graph(tops=GRAPH_TOPS, root=PROJECT) -> dict[str, set[str]]:
    """module -> the project modules it imports; cli.main also imports each command module of its table."""
    mods = _project_modules(tops, root)
    graph = {m: _edges(m, p, mods) for m, p in mods.items()}
    if "cli.main" in graph:
        import cli.main
        graph["cli.main"] |= {f"{cli.main.COMMAND_PACKAGE}.{name}" for name in getattr(cli.main, "COMMANDS", ())}
    return graph


def import_cycles(graph: dict[str, set[str]]) -> set[frozenset]:
    """The strongly connected components of more than one module (Tarjan's, iteratively)."""
    index, low, stack, on_stack, cycles = {}, {}, [], set(), set()
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = set()
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.add(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        cycles.add(frozenset(comp))
    return cycles


def test_no_import_cycle_among_project_modules():
    cycles = import_cycles(import_graph())
    assert cycles == KNOWN_CYCLES, sorted(sorted(c) for c in cycles ^ KNOWN_CYCLES)


def test_the_cycle_finder_sees_a_cycle(tmp_path):
    """A cycle through a function's import, a relative import and a lazy(...) is found; a chain is none."""
    pkg = tmp_path / "p"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from p import b\n")
    (pkg / "b.py").write_text("from . import c\n")
    (pkg / "c.py").write_text("from specs.lazy import lazy\na = lazy('p.a', globals())\n")
    (pkg / "d.py").write_text("import p.a\n")
    assert import_cycles(import_graph(("p",), tmp_path)) == {frozenset({"p.a", "p.b", "p.c"})}
    (pkg / "c.py").write_text("")
    assert import_cycles(import_graph(("p",), tmp_path)) == set()


#: the string imports of project modules the CLI keeps, all in cli/heavy.py, and why
CLI_LAZY_PROJECT_MODULES = {
    "cli.helpformat": "typer's classes extended: it imports typer, which help and unusual lines only need",
    "cli.schemas": "--decode's schema store: urllib's HTTP client, protobuf, fastavro and jsonschema, which no "
                   "line without --decode needs",
    "kafkaforensics.log.remote": "the remote tier's reader, which only a --remote line needs",
    "kafkaforensics.inspect.both_tiers": "kfx verify --remote's checks of the tier and kfx dump --remote's walk "
                                         "of both tiers, which a line without --remote never needs",
}


def test_the_cli_imports_project_modules_plainly():
    """Every lazy(...) of the CLI is in cli/heavy.py, and only the listed ones name a project module."""
    lazies = {}
    for path in sorted((PROJECT / "cli").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "lazy":
                lazies.setdefault(str(path.relative_to(PROJECT)), set()).add(node.args[0].value)
    assert set(lazies) == {"cli/heavy.py"}, sorted(lazies)
    project = {m for m in lazies["cli/heavy.py"] if m.split(".")[0] in GRAPH_TOPS}
    assert project == set(CLI_LAZY_PROJECT_MODULES), sorted(project)


def test_project_modules_are_imported_plainly_outside_cli_heavy():
    """No module of the library, specs or the Spark jobs names a project module to lazy(...) (issue 53:
    an import graph, an IDE and the type checker follow plain imports only); the project's string
    imports are cli/heavy.py's listed ones, at most four in the whole tree, each the door to heavy
    third-party modules (typer, --decode's decoders, the tier's codecs)."""
    found = []
    for top in GRAPH_TOPS:
        for path in sorted((PROJECT / top).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "lazy" and node.args
                        and isinstance(node.args[0], ast.Constant)
                        and str(node.args[0].value).split(".")[0] in GRAPH_TOPS):
                    found.append((str(path.relative_to(PROJECT)), node.args[0].value))
    assert [f for f in found if f[0] != "cli/heavy.py"] == [], found
    assert len(found) <= 4, found


def test_the_readme_layout_table_lists_the_cli_modules():
    for folder in ("cli", "cli/commands"):
        assert_readme_row_lists(folder)


def test_cli_main_imports_each_command_module_through_its_table():
    graph = import_graph()
    assert "cli.commands.recover" in graph["cli.main"] and "cli.recover_view" in graph["cli.commands.recover"]


def test_every_command_has_its_module():
    """cli.main's table names one module a command, each defining the function of the command's name."""
    import cli.main
    present = {p.stem for p in (PROJECT / "cli" / "commands").glob("*.py")} - {"__init__"}
    assert set(cli.main.COMMANDS) == present
    assert [c.name for c in cli.main.commands.commands] == list(cli.main.COMMANDS)


def test_every_package_of_the_project_ships_in_its_wheel():
    """A package left out of pyproject.toml's package list installs a ``kfx`` that fails on its first
    import of it (the list once lacked ``cli.commands`` and ``kafkaforensics.log.remote``): what
    setuptools finds with the configured ``include`` is every dir of the four roots holding an
    ``__init__.py``."""
    repo = ROOT.parent
    conf = tomllib.loads((repo / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "packages" in conf and "find" in conf["packages"], "packages are found, not listed"
    shipped = set(find_packages(str(repo), include=conf["packages"]["find"]["include"]))
    on_disk = {".".join(init.parent.relative_to(repo).parts)
               for root in ("kafkaforensics", "specs", "cli", "spark_jobs") for init in (repo / root).rglob("__init__.py")}
    assert shipped == on_disk


def test_the_editable_install_is_a_plain_path_entry():
    """`make install`'s ``pip install -e`` adds the repository to sys.path with a .pth line, not a
    MetaPathFinder every process imports at start-up: setuptools does so when every package maps to
    its own dir under one root (editable_wheel._select_strategy: ``package_dir == {"": root}`` and a
    simple layout), which pyproject.toml declares."""
    repo = ROOT.parent
    conf = tomllib.loads((repo / "pyproject.toml").read_text())["tool"]["setuptools"]
    package_dir = conf.get("package-dir", {})
    assert set(package_dir) == {""}, package_dir
    packages = find_packages(str(repo), include=conf["packages"]["find"]["include"])
    assert editable_wheel._simple_layout(packages, package_dir, str(repo))  # the test editable_wheel._select_strategy makes
