"""Sweep results: a CSV file appended (and flushed to disk) one row per finished cell, read
back for ``--resume``, and :class:`SweepTable`, the table a sweep returns.

A sweep killed at any moment loses at most the row being written: rows are appended
with one ``write`` each, flushed and ``fsync``-ed; a torn last line (no newline) is cut off
when the file is opened again.

>>> import os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "r.csv")
>>> store = ResultStore(path)
>>> store.append({"key": "k1", "graph": "g", "value": 1.5, "status": "optimal", "options": {"seed": 0}})
>>> store.close()
>>> [(r["key"], r["value"], r["options"]) for r in read_rows(path)]
[('k1', 1.5, {'seed': 0})]
"""
from __future__ import annotations

import csv
import io
import json
import math
import os
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from ..errors import InputFormatError
from ..io.atomic import atomic_write_text

#: Columns of a results file, in order (the issue's ten first, then what explains them).
COLUMNS = ("graph", "devices", "solver", "options", "value", "status", "bound", "gap", "seconds", "worker",
           "accelerators", "seed", "objective", "feasible", "bound_source", "solver_bound", "solver_bound_set",
           "cpu_seconds", "message", "key", "graph_hash", "devices_json")
_FLOATS = ("value", "bound", "gap", "seconds", "solver_bound", "cpu_seconds")
_INTS = ("accelerators", "seed")
_JSON = ("options", "devices_json")


def encode(row: Mapping[str, Any]) -> list[str]:
    out = []
    for c in COLUMNS:
        v = row.get(c)
        if v is None:
            out.append("")
        elif c in _JSON:
            out.append(json.dumps(v, sort_keys=True, separators=(",", ":")))
        elif isinstance(v, bool):
            out.append("true" if v else "false")
        elif isinstance(v, float):
            out.append(repr(v) if math.isfinite(v) else ("inf" if v > 0 else "-inf" if v < 0 else "nan"))
        else:
            out.append(str(v).replace("\r", " ").replace("\n", " "))
    return out


def decode(rec: Mapping[str, str]) -> dict[str, Any]:
    row: dict[str, Any] = {}
    for c in COLUMNS:
        s = rec.get(c, "")
        if s == "" or s is None:
            row[c] = {} if c == "options" else ("" if c in ("bound_source", "message") else None)
        elif c in _FLOATS:
            row[c] = float(s)
        elif c in _INTS:
            row[c] = int(s)
        elif c in _JSON:
            row[c] = json.loads(s)
        elif c == "feasible":
            row[c] = s == "true"
        else:
            row[c] = s
    return row


def _line(row: Mapping[str, Any]) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(encode(row))
    return buf.getvalue()


def _header() -> str:
    return ",".join(COLUMNS) + "\n"


def repair_tail(path: str | os.PathLike) -> int:
    """Cut a torn last line (a kill during a write); returns the bytes removed."""
    p = Path(path)
    data = p.read_bytes()
    if not data or data.endswith(b"\n"):
        return 0
    keep = data.rfind(b"\n") + 1
    with open(p, "r+b") as fh:
        fh.truncate(keep)
    return len(data) - keep


def read_rows(path: str | os.PathLike) -> list[dict[str, Any]]:
    """Rows of a results file (a torn last line is ignored)."""
    p = Path(path)
    text = p.read_text(encoding="utf-8")
    if text and not text.endswith("\n"):
        text = text[: text.rfind("\n") + 1]
    if not text:
        return []
    reader = csv.DictReader(io.StringIO(text))
    if tuple(reader.fieldnames or ()) != COLUMNS:
        raise InputFormatError(f"{p}: not a viz-place sweep results file (its header is not {','.join(COLUMNS[:4])},...); "
                               "choose another --out")
    rows = []
    for n, rec in enumerate(reader, start=2):
        try:
            rows.append(decode(rec))
        except (ValueError, TypeError) as err:
            raise InputFormatError(f"{p}: line {n}: unreadable row ({err})") from None
    return rows


