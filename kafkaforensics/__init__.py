"""kafkaforensics: read, verify, write and repair Apache Kafka's on-disk formats.

The formats live as declarative schemas in ``specs``; this package is the library over them
(``segment``, ``batch``, ``builder``, ``writer``, ``dump``, ``verify``, ...); ``cli`` is the
``kfx`` command line.
"""
__version__ = "0.1.0"
