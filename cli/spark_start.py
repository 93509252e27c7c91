"""What ``kfx scan`` checks before it starts Spark, and the start-up noise it hides.

- :func:`java_problem`: Spark 4 runs on Java 17 or later, found as PySpark's launcher finds it
  (``$JAVA_HOME/bin/java``, else ``java`` on ``PATH``); without it PySpark fails after seconds with a
  29-line ``JAVA_GATEWAY_EXITED`` traceback. One line instead, before anything starts.
- :func:`out_problem`: an ``--out`` dir holding an earlier run's files would mix old outputs with
  new ones; it is refused unless ``--overwrite`` (then the earlier outputs are removed first).
- :func:`quiet_start`: the driver JVM inherits this process's stderr and prints its start-up lines
  there ("Setting default log level", "Using incubator modules", native-hadoop); they are dropped,
  everything else it writes (errors, Python workers' tracebacks) passes through.  Its stdout is
  passed through a pipe too, so that the JVM, which outlives this process by its shutdown (most of
  a second), does not hold a caller's pipe open: ``$(kfx scan ...)`` returns when kfx exits.
"""
from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import subprocess
import sys
import threading
import time

from cli import heavy
from kafkaforensics import fsutil
from spark_jobs import output as spark_jobs_output
from spark_jobs import scan as spark_jobs_scan
from spark_jobs import session as spark_jobs_session

#: Spark 4's minimum
JAVA_MIN = 17
HOW_TO_GET_JAVA = ("install Java 17 or later (e.g. apt-get install openjdk-17-jre-headless) and put `java` "
                   "on PATH or set JAVA_HOME")
#: the driver JVM's start-up lines that say nothing a kfx user can act on
NOISE = re.compile(r"^(WARNING: Using incubator modules|Setting default log level|To adjust logging level"
                   r"|.*NativeCodeLoader|.*Unable to load native-hadoop)")


def _java() -> tuple[str | None, str]:
    """(the java PySpark would run or None, where it was looked for)."""
    home = os.environ.get("JAVA_HOME")
    if home:
        java = os.path.join(home, "bin", "java")
        return (java if os.access(java, os.X_OK) else None), f"JAVA_HOME={home} has no bin/java"
    return shutil.which("java"), "no `java` on PATH and JAVA_HOME is not set"


def java_version(java: str) -> int | None:
    """The major version ``java -version`` reports (8 for "1.8.0_381"), or None."""
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if not m:
        return None
    major = int(m.group(1))
    return int(m.group(2) or 0) if major == 1 else major


def java_problem() -> str | None:
    """None when Spark can start its JVM here, else one line saying what is missing and how to get it.
    Under spark-submit (a gateway already given) there is nothing to check."""
    if "PYSPARK_GATEWAY_PORT" in os.environ:
        return None
    java, looked = _java()
    if java is None:
        return f"kfx scan needs Java (Spark runs on it): {looked}; {HOW_TO_GET_JAVA}"
    version = java_version(java)
    if version is None:
        return f"kfx scan needs Java (Spark runs on it): {java} -version does not run; {HOW_TO_GET_JAVA}"
    if version < JAVA_MIN:
        return f"kfx scan needs Java {JAVA_MIN} or later, {java} is Java {version}; {HOW_TO_GET_JAVA}"
    return None


def out_problem(out: str, overwrite: bool) -> str | None:
    """None when ``out`` may receive a scan's outputs, else one line why not. A local ``out`` that
    does not exist is created here, so that one Spark could not write is said before it starts
    (as root, permissions do not stop Spark: only trying does). Remote outputs (s3a://, hdfs://)
    are Spark's to judge."""
    local = spark_jobs_output.local_path(out)
    if local is None:
        return None
    if not os.path.exists(local):
        try:
            os.makedirs(local)
        except OSError as e:
            return f"--out {out}: cannot be created: {e.strerror or e}"
        return None
    if not os.path.isdir(local):
        return f"--out {out}: not a directory"
    if os.listdir(local) and not overwrite:
        return (f"--out {out} is not empty (an earlier run's output would mix with this one's); "
                "give a new or empty directory, or --overwrite to replace its scan outputs")
    return None


