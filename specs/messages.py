"""Every protocol request and response class (and the __transaction_state records') by its message name (``from specs.messages import
FetchResponse``; a struct inside one by its schema type name, ``FetchResponse.PartitionData``), as
:mod:`specs.message_types` generates them at import from :mod:`specs.protocol_messages`.

A type checker reads ``messages.pyi`` beside this module: the same classes with their fields' types,
generated from the schemas (``python -m specs.message_types`` writes it; a test checks it is current).
"""
from .message_types import RECORD_TYPES, REQUEST_TYPES, RESPONSE_TYPES

globals().update({cls.__name__: cls for cls in (*REQUEST_TYPES.values(), *RESPONSE_TYPES.values(),
                                                *RECORD_TYPES.values())})
