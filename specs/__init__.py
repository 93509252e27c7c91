"""Declarative ``construct`` schemas: the single source of truth for every Kafka format.

Each module holds one family of formats and can both parse and build it:

* :mod:`specs.primitives`      -- zigzag varints, nullable byte strings, CRC-sealed blocks, compression.
* :mod:`specs.record_batch`    -- record batch v2 (magic 2), records, headers, control records.
* :mod:`specs.legacy`          -- message sets of magic 0 and 1, including compressed wrappers.
* :mod:`specs.indexes`         -- .index, .timeindex and .txnindex entries.
* :mod:`specs.producer_snapshot` -- ``<offset>.snapshot`` producer state files.
* :mod:`specs.schemas`         -- the construct schemas of those four binary formats, declared at module
                                  level (``specs.schemas.record_batch.RecordBatch`` ...).
* :mod:`specs.checkpoints`     -- the text files of a partition and a log dir.
* :mod:`specs.codecs`          -- Kafka's five compression codecs with their wire quirks, bounded.
* :mod:`specs.errors`          -- the located error every spec (and the library) raises.
* :mod:`specs.lazy`            -- the one lazy-import mechanism (specs and library): modules on first use.

``specs`` imports nothing from the library; the library reads its layouts, offsets and masks from here.

Fixed-width layouts are declared once as :class:`specs.layout.Layout` tables, from which both the
fast paths' ``struct.Struct`` and the construct schema are made. A binary format is two modules:
``specs/<format>.py`` holds its layouts, offsets and masks and imports no construct (the fast paths
read it), ``specs/schemas/<format>.py`` declares its construct schemas at module level. The fast paths
are tested equal to the schemas.
"""
