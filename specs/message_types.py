"""Typed request and response classes, generated once at import from the message schemas
(:mod:`specs.protocol_messages`), as Kafka generates its message classes from its JSON definitions.

Each :class:`~specs.message_schema.Message` and each struct inside it gets a class whose attributes
are its fields in snake_case (``FetchRequest.Topics[].Partitions[].FetchOffset`` is
``req.topics[i].partitions[j].fetch_offset``), every field of every version, absent ones at their
default.  :func:`typed` makes one from what :meth:`Message.read` returns (or from one already typed);
``to_dict`` gives back the PascalCase dict :meth:`Message.build` takes.  A name that is no field is
refused as ``Message.build`` refuses it (:class:`~specs.message_schema.UnknownField`), on construction
and on assignment (the classes have ``__slots__``).

A message's struct classes are attributes of its class by their schema type name
(``FetchResponse.PartitionData``); :mod:`specs.messages` names every class.  The classes are made here at
import (no generation step to run); what a type checker cannot see of them -- each field's type -- is
:func:`stub`'s ``specs/messages.pyi``, written by ``python -m specs.message_types`` and checked current
by ``tests/test_message_types.py``.
"""
from __future__ import annotations

import re
from typing import Any, TypeVar

from . import kafka_messages as KM
from . import protocol_messages as P
from .message_schema import F, Message, UnknownField

#: keys ``Message.read`` adds beside the fields (kept, and given back to ``build``)
_EXTRA = {"_unknownTaggedFields": "unknown_tagged_fields"}


