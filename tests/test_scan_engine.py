"""One scan engine (issue 53, item 3): how a scan runs -- here with no Spark, Spark reading in the driver,
or Spark's tasks; pyarrow or Spark's writer -- is chosen once, by kafkaforensics/spark/engine.py, from what
the scan was asked and the bytes its plan reads; the Spark session and the jobs follow that choice."""
import ast
import dataclasses
import inspect
import os
import pathlib
import re

from kafkaforensics.spark.engine import (DRIVER, DRIVER_READ_BYTES, HERE, HERE_ANY_SIZE_CORES, HERE_BYTES, LOCAL_MASTER,
                                         SHORT_RUN_BYTES, TASKS, ScanAsk, choose, here_limit, machine_cores, may_run_here,
                                         plan_run)
from spark_jobs.output import tasks_write_here


def test_a_small_scan_with_no_master_runs_here_and_pyarrow_writes():
    e = choose(None, 1000, search_here=True, out_local=True)
    assert (e.where, e.spark, e.pyarrow_writes, e.master) == (HERE, False, True, LOCAL_MASTER)
    grown = e.outgrown()  # its rows outgrew this process: Spark's tasks read it, not the driver again
    assert (grown.where, grown.spark, grown.driver_bytes, grown.tiny_run) == (TASKS, True, 0, False)


def test_what_keeps_a_scan_from_running_here():
    assert not may_run_here("local[2]", True, True)
    assert not may_run_here(None, False, True)  # a search only Java reads as asked
    assert not may_run_here(None, True, False)  # an --out on an object store
    for master, search_here, out_local in ((None, False, True), (None, True, False), ("local[2]", True, True)):
        e = choose(master, 1000, search_here, out_local)
        assert e.where == DRIVER and e.spark and e.tiny_run and e.short_run and e.driver_bytes == DRIVER_READ_BYTES
        assert e.pyarrow_writes == out_local
    big = choose(None, HERE_BYTES + 1, True, True, cores=8)
    assert big.where == TASKS and big.driver_bytes == 0 and not big.short_run


def test_with_no_master_a_machine_of_two_cores_scans_any_size_here():
    """Issue 57: on a machine of at most HERE_ANY_SIZE_CORES cores Spark's tasks cannot outrun one
    process with no Spark, so a scan with no --master runs here whatever its size (only a summary too
    large for this process sends it to Spark, as it is read); with more cores, past HERE_BYTES, Spark's
    tasks read it with every core."""
    for cores in range(1, HERE_ANY_SIZE_CORES + 1):
        assert here_limit(cores) is None
        e = choose(None, 100 * HERE_BYTES, True, True, cores=cores)
        assert (e.where, e.spark, e.pyarrow_writes) == (HERE, False, True)
    assert here_limit(HERE_ANY_SIZE_CORES + 1) == HERE_BYTES
    assert choose(None, HERE_BYTES, True, True, cores=16).where == HERE
    assert choose(None, HERE_BYTES + 1, True, True, cores=16).where == TASKS
    assert choose("local[2]", 10, True, True, cores=2).where == DRIVER  # --master: Spark, whatever the machine
    assert 1 <= machine_cores() <= (os.cpu_count() or 1)


def test_spark_s_tasks_read_what_the_driver_would_not_hold_or_a_cluster_runs():
    assert choose("local[*]", DRIVER_READ_BYTES + 1, True, True).where == TASKS
    remote = choose("spark://h:7077", 10, True, True)
    assert (remote.where, remote.pyarrow_writes) == (TASKS, False)  # a cluster's tasks share no --out with the driver
    assert choose("local[*]", SHORT_RUN_BYTES + 1, True, True).short_run is False


def test_the_jobs_write_with_pyarrow_by_the_engine_s_rule(tmp_path):
    for master, out, want in (("local[2]", str(tmp_path), True), ("local[2]", "s3a://b/x", False),
                              ("spark://h:7077", str(tmp_path), False)):
        assert tasks_write_here(master, out) is want
        assert choose(master, 10, True, not out.startswith("s3a:")).pyarrow_writes is want


# -- the plan object: what a scan was asked decides how it runs, once (issue 53, item 3) --------------

