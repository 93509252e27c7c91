"""``kfx dump``: Kafka's storage files printed as kafka-dump-log.sh prints them, or as JSON lines."""
from __future__ import annotations

import os
import sys
from typing import List, Optional

from cli.common import EXIT_OK, EXIT_PROBLEMS, Encoding, Fmt, fail
from cli import heavy
from cli.declare import Argument, Exit, Option
from cli.options import SCHEMA_REGISTRY, SCHEMAS
from cli.remote import KEY_FILE, REMOTE, open_remote
from kafkaforensics.inspect import dump as inspect_dump
from kafkaforensics.log import paths as log_paths


def dump(paths: List[str] = Argument(None, metavar="PATH", help="Files (.log .index .timeindex .txnindex .snapshot, checkpoints), partition dirs or log dirs (none: the --remote tier alone)"),
         deep: bool = Option(False, "--deep", "--deep-iteration", help="Decode every record"),
         print_data: bool = Option(False, "--print-data", "--print-data-log", help="Print keys and values (implies --deep)"),
         fmt: Fmt = Option(Fmt.text, "--format", metavar="text|json", help="text (kafka-dump-log.sh lines) or json (JSON lines)"),
         encoding: Optional[Encoding] = Option(None, "--encoding", metavar="utf8|hex|base64", help="Key/value encoding (text: utf8, json: base64)"),
         max_bytes: Optional[int] = Option(None, "--max-bytes", min=0, metavar="BYTES", help="Only read batches within the first N bytes"),
         verify_index_only: bool = Option(False, "--verify-index-only", help="Check index entries, print only mismatches"),
         index_sanity_check: bool = Option(False, "--index-sanity-check", help="Run Kafka's index sanity check only"),
         offsets_decoder: bool = Option(False, "--offsets-decoder", help="Decode __consumer_offsets records"),
         transaction_log_decoder: bool = Option(False, "--transaction-log-decoder",
                                                      help="Decode __transaction_state records"),
         cluster_metadata_decoder: bool = Option(False, "--cluster-metadata-decoder",
                                                       help="Decode KRaft __cluster_metadata records"),
         share_group_state_decoder: bool = Option(False, "--share-group-state-decoder",
                                                        help="Decode __share_group_state records"),
         remote_log_metadata_decoder: bool = Option(False, "--remote-log-metadata-decoder",
                                                          help="Decode __remote_log_metadata records"),
         decode: bool = Option(False, "--decode", help="Decode Confluent-framed Avro/Protobuf/JSON Schema keys and "
                                                       "values (keyDecoded/valueDecoded beside the raw bytes)"),
         schemas: Optional[str] = SCHEMAS, schema_registry: Optional[str] = SCHEMA_REGISTRY,
         remote: Optional[str] = REMOTE, key_file: List[str] = KEY_FILE):
    """Print Kafka storage files like kafka-dump-log.sh, or as JSON lines."""
    paths = paths or []
    tier = open_remote(remote, key_file)
    if not paths and tier is None:
        fail("give a PATH (a file, partition dir or log dir) or --remote URI")
    decoders = [n for n, on in (("offsets", offsets_decoder), ("transaction-log", transaction_log_decoder),
                                ("cluster-metadata", cluster_metadata_decoder),
                                ("share-group-state", share_group_state_decoder),
                                ("remote-log-metadata", remote_log_metadata_decoder)) if on]
    if len(decoders) > 1:
        fail("choose one decoder")
    opts = inspect_dump.DumpOptions(deep=deep, print_data=print_data, fmt=fmt.value, encoding=encoding.value if encoding else None,
                       max_bytes=max_bytes, verify_index_only=verify_index_only, index_sanity_check=index_sanity_check,
                       decoder=decoders[0] if decoders else None,
                       schemas=heavy.schemas.schema_decoder(paths, schemas, schema_registry) if decode else None)
    if decode:
        opts.print_data = True
    try:
        res = inspect_dump.dump(paths, opts) if tier is None else heavy.both_tiers.dump_tiered(paths, tier, opts)
    except log_paths.PathUsageError as e:
        fail(str(e))
    except BrokenPipeError:  # `kfx dump ... | head`: stop quietly, as a Unix filter should
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise Exit(EXIT_OK)
    raise Exit(EXIT_PROBLEMS if res.problems else EXIT_OK)

