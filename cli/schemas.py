"""The schemas ``--decode`` reads Confluent-framed keys and values with (issue 56): the log dirs' own
``_schemas`` topic, then ``--schemas DIR``, then ``--schema-registry URL``; loaded through
cli/heavy.py only when a command line asks to decode."""
from __future__ import annotations

import sys
from typing import NoReturn

from kafkaforensics.log.schema_topic import load_schema_store
from kafkaforensics.records.schema_decode import SchemaDecoder


def schema_decoder(paths, schemas=None, registry=None, required: bool = True) -> SchemaDecoder | None:
    """The decoder of Confluent-framed values for ``paths``. No source at all is one line and exit 2
    when ``required`` (else None); a source that cannot be read is one line and exit 2."""
    def fail(msg: str) -> NoReturn:   # cli.common's one line and exit 2 (it imports cli/heavy.py, which loads this)
        print(f"error: {msg}", file=sys.stderr)
        raise SystemExit(2)

    try:
        store = load_schema_store(paths, schema_dir=schemas, registry_url=registry)
    except (ValueError, OSError) as e:
        fail(str(e))
    if store is None:
        if not required:
            return None
        fail("--decode needs schemas: the log dir holds no _schemas topic; give --schemas DIR or "
             "--schema-registry URL")
    return SchemaDecoder(store)
