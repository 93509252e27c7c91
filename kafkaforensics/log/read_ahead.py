"""The copies a run walk (:meth:`~.segment.BatchScanner.iter_runs`) reads a segment's bytes through:
``preadv`` window by window, on the walking thread (:class:`WindowReader`), or one window ahead on a
second thread (:class:`ReadAhead`), so that the kernel's copy of the next window runs while the walk
checks the CRCs of this one (``preadv`` releases the GIL).  :func:`window_reader` chooses once per walk:
ahead over a large file when a core is idle, else on the walking thread (both give the same bytes;
``tests/test_read_ahead.py`` proves it, and ``make bench``'s verify row measures the difference)."""
from __future__ import annotations

import os
import queue
import threading
import time

#: a walk over at least this many windows reads ahead on a second thread (below, the thread's start
#: costs more than the overlap saves)
READ_AHEAD_WINDOWS = 4
#: how many windows a read-ahead holds at once: the one walked, the one being read, one spare
READ_AHEAD_DEPTH = 3
#: how many looks :func:`idle_core` takes at the running tasks
IDLE_SAMPLES = 10


class WindowReader:
    """``view(pos, more)``: copies of the file's bytes ``[pos, end)``, a window at a time, read when asked."""

    def __init__(self, fd: int, end: int, window: int):
        self.fd, self.end, self.window = fd, end, window
        self._copy = memoryview(bytearray(2 * window))

    def view(self, pos: int, more: bool = False) -> memoryview:
        """The bytes from ``pos``: a window's worth, or two with ``more`` (the batch at ``pos`` did not
        fit in what the last view gave); fewer at the end.  Valid until the next call."""
        want = min((2 if more else 1) * self.window, self.end - pos)
        return self._copy[:os.preadv(self.fd, [self._copy[:want]], pos)] if want > 0 else self._copy[:0]

    def close(self) -> None:
        """Nothing to stop: the reads were the caller's."""


