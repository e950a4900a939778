"""The devices editor: the device classes as an editable table.

Each field is a free text box, so nothing is silently clamped: every edit is
checked by :class:`viz_place.model.DeviceClass` and :class:`~viz_place.model.Cluster`;
an invalid entry is refused with the model's message under its row (the
field the error names in ``err.field`` is outlined in red) and the last valid
cluster stays in force. Memory is shown and typed in binary units (``2 GiB``,
``512 MiB``; a bare number is bytes).

>>> from viz_place.samples import make_graph
>>> from viz_place.widgets.state import ExplorerState
>>> ed = DevicesEditor(ExplorerState(make_graph("chain", 5)))
>>> ed.rows[0].fields["count"].value = "x"; ed.rows[0].error.value != ""
True
>>> ed.rows[0].fields["count"].layout.border
'2px solid #c0392b'
>>> ed.state.cluster.classes[0].count
4
>>> ed.rows[0].fields["count"].value = "4"; ed.rows[0].fields["memory"].value = "2 GiB"
>>> ed.state.cluster.classes[0].memory == 2 * 2**30, ed.rows[0].fields["memory"].value
(True, '2 GiB')
"""
from __future__ import annotations

import ipywidgets as W

from viz_place.errors import DeviceError, VizPlaceError
from viz_place.model import Cluster, DeviceClass
from viz_place.model.units import format_bytes, parse_bytes

from .common import error_html

FIELDS = ("name", "kind", "count", "memory", "speed", "pays_communication", "link_factor")


