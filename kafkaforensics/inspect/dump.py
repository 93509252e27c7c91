"""``kfx dump``: print any Kafka storage file, in kafka-dump-log.sh's text lines or as JSON lines.

Dispatch is by file name, as kafka-dump-log.sh does (.log, .index, .timeindex, .txnindex,
.snapshot), plus the checkpoint files; a leftover suffix (.deleted/.swap/.cleaned) is looked
through so evidence can be read where it lies.
"""
from __future__ import annotations

import json
import os
import sys
from contextlib import nullcontext
from dataclasses import dataclass, field, replace

from specs import checkpoints as C
from specs import record_batch as R

from kafkaforensics.log import kraft, offset_index, time_index, txn_index
from kafkaforensics.log.paths import (FILE, LOG_DIR, appending, classify, file_kind, live_notes, live_tail,
                                      log_dir_files, partition_dirs, partition_files)
from kafkaforensics.log.tiered import REMOTE_INDEX_RE
from kafkaforensics.records.batch import resolve_legacy_wrapper
from kafkaforensics.records.batch_json import encode, record_to_json
from kafkaforensics.errors import KafkaFormatError, Problem
from kafkaforensics.log.partition import LEFTOVER_SUFFIXES, LogDir, parse_partition_dir_name, read_text
from kafkaforensics.log.producer_state import read_snapshot
from kafkaforensics.log.segment import TXNINDEX, Segment, file_name, offset_from_name
from kafkaforensics.log import record_columns
from kafkaforensics.records import internal_topics


#: a batch up to this size (compressed: a 64th of it) is decoded record by record, so a small
#: segment's dump loads no numpy; any other through the columnar decoder, which makes records one at a
#: time from its columns (a 96 MiB batch never becomes a list of records)
SMALL_BATCH_BYTES = 1 << 20


def batch_records(b):
    """The records of ``b`` one at a time, every record checked before the first is returned (a
    batch that does not decode raises before anything is printed); both ways are proven equal to
    :meth:`Batch.records` (tests/test_record_columns.py)."""
    if b.size <= (SMALL_BATCH_BYTES if b.compression == 0 else SMALL_BATCH_BYTES >> 6):
        return iter(b.records())
    return record_columns.decode_columns([b]).iter_records()


@dataclass
class DumpOptions:
    deep: bool = False
    print_data: bool = False
    fmt: str = "text"
    encoding: str | None = None
    max_bytes: int | None = None
    verify_index_only: bool = False
    index_sanity_check: bool = False
    # "offsets" | "transaction-log" | "cluster-metadata" | "share-group-state" | "remote-log-metadata"
    decoder: str | None = None
    #: Confluent-framed keys and values decoded by these schemas (``--decode``): a
    #: :class:`~kafkaforensics.records.schema_decode.SchemaDecoder`
    schemas: object = None

    @property
    def value_encoding(self) -> str:
        return self.encoding or ("base64" if self.fmt == "json" else "utf8")


@dataclass
class DumpResult:
    problems: list[Problem] = field(default_factory=list)
    files: int = 0


def _base_offset(path: str) -> int:
    name = os.path.basename(path)
    for suf in LEFTOVER_SUFFIXES:
        if name.endswith(suf):
            name = name[: -len(suf)]
    off = offset_from_name(name)
    if off is None:
        m = REMOTE_INDEX_RE.match(name)   # tiered storage's index cache: <start offset>_<segment uuid>.index
        off = int(m.group(1)) if m else None
    return 0 if off is None else off


def _sibling(path: str, suffix: str) -> str:
    return os.path.join(os.path.dirname(path), file_name(_base_offset(path), suffix))


def _no_log():
    """No segment bytes to compare an index with (its ``.log`` is missing)."""
    return nullcontext(None)


def _bool(b: bool) -> str:
    return "true" if b else "false"


def _opt_long(v) -> str:
    return "OptionalLong.empty" if v is None or v < 0 else f"OptionalLong[{v}]"


#: internal topics whose records dump decodes by the partition dir's name (the flags stay for files
#: outside such a dir)
TOPIC_DECODERS = {"__consumer_offsets": "offsets", "__transaction_state": "transaction-log",
                  "__cluster_metadata": "cluster-metadata", "__share_group_state": "share-group-state",
                  "__remote_log_metadata": "remote-log-metadata"}


def decoder_for(path: str) -> str | None:
    """The decoder an internal topic's file needs, from its partition dir's name (None: not one)."""
    tp = parse_partition_dir_name(os.path.dirname(os.path.abspath(path)))
    return TOPIC_DECODERS.get(tp[0]) if tp else None


