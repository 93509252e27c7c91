"""What every job's command line shares: its arguments, the window and source options they give, and
the one-line usage error."""
from __future__ import annotations

import argparse
import sys
from datetime import datetime, timezone
from typing import NoReturn

from kafkaforensics.spark import spark_source


def parse_time(text: str) -> int:
    """A time given on a command line as epoch milliseconds: an integer is taken as such, else an
    ISO 8601 date or date-time (UTC when it names no zone)."""
    text = str(text).strip()
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        t = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{text!r} is neither epoch milliseconds nor an ISO 8601 time") from None
    if t.tzinfo is None:
        t = t.replace(tzinfo=timezone.utc)
    return int(t.timestamp() * 1000)


def window_options(topics=(), partitions=(), from_time=None, to_time=None, from_offset=None,
                   to_offset=None) -> dict:
    """The ``kafka_segments`` options of a window (see its docstring): topics and partitions, offsets
    ``from_offset``..``to_offset`` inclusive, times ``[from_time, to_time)`` (epoch ms or ISO 8601)."""
    out = {}
    if topics:
        out["topics"] = ",".join(topics)
    if partitions:
        out["partitions"] = ",".join(str(int(p)) for p in partitions)
    if from_time is not None:
        out["fromTimestamp"] = str(parse_time(from_time))
    if to_time is not None:
        out["toTimestamp"] = str(parse_time(to_time))
    if from_offset is not None:
        out["fromOffset"] = str(int(from_offset))
    if to_offset is not None:
        out["toOffset"] = str(int(to_offset))
    if "fromTimestamp" in out and "toTimestamp" in out and int(out["fromTimestamp"]) >= int(out["toTimestamp"]):
        raise ValueError(f"the time window is empty: {from_time} is not before {to_time} (--to-time is exclusive)")
    if "fromOffset" in out and "toOffset" in out and int(out["fromOffset"]) > int(out["toOffset"]):
        raise ValueError(f"the offset window is empty: {from_offset} is after {to_offset}")
    return out


#: source options a job sets itself, from its own arguments (``--level``, the input paths)
JOB_OPTIONS = ("level", "path", "paths")


def parse_options(pairs) -> dict:
    """``KEY=VALUE`` strings as a dict of source options, each key spelled as the source spells it
    (ValueError for one without ``=``, an option the source does not read or a value it could not
    use, :func:`~kafkaforensics.spark.spark_source.checked_option`; or for one of
    :data:`JOB_OPTIONS`, which the job's own arguments set)."""
    out = {}
    for pair in pairs or ():
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"--option takes KEY=VALUE, not {pair!r}")
        if key in JOB_OPTIONS:
            raise ValueError(f"--option {key}=... is not for this command: the {key} comes from its own arguments")
        try:
            key, value = spark_source.checked_option(key, value)
        except ValueError as e:
            raise ValueError(f"--option {e}") from None
        out[key] = value
    return out


def job_arguments(description: str):
    """The command line every job shares: its input paths (local, hdfs://, s3:// or s3a://), ``--out``,
    the window (``--topic``, ``--partition``, ``--from-time``, ``--to-time``, ``--from-offset``,
    ``--to-offset``), any source option as ``--option KEY=VALUE`` (repeatable; e.g.
    ``s3.endpoint=http://127.0.0.1:9000``, ``includeCorrupt=true``) and ``--master``.  The job adds its
    own options to the parser returned."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("paths", nargs="+", help="segment files, partition dirs, log dirs or fleets of them "
                    "(local paths, file://, hdfs://, s3://, s3a://)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--topic", action="append", default=[], help="only this topic (repeatable)")
    ap.add_argument("--partition", action="append", type=int, default=[], help="only this partition (repeatable)")
    ap.add_argument("--from-time", help="records from this time on (epoch ms or ISO 8601, UTC by default)")
    ap.add_argument("--to-time", help="records before this time (exclusive)")
    ap.add_argument("--from-offset", type=int, help="records from this offset on")
    ap.add_argument("--to-offset", type=int, help="records up to this offset (inclusive)")
    ap.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                    help="a kafka_segments option (s3.endpoint, s3.accessKey, s3.secretKey, s3.region, "
                         "includeCorrupt, timestampDisorderMs, maxPartitionBytes, ...)")
    ap.add_argument("--master", help="Spark master (spark-submit's own wins when it gives one)")
    return ap


def source_options(args) -> dict:
    """The window and the ``--option KEY=VALUE`` pairs of a job's arguments as source options."""
    try:
        out = window_options(args.topic, args.partition, args.from_time, args.to_time, args.from_offset,
                             args.to_offset)
        out.update(parse_options(args.option))
    except ValueError as e:
        fail(str(e))
    return out


def fail(message: str) -> NoReturn:
    """A job's usage or I/O error: one line on stderr, exit 2."""
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(2)
