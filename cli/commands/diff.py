"""``kfx diff``: replicas compared, two partition dirs batch by batch or N log dirs."""
from __future__ import annotations

import json
from typing import List

from cli import plain
from cli.common import EXIT_OK, EXIT_PROBLEMS, fail, print_live_notes
from cli.declare import Argument, Exit, Option
from cli.options import JSON
from kafkaforensics import errors
from kafkaforensics.inspect import diff as inspect_diff
from kafkaforensics.inspect import fleet as inspect_fleet
from kafkaforensics.log import paths as log_paths


def diff(dirs: List[str] = Argument(..., metavar="DIR", help="Two or more replicas: partition dirs of one partition "
                                                             "(the first is A, the leader's copy), or log dirs (one per broker)"),
         different_partitions: bool = Option(False, "--different-partitions",
                                             help="Compare dirs named after two different topic-partitions "
                                                  "(else refused: they are no replicas of one partition)"),
         as_json: bool = JSON):
    """Compare replicas: two partition dirs batch by batch, or N log dirs / N partition dirs, each divergence classified."""
    if len(dirs) < 2:
        fail("kfx diff takes two or more dirs (replicas of a partition, or log dirs one per broker)")
    try:
        if len(dirs) > 2 or any(log_paths.classify(d).kind != log_paths.PARTITION_DIR for d in dirs):
            try:
                fleet = inspect_fleet.fleet_diff(dirs, different_partitions=different_partitions)
            except (OSError, errors.KafkaFormatError) as e:
                fail(str(e))
            _diff_fleet(fleet, as_json)
        rep = inspect_diff.diff(dirs[0], dirs[1], different_partitions=different_partitions)
    except log_paths.PathUsageError as e:
        fail(str(e))
    print_live_notes(dirs)
    if as_json:
        print(json.dumps(rep.to_json()))
    else:
        c = plain.console()
        for n in rep.notes:
            c.print(f"note: {n}", highlight=False, soft_wrap=True, markup=False)
        for label, corrupt in (("A", rep.corrupt_a), ("B", rep.corrupt_b)):
            for x in corrupt[:20]:
                c.print(f"replica {label} is corrupt: the batch at offsets {x['baseOffset']}..{x['lastOffset']} "
                        f"({x['file']} byte {x['position']}) fails its CRC; its offsets are not compared "
                        "(`kfx verify` locates the damage, `kfx recover` truncates there)",
                        highlight=False, soft_wrap=True, markup=False)
        if rep.identical:
            c.print(f"identical: {rep.same_batches} batches, log end offset {rep.log_end_offsets[0]}")
        elif rep.first_diverging_offset is None:
            c.print(f"no divergence besides the corruption: {rep.same_batches} batches the same; log end offsets "
                    f"A={rep.log_end_offsets[0]} B={rep.log_end_offsets[1]}"
                    + (f"; B truncates to offset {rep.truncate_b_to}" if rep.truncate_b_to is not None else ""),
                    highlight=False, soft_wrap=True)
        else:
            c.print(f"first diverging offset: {rep.first_diverging_offset}; same batches before/around: "
                    f"{rep.same_batches}; log end offsets A={rep.log_end_offsets[0]} B={rep.log_end_offsets[1]}",
                    highlight=False, soft_wrap=True)
            for label, items in (("only in A", rep.only_in_a), ("only in B", rep.only_in_b)):
                for x in items[:20]:
                    c.print(f"{label}: offsets {x['baseOffset']}..{x['lastOffset']} (epoch {x['epoch']})", highlight=False, soft_wrap=True)
            for d in rep.different[:20]:
                c.print(f"different bytes: offsets {d['a']['baseOffset']}..{d['a']['lastOffset']} "
                        f"(A crc {d['a']['crc']} epoch {d['a']['epoch']}, B crc {d['b']['crc']} epoch {d['b']['epoch']})",
                        highlight=False, soft_wrap=True)
            c.print(f"truncating B to offset {rep.truncate_b_to} reconciles it with A", highlight=False, soft_wrap=True)
            if rep.epoch_truncation:
                et = rep.epoch_truncation
                c.print(f"by leader epoch (OffsetsForLeaderEpoch): B's epoch {et['epoch']} ends at {et['endOffsetInA']} "
                        f"in A, so B truncates to {et['truncateBTo']}", highlight=False, soft_wrap=True)
    raise Exit(EXIT_OK if rep.identical else EXIT_PROBLEMS)


def _diff_fleet(rep, as_json: bool) -> None:
    """``kfx diff`` of N replicas: the report (JSON or lines), exit 0 consistent, 1 divergence."""
    print_live_notes(rep.paths)
    if as_json:
        print(json.dumps(rep.to_json()))
        raise Exit(EXIT_OK if rep.consistent else EXIT_PROBLEMS)
    c = plain.console()
    for n in rep.notes:
        c.print(f"note: {n}", highlight=False, soft_wrap=True, markup=False)
    for p in rep.partitions:
        for d in p["divergences"]:
            c.print(f"{p['partition']}: {d['class']}: {d['text']}", highlight=False, soft_wrap=True, markup=False)
            for e in d["evidence"]:
                c.print(f"  evidence: {e['text']}", highlight=False, soft_wrap=True, markup=False)
        for n in p["notes"]:
            c.print(f"{p['partition']}: note: {n}", highlight=False, soft_wrap=True, markup=False)
    same = sum(1 for p in rep.partitions if not p["divergences"])
    c.print(f"{len(rep.partitions)} partition(s) on 2+ replicas: {same} consistent, {len(rep.partitions) - same} "
            f"diverged; {len(rep.single)} on one replica only", highlight=False, soft_wrap=True, markup=False)
    raise Exit(EXIT_OK if rep.consistent else EXIT_PROBLEMS)