def expand(paths) -> list[str]:
    """The files ``paths`` name, in the order dump prints them: a file itself, a partition dir's files
    in offset order, a log dir's own files then each partition's (:mod:`kafkaforensics.log.paths`;
    a path with nothing Kafka wrote raises its ``PathUsageError``)."""
    files = []
    for p in paths:
        kp = classify(p)
        if kp.kind == FILE:
            files.append(p)
        elif kp.kind == LOG_DIR:
            files += log_dir_files(p)
            for d in partition_dirs(p):
                files += partition_files(d)
        else:
            files += partition_files(p)
    return files


def dump(paths, opts: DumpOptions, out=None, err=None) -> DumpResult:
    """Dump every file ``paths`` name (files, partition dirs, log dirs: :func:`expand`) to ``out``
    (problems and mismatches go to ``err``). An internal topic's records are decoded by its dir's
    name unless ``opts.decoder`` says otherwise.  ``kfx dump --remote`` is
    :func:`~kafkaforensics.inspect.both_tiers.dump_tiered`, which this module never imports (a plain
    dump loads no tier reader)."""
    out, err, res = start(paths, out, err)
    files = expand(paths)
    # JSON lines of several files from a dir: a {"file": path} line before each file's own lines (the
    # text form's "Dumping PATH"), so that a reader knows which partition a batch belongs to
    file_lines = opts.fmt == "json" and any(os.path.isdir(p) for p in paths)
    for path in files:
        if file_lines:
            print(json.dumps({"file": path}), file=out)
        dump_file(path, opts, out, err, res)
    return res


def start(paths, out=None, err=None) -> tuple:
    """(out, err, an empty :class:`DumpResult`) of a dump of ``paths``, the live log dirs among them
    noted on ``err`` first (stdout and stderr when not given)."""
    out = out or sys.stdout
    err = err or sys.stderr
    for n in live_notes(paths):
        print(f"note: {n}", file=err)
    return out, err, DumpResult()


def dump_file(path: str, opts: DumpOptions, out, err, res: DumpResult) -> None:
    """One local file of a dump, a segment or KRaft snapshot of an internal topic decoded by its dir's
    name unless ``opts.decoder`` says otherwise."""
    kind = file_kind(path)
    auto = decoder_for(path) if opts.decoder is None and kind in ("log", "kraft-snapshot") else None
    _dump_file(path, kind, replace(opts, decoder=auto) if auto else opts, out, err, res)


def dump_segment(name: str, seg: Segment, opts: DumpOptions, out, err, res: DumpResult, tier: str) -> None:
    """A segment named ``name`` read through its byte source ``seg`` (a remote one: ``tier`` is said in
    the text form's header)."""
    _dump_file(name, "log", opts, out, err, res, seg, tier)