def snake(name: str) -> str:
    """A schema field name in snake_case: ``TopicId`` -> ``topic_id``, ``V3AndBelowTopics`` -> ``v3_and_below_topics``."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


_S = TypeVar("_S", bound="Struct")


class Struct:
    """A message or struct of a message: one attribute a field (subclasses are generated)."""

    __slots__ = ()
    #: schema name -> (attribute, field); the struct's name in errors
    FIELDS: dict = {}
    WHERE = ""
    #: attribute -> (schema name, field); schema name -> the generated class of a struct field
    ATTRS: dict = {}
    SUBS: dict[str, type[Struct]] = {}
    #: (a message's class) its struct classes by schema type name, each also an attribute of the class
    NESTED: dict[str, type[Struct]] = {}
    #: (attribute, default, whether the default is a list to copy) of each field, in order
    DEFAULTS: tuple = ()
    #: (schema name, attribute, struct class or None, an array, read's extra key) of each field, in order
    PLAN: tuple = ()

    def __init__(self, **values):
        cls = type(self)
        if not cls.ATTRS.keys() >= values.keys():
            attr = next(a for a in values if a not in cls.ATTRS)
            raise UnknownField(self.WHERE, attr, (), names=[a for a in cls.ATTRS if a not in _EXTRA.values()])
        for attr, default, fresh in cls.DEFAULTS:
            setattr(self, attr, values[attr] if attr in values else list(default) if fresh else default)

    @classmethod
    def from_dict(cls: type[_S], d: dict) -> _S:
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
        """The PascalCase dict of this struct (``Message.build``'s input; a nested struct must be of its
        generated class: a dict there is refused, never half-converted)."""
        out = {}
        for name, attr, sub, array, extra in self.PLAN:
            v = getattr(self, attr)
            if sub is not None and v is not None:
                v = [_as_dict(x, sub) for x in v] if array else _as_dict(v, sub)
            if extra and not v:
                continue
            out[name] = v
        return out

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and self.to_dict() == other.to_dict()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{a}={getattr(self, a)!r}' for a in self.ATTRS)})"


def _as_dict(v, cls: type[Struct]) -> dict:
    if type(v) is not cls:
        raise TypeError(f"{cls.WHERE} takes {cls.__name__}, not {type(v).__name__}")
    return v.to_dict()


def _default(f):
    """A fresh default (a list default is never shared between instances)."""
    return list(f.default) if isinstance(f.default, list) else f.default


def _class(name: str, fields, structs: dict, where: str, made: dict) -> type[Struct]:
    """The class of one field list, its struct fields' classes made first; ``made``: the message's struct
    classes by type name (a struct used by two fields is one class; two different structs of one name
    in one message are refused, they would be one attribute of the message's class)."""
    table = {f.name: (snake(f.name), f) for f in fields}
    table.update({k: (a, F(k, "extra", "0+")) for k, a in _EXTRA.items()})
    subs = {}
    for f in fields:
        inner = f.fields if f.fields is not None else structs.get(f.type[2:] if f.type.startswith("[]") else f.type)
        if inner is not None:
            sub_name = f.type[2:] if f.type.startswith("[]") else f.type
            sub = made.get(sub_name)
            if sub is None:
                sub = made[sub_name] = _class(sub_name, inner, structs, f"{where}.{f.name}", made)
            elif [(g.name, g.type) for g in inner] != [(g.name, g.type) for _a, g in list(sub.FIELDS.values())[:len(inner)]]:
                raise TypeError(f"{where}: two structs named {sub_name}")
            subs[f.name] = sub
    attrs = {a: (n, f) for n, (a, f) in table.items()}
    defaults = tuple((a, f.default, isinstance(f.default, list)) for a, (_n, f) in attrs.items())
    plan = tuple((n, a, subs.get(n), f.type.startswith("[]"), n in _EXTRA) for n, (a, f) in table.items())
    return type(name, (Struct,), {"__slots__": tuple(attrs), "FIELDS": table, "ATTRS": attrs, "SUBS": subs,
                                  "WHERE": where, "DEFAULTS": defaults, "PLAN": plan})


def message_class(m: Message) -> type[Struct]:
    """The generated class of a message schema; its structs' classes are its attributes by their schema
    type name, as Kafka's generated ``FetchResponseData.PartitionData`` (``FetchResponse.PartitionData``)."""
    made: dict[str, type[Struct]] = {}
    cls = _class(m.name, m.fields, m.structs, m.name, made)
    for sub_name, sub in made.items():
        setattr(cls, sub_name, sub)
    cls.NESTED = made
    return cls


#: api key -> the typed request class; the typed response class
REQUEST_TYPES = {k: message_class(m) for k, m in P.REQUESTS.items()}
RESPONSE_TYPES = {k: message_class(m) for k, m in P.RESPONSES.items()}
#: the internal-topic records the replay broker writes and reads back itself (__transaction_state)
RECORD_TYPES = {m.name: message_class(m) for m in (KM.TransactionLogKey, KM.TransactionLogValue)}


def typed(api_key: int, body) -> Any:
    """The typed request of ``api_key`` for ``body`` (a dict as ``Message.read`` returns it, or typed already)."""
    return body if isinstance(body, Struct) else REQUEST_TYPES[api_key].from_dict(body)


def as_body(body) -> dict:
    """What ``Message.build`` takes: a response as its generated class made a PascalCase dict (the one
    encoding seam), a dict as it is."""
    return body.to_dict() if isinstance(body, Struct) else body


# -- the type checker's view: specs/messages.pyi, generated from the same classes -----------------

_PY_TYPES = {"bool": "bool", "float64": "float", "string": "str", "uuid": "str", "bytes": "str | bytes",
             "records": "Any", "extra": "dict | None"}


def _py_type(owner: type[Struct], name: str, f: F) -> str:
    """The annotation of one field: nullable (in any version) or defaulting to None adds ``| None``."""
    t = f.type[2:] if f.type.startswith("[]") else f.type
    sub = owner.SUBS.get(name)
    inner = f"{_top(owner)}.{sub.__name__}" if sub is not None else _PY_TYPES.get(t, "int")
    if f.type.startswith("[]"):
        inner = f"list[{inner}]"
    if inner != "Any" and (f.nullable is not None or f.default is None) and not inner.endswith("| None"):
        inner += " | None"
    return inner


def _top(cls: type[Struct]) -> str:
    return cls.WHERE.split(".")[0]


def _stub_class(cls: type[Struct], indent: str) -> list[str]:
    fields = [(a, _py_type(cls, n, f)) for n, (a, f) in cls.FIELDS.items()]
    out = [f"{indent}class {cls.__name__}(Struct):"]
    if cls.NESTED:
        for sub in cls.NESTED.values():
            out += _stub_class(sub, indent + "    ")
    out += [f"{indent}    {a}: {t}" for a, t in fields]
    args = "".join(f", {a}: {t} = ..." for a, t in fields)
    out.append(f"{indent}    def __init__(self, *{args}) -> None: ...")
    return out


def stub() -> str:
    """The text of ``specs/messages.pyi``: every request and response class with its fields' types, so a
    type checker refuses a misspelled attribute or keyword (``tests/test_message_types.py`` checks the
    committed file is this text; regenerate it with ``python -m specs.message_types``)."""
    lines = ['"""Generated from specs/protocol_messages.py by specs.message_types.stub(): do not edit."""',
             "from typing import Any", "", "from specs.message_types import Struct", ""]
    for cls in (*REQUEST_TYPES.values(), *RESPONSE_TYPES.values(), *RECORD_TYPES.values()):
        lines += ["", *_stub_class(cls, ""), ""]
    return "\n".join(lines).rstrip("\n") + "\n"


if __name__ == "__main__":
    import pathlib
    pathlib.Path(__file__).with_name("messages.pyi").write_text(stub())