def _text(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _memory_text(value) -> str:
    return "" if value is None else format_bytes(value, exact=True)


def _parse_memory(text: str):
    """Bytes from ``2 GiB`` / ``512 MiB`` / a bare number; blank = unlimited; bad text is
    refused naming the field (never clamped)."""
    try:
        return parse_bytes(text)
    except ValueError as err:
        raise DeviceError(f"field 'memory': {err}", field="memory") from None


def _parse_number(text: str, *, integer: bool = False, blank_none: bool = False):
    """The number in ``text``, or the raw text (so the model names the problem)."""
    t = text.strip()
    if blank_none and t.lower() in ("", "none", "unlimited", "inf"):
        return None
    try:
        return int(t) if integer else float(t)
    except ValueError:
        return t


class DeviceRow:
    """One device class's widgets."""

    def __init__(self, cls: DeviceClass, on_change, on_remove) -> None:
        w = "110px"
        self.fields = {
            "name": W.Text(value=cls.name, layout=W.Layout(width=w)),
            "kind": W.Text(value=cls.kind, layout=W.Layout(width="80px")),
            "count": W.Text(value=_text(cls.count), layout=W.Layout(width="60px")),
            "memory": W.Text(value=_memory_text(cls.memory), placeholder="unlimited", layout=W.Layout(width=w),
                             tooltip="e.g. 2 GiB, 512 MiB (a bare number is bytes); blank = unlimited"),
            "speed": W.Text(value=_text(cls.speed), layout=W.Layout(width="60px")),
            "pays_communication": W.Checkbox(value=cls.pays_communication, indent=False,
                                             layout=W.Layout(width="70px")),
            "link_factor": W.Text(value=_text(cls.link_factor), layout=W.Layout(width="60px")),
        }
        for f in self.fields.values():
            f.continuous_update = False
            f.observe(lambda _c: on_change(), "value")
        self.remove = W.Button(icon="trash", tooltip="remove this class", layout=W.Layout(width="40px"))
        self.remove.on_click(lambda _b: on_remove(self))
        self.error = W.HTML(layout=W.Layout(margin="0 0 4px 4px"))
        # The message goes under the row (beside it, a long message squeezed the fields).
        self.box = W.VBox([W.HBox([*self.fields.values(), self.remove]), self.error],
                          layout=W.Layout(width="100%"))

    def device_class(self) -> DeviceClass:
        f = self.fields
        return DeviceClass(name=f["name"].value.strip(), kind=f["kind"].value.strip(),
                           count=_parse_number(f["count"].value, integer=True),
                           memory=_parse_memory(f["memory"].value),
                           speed=_parse_number(f["speed"].value),
                           pays_communication=bool(f["pays_communication"].value),
                           link_factor=_parse_number(f["link_factor"].value))

    def mark(self, err: VizPlaceError | str | None, field: str | None = None) -> None:
        """Show ``err`` under the row and outline the field it names (``field``, else
        ``err.field``) in red; ``None`` clears."""
        field = field or getattr(err, "field", None)
        for name, f in self.fields.items():
            f.layout.border = "2px solid #c0392b" if err is not None and field == name else ""
        self.error.value = error_html(str(err)) if err is not None else ""

    def show_valid(self, cls: DeviceClass) -> None:
        """Normalise the memory text to human units once the row is valid (``2147483648`` -> ``2 GiB``)."""
        text = _memory_text(cls.memory)
        if self.fields["memory"].value != text:
            self.fields["memory"].value = text


class DevicesEditor:
    """Editable table of device classes bound to an explorer state."""

    def __init__(self, state) -> None:
        self.state = state
        self.rows: list[DeviceRow] = []
        self.table = W.VBox()
        self.add_button = W.Button(description="Add class", icon="plus")
        self.add_button.on_click(lambda _b: self.add_class())
        self.message = W.HTML()
        header = W.HBox([W.HTML(f"<b>{t}</b>", layout=W.Layout(width=wd)) for t, wd in (
            ("name", "110px"), ("kind", "80px"), ("count", "60px"), ("memory", "110px"), ("speed", "60px"),
            ("pays comm.", "70px"), ("link", "60px"))])
        help_ = W.HTML("<small>kind = which latency of the graph the class uses "
                       f"(this graph has: {', '.join(state.graph.kinds) or 'none'}); memory blank = unlimited; "
                       "latency on a class = the kind's latency / speed.</small>")
        self.help = help_
        self.widget = W.VBox([header, self.table, W.HBox([self.add_button, self.message]), help_])
        self._syncing = False
        state.on("cluster", lambda s, **_: self._sync_from_state())
        state.on("graph", lambda s, **_: self._sync_from_state())
        self._sync_from_state()

    def _sync_from_state(self) -> None:
        """Rebuild the rows from the state's cluster (after undo, load...)."""
        if self._syncing:
            return
        if self.rows and self._current_cluster() == self.state.cluster:
            return
        self.rows = [DeviceRow(c, self._apply, self._remove) for c in self.state.cluster.classes]
        self.table.children = [r.box for r in self.rows]
        self.message.value = ""
        self.help.value = ("<small>kind = which latency of the graph the class uses "
                           f"(this graph has: {', '.join(self.state.graph.kinds) or 'none'}); memory blank = "
                           "unlimited; latency on a class = the kind's latency / speed.</small>")

    def _current_cluster(self) -> Cluster | None:
        try:
            return Cluster(tuple(r.device_class() for r in self.rows))
        except VizPlaceError:
            return None

    def _apply(self) -> bool:
        """Validate every row; install the cluster if all are valid. Returns success."""
        classes, ok = [], True
        for r in self.rows:
            try:
                classes.append(r.device_class())
                r.mark(None)
            except VizPlaceError as err:
                r.mark(err)
                ok = False
        if not ok:
            self.message.value = error_html("not applied: fix the marked field; the last valid devices stay in force")
            return False
        problem = self._check_pins(classes)
        if problem is not None:
            self.message.value = error_html(f"not applied: {problem}; the last valid devices stay in force")
            return False
        try:
            cluster = Cluster(tuple(classes))
            self._syncing = True
            try:
                self.state.set_cluster(cluster)
            finally:
                self._syncing = False
        except VizPlaceError as err:
            self._mark_cluster_error(err)
            self.message.value = error_html(f"not applied: {err}; the last valid devices stay in force")
            return False
        self.message.value = ""
        self._syncing = True
        try:
            for r, c in zip(self.rows, classes):
                r.show_valid(c)
        finally:
            self._syncing = False
        return True

    def _check_pins(self, classes) -> str | None:
        """Why the new classes would remove a device a node is pinned to (marking the row's
        count field), or ``None`` when every pin keeps its device."""
        pins = self.state.pins
        names = {c.name for c in classes}
        for r, c in zip(self.rows, classes):
            lost = sorted({d for d in pins.values() if d.startswith(f"{c.name}:")
                           and d[len(c.name) + 1:].isdigit() and int(d[len(c.name) + 1:]) >= c.count},
                          key=lambda d: int(d.split(":")[1]))
            if lost:
                nodes = [n for n, d in pins.items() if d == lost[-1]]
                need = int(lost[-1].split(":")[1]) + 1
                msg = (f"field 'count': {c.count} would remove {lost[-1]}, where node {nodes[0]!r} is pinned; "
                       f"keep count >= {need} or unpin it first")
                r.mark(msg, "count")
                return msg
        for n, d in pins.items():
            cname = d.rsplit(":", 1)[0]
            if cname not in names:
                return f"class {cname!r} holds pinned device {d} (node {n!r}); unpin it first"
        return None

    def _mark_cluster_error(self, err) -> None:
        """Outline the row (and field) a cluster-level error names (its ``device`` or ``field``)."""
        device = getattr(err, "device", None)
        cname = device.rsplit(":", 1)[0] if isinstance(device, str) else None
        for r in self.rows:
            if cname is not None and r.fields["name"].value.strip() == cname:
                r.mark(str(err), getattr(err, "field", None) or "count")

    def add_class(self, kind: str | None = None) -> None:
        """Append a class (one device of the graph's first kind) and apply."""
        names = {r.fields["name"].value for r in self.rows}
        i = 1
        while f"dev{i}" in names:
            i += 1
        kind = kind or (self.state.graph.kinds[0] if self.state.graph.kinds else "cpu")
        row = DeviceRow(DeviceClass(f"dev{i}", kind, count=1), self._apply, self._remove)
        self.rows.append(row)
        self.table.children = [r.box for r in self.rows]
        self._apply()

    def _remove(self, row: DeviceRow) -> None:
        rows = [r for r in self.rows if r is not row]
        keep = self.rows
        self.rows = rows
        if not self._apply():
            self.rows = keep   # refused (e.g. pins on it, or last class): keep the row
            return
        self.table.children = [r.box for r in self.rows]
