"""How a scan runs, decided once: :func:`choose` turns what a scan was asked (a master or none, a
search pattern Python reads as Java does or not, a local ``--out`` or not) and what its plan reads
(the bytes of segments) into a :class:`ScanEngine` -- where it runs (here with no Spark, Spark with
its reads in the driver, or Spark's tasks) and who writes its outputs (pyarrow, or Spark's Parquet
writer).  :class:`ScanAsk` is what a scan was asked (``kfx scan``'s parsed options), :func:`plan_run`
turns it and its planned bytes into the one :class:`RunPlan` that ``kfx scan``, the Spark session
and ``spark_jobs.scan`` follow; nothing else chooses (``tests/test_scan_engine.py`` checks that no
module outside this one asks these rules).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field, replace

from kafkaforensics.spark.java_regex import python_pattern
from kafkaforensics.spark.scan_plan import Layout
from kafkaforensics.spark.storage import local_path

#: where a scan runs: in this process with no Spark; on Spark with its reads done in the driver's
#: Python (a local master, a short scan); on Spark, read by its tasks
HERE, DRIVER, TASKS = "here", "driver", "tasks"
#: the master a scan runs Spark on when not told one
LOCAL_MASTER = "local[*]"
#: a scan of at most this many bytes is short enough that the driver JVM's start-up dominates it:
#: its JIT stops at the quick C1 compiler (``short_run``)
SHORT_RUN_BYTES = 256 << 20
#: a planned read of at most this many bytes of segments, on a local master, is read in the driver's
#: Python and handed to Spark as one Arrow table (``read_planned``): no Python worker starts for it,
#: and ``kfx scan`` computes the views of such a summary in pyarrow (spark_jobs/inventory.py), without
#: a Spark job (benchmarks/README.md, session 17); its memory is that table's, a few times these bytes
DRIVER_READ_BYTES = 32 << 20
#: the segments ``kfx scan`` with no ``--master`` reads in its own process, with no Spark, on a machine
#: of more than :data:`HERE_ANY_SIZE_CORES` cores (``spark_jobs.scan.scan_here``: a records export
#: streamed split by split, the summary -- a row a batch -- held while it stays within
#: ``DRIVER_TABLE_BYTES``); past it, Spark's tasks read it with every core.  On a machine of at most
#: that many cores there is no such limit (:func:`here_limit`)
HERE_BYTES = 1 << 30
#: the cores up to which Spark's tasks on this machine cannot outrun one process with no Spark: each
#: of Spark's cores reads at about half the speed of the process (the Arrow hand-over into the JVM,
#: benchmarks/README.md, session 20) after its start-up, so two cores at most break even (issue 57)
HERE_ANY_SIZE_CORES = 2


def machine_cores() -> int:
    """The cores this process may run on (its affinity, else the machine's)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def here_limit(cores: int) -> int | None:
    """The most bytes of segments a scan with no ``--master`` reads with no Spark on a machine of
    ``cores`` (None: any size -- an input outgrows such a machine only when its summary outgrows this
    process, ``DRIVER_TABLE_BYTES``, found as it is read: then Spark's tasks read it)."""
    return None if cores <= HERE_ANY_SIZE_CORES else HERE_BYTES


def held_in_driver(master: str, nbytes: int, driver_bytes: int = DRIVER_READ_BYTES) -> bool:
    """Whether a planned read of ``nbytes`` of segments on ``master`` is read in the driver
    (``read_planned``: on a local master, up to ``driver_bytes``)."""
    return master.startswith("local") and nbytes <= driver_bytes


def pyarrow_writes(master: str, out_local: bool) -> bool:
    """Whether pyarrow writes a Spark scan's outputs (a records export by the tasks that read it, and
    the outputs of a summary held in the driver): its tasks share a local ``--out`` with the driver
    only on a local master."""
    return master.startswith("local") and out_local


def may_run_here(master: str | None, search_here: bool, out_local: bool) -> bool:
    """Whether a scan may run with no Spark (hence no Java), before its plan is known: no master
    given, a search pattern Python reads as Java does (or none), a local ``--out``."""
    return master is None and search_here and out_local


@dataclass(frozen=True)
class ScanEngine:
    """How a scan runs: ``where`` (:data:`HERE`, :data:`DRIVER`, :data:`TASKS`), on which Spark
    ``master`` (the one it falls back to for :data:`HERE`), and whether pyarrow writes its outputs
    (``pyarrow_writes``: here, or Spark's tasks on a local master to a local ``--out``) or Spark's
    Parquet writer does; ``nbytes``: the segments it reads."""
    where: str
    master: str
    pyarrow_writes: bool
    nbytes: int = 0

    @property
    def spark(self) -> bool:
        """Whether it needs Spark (and Java)."""
        return self.where != HERE

    @property
    def driver_bytes(self) -> int:
        """The reads a Spark scan does in the driver (0: every read by its tasks)."""
        return DRIVER_READ_BYTES if self.where == DRIVER else 0

    @property
    def short_run(self) -> bool:
        return self.nbytes <= SHORT_RUN_BYTES

    @property
    def tiny_run(self) -> bool:
        return self.where == DRIVER

    def outgrown(self) -> ScanEngine:
        """A scan begun here whose rows outgrew this process: Spark's tasks read it (not the driver)."""
        return ScanEngine(TASKS, self.master, self.pyarrow_writes, self.nbytes)


def choose(master: str | None, nbytes: int, search_here: bool, out_local: bool,
           cores: int | None = None) -> ScanEngine:
    """The engine of a scan of ``nbytes`` of segments on a machine of ``cores`` (default: this
    one's; :func:`here_limit`), :func:`may_run_here` for the rest."""
    m = master or LOCAL_MASTER
    limit = here_limit(machine_cores() if cores is None else cores)
    if may_run_here(master, search_here, out_local) and (limit is None or nbytes <= limit):
        return ScanEngine(HERE, m, True, nbytes)
    return ScanEngine(DRIVER if held_in_driver(m, nbytes) else TASKS, m, pyarrow_writes(m, out_local), nbytes)


def on_session(master: str, out: str) -> ScanEngine:
    """The engine of a scan run on a Spark session it was not planned for (``spark-submit``, a
    library call of ``spark_jobs.scan.scan``): on a local master its reads are held in the driver up
    to :data:`DRIVER_READ_BYTES` (each read's bytes asked of :func:`held_in_driver`), and pyarrow
    writes when the tasks share a local ``out`` with the driver (:func:`pyarrow_writes`)."""
    return ScanEngine(DRIVER, master, pyarrow_writes(master, local_path(out) is not None))


@dataclass(frozen=True)
class ScanAsk:
    """What a scan was asked, parsed: its ``inputs``, ``out``, Spark ``master`` (None: not told),
    export ``level``, ``search`` pattern (a Java regular expression), ``split_bytes``, source
    ``options`` (its window among them) and the records export's ``partition_by``."""
    inputs: tuple
    out: str
    master: str | None = None
    level: str = "batches"
    search: str | None = None
    split_bytes: int | None = None
    options: dict = field(default_factory=dict)
    partition_by: tuple = ()

    @property
    def python_search(self) -> str | None:
        """The search pattern as Python reads it, when it reads it as Java does (None: none, or not)."""
        return None if self.search is None else python_pattern(self.search)

    @property
    def search_here(self) -> bool:
        """Whether its search (if any) can run with no Spark."""
        return self.search is None or self.python_search is not None

    @property
    def out_local(self) -> bool:
        """Whether its ``out`` is on this machine (pyarrow can write it)."""
        return local_path(self.out) is not None

    @property
    def may_run_here(self) -> bool:
        """Whether it may run with no Spark, hence no Java, before its plan is known."""
        return may_run_here(self.master, self.search_here, self.out_local)


@dataclass(frozen=True)
class RunPlan:
    """How a scan runs, decided once (:func:`plan_run`): what it was asked (``ask``), the
    :class:`ScanEngine` chosen for it, and its inputs' ``listing`` (made once, for every read)."""
    ask: ScanAsk
    engine: ScanEngine
    listing: Layout | None = field(default=None, repr=False, compare=False)

    @property
    def spark(self) -> bool:
        """Whether it needs Spark (and Java)."""
        return self.engine.spark

    @property
    def here_out(self) -> str:
        """Its ``out`` as the local path pyarrow writes here (a ``file:`` URI's path)."""
        local = local_path(self.ask.out)
        if local is None:
            raise ValueError(f"{self.ask.out}: a scan with no Spark writes only to a local path")
        return local

    def outgrown(self) -> RunPlan:
        """Begun here, its rows outgrew this process: Spark's tasks read it (:meth:`ScanEngine.outgrown`)."""
        return replace(self, engine=self.engine.outgrown())


def plan_run(ask: ScanAsk, nbytes: int, listing: Layout | None = None, cores: int | None = None) -> RunPlan:
    """The :class:`RunPlan` of ``ask``, whose plan reads ``nbytes`` of segments (listed as ``listing``),
    on a machine of ``cores`` (default: this one's): :func:`choose`'s engine."""
    return RunPlan(ask, choose(ask.master, nbytes, ask.search_here, ask.out_local, cores), listing)
