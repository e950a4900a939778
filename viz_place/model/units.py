"""Memory sizes for people: shown and entered in binary units (``2 GiB``, ``512 MiB``).

Sizes in the model are plain numbers of bytes (the graph's ``size`` unit).
:func:`format_bytes` writes them with a binary unit; :func:`parse_bytes` reads
what a person types — a bare number (bytes), or a number with a unit, binary
(``KiB``, ``MiB``, ``GiB``, ``TiB``, also ``K``/``M``/``G``/``T``) or decimal
(``kB``, ``MB``, ``GB``, ``TB``) — and refuses anything else with a message
saying what it expected.

>>> format_bytes(2 * 2**30), format_bytes(414187520), format_bytes(512.0), format_bytes(None)
('2 GiB', '395 MiB', '512 B', '-')
>>> parse_bytes("2 GiB"), parse_bytes("512MiB"), parse_bytes("1.5e3"), parse_bytes("2 GB")
(2147483648.0, 536870912.0, 1500.0, 2000000000.0)
>>> format_bytes(459067000), format_bytes(459067000, exact=True)
('437.8 MiB', '437.800407 MiB')
>>> parse_bytes(format_bytes(459067000, exact=True)) == 459067000   # a size with a unit is whole bytes
True
>>> parse_bytes("two")
Traceback (most recent call last):
...
ValueError: 'two' is not a size: expected a number of bytes or a number with a unit (B, KiB, MiB, GiB, TiB, kB, MB, GB, TB), e.g. '2 GiB'
"""
from __future__ import annotations

import math
import re

_BINARY = (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10))
_UNITS = {"b": 1, "": 1,
          "k": 2**10, "kib": 2**10, "m": 2**20, "mib": 2**20, "g": 2**30, "gib": 2**30, "t": 2**40, "tib": 2**40,
          "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12}
_SIZE_RE = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([A-Za-z]*)\s*$")


def format_bytes(x: float | None, *, exact: bool = False) -> str:
    """A size with the largest binary unit that keeps it >= 1, to 4 significant digits;
    with ``exact``, enough digits that :func:`parse_bytes` reads back the same number of
    bytes (to within half a byte) — for a field a person may edit and send back."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if math.isinf(x):
        return "unlimited" if x > 0 else "-inf"
    for unit, scale in _BINARY:
        if abs(x) >= scale:
            return f"{_digits(x / scale, scale) if exact else f'{x / scale:.4g}'} {unit}"
    return f"{int(x)} B" if float(x).is_integer() else f"{x:.6g} B"


def _digits(v: float, scale: int) -> str:
    if float(v).is_integer():
        return str(int(v))
    for d in (3, 4, 5, 6, 7, 8, 9, 10, 12, 15):
        text = f"{v:.{d}g}"
        if abs(float(text) * scale - v * scale) < 0.5:
            return text
    return repr(v)


def parse_bytes(text: str | float | int | None) -> float | None:
    """Bytes from a size typed by a person; ``None`` for blank / ``unlimited``.

    Raises ``ValueError`` (with the reason) for text that is not a size; negative
    sizes are passed on so the model can refuse them with its own message.
    """
    if text is None:
        return None
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return float(text)
    t = str(text).strip()
    if t.lower() in ("", "none", "unlimited", "inf", "infinity"):
        return None
    m = _SIZE_RE.match(t)
    if m is None or m.group(2).lower() not in _UNITS:
        units = "B, KiB, MiB, GiB, TiB, kB, MB, GB, TB"
        raise ValueError(f"{t!r} is not a size: expected a number of bytes or a number with a unit ({units}), "
                         f"e.g. '2 GiB'")
    scale = _UNITS[m.group(2).lower()]
    value = float(m.group(1)) * scale
    return float(round(value)) if scale > 1 else value