class ResultStore:
    """Append-only results file. ``resume=True`` keeps an existing file's rows."""

    def __init__(self, path: str | os.PathLike, *, resume: bool = False) -> None:
        self.path = Path(path)
        self.previous: list[dict[str, Any]] = []
        if self.path.exists() and self.path.stat().st_size > 0:
            if not resume:
                raise InputFormatError(f"{self.path} exists; pass --resume (resume=True) to continue that sweep, "
                                       "or choose another --out")
            repair_tail(self.path)
            self.previous = read_rows(self.path)
            self._fh = open(self.path, "a", encoding="utf-8", newline="")
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = open(self.path, "w", encoding="utf-8", newline="")
            self._write(_header())

    def _write(self, text: str) -> None:
        self._fh.write(text)
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def append(self, row: Mapping[str, Any]) -> None:
        self._write(_line(row))

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.close()

    def rewrite(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """Replace the file's content with ``rows`` (atomically)."""
        self.close()
        atomic_write_text(self.path, _header() + "".join(_line(r) for r in rows))


def latest_by_key(rows: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """The last row of each cell key (a retried cell's newer row wins)."""
    out: dict[str, dict[str, Any]] = {}
    for r in rows:
        if r.get("key"):
            out[r["key"]] = dict(r)
    return out


class SweepTable(Sequence):
    """The rows of a sweep (dicts with :data:`COLUMNS`), in plan order.

    >>> t = SweepTable([{"solver": "dp", "accelerators": 2, "value": 3.0, "status": "optimal"},
    ...                 {"solver": "dp", "accelerators": 4, "value": 2.0, "status": "optimal"}])
    >>> len(t), t.column("value"), t.series()
    (2, [3.0, 2.0], {'dp': ([2, 4], [3.0, 2.0])})
    """

    def __init__(self, rows: Iterable[Mapping[str, Any]], *, skipped: int = 0, path: str | None = None,
                 cancelled: bool = False, dashboard: str | None = None) -> None:
        self.rows = [dict(r) for r in rows]
        self.skipped, self.path, self.cancelled, self.dashboard = skipped, path, cancelled, dashboard

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i):
        return self.rows[i]

    @property
    def columns(self) -> tuple[str, ...]:
        return COLUMNS

    def column(self, name: str) -> list[Any]:
        return [r.get(name) for r in self.rows]

    def series(self, x: str = "accelerators", by: Sequence[str] = ("solver",), y: str = "value"
               ) -> dict[str, tuple[list, list]]:
        """``{label: (xs, ys)}`` sorted by x, one series per value of ``by`` (rows without a
        finite ``y`` are left out) — what the explorer plots."""
        out: dict[str, list[tuple]] = {}
        for r in self.rows:
            v = r.get(y)
            if not isinstance(v, (int, float)) or not math.isfinite(v) or r.get(x) is None:
                continue
            label = " / ".join(str(r.get(b)) for b in by)
            out.setdefault(label, []).append((r[x], v))
        return {k: ([a for a, _ in sorted(pts)], [b for _, b in sorted(pts)]) for k, pts in out.items()}

    def to_pandas(self):
        """A ``pandas.DataFrame`` (needs pandas, not a dependency of viz_place)."""
        import pandas as pd
        return pd.DataFrame(self.rows, columns=list(COLUMNS))

    def to_records(self) -> list[dict[str, Any]]:
        return [dict(r) for r in self.rows]

    def _repr_html_(self) -> str:
        from html import escape
        cols = ("graph", "devices", "solver", "seed", "value", "status", "bound", "gap", "seconds", "worker")
        head = "".join(f"<th>{c}</th>" for c in cols)
        body = "".join("<tr>" + "".join(f"<td>{escape(_fmt(r.get(c)))}</td>" for c in cols) + "</tr>"
                       for r in self.rows)
        return f"<table><tr>{head}</tr>{body}</table>"

    def __repr__(self) -> str:
        return f"SweepTable({len(self.rows)} rows, {self.skipped} resumed)"


def _fmt(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)
