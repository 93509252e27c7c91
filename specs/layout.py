"""Fixed-width layouts and bit fields as (field, struct code) tables: the struct the fast paths read with,
and the construct Struct the schemas in :mod:`specs.schemas` are made from."""
from __future__ import annotations

import struct
from typing import TYPE_CHECKING

from .lazy import lazy

if TYPE_CHECKING:  # the annotation's; at run time numpy is imported on first use (np below)
    import numpy

np = lazy("numpy", globals())

#: struct codes of the fixed-width integers (big-endian, standard sizes) and numpy's name of each
_NUMPY_CODES = {"q": "i8", "Q": "u8", "l": "i4", "L": "u4", "i": "i4", "I": "u4", "h": "i2", "H": "u2",
                "b": "i1", "B": "u1"}
FIELD_CODES = frozenset("qQlLhHbB")


class Layout:
    """A run of big-endian fixed-width fields, declared once: :attr:`struct` is what the fast paths
    read with, ``specs.primitives.fixed(layout)`` the construct Struct of the same fields
    (``tests/test_specs.py`` checks ``struct_of`` of that Struct gives the struct back)."""

    def __init__(self, *fields: tuple[str, str]):
        for name, code in fields:
            if code not in FIELD_CODES:
                raise ValueError(f"{name}: {code!r} is not a fixed-width integer code")
        self.fields = tuple(fields)
        self.names = tuple(name for name, _ in fields)
        self.struct = struct.Struct(">" + "".join(code for _, code in fields))

    def offset(self, name: str) -> int:
        """Byte offset of field ``name``."""
        codes = ""
        for field, code in self.fields:
            if field == name:
                return struct.calcsize(">" + codes)
            codes += code
        raise KeyError(name)


class Bits:
    """Bit fields of an attributes integer, declared once from bit 0 (the least significant) up:
    :meth:`mask` and :meth:`names_of` are what the fast paths use, ``specs.primitives.bit_fields(bits)``
    the construct BitStruct of the same bits (``tests/test_specs.py`` checks them against each other)."""

    def __init__(self, width: int, *fields: tuple):
        self.width = width
        self.fields = tuple((f[0], f[1], tuple(f[2]) if len(f) > 2 else None) for f in fields)
        if sum(w for _, w, _ in self.fields) > width:
            raise ValueError("bit fields wider than the integer")

    def mask(self, name: str) -> int:
        """The mask of field ``name`` within the integer."""
        low = 0
        for field, w, _ in self.fields:
            if field == name:
                return ((1 << w) - 1) << low
            low += w
        raise KeyError(name)

    def names_of(self, name: str) -> tuple[str, ...]:
        """The value names of an enumerated field, by value; KeyError for a field that is not one (absent,
        or a flag with no value names), as :meth:`mask` raises for an absent field."""
        for field, _, names in self.fields:
            if field == name and names is not None:
                return names
        raise KeyError(f"{name}: not an enumerated field")


def numpy_dtype(st: struct.Struct, names) -> "numpy.dtype":
    """The numpy record type of a layout's struct (big-endian, unpadded), for columns."""
    return np.dtype([(name, ">" + _NUMPY_CODES[code]) for name, code in zip(names, st.format[1:])])


#: Java's integer limits (``Integer.MAX_VALUE`` ...): a relative offset must fit an int32, sequences wrap past it
INT32_MAX = 2**31 - 1
INT32_MIN = -2**31
INT64_MAX = 2**63 - 1