def test_the_plan_decides_from_what_the_scan_was_asked():
    """``engine.plan_run`` reads a ScanAsk -- a master or none, a search Python reads as Java does or
    not, a local --out or not -- and the bytes its plan reads: the CLI hands it what typer parsed."""
    here = plan_run(ScanAsk(("in",), "/tmp/o", search="txn-4[0-9]"), 1000, cores=2)
    assert (here.spark, here.engine.where, here.engine.pyarrow_writes, here.here_out) == (False, HERE, True, "/tmp/o")
    assert plan_run(ScanAsk(("in",), "file:///tmp/o"), 10).here_out == "/tmp/o"
    java_only = plan_run(ScanAsk(("in",), "/tmp/o", search="(?i)order"), 1000, cores=2)  # Java's reading only
    assert (java_only.engine.where, java_only.engine.pyarrow_writes) == (DRIVER, True)
    remote_out = plan_run(ScanAsk(("in",), "s3a://b/o"), 1000, cores=2)  # pyarrow writes no object store here
    assert (remote_out.engine.where, remote_out.engine.pyarrow_writes) == (DRIVER, False)
    told = plan_run(ScanAsk(("in",), "/tmp/o", master="spark://h:7077"), 1000, cores=2)
    assert (told.engine.where, told.engine.master, told.engine.pyarrow_writes) == (TASKS, "spark://h:7077", False)
    grown = here.outgrown()
    assert (grown.spark, grown.engine.where, grown.ask) == (True, TASKS, here.ask)
    assert ScanAsk(("in",), "/tmp/o", master="local[2]").may_run_here is False


def test_a_spark_run_follows_its_plan(monkeypatch, tmp_path):
    """``spark_jobs.scan.run_on_spark`` hands scan() the plan's reads and writer, and its request the
    plan's listing; ``run_here`` writes into the local path of a file: --out."""
    from spark_jobs import scan as scan_job
    got = []
    monkeypatch.setattr(scan_job, "scan", lambda spark, request, progress, **k: got.append((request, k)))
    monkeypatch.setattr(scan_job, "scan_here", lambda request: got.append(request))
    for master, nbytes, want in (("local[2]", 10, {"driver_bytes": DRIVER_READ_BYTES, "tasks_write": True}),
                                 ("local[2]", DRIVER_READ_BYTES + 1, {"driver_bytes": 0, "tasks_write": True}),
                                 ("spark://h:7077", 10, {"driver_bytes": 0, "tasks_write": False})):
        run = plan_run(ScanAsk(("in",), str(tmp_path), master, "records", partition_by=("topic",)), nbytes)
        scan_job.run_on_spark(object(), run)
        request, kwargs = got.pop()
        assert kwargs == want and (request.paths, request.out, request.partition_by) == (["in"], str(tmp_path), ("topic",))
    scan_job.run_here(plan_run(ScanAsk(("in",), f"file://{tmp_path}"), 10, cores=2))
    assert got.pop().out == str(tmp_path)


# -- the structure: the command parses and prints; the engine's rules are asked in spark/engine.py only --

PROJECT = pathlib.Path(__file__).resolve().parent.parent
#: the most lines ``kfx scan``'s command function may have (its signature and docstring included)
MAX_SCAN_COMMAND_LINES = 40
#: the engine's rules: how a scan runs is decided by them in kafkaforensics/spark/engine.py, and asked of
#: it through its plan (``plan_run``, ``RunPlan``; ``on_session`` for a scan on a session it did not plan)
ENGINE_RULES = {"choose", "may_run_here", "here_limit", "held_in_driver", "machine_cores", "pyarrow_writes",
                "HERE_BYTES", "HERE_ANY_SIZE_CORES", "DRIVER_READ_BYTES", "SHORT_RUN_BYTES"}
#: where a rule is asked outside engine.py, and why
ENGINE_RULES_ASKED = {
    ("spark_jobs/planned_read.py", "held_in_driver"):
        "each read's own bytes against the driver limit its plan gives (``driver_bytes``: 0 for Spark's tasks)",
}
#: what decides how a scan runs, which the CLI must leave to the plan: the master's absence, a search
#: pattern's Java-only reading, an engine made by hand
CLI_DECIDING = re.compile(r"\bmaster\s+is\s+(not\s+)?None\b|\bpython_pattern\b|\bsearch_here\b|\bout_local\b|ScanEngine\(")


