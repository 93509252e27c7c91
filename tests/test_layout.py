"""The package's layout: stages import only the stages before them, the README's table is the tree, and no
module lives under its old flat name."""
from __future__ import annotations

import ast
import importlib
import pathlib
import re
import sys

import pytest

import kafkaforensics

ROOT = pathlib.Path(kafkaforensics.__file__).parent
README = ROOT.parent / "README.md"
#: each stage, in order: a stage may import the root modules, specs, itself and the stages before it
STAGES = ["records", "log", "repair", "inspect", "spark", "broker", "harness"]
#: stages that sit side by side and must not import each other
SIBLINGS = {"repair": {"inspect", "spark"}, "inspect": {"repair", "spark"}, "spark": {"repair", "inspect"}}


def _imports(path: pathlib.Path) -> set[str]:
    """Every kafkaforensics.* module a file imports, at top level, inside functions or on first use
    (``lazy("kafkaforensics....", globals())``, specs/lazy.py)."""
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


def test_the_readme_layout_table_is_the_tree():
    text = README.read_text()
    for stage in STAGES:
        row = re.search(rf"^\| `kafkaforensics/{stage}/` \|(.*)\|$", text, re.M)
        assert row, f"README has no layout row for kafkaforensics/{stage}/"
        listed = set(re.findall(r"`(\w+)\.py`", row.group(1)))
        present = {p.stem for p in (ROOT / stage).glob("*.py")} - {"__init__"}
        assert listed == present, (stage, listed ^ present)


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
