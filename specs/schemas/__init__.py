"""The construct schemas of the binary formats, declared at module level: parse and build every field.

One module a format, beside the construct-free layout module of the same name one level up, which
the fast paths import (so reading a segment never imports construct):

* :mod:`specs.schemas.record_batch`      -- ``RecordBatch``, ``Record``, ``RecordHeader``, ``BatchHeader``,
  ``BatchAttributes``, ``ControlRecordKey``, ``EndTransactionMarker`` (layouts: :mod:`specs.record_batch`).
* :mod:`specs.schemas.legacy`            -- ``MessageSet``, ``LogEntry``, ``Message``, ``EntryPrefix``,
  ``MessageAttributes`` (layouts: :mod:`specs.legacy`).
* :mod:`specs.schemas.indexes`           -- ``OffsetIndexFile``, ``TimeIndexFile``, ``TxnIndexFile`` and their
  entries (layouts: :mod:`specs.indexes`).
* :mod:`specs.schemas.producer_snapshot` -- ``ProducerSnapshot``, ``SnapshotHeader``, ``ProducerEntry``
  (layouts: :mod:`specs.producer_snapshot`).

Fixed-width parts are made from the layout tables (``primitives.fixed``, ``primitives.bit_fields``), so a field is
declared once; ``tests/test_specs.py`` proves the fast paths equal to these schemas.
"""