def _dump_file(path: str, kind: str, opts: DumpOptions, out, err, res: DumpResult, seg: Segment | None = None,
               tier: str | None = None) -> None:
    """One file (``seg``: the segment whose ``.log`` it is, read through its byte source; ``tier``:
    the tier it is in, said in the text form's header)."""
    if opts.fmt == "text":
        print(f"Dumping {path}" + (f" ({tier} tier)" if tier else ""), file=out)
    try:
        if kind == "log":
            _dump_log(path, opts, out, err, res, seg)
        elif kind == "index":
            _dump_index(path, opts, out, err, res)
        elif kind == "timeindex":
            _dump_time_index(path, opts, out, err, res)
        elif kind == "txnindex":
            for txn in txn_index.read_entries(_index_bytes(path, TXNINDEX), file=path):
                _emit(out, opts, txn.to_json(), "version: {version} producerId: {producerId} firstOffset: "
                      "{firstOffset} lastOffset: {lastOffset} lastStableOffset: {lastStableOffset}")
        elif kind == "snapshot":
            _dump_snapshot(path, opts, out)
        elif kind == "offset-checkpoint":
            for e in LogDir.checkpoint_entries_at(path):
                _emit(out, opts, e, "topic: {topic} partition: {partition} offset: {offset}")
        elif kind == "leader-epoch-checkpoint":
            for e in C.LeaderEpochCheckpoint.parse(read_text(path), file=path):
                _emit(out, opts, e, "epoch: {epoch} startOffset: {startOffset}")
        elif kind == "partition-metadata":
            _emit(out, opts, C.parse_partition_metadata(read_text(path), file=path),
                  "version: {version} topicId: {topicId}")
        elif kind == "kraft-snapshot":
            _dump_kraft_snapshot(path, opts, out, err, res)
        elif kind == "quorum-state":
            qs = kraft.read_quorum_state(path)
            if opts.fmt == "json":
                print(json.dumps(qs), file=out)
            else:
                print(f"data_version: {qs['version']}", file=out)
                for k, v in qs["data"].items():
                    print(f"{k}: {json.dumps(v)}", file=out)
        elif kind == "clean-shutdown":
            cs = LogDir.clean_shutdown_at(path)
            if opts.fmt == "json":
                print(json.dumps({"version": cs["version"], "brokerEpoch": cs["brokerEpoch"]}
                                 | ({"format": cs["format"]} if cs["format"] != "json" else {})), file=out)
            elif cs["brokerEpoch"] is None:
                print(f"clean shutdown marker ({cs['format']}): no broker epoch", file=out)
            else:
                _emit(out, opts, cs, "version: {version} brokerEpoch: {brokerEpoch}")
        elif kind == "meta-properties":
            props = LogDir.properties_at(path)
            if opts.fmt == "json":
                print(json.dumps(props), file=out)
            else:
                for k, v in props.items():
                    print(f"{k}={v}", file=out)
        elif kind == "lock":
            pid = LogDir(os.path.dirname(os.path.abspath(path))).lock_holder()
            _emit(out, opts, {"lock": True, "heldBy": pid},
                  "held by process {heldBy} (a running broker)" if pid is not None else
                  "not held: no broker is running on this log dir (every broker leaves its .lock behind)")
        else:
            print(f"Ignoring unknown file {path}", file=err)
            return
        res.files += 1
    except KafkaFormatError as e:
        e.located(file=path)
        res.problems.append(e.problem)
        print(str(e.problem), file=err)
    except BrokenPipeError:
        raise
    except OSError as e:
        p = Problem(path, None, None, "io", e.strerror or str(e))
        res.problems.append(p)
        print(str(p), file=err)


def _dump_kraft_snapshot(path, opts: DumpOptions, out, err, res: DumpResult) -> None:
    """A KRaft snapshot / bootstrap checkpoint: its batches as a log (records decoded as metadata
    records unless another decoder is asked for), then its summary; a missing header or footer, a bad
    CRC or an undecodable record is a problem."""
    _dump_log(path, replace(opts, decoder=opts.decoder or "cluster-metadata"), out, err, res)
    snap = kraft.read_snapshot(path)
    summary = {k: snap[k] for k in ("snapshotId", "header", "footer", "records", "recordTypes", "controlRecords")}
    if opts.fmt == "json":
        print(json.dumps({"snapshot": summary}), file=out)
    else:
        print(f"Snapshot {json.dumps(summary)}", file=out)
    for p in snap["problems"]:
        if p not in res.problems:
            res.problems.append(p)
            print(str(p), file=err)


def _emit(out, opts: DumpOptions, obj: dict, text_fmt: str) -> None:
    if opts.fmt == "json":
        print(json.dumps(obj), file=out)
    else:
        print(text_fmt.format(**obj), file=out)


def _dump_log(path, opts: DumpOptions, out, err, res: DumpResult, seg: Segment | None = None) -> None:
    base = _base_offset(path) if seg is None else seg.base_offset
    deep = opts.deep or opts.print_data or opts.decoder is not None or opts.schemas is not None
    enc = opts.value_encoding
    if opts.fmt == "text":
        print(f"Log starting offset: {base}", file=out)
    last_offset = None
    gaps = []
    with (seg or Segment.of_file(path, base)).walk(max_position=opts.max_bytes) as scanner:
        for b in scanner:
            if b.magic < 2:
                try:
                    resolve_legacy_wrapper(b)
                except KafkaFormatError as e:
                    res.problems.append(e.problem)
                    print(str(e.problem), file=err)
            corrupt = not b.crc_valid()
            if corrupt:  # its records are shown (evidence) but flagged, and the dump exits 1
                p = Problem(path, b.position, b.base_offset, "crc-mismatch",
                            f"stored CRC {b.crc} does not match the batch's bytes: its records are not trusted")
                res.problems.append(p)
                print(str(p), file=err)
            if opts.fmt == "json":
                obj = b.to_json()
                if deep:
                    _print_batch_json(b, obj, opts, enc, corrupt, out, err, res)
                else:
                    print(json.dumps(obj), file=out)
                continue
            _print_batch_line(b, out)
            if not deep:
                continue
            try:
                recs = batch_records(b)
            except KafkaFormatError as e:
                res.problems.append(e.problem)
                print(str(e.problem), file=err)
                continue
            for r in recs:
                if last_offset is not None and r.offset != last_offset + 1:
                    gaps.append((last_offset, r.offset))
                last_offset = r.offset
                _print_record_line(b, r, opts.print_data, enc, out, opts.decoder, corrupt,
                                   schema_decoded(opts.schemas, path, b, r, res, err))
        stop = scanner.stop
        live = stop is not None and opts.max_bytes is None and seg is None and appending(path)
        why = live_tail(stop, path) if live else None
        if why is not None:
            print(f"note: {stop}: {why}", file=err)
        elif stop is not None and opts.max_bytes is None:
            res.problems.append(stop)
            if opts.fmt == "text":
                print(f"Found {len(scanner.buf) - scanner.valid_bytes} invalid bytes at the end of {os.path.basename(path)}",
                      file=out)
            print(str(stop), file=err)
    if gaps:
        print(f"Non-consecutive offsets in {os.path.abspath(path)}", file=err)
        for a, b2 in gaps:
            print(f"  {a} is followed by {b2}", file=err)