class ReadAhead(WindowReader):
    """:class:`WindowReader` whose windows, consecutive from ``start``, are read on a second thread while
    the caller walks the one before.  Each window is read into the second half of a buffer of two
    windows; the first half takes the tail of the window before (a batch that straddles the two) when
    the caller asks for ``more``.  A read error is raised in the caller, at the view that needed it.
    The thread reads through its own duplicate of ``fd`` and closes it when it stops; :meth:`close`
    stops it (the views' owner must call it: ``iter_runs`` does when its walk ends or is closed)."""

    def __init__(self, fd: int, start: int, end: int, window: int, depth: int = READ_AHEAD_DEPTH):
        super().__init__(fd, end, window)
        self._bufs = [memoryview(bytearray(2 * window)) for _ in range(depth)]
        self._free: queue.SimpleQueue[int | None] = queue.SimpleQueue()
        self._full: queue.SimpleQueue[tuple[int, int, int] | BaseException | None] = queue.SimpleQueue()
        for i in range(depth):
            self._free.put(i)
        # the window the caller reads: its buffer, and the file's bytes [lo, hi) it holds at [lo + shift, hi + shift)
        self._cur: tuple[int, int, int, int] | None = None
        self._done = False   # the thread read its last window (or failed): nothing more will come
        self._stopping = False
        own = os.dup(fd)
        self._thread = threading.Thread(target=self._read, args=(own, start), daemon=True, name="kfx-read-ahead")
        try:
            self._thread.start()
        except BaseException:   # no thread to be had (a process at its limit): nothing is left open
            os.close(own)
            raise

    def _read(self, fd: int, pos: int) -> None:
        """The thread: each free buffer in turn filled with the next window, until the end or :meth:`close`."""
        window, end = self.window, self.end
        try:
            while pos < end:
                i = self._free.get()
                if i is None or self._stopping:
                    return
                n = os.preadv(fd, [self._bufs[i][window:window + min(window, end - pos)]], pos)
                self._full.put((i, pos, n))
                if n == 0:
                    return   # the file is shorter than the walk's end: nothing more to read
                pos += n
            self._full.put(None)
        except BaseException as e:   # the walk raises it (a thread that died silently would hang it)
            self._full.put(e)
        finally:
            os.close(fd)

    def _next(self) -> tuple[int, int, int] | None:
        """The next window the thread read (buffer, position, length), None after the last."""
        if self._done:
            return None
        got = self._full.get()
        if isinstance(got, BaseException):
            self._done = True
            raise got
        if got is None or got[2] == 0:
            self._done = True
            if got is not None:
                self._free.put(got[0])
            return None
        return got

    def _take(self, window: tuple[int, int, int], lead: int = 0) -> None:
        """Make ``window`` the caller's, the ``lead`` bytes before it (copied in by the caller) included;
        the buffer it replaces goes back to the thread."""
        i, pos, n = window
        if self._cur is not None:
            self._free.put(self._cur[0])
        self._cur = (i, pos - lead, pos + n, self.window - pos)

    def view(self, pos: int, more: bool = False) -> memoryview:
        cur = self._cur
        if cur is None or pos >= cur[2]:
            # the first view, or past the window held: the windows before ``pos`` are skipped
            while cur is None or pos >= cur[2]:
                got = self._next()
                if got is None:
                    return self._copy[:0]   # past the last window: the end (or the file's, if shorter)
                self._take(got)
                cur = self._cur
        elif more and cur[1] <= pos and cur[2] - pos <= self.window:
            # the batch at ``pos`` runs past the window: its start goes before the next window's bytes
            got = self._next()
            if got is not None:
                tail = cur[2] - pos
                into = self._bufs[got[0]]
                into[self.window - tail:self.window] = self._bufs[cur[0]][pos + cur[3]:cur[2] + cur[3]]
                self._take(got, tail)
                cur = self._cur
        assert cur is not None
        if pos < cur[1]:   # before the bytes held (a caller walking back): read where asked
            return super().view(pos, more)
        return self._bufs[cur[0]][pos + cur[3]:cur[2] + cur[3]]

    def close(self) -> None:
        """Stop the thread (it ends its read in flight, if any, then closes its descriptor) and wait for it."""
        self._done = self._stopping = True
        self._free.put(None)
        self._thread.join()


def idle_core(samples: int = IDLE_SAMPLES) -> bool:
    """Whether a core is free for a second thread now: at one of ``samples`` looks, 0.25 ms apart, fewer
    tasks were running or waiting to run on the machine (this one included: the fourth field of Linux's
    ``/proc/loadavg``) than the cores this process may run on.  One look is not enough: a task that runs
    for a millisecond (the parent that has just started this process) is often counted.  On a busy
    machine a second thread only waits for a core while the walk waits for it, so the walk reads for
    itself; without ``/proc`` (not Linux) it always does."""
    try:
        cores = len(os.sched_getaffinity(0))
        with open("/proc/loadavg", "rb", buffering=0) as f:
            for look in range(samples):
                if look:
                    time.sleep(0.00025)
                if int(os.pread(f.fileno(), 64, 0).split()[3].split(b"/")[0]) < cores:
                    return True
    except (AttributeError, OSError, ValueError, IndexError):   # no affinity or no /proc: not Linux
        pass
    return False


def window_reader(fd: int, start: int, end: int, window: int) -> WindowReader:
    """The reader of ``[start, end)`` of ``fd`` for one run walk: reading ahead on a second thread when
    the walk spans :data:`READ_AHEAD_WINDOWS` windows or more and a core is idle (:func:`idle_core`)."""
    if end - start >= READ_AHEAD_WINDOWS * window and idle_core():
        try:
            return ReadAhead(fd, start, end, window)
        except (OSError, RuntimeError):
            pass  # no descriptor or thread to spare: the walk reads for itself
    return WindowReader(fd, end, window)
