"""What ``kfx recover`` of log dirs shows: a progress bar a partition while it runs (rich, on a
terminal; nothing when stderr is piped), then one summary table (or one JSON document)."""
from __future__ import annotations

import json
import os
import sys
from contextlib import contextmanager

from cli import heavy, plain, tables
from cli.common import NoProgress, err, progress_bar


@contextmanager
def recovery_progress(total: int):
    """(on_start, on_done) callbacks for :func:`~kafkaforensics.repair.load_logs.recover_log_dirs`,
    drawing an overall bar and one bar a partition being recovered."""
    if isinstance(progress_bar(total, "recover"), NoProgress):  # not a terminal: no bars, rich not imported
        yield (lambda path, size: None), (lambda rep: None)
        return
    rp = heavy.rich_progress
    bar = rp.Progress(rp.TextColumn("{task.description}"), rp.BarColumn(), rp.DownloadColumn(), rp.TimeRemainingColumn(),
                      console=err(), transient=True)
    with bar:
        overall = bar.add_task("recover", total=total)
        running: dict[str, int] = {}

        def on_start(path, size):
            name = os.path.basename(os.path.normpath(path))
            running[os.path.abspath(path)] = bar.add_task(f"  {name}", total=size)

        def on_done(rep):
            task = running.pop(rep.path, None)
            if task is not None:
                size = next((t.total for t in bar.tasks if t.id == task), 0)
                bar.remove_task(task)
                bar.advance(overall, size)
        yield on_start, on_done


def log_dir_recovery_json(outs, dry_run: bool) -> dict:
    """A run over log dirs as one JSON document: each log dir's marker, checkpoints, notes and backup,
    with its partitions' reports in it."""
    return {"dryRun": dry_run, "changed": any(o.changed for o in outs),
            "logDirs": [o.to_json() | {"partitions": [rep.to_json() for rep in o.partitions]} for o in outs]}


def print_log_dir_recovery(outs, as_json: bool, dry_run: bool) -> None:
    """The summary table of a run over log dirs, or its JSON document."""
    if as_json:
        print(json.dumps(log_dir_recovery_json(outs, dry_run)))
        return
    c = plain.console()
    several = len({o.log_dir for o in outs}) > 1
    rows, idle = [], 0
    for out in outs:
        for rep in out.partitions:
            if not rep.actions:
                idle += 1
                continue
            rows.append((*((os.path.basename(out.log_dir),) if several else ()), rep.partition,
                         ", ".join(rep.would_do if dry_run else rep.done),
                         rep.dropped.bytes, rep.dropped.batches, rep.dropped.records, len(rep.rebuilt_indexes)))
    if rows:
        cols = ("log dir",) * several + (("partition", "plan", "bytes to cut", "valid batches to cut", "records to cut",
                                           "indexes to rebuild") if dry_run else
                                          ("partition", "done", "bytes cut", "valid batches cut", "records cut",
                                           "indexes rebuilt"))
        tables.print_table("kfx recover" + (" (dry run)" if dry_run else ""), cols, rows,
                    right=range(len(cols) - 4, len(cols)))
    n = sum(len(o.partitions) for o in outs)
    verb = "would change" if dry_run else "changed"
    c.print(f"{n} partition(s) in {len(outs)} log dir(s): {n - idle} {verb}, {idle} left as they were",
            highlight=False)
    for out in outs:
        state = ("clean shutdown" + (f" ({out.marker['format']} marker)" if out.marker else "")
                 if out.clean_shutdown else "no clean-shutdown marker: segments past the recovery point "
                 + ("would be recovered" if dry_run else "recovered"))
        c.print(f"{out.log_dir}: {state}", highlight=False, soft_wrap=True)
        for a in out.checkpoint_actions:
            c.print(f"  {'would write' if dry_run else 'wrote'} {os.path.basename(a.file)}: {a.detail}",
                    highlight=False, soft_wrap=True)
        for note in out.notes:
            c.print(f"  [dim]note: {note}[/dim]", highlight=False, soft_wrap=True)
        if out.backup:
            c.print(f"  backup of this run: {out.backup} (`kfx restore {out.backup}` undoes every change above: "
                    "the partitions' and the log dir's)", highlight=False, soft_wrap=True, markup=False)
    truncated = [(o, r) for o in outs for r in o.partitions if r.truncated_at]
    for o, r in truncated:
        ta = r.truncated_at
        c.print(f"{r.partition}: {'would truncate' if dry_run else 'truncated'} {ta['segment']} at byte "
                f"{ta['position']} (log end offset {ta['offset']}): "
                f"{ta['reason']}", highlight=False, soft_wrap=True)
    sys.stdout.flush()