def _print_batch_json(b, obj: dict, opts: DumpOptions, enc: str, corrupt: bool, out, err, res) -> None:
    """One batch's JSON line with its records, written record by record: the records are decoded
    first as columns (every record checked before a byte is written, so a batch that does not decode
    gets ``"records": null`` and a located problem), then made into objects and printed one at a
    time, so a batch holding 100 MiB of records never becomes one JSON string or list of dicts."""
    try:
        recs = batch_records(b)
    except KafkaFormatError as e:
        obj["records"] = None
        res.problems.append(e.problem)
        print(str(e.problem), file=err)
        print(json.dumps(obj), file=out)
        return
    head = json.dumps(obj)
    out.write(head[:-1] + (', "records": [' if obj else '"records": ['))
    sep = ""
    for r in recs:
        rj = record_to_json(r, b, enc)
        if corrupt:
            rj["crcValid"] = False
        if opts.decoder:
            rj["decoded"] = decode_record(opts.decoder, b, r)
        rj.update(schema_decoded(opts.schemas, b.file, b, r, res, err))
        out.write(sep + json.dumps(rj))
        sep = ", "
    out.write("]}\n")


def _print_batch_line(b, out) -> None:
    if b.magic >= 2:
        head = (f"baseOffset: {b.base_offset} lastOffset: {b.last_offset} count: {b.count} "
                f"baseSequence: {b.base_sequence} lastSequence: {b.last_sequence} producerId: {b.producer_id} "
                f"producerEpoch: {b.producer_epoch} partitionLeaderEpoch: {b.partition_leader_epoch} "
                f"isTransactional: {_bool(b.is_transactional)} isControl: {_bool(b.is_control)} "
                f"deleteHorizonMs: {_opt_long(b.delete_horizon_ms)}")
    else:
        head = f"offset: {b.last_offset}"
    print(f"{head} position: {b.position} {b.timestamp_type}: {b.max_timestamp} size: {b.size} "
          f"magic: {b.magic} compresscodec: {b.compression_name} crc: {b.crc} isvalid: {_bool(b.crc_valid())}",
          file=out)


def decode_record(decoder: str, b, r) -> dict:
    """Decode an internal topic's record; problems come back as {"error": ...} so a dump goes on."""
    try:
        if b.is_control and decoder != "cluster-metadata":  # markers: the metadata log has control records of its own
            return {"control": r.control()}
        if decoder == "offsets":
            k, v = internal_topics.decode_offsets(r.key, r.value, exact=True)
        elif decoder == "transaction-log":
            k, v = internal_topics.decode_transaction_log(r.key, r.value, exact=True)
        elif decoder == "cluster-metadata":
            if b.is_control:
                ctype = r.control_type
                if ctype in (R.ABORT, R.COMMIT):
                    return {"control": r.control()}
                return {"control": internal_topics.decode_metadata_control(ctype, r.value, exact=True)}
            return {"value": internal_topics.decode_metadata(r.value, exact=True)}
        elif decoder == "share-group-state":
            k, v = internal_topics.decode_share_group_state(r.key, r.value, exact=True)
        elif decoder == "remote-log-metadata":
            return {"value": internal_topics.decode_remote_log_metadata(r.value, exact=True)}
        else:
            raise ValueError(decoder)
        return {"key": k, "value": v}
    except KafkaFormatError as e:
        return {"error": f"offset {r.offset}: {e.problem.detail}"}


