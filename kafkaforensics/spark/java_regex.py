"""Java's regular expressions as Python reads them: whether a ``--search`` pattern (a Java regular
expression, what Spark's ``rlike`` compiles) means the same to Python's ``re``, and so may run with no
Spark (:func:`python_pattern`; the scan's engine asks it, ``engine.ScanAsk.search_here``)."""
from __future__ import annotations

import re

#: what Java's ``.`` does not match (its line terminators; Python's ``.`` excludes only ``\n``)
_JAVA_DOT = "[^\n\r\u0085\u2028\u2029]"
#: the escapes that mean the same in Java's and Python's regular expressions (ASCII classes: Java's
#: default, Python's with ``re.ASCII``), and escaped punctuation
_SAME_ESCAPES = set("dDwWsSbBtnrf") | set("\\.[](){}*+?|^$/-,:;!'\"#%&@<>=~`_ ")
_QUANTIFIER = re.compile(r"\{\d+(,\d*)?\}")


def python_pattern(pattern: str) -> str | None:
    r"""``pattern`` (a Java regular expression) as a Python one that matches the same strings (with
    ``re.ASCII``), or None when it uses what the two read differently or Python cannot be trusted
    to read as Java does (a group construct ``(?``, ``$``, ``\p``/``\Q``/``\z``..., possessive
    quantifiers, nested or intersected classes): such a search runs on Spark, as Java reads it."""
    out, i, n = [], 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "\\":
            if i + 1 >= n or pattern[i + 1] not in _SAME_ESCAPES:
                return None
            out.append(pattern[i:i + 2])
            i += 2
        elif ch == "[":
            j = _class_end(pattern, i)
            if j is None:
                return None
            out.append(pattern[i:j + 1])
            i = j + 1
        elif ch == ".":
            out.append(_JAVA_DOT)
            i += 1
        elif ch == "$" or pattern.startswith("(?", i):
            return None
        elif ch == "{":
            m = _QUANTIFIER.match(pattern, i)
            if m is None:
                return None
            out.append(m.group())
            i = m.end()
        else:
            out.append(ch)
            i += 1
        if i < n and pattern[i] == "+" and pattern[i - 1] in "*+?}" and out[-1] not in ("\\*", "\\+", "\\?", "\\}"):
            return None  # possessive
    try:
        re.compile("".join(out), re.ASCII)
    except re.error:
        return None
    return "".join(out)


def _class_end(pattern: str, start: int) -> int | None:
    """The index of the ``]`` closing the character class at ``start``, or None for one Java and
    Python may read differently (nested, intersected, starting with ``]``, an escape not both read
    alike) or that is not closed."""
    i = start + 1
    if pattern.startswith("^", i):
        i += 1
    if pattern.startswith("]", i):
        return None
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            if i + 1 >= len(pattern) or pattern[i + 1] not in _SAME_ESCAPES:
                return None
            i += 2
            continue
        if ch == "[" or pattern.startswith("&&", i):
            return None
        if ch == "]":
            return i
        i += 1
    return None