def _function_lines(source: str, name: str) -> int:
    """The lines of the top-level function ``name`` of ``source`` (0: none)."""
    return next((f.end_lineno - f.lineno + 1 for f in ast.parse(source).body
                 if isinstance(f, ast.FunctionDef) and f.name == name), 0)


def _rules_named(source: str) -> set[str]:
    """The engine rules ``source`` names: a rule called or imported, a limit read (``.pyarrow_writes``
    read as an engine's attribute is its decision, not the rule)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            found |= {a.name for a in node.names if a.name in ENGINE_RULES}
        elif isinstance(node, ast.Call):
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
            if name in ENGINE_RULES:
                found.add(name)
        elif isinstance(node, (ast.Name, ast.Attribute)):
            name = node.id if isinstance(node, ast.Name) else node.attr
            if name in ENGINE_RULES and name.isupper():
                found.add(name)
    return found


def _rule_askers() -> dict[tuple[str, str], bool]:
    """{(file, rule): True} for every engine rule a module of the library, the CLI or the jobs names
    outside kafkaforensics/spark/engine.py."""
    out = {}
    for top in ("kafkaforensics", "cli", "spark_jobs"):
        for path in sorted((PROJECT / top).rglob("*.py")):
            rel = str(path.relative_to(PROJECT))
            if rel != "kafkaforensics/spark/engine.py":
                out.update({(rel, rule): True for rule in _rules_named(path.read_text())})
    return out


def test_the_structure_rules_see_a_long_command_and_a_decision_outside_the_engine():
    """The checks themselves: a 41-line command, a rule called, imported or a limit read, and the CLI's
    own decisions are seen."""
    assert _function_lines("def scan():\n" + "    x = 1\n" * 40, "scan") == 41
    assert _function_lines("def scan():\n" + "    x = 1\n" * 39, "scan") == 40
    assert _rules_named("from kafkaforensics.spark.engine import choose\n") == {"choose"}
    assert _rules_named("e = spark_engine.may_run_here(m, s, o)\nn = engine.DRIVER_READ_BYTES\n") == \
        {"may_run_here", "DRIVER_READ_BYTES"}
    assert _rules_named("w = run.engine.pyarrow_writes\n") == set()  # the plan's decision, read
    assert _rules_named("w = spark_engine.pyarrow_writes(m, o)\n") == {"pyarrow_writes"}
    for deciding in ("if master is None:", "here = python_pattern(s)", "e = ScanEngine(HERE, m, True)"):
        assert CLI_DECIDING.search(deciding), deciding


def test_kfx_scan_s_command_only_parses_and_prints():
    """Issue 53 item 3: `kfx scan`'s command function is at most MAX_SCAN_COMMAND_LINES lines, and nothing
    in cli/ decides how a scan runs: the plan does (``kafkaforensics.spark.engine.plan_run``)."""
    source = (PROJECT / "cli" / "commands" / "scan.py").read_text()
    assert 0 < _function_lines(source, "scan") <= MAX_SCAN_COMMAND_LINES, _function_lines(source, "scan")
    deciding = [f"{p.relative_to(PROJECT)}: {m.group()}" for p in sorted((PROJECT / "cli").rglob("*.py"))
                for m in CLI_DECIDING.finditer(p.read_text())]
    assert not deciding, deciding


def test_the_engine_s_rules_are_asked_in_spark_engine_only():
    """No module outside kafkaforensics/spark/engine.py calls, imports or reads an engine rule, but the
    listed ones (ENGINE_RULES_ASKED, each with why): the CLI, the session and the jobs follow its plan."""
    assert set(_rule_askers()) == set(ENGINE_RULES_ASKED), sorted(set(_rule_askers()) ^ set(ENGINE_RULES_ASKED))


def test_scan_options_are_the_command_s_parameters():
    """``ScanOptions(**locals())`` in the command: its fields are the command's parameters, in order."""
    from cli.commands.scan import scan
    from cli.scan_options import ScanOptions
    assert [f.name for f in dataclasses.fields(ScanOptions)] == list(inspect.signature(scan).parameters)