def schema_decoded(schemas, path: str, b, r, res: DumpResult, err) -> dict:
    """``keyDecoded``/``valueDecoded`` of a record whose key/value is Confluent-framed (nothing for
    control records or without ``schemas``); a framed one that does not decode under its id is a
    located problem (offset, producer id), and the dump exits 1."""
    if schemas is None or b.is_control:
        return {}
    topic = (parse_partition_dir_name(os.path.dirname(os.path.abspath(path))) or (None,))[0]
    out = {}
    for name, data, is_key in (("keyDecoded", r.key, True), ("valueDecoded", r.value, False)):
        d = schemas.decode(data, topic, is_key)
        if not d.framed:
            continue
        out[name] = d.to_json()
        if d.error is not None:
            p = Problem(path, b.position, r.offset, "schema-unknown-id" if d.unknown_id else "schema-undecodable",
                        f"{'key' if is_key else 'value'}: {d.error} (producerId {b.producer_id})")
            res.problems.append(p)
            print(str(p), file=err)
    return out


def _print_record_line(b, r, print_data: bool, enc: str, out, decoder: str | None = None,
                       corrupt: bool = False, schema_json: dict | None = None) -> None:
    parts = [f"| offset: {r.offset} {b.timestamp_type}: {r.timestamp} "
             f"keySize: {-1 if r.key is None else len(r.key)} valueSize: {-1 if r.value is None else len(r.value)}"]
    if b.magic >= 2:
        parts.append(f" sequence: {r.sequence} headerKeys: [{','.join(k for k, _ in r.headers)}]")
    if b.is_control:
        ctl = r.control()
        if ctl and ctl["type"] in (R.CONTROL_TYPES[R.ABORT], R.CONTROL_TYPES[R.COMMIT]):
            parts.append(f" endTxnMarker: {ctl['type']} coordinatorEpoch: {ctl['coordinatorEpoch']}")
        elif ctl:
            parts.append(f" controlType: {ctl['type']}")
    if decoder is not None:
        d = decode_record(decoder, b, r)
        if "error" in d:
            parts.append(f" error: {d['error']}")
        elif "key" in d:
            parts.append(f" key: {json.dumps(d['key'])} payload: {json.dumps(d['value'])}")
        elif "value" in d:
            parts.append(f" payload: {json.dumps(d['value'])}")
        elif "control" in d and b.is_control and decoder == "cluster-metadata":
            parts.append(f" {json.dumps(d['control'])}")
    elif print_data and not b.is_control:
        if r.key is not None:
            parts.append(f" key: {encode(r.key, enc)}")
        if r.value is not None:
            parts.append(f" payload: {encode(r.value, enc)}")
    for name, d in (schema_json or {}).items():  # beside the raw bytes
        parts.append(f" {name}: {json.dumps(d)}")
    if corrupt:
        parts.append(" isvalid: false")  # the batch's CRC fails: this record is not trusted
    print("".join(parts), file=out)


def _last_offset_at(region, position: int):
    """lastOffset of the batch read at ``position`` of the segment's bytes (what kafka-dump-log
    compares an entry with); None without a ``.log`` (``region`` None)."""
    for b in region.walk(start=position) if region is not None else ():
        return b.last_offset
    return None


def _index_bytes(path: str, suffix: str) -> bytes:
    """The bytes of the index file ``path`` (of ``suffix``), read through its segment."""
    return Segment.of_index(path, _base_offset(path), suffix).file_bytes(suffix) or b""


def _read_index(path, module, kind: str, opts: DumpOptions, out, last_entry_problem):
    """(base offset, entries) of an index file; with ``--index-sanity-check`` (kafka-dump-log's) its
    size and last entry (``last_entry_problem(entries, base)``: what is wrong, or None) are checked
    instead, and None comes back."""
    base = _base_offset(path)
    data = _index_bytes(path, "." + kind)
    entries, _zero_tail = module.read_entries(data, base)
    if not opts.index_sanity_check:
        return base, entries
    if len(data) % module.ENTRY_SIZE:
        raise KafkaFormatError(kind, f"size {len(data)} is not a multiple of {module.ENTRY_SIZE}", file=path)
    problem = last_entry_problem(entries, base) if entries else None
    if problem:
        raise KafkaFormatError(kind, problem, file=path)
    print(f"{path} passed sanity check.", file=out)
    return None


