"""``kfx analyze``: damage and suspicious patterns found, as lines, JSON or an HTML report."""
from __future__ import annotations

import json
import os
from typing import List, Optional

from cli import heavy, plain, tables
from cli.common import EXIT_OK, EXIT_PROBLEMS, err, fail
from cli.declare import Argument, Exit, Option
from cli.options import JSON, NOW, SCHEMA_REGISTRY, SCHEMAS
from cli.remote import KEY_FILE, REMOTE, open_remote
from kafkaforensics import fsutil
from kafkaforensics.errors import KafkaFormatError
from kafkaforensics.inspect import analyzer as inspect_analyzer
from kafkaforensics.inspect import report_html as inspect_report_html
from kafkaforensics.inspect import schema_timeline as inspect_schema_timeline
from kafkaforensics.inspect import verify as inspect_verify
from kafkaforensics.log import paths as log_paths


def _new_file_problem(path: str, overwrite: bool) -> str | None:
    """Why a command cannot write the file ``path`` (a missing or read-only directory, a directory in
    its place, an existing file without ``--overwrite``), or None."""
    parent = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        return f"{path}: is a directory (give a file name)"
    if not os.path.isdir(parent):
        return f"{path}: no such directory {parent}"
    if os.path.exists(path) and not overwrite:
        return f"{path}: exists (--overwrite replaces it)"
    if os.path.exists(path) and not os.access(path, os.W_OK):
        return f"{path}: the file is read-only"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"{path}: the directory {parent} is not writable"
    return None


def finding_text(f, partition_path: str | None) -> str:
    """An analyze finding as one line: partition, kind, the file it is in (else the partition's dir),
    byte position and offsets where known, then the explanation."""
    where = " ".join(x for x in (f.file or partition_path or "", f"@ byte {f.position}" if f.position is not None else "",
                                 f.offsets_text()) if x)
    return f"{f.partition} {f.kind}" + (f" {where}" if where else "") + f": {f.explanation}"


def analyze(paths: List[str] = Argument(..., metavar="PATH", help="Segments, partition dirs or log dirs"),
            as_json: bool = JSON,
            html_out: Optional[str] = Option(None, "--html", metavar="FILE", help="Write a self-contained HTML report here"),
            overwrite: bool = Option(False, "--overwrite", help="Replace an existing --html file (else it is refused)"),
            now: Optional[int] = NOW, schemas: Optional[str] = SCHEMAS, schema_registry: Optional[str] = SCHEMA_REGISTRY,
            remote: Optional[str] = REMOTE, key_file: List[str] = KEY_FILE):
    """Find damage and suspicious patterns: offsets, timestamps, producers, transactions, leader epochs."""
    if html_out and (problem := _new_file_problem(html_out, overwrite)):
        fail(problem)  # before the analysis: a report it could not write is no report
    tier = open_remote(remote, key_file)
    decoder = heavy.schemas.schema_decoder(paths, schemas, schema_registry) if schemas or schema_registry else None
    try:
        rep = inspect_analyzer.analyze(paths, inspect_analyzer.AnalyzeOptions(now=now, schemas=decoder,
                                                                                  remote=tier))
    except (OSError, log_paths.PathUsageError, KafkaFormatError) as e:
        fail(str(e))
    if html_out:
        try:
            fsutil.atomic_write(html_out, inspect_report_html.render(rep, "kfx analyze " + " ".join(paths), paths).encode())
        except OSError as e:
            fail(f"{html_out}: cannot write the report ({e.strerror or e})")
    if as_json:
        print(json.dumps(rep.to_json()))
        if html_out:
            err().print(f"report: {html_out}", highlight=False, soft_wrap=True, markup=False)
    else:
        c = plain.console()
        rows = []
        for p in rep.partitions_with_data:  # then one line counting the empty ones
            n = sum(1 for f in rep.findings if f.partition == p.partition and f.severity != "info")
            iso = inspect_report_html.iso
            span = f"{iso(p.first_timestamp)}..{iso(p.last_timestamp)}" if p.first_timestamp is not None else "-"
            tx = p.transactions
            offs = inspect_report_html.offset_span(p).removeprefix("offsets ")
            rows.append((p.partition, offs, span, p.bytes, ",".join(sorted(p.codecs)), p.producers,
                         f"{tx['committed']}/{tx['aborted']}/{tx['open']}", tables.Cell(str(n), "red" if n else None)))
        tables.print_table("kfx analyze", ("partition", "offsets", "time span", "bytes", "codecs", "producers",
                                    "txns c/a/open", "findings"), rows)
        empty = len(rep.partitions) - len(rep.partitions_with_data)
        if empty:
            print(f"{empty} partition(s) hold no batches (not listed)")
        for p in rep.partitions:  # the schema timeline, where values are Confluent-framed
            if p.schemas is not None:
                print(inspect_schema_timeline.timeline_text(p.partition, p.schemas))
        dirs = {p.partition: p.path for p in rep.partitions}
        for f in rep.findings:
            style = {"error": "red", "warning": "yellow", "info": "dim"}[f.severity]
            c.print(f"[{style}]{f.severity}[/{style}] {heavy.rich_markup.escape(finding_text(f, dirs.get(f.partition)))}",
                    highlight=False, soft_wrap=True)
            if f.remedy:
                c.print(f"  remedy: {f.remedy}", highlight=False, soft_wrap=True, markup=False)
            if f.caused:  # the index problems this root cause explains, grouped under it
                c.print(f"  {inspect_verify.caused_line(f.caused)}", highlight=False, soft_wrap=True, markup=False)
        if html_out:
            c.print(f"report: {html_out}", highlight=False, soft_wrap=True, markup=False)
    raise Exit(EXIT_PROBLEMS if rep.problems else EXIT_OK)

