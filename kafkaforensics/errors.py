"""The project's one error type and the located problem record (defined in ``specs.errors``)."""
from specs.errors import CompressionError, KafkaFormatError, Problem

__all__ = ["CompressionError", "KafkaFormatError", "Problem"]