def _dump_index(path, opts: DumpOptions, out, err, res: DumpResult) -> None:
    read = _read_index(path, offset_index, "index", opts, out, lambda entries, base: (
        f"last offset {entries[-1][0]} is below the base offset {base}" if entries[-1][0] < base else None))
    if read is None:
        return
    base, entries = read
    if not entries:
        if opts.fmt == "text":  # JSON lines: no entry, no line
            print(f"{path} is empty.", file=out)
        return
    log = _sibling(path, ".log")
    remote = REMOTE_INDEX_RE.match(os.path.basename(path)) is not None
    mismatches = []
    with Segment.of_file(log, base).bytes_range() if os.path.exists(log) else _no_log() as region:
        for off, pos in entries:
            if remote:
                # a tiered-storage cache index: its segment lives in remote storage, nothing to compare
                found = off
            else:
                found = _last_offset_at(region, pos)
            if found != off:
                mismatches.append((off, -1 if found is None else found))
            if not opts.verify_index_only:
                _emit(out, opts, {"offset": off, "position": pos}, "offset: {offset} position: {position}")
    if mismatches:
        print(f"Mismatches in :{os.path.abspath(path)}", file=err)
        for a, b in mismatches:
            print(f"  Index offset: {a}, log offset: {b}", file=err)
            res.problems.append(Problem(path, None, a, "index-mismatch", f"index offset {a}, log offset {b}"))


def _dump_time_index(path, opts: DumpOptions, out, err, res: DumpResult) -> None:
    read = _read_index(path, time_index, "timeindex", opts, out, lambda entries, base: (
        "last timestamp is below the first" if entries[-1][0] < entries[0][0] else None))
    if read is None:
        return
    base, entries = read
    log = _sibling(path, ".log")
    by_last = {}
    if os.path.exists(log):
        for b in Segment.of_file(log, base).batches():
            by_last[b.last_offset] = b.max_timestamp
    prev = -1
    mismatched, disordered, missing = [], [], []
    for ts, off in entries:
        if off not in by_last:
            missing.append(off)
            res.problems.append(Problem(path, None, off, "timeindex-mismatch", "indexed offset not found in the log"))
        elif by_last[off] != ts:
            mismatched.append((ts, by_last[off]))
            res.problems.append(Problem(path, None, off, "timeindex-mismatch", f"index {ts}, log {by_last[off]}"))
        if prev >= ts:
            disordered.append((ts, prev))
            res.problems.append(Problem(path, None, off, "timeindex-order", f"{ts} after {prev}"))
        if not opts.verify_index_only:
            _emit(out, opts, {"timestamp": ts, "offset": off}, "timestamp: {timestamp} offset: {offset}")
        prev = ts
    _print_time_index_errors(path, mismatched, disordered, missing, err)


def _print_time_index_errors(path, mismatched, disordered, missing, err) -> None:
    """A time index's errors as kafka-dump-log prints them (DumpLogSegments.TimeIndexDumpErrors): each
    kind's header once, then its entries."""
    where = os.path.abspath(path)
    for header, lines in ((f"Found timestamp mismatch in :{where}",
                           [f"  Index timestamp: {ts}, log timestamp: {log_ts}" for ts, log_ts in mismatched]),
                          (f"Found out of order timestamp in :{where}",
                           [f"  Index timestamp: {ts}, Previously indexed timestamp: {prev}" for ts, prev in disordered]),
                          ("The following indexed offsets are not found in the log.",
                           [f"Indexed offset: {off}, found log offset: -1" for off in missing])):
        if lines:
            print("\n".join([header] + lines), file=err)


def _dump_snapshot(path, opts: DumpOptions, out) -> None:
    with open(path, "rb") as f:
        entries = read_snapshot(f.read(), file=path)
    for e in entries:
        if opts.fmt == "json":
            print(json.dumps(e.to_json()), file=out)
            continue
        line = (f"producerId: {e.producer_id} producerEpoch: {e.epoch} coordinatorEpoch: {e.coordinator_epoch} "
                f"currentTxnFirstOffset: {_opt_long(e.current_txn_first_offset)} lastTimestamp: {e.timestamp} ")
        if e.last_offset >= 0:
            line += (f"firstSequence: {e.first_sequence} lastSequence: {e.last_sequence} lastOffset: {e.last_offset} "
                     f"offsetDelta: {e.offset_delta} timestamp: {e.timestamp}")
        print(line, file=out)
