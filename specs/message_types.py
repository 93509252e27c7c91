"""Typed request and response classes, generated once at import from the message schemas
(:mod:`specs.protocol_messages`), as Kafka generates its message classes from its JSON definitions.

Each :class:`~specs.message_schema.Message` and each struct inside it gets a class whose attributes
are its fields in snake_case (``FetchRequest.Topics[].Partitions[].FetchOffset`` is
``req.topics[i].partitions[j].fetch_offset``), every field of every version, absent ones at their
default.  :func:`typed` makes one from what :meth:`Message.read` returns (or from one already typed);
``to_dict`` gives back the PascalCase dict :meth:`Message.build` takes.  A name that is no field is
refused as ``Message.build`` refuses it (:class:`~specs.message_schema.UnknownField`), on construction
and on assignment (the classes have ``__slots__``).
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from . import protocol_messages as P
from .message_schema import F, Message, UnknownField

#: keys ``Message.read`` adds beside the fields (kept, and given back to ``build``)
_EXTRA = {"_unknownTaggedFields": "unknown_tagged_fields"}


def snake(name: str) -> str:
    """A schema field name in snake_case: ``TopicId`` -> ``topic_id``, ``V3AndBelowTopics`` -> ``v3_and_below_topics``."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


class Struct:
    """A message or struct of a message: one attribute a field (subclasses are generated)."""

    __slots__ = ()
    #: schema name -> (attribute, field); the struct's name in errors
    FIELDS: dict = {}
    WHERE = ""
    #: attribute -> (schema name, field); schema name -> the generated class of a struct field
    ATTRS: dict = {}
    SUBS: dict[str, type[Struct]] = {}

    if TYPE_CHECKING:  # the fields are attributes of the generated subclasses (``__slots__``)
        def __getattr__(self, attr: str) -> Any: ...

    def __init__(self, **values):
        known = type(self).ATTRS
        for attr in values:
            if attr not in known:
                raise UnknownField(self.WHERE, attr, [f for _a, f in self.FIELDS.values()])
        for attr, (name, f) in known.items():
            setattr(self, attr, values[attr] if attr in values else _default(f))

    @classmethod
    def from_dict(cls, d: dict) -> "Struct":
        """The typed form of a dict of PascalCase fields (as ``Message.read`` returns it)."""
        out = object.__new__(cls)
        fields = cls.FIELDS
        for key in d:
            if key not in fields:
                raise UnknownField(cls.WHERE, key, [f for _a, f in fields.values()])
        for name, (attr, f) in fields.items():
            v = d[name] if name in d else _default(f)
            sub = cls.SUBS.get(name)
            if sub is not None and v is not None:
                v = [sub.from_dict(x) for x in v] if f.type.startswith("[]") else sub.from_dict(v)
            object.__setattr__(out, attr, v)
        return out

    def to_dict(self) -> dict:
        """The PascalCase dict of this struct (``Message.build``'s input)."""
        out = {}
        for name, (attr, f) in self.FIELDS.items():
            v = getattr(self, attr)
            if name in self.SUBS and v is not None:
                v = [x.to_dict() for x in v] if f.type.startswith("[]") else v.to_dict()
            if name in _EXTRA and not v:
                continue
            out[name] = v
        return out

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and self.to_dict() == other.to_dict()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{a}={getattr(self, a)!r}' for a in self.ATTRS)})"


def _default(f):
    """A fresh default (a list default is never shared between instances)."""
    return list(f.default) if isinstance(f.default, list) else f.default


def _class(name: str, fields, structs: dict, where: str) -> type[Struct]:
    """The class of one field list, its struct fields' classes made first."""
    table = {f.name: (snake(f.name), f) for f in fields}
    table.update({k: (a, F(k, "extra", "0+")) for k, a in _EXTRA.items()})
    subs = {}
    for f in fields:
        inner = f.fields if f.fields is not None else structs.get(f.type[2:] if f.type.startswith("[]") else f.type)
        if inner is not None:
            subs[f.name] = _class(f.type.lstrip("[]"), inner, structs, f"{where}.{f.name}")
    attrs = {a: (n, f) for n, (a, f) in table.items()}
    return type(name, (Struct,), {"__slots__": tuple(attrs), "FIELDS": table, "ATTRS": attrs, "SUBS": subs,
                                  "WHERE": where})


def message_class(m: Message) -> type[Struct]:
    """The generated class of a message schema."""
    return _class(m.name, m.fields, m.structs, m.name)


#: api key -> the typed request class; the typed response class
REQUEST_TYPES = {k: message_class(m) for k, m in P.REQUESTS.items()}
RESPONSE_TYPES = {k: message_class(m) for k, m in P.RESPONSES.items()}


def typed(api_key: int, body) -> Struct:
    """The typed request of ``api_key`` for ``body`` (a dict as ``Message.read`` returns it, or typed already)."""
    return body if isinstance(body, Struct) else REQUEST_TYPES[api_key].from_dict(body)
