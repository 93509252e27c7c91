"""How a scan runs, decided once: :func:`choose` turns what a scan was asked (a master or none, a
search pattern Python reads as Java does or not, a local ``--out`` or not) and what its plan reads
(the bytes of segments) into a :class:`ScanEngine` -- where it runs (here with no Spark, Spark with
its reads in the driver, or Spark's tasks) and who writes its outputs (pyarrow, or Spark's Parquet
writer).  ``kfx scan`` and ``spark_jobs.scan`` follow it; nothing else chooses.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

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
