"""kafkaforensics: read, verify, write and repair Apache Kafka's on-disk formats.

The formats live as declarative schemas in ``specs``; this package is the library over them, grouped by
pipeline stage: ``records`` (batches and records), ``log`` (a partition's files), ``repair``, ``inspect``,
``spark``, ``broker`` and ``harness`` (fuzzing, the demo's damage); ``cli`` is the ``kfx`` command line.
Each stage imports only the stages before it (tests/test_layout.py); a module is imported by its stage's
name (``kafkaforensics.log.segment``).
"""
__version__ = "0.1.0"