def clear_outputs(out: str) -> None:
    """Remove an earlier run's outputs (``--overwrite``): only the directories a scan writes, and
    the temp dirs of killed kfx runs."""
    local = spark_jobs_output.local_path(out)
    if local is None:
        return
    for name in spark_jobs_scan.OUTPUTS:  # only the directories a scan writes
        path = os.path.join(local, name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
    fsutil.clear_dead_temps(local)


def out_is_new(out: str) -> bool:
    """Whether ``out`` is a local path with nothing at it yet (so that a scan that does not finish
    can remove it whole, :func:`discard_outputs`)."""
    local = spark_jobs_output.local_path(out)
    return local is not None and not os.path.lexists(local)


def discard_outputs(out: str, made: bool) -> None:
    """Remove what a scan that did not finish wrote in a local ``out``: the directory itself when
    this run made it, else the directories a scan writes (an earlier run's were refused, or cleared
    by ``--overwrite``, before it started: they are this run's)."""
    local = spark_jobs_output.local_path(out)
    if local is None:
        return
    if made:
        shutil.rmtree(local, ignore_errors=True)
    else:
        clear_outputs(out)


def left_behind(out: str) -> str:
    """What a scan that does not finish leaves in ``out``, in words: nothing in a local one
    (:func:`discard_outputs`); a remote one (s3a://, hdfs://) keeps what Spark committed."""
    if spark_jobs_output.local_path(out) is not None:
        return f"nothing of the scan was left in {out}"
    return f"the outputs in {out} are incomplete; scan again with --overwrite"


def stop_driver_jvm(timeout: float = 10.0) -> None:
    """Stop the driver JVM this process started, if any: an interrupted scan's tasks must not write
    on after its outputs are removed, and pyspark starts its JVM with SIGINT ignored (so a
    terminal's Ctrl-C does not reach it)."""
    proc = getattr(heavy.pyspark.SparkContext._gateway, "proc", None)
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout)


def quiet_python_logs() -> None:
    """Drop what pyspark and py4j log in this process (``logging.exception`` calls: pages of
    tracebacks when a scan is interrupted or a call to the JVM fails): `kfx scan` says what went
    wrong in one line of its own; ``--verbose`` leaves them."""
    root = logging.getLogger()
    root.addHandler(logging.NullHandler())  # so that logging.exception() does not install a stderr one
    root.setLevel(logging.CRITICAL)


def error_line(e: BaseException) -> str:
    """The line of an error from Spark that says what went wrong: a JVM exception's own message
    (py4j wraps it in pages of Java stack), else the error's first line."""
    java = getattr(e, "java_exception", None)
    text = None
    if java is not None:
        try:
            text = java.toString()
        except Exception:  # noqa: BLE001 -- the JVM may be gone
            text = None
    text = text or str(e) or type(e).__name__
    first = next((line.strip() for line in text.splitlines() if line.strip()), type(e).__name__)
    return first if java is not None or ":" in first else f"{type(e).__name__}: {first}"


def _forward(read_end: int, real, keep) -> None:
    """Copy the lines of ``read_end`` to ``real`` (a file of this process's own), those ``keep`` takes."""
    with os.fdopen(read_end, "rb") as pipe:
        for line in pipe:
            if keep(line):
                try:
                    real.write(line)
                except OSError:
                    return


@contextlib.contextmanager
def quiet_start(verbose: bool):
    """Start Spark inside this block: the JVM it starts gets a stderr that drops :data:`NOISE` (all of
    its lines pass with ``verbose``) and a stdout that passes everything; this process's own stdout and
    stderr are restored on leaving."""
    if verbose:
        yield
        return
    sys.stdout.flush()
    sys.stderr.flush()
    saved, forwarders = {}, []
    for fd, keep in ((1, lambda line: True), (2, lambda line: not NOISE.match(line.decode("utf-8", "replace")))):
        read_end, write_end = os.pipe()
        saved[fd] = os.dup(fd)
        os.dup2(write_end, fd)
        os.close(write_end)
        real = os.fdopen(os.dup(saved[fd]), "wb", buffering=0)
        forwarders.append(threading.Thread(target=_forward, args=(read_end, real, keep), name=f"kfx-spark-fd{fd}",
                                           daemon=True))
        forwarders[-1].start()
    failed = False
    try:
        yield
    except spark_jobs_session.SparkStartError:  # its JVM exited: its pipes close once they are read
        failed = True
        raise
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        for fd, was in saved.items():  # this process writes to its own again; the JVM keeps the pipes
            os.dup2(was, fd)
            os.close(was)
        if failed:  # a JVM that did not start: its last lines pass before the error that follows
            deadline = time.monotonic() + FORWARD_DRAIN_S
            for t in forwarders:
                t.join(max(0.0, deadline - time.monotonic()))


#: how long a JVM that did not start is given to have its last lines passed on (they come at once:
#: its pipes close when it exits)
FORWARD_DRAIN_S = 5.0
