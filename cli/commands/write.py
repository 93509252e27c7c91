"""``kfx write``: a partition dir written from `kfx dump --deep --format json` lines."""
from __future__ import annotations

import sys
from typing import Optional

from cli.common import Encoding, err, fail
from cli.declare import Option
from cli.options import INDEX_INTERVAL_BYTES, SEGMENT_BYTES
from cli.repairs import refuse_live, sizes
from kafkaforensics import errors
from kafkaforensics.log import writer as log_writer
from kafkaforensics.records import batch_json as records_batch_json


def write(out: str = Option(..., "--out", metavar="DIR", help="Partition directory to create (must be new or empty)"),
          segment_bytes: Optional[int] = SEGMENT_BYTES,
          index_interval_bytes: Optional[int] = INDEX_INTERVAL_BYTES,
          encoding: Encoding = Option(Encoding.base64, "--encoding", metavar="utf8|hex|base64",
                                      help="Encoding the dump used for keys/values")):
    """Read `kfx dump --deep --format json` lines on stdin and write a valid partition directory."""
    segment_bytes, index_interval_bytes, _notes = sizes(out, segment_bytes, index_interval_bytes)
    refuse_live(out)
    try:
        w = log_writer.PartitionWriter(out, segment_bytes=segment_bytes, index_interval_bytes=index_interval_bytes)
    except (FileExistsError, OSError) as e:
        fail(str(e))
    carried: dict[str, str] = {}  # the topic id of a dumped partition.metadata, kept as the input carries it
    try:
        with w:  # a failure leaves no partial partition behind (the writer aborts)
            for data in records_batch_json.batches_from_json_lines(sys.stdin, encoding=encoding.value, carried=carried):
                w.append(data)
            w.topic_id = carried.get("topicId") or w.topic_id
    except errors.KafkaFormatError as e:
        fail(str(e.problem))
    err().print(f"wrote {w.batches} batches in {len(w.segments)} segment(s) to {out}", highlight=False, soft_wrap=True)

