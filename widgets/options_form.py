"""A form built from a solver's options dataclass (:func:`viz_place.solvers.option_specs`).

``bool`` -> checkbox, ``choices`` -> dropdown, numbers -> text boxes checked by
the options class itself (so a bad value is refused with the solver's own
message, never clamped), optional fields -> blank means ``None``.

>>> from dataclasses import dataclass, field
>>> from viz_place.solvers import SolverOptions
>>> @dataclass(frozen=True)
... class Opts(SolverOptions):
...     time_limit: float = field(default=10.0, metadata={"help": "seconds", "min": 0.0})
...     backend: str = field(default="cbc", metadata={"choices": ("cbc", "highs")})
>>> form = OptionsForm(Opts)
>>> form.fields["time_limit"].value = "2.5"; form.options().time_limit
2.5
>>> form.fields["time_limit"].value = "-1"; form.options()
Traceback (most recent call last):
...
viz_place.errors.SolverError: option 'time_limit': -1.0 is below the minimum 0.0
"""
from __future__ import annotations

import json
import types
import typing
from typing import Any

import ipywidgets as W

from viz_place.errors import SolverError
from viz_place.solvers import make_options, option_specs

from .common import error_html, escape_text


def _base_type(tp: Any) -> tuple[Any, bool]:
    """(underlying type, optional?) of an annotation such as ``float | None``."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return (args[0] if len(args) == 1 else str), len(args) < len(typing.get_args(tp))
    if origin is typing.Literal:
        return str, False
    return tp, False


def _to_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (list, tuple, dict)):
        return json.dumps(value)
    return str(value)


class OptionsForm:
    """Widgets for every option field; :meth:`options` builds the validated dataclass."""

    def __init__(self, options_cls: type) -> None:
        self.options_cls = options_cls
        self.specs = option_specs(options_cls)
        self.fields: dict[str, W.Widget] = {}
        self.kinds: dict[str, tuple[Any, bool]] = {}
        rows = []
        for spec in self.specs:
            name, default = spec["name"], spec["default"]
            tp, optional = _base_type(spec.get("type"))
            if tp is None or tp is type(None):
                tp = type(default) if default is not None else str
            self.kinds[name] = (tp, optional)
            style = {"description_width": "140px"}
            layout = W.Layout(width="330px")
            if "choices" in spec:
                w = W.Dropdown(options=list(spec["choices"]), value=default, description=name, style=style,
                               layout=layout)
            elif tp is bool:
                w = W.Checkbox(value=bool(default), description=name, style=style, indent=True)
            else:
                w = W.Text(value=_to_text(default), description=name, style=style, layout=layout,
                           placeholder="none" if optional else "")
            w.tooltip = spec.get("help", "")
            self.fields[name] = w
            hint = spec.get("help", "")
            bounds = " ".join(f"{k} {spec[k]}" for k in ("min", "max") if k in spec)
            rows.append(W.HBox([w, W.HTML(f"<small>{escape_text(hint)}{' (' + bounds + ')' if bounds else ''}</small>")]))
        self.error = W.HTML()
        self.widget = W.VBox(rows + [self.error]) if rows else W.VBox([W.HTML("<small>no options</small>"), self.error])

    def values(self) -> dict[str, Any]:
        """Raw field values converted to the annotated types (bad text is passed on as text)."""
        out = {}
        for name, w in self.fields.items():
            tp, optional = self.kinds[name]
            v = w.value
            if isinstance(w, W.Text):
                t = v.strip()
                if optional and t.lower() in ("", "none"):
                    v = None
                elif tp is int:
                    v = _parse(t, int)
                elif tp is float:
                    v = _parse(t, float)
                elif tp in (list, tuple, dict) or typing.get_origin(tp) in (list, tuple, dict):
                    try:
                        v = json.loads(t)
                        v = tuple(v) if (tp is tuple or typing.get_origin(tp) is tuple) and isinstance(v, list) else v
                    except ValueError:
                        v = t
                else:
                    v = t
            out[name] = v
        return out

    def options(self):
        """The validated options instance; raises :class:`SolverError` naming the field."""
        values = self.values()
        for name, v in values.items():
            tp, optional = self.kinds[name]
            if isinstance(v, str) and tp in (int, float):
                raise SolverError(f"option {name!r}: {v!r} is not a number")
            if tp is int and isinstance(v, float):
                raise SolverError(f"option {name!r}: {v!r} is not a whole number")
        return make_options(self.options_cls, values)

    def check(self) -> bool:
        """Validate and show the problem under the form; returns success."""
        try:
            self.options()
        except (SolverError, TypeError, ValueError) as err:
            self.error.value = error_html(str(err))
            return False
        self.error.value = ""
        return True


def _parse(text: str, kind: type) -> Any:
    try:
        return kind(text)
    except ValueError:
        if kind is int:
            try:
                f = float(text)
                return int(f) if f.is_integer() else f
            except ValueError:
                return text
        return text
