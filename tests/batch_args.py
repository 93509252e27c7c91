"""build_v2's keywords as the tests write them: the producer fields and header overrides by their own
names, grouped into :class:`~kafkaforensics.records.builder.BatchProducer` and
:class:`~kafkaforensics.records.builder.HeaderOverrides` (the builder's own parameters)."""
from __future__ import annotations

from dataclasses import fields

from kafkaforensics.records.builder import BatchProducer, HeaderOverrides

_HEADER = {f.name for f in fields(HeaderOverrides)}


def v2_kwargs(**kw) -> dict:
    """``kw`` with ``producer_id``/``producer_epoch``/``base_sequence`` as ``producer`` and the
    :class:`HeaderOverrides` fields as ``header``."""
    out = {k: v for k, v in kw.items() if k not in BatchProducer._fields and k not in _HEADER}
    if any(k in kw for k in BatchProducer._fields):
        out["producer"] = BatchProducer(*(kw.get(k, -1) for k in BatchProducer._fields))
    if any(k in kw for k in _HEADER):
        out["header"] = HeaderOverrides(**{k: v for k, v in kw.items() if k in _HEADER})
    return out