def _by_partition(plan) -> list[tuple]:
    """The plan's needs summed by partition dir (the log dir's own files as ``(log dir)``): rows of
    (where, bytes, what: the distinct reasons, shortened)."""
    rows: dict[str, list] = {}
    for n in plan.needs:
        parent = os.path.dirname(n.file)
        where = "(log dir)" if os.path.normpath(parent) == os.path.normpath(plan.log_dir) else os.path.basename(parent)
        row = rows.setdefault(where, [0, []])
        row[0] += n.bytes
        what = n.why.split(",")[0].split(" (")[0]
        if what not in row[1]:
            row[1].append(what)
    return [(where, b, "; ".join(whats)) for where, (b, whats) in rows.items()]


def print_space_plans(plans, as_json: bool) -> None:
    """``kfx recover --plan-space``: each log dir's needs, free bytes and the segments to move, or one
    JSON document ``{"dryRun": true, "fits", "logDirs": [...]}``."""
    if as_json:
        print(json.dumps({"dryRun": True, "fits": all(p.fits for p in plans), "logDirs": [p.to_json() for p in plans]}))
        return
    c = plain.console()
    for plan in plans:
        say = lambda text: c.print(text, highlight=False, soft_wrap=True, markup=False)  # noqa: E731
        say(f"kfx recover --plan-space {plan.log_dir} (a plan: nothing was written, nothing would be deleted)")
        rows = _by_partition(plan)
        if rows:
            tables.print_table("bytes Kafka's start-up would write", ("where", "bytes", "what"), rows, right=(1,))
        if plan.transient:
            say(f"+ {plan.transient} bytes at once while a rolled segment's indexes are rebuilt (reset to "
                "segment.index.bytes, then trimmed)")
        verdict = "start-up fits" if plan.fits else f"start-up does NOT fit: {plan.shortfall} bytes short"
        say(f"needed {plan.needed} bytes, free {plan.free} bytes: {verdict}")
        if plan.freed:
            say(f"(start-up would also free {plan.freed} bytes of leftovers and cut tails; not counted)")
        _print_moves(plan, say)
        for note in plan.notes:
            say(f"note: {note}")
    sys.stdout.flush()


def _print_moves(plan, say) -> None:
    """The segments the plan would move (or, when start-up fits, how many could be), and the commands."""
    movable = sum(m.bytes for m in plan.candidates)
    if plan.fits:
        if plan.candidates:
            say(f"if room is needed: {len(plan.candidates)} segment(s), {movable} bytes, are below every group's "
                "committed offset and past retention (--json lists them)")
        return
    if not plan.moves:
        say("no segment is both below every group's committed offset and past its topic's retention: nothing "
            "to move")
        return
    tables.print_table("segments that could be moved elsewhere (oldest first)",
                           ("partition", "segment", "offsets", "bytes", "largest timestamp", "past retention"),
                           [(m.partition, os.path.basename(m.files[0][0]), f"{m.base_offset}..{m.next_offset - 1}",
                             m.bytes, m.largest_timestamp, m.reason) for m in plan.moves], right=(3, 4))
    moved = sum(m.bytes for m in plan.moves)
    if moved < plan.shortfall:
        say(f"moving them all frees {moved} bytes: still {plan.shortfall - moved} bytes short")
    say("would move them with (printed, not run" + ("" if plan.move_to else "; --move-to DIR names DEST") + "):")
    for line in plan.commands():
        say(f"  {line}")
