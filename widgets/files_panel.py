"""Load graphs (samples, uploads, paths), export placements, save/restore the session.

Uploads are written to a temporary file with their own suffix and read by
:func:`viz_place.io.load_graph` (the paper's JSON, node-link JSON, ONNX).
Exports use the :mod:`viz_place.io` writers (atomic) and are also offered as a
download link.

>>> from viz_place.samples import make_graph
>>> from viz_place.widgets.state import ExplorerState
>>> f = FilesPanel(ExplorerState(make_graph("chain", 5)))
>>> sorted(EXPORT_FORMATS)
['csv', 'ours', 'paper']
"""
from __future__ import annotations

import base64
import json
import os
import tempfile
from pathlib import Path

import ipywidgets as W

from viz_place.errors import InputFormatError, VizPlaceError
from viz_place.io import (load_graph, placement_to_csv, placement_to_dict, split_from_placement, write_paper_split,
                          write_placement, write_placement_csv)
from viz_place.samples import load_sample, sample_names

from .common import error_html, escape_text, ok_html
from .session import restore_session, save_session

EXPORT_FORMATS = {"ours": ("placement JSON (viz_place)", ".json"), "paper": ("the paper's split JSON", ".split.json"),
                  "csv": ("CSV (node,name,op_type,device,pinned)", ".csv")}


def export_text(state, fmt_: str) -> str:
    """The exported file's content for format ``fmt_`` (``ours``, ``paper``, ``csv``)."""
    s = state
    if fmt_ == "ours":
        return json.dumps(placement_to_dict(s.graph, s.cluster, s.placement, pins=s.pins, evaluation=s.evaluation),
                          indent=1, default=_json_default)
    if fmt_ == "paper":
        return json.dumps(split_from_placement(s.graph, s.cluster, s.placement, s.evaluation.max_load,
                                               evaluation=s.evaluation), indent=1)
    if fmt_ == "csv":
        return placement_to_csv(s.graph, s.placement, s.pins)
    raise InputFormatError(f"unknown export format {fmt_!r}; choose one of {sorted(EXPORT_FORMATS)}")


def _json_default(x):
    return None


def download_link(filename: str, text: str, mime: str) -> str:
    data = base64.b64encode(text.encode("utf-8")).decode("ascii")
    return (f'<a download="{escape_text(filename)}" href="data:{mime};base64,{data}" target="_blank">'
            f'&#11015; download {escape_text(filename)}</a>')


class FilesPanel:
    def __init__(self, state, *, workdir: str | os.PathLike = ".") -> None:
        self.state = state
        self.workdir = Path(workdir)
        self.sample = W.Dropdown(options=sample_names(), description="sample", layout=W.Layout(width="260px"))
        self.load_sample_button = W.Button(description="Load sample")
        self.upload = W.FileUpload(accept=".json,.onnx", multiple=False, description="Upload graph")
        self.path = W.Text(placeholder="or a path: graph.json / model.onnx", layout=W.Layout(width="320px"),
                           continuous_update=False)
        self.load_path_button = W.Button(description="Load path")
        self.load_message = W.HTML()
        self.export_format = W.Dropdown(options=[(v[0], k) for k, v in EXPORT_FORMATS.items()], value="ours",
                                        description="format", layout=W.Layout(width="330px"))
        self.export_path = W.Text(description="to", layout=W.Layout(width="420px"))
        self.export_button = W.Button(description="Export", icon="download")
        self.export_message = W.HTML()
        self.session_path = W.Text(description="session", layout=W.Layout(width="420px"))
        self.save_button = W.Button(description="Save session", icon="save")
        self.restore_button = W.Button(description="Restore session", icon="folder-open")
        self.autosave = W.Checkbox(value=False, description="autosave after every change", indent=False)
        self.session_message = W.HTML()
        self.load_sample_button.on_click(lambda _b: self.load_sample())
        self.load_path_button.on_click(lambda _b: self.load_path())
        self.upload.observe(self._on_upload, "value")
        self.export_format.observe(lambda _c: self._default_paths(), "value")
        self.export_button.on_click(lambda _b: self.export())
        self.save_button.on_click(lambda _b: self.save())
        self.restore_button.on_click(lambda _b: self.restore())
        for ev in ("placement", "history"):
            state.on(ev, lambda s, **_: self._autosave())
        state.on("graph", lambda s, **_: self._default_paths())
        self._default_paths()
        self.widget = W.VBox([
            W.HTML("<b>Load a graph</b>"),
            W.HBox([self.sample, self.load_sample_button, self.upload]),
            W.HBox([self.path, self.load_path_button]), self.load_message,
            W.HTML("<b>Export the placement</b>"),
            W.HBox([self.export_format, self.export_path, self.export_button]), self.export_message,
            W.HTML("<b>Session</b> <small>(graph, devices, pins, placement, history in one JSON file)</small>"),
            W.HBox([self.session_path, self.save_button, self.restore_button, self.autosave]),
            self.session_message])

    def _default_paths(self) -> None:
        name = self.state.graph.name
        suffix = EXPORT_FORMATS[self.export_format.value][1]
        self.export_path.value = str(self.workdir / "exports" / f"{name}_placement{suffix}")
        if not self.session_path.value:
            self.session_path.value = str(self.workdir / "sessions" / "explorer.session.json")

    # --- loading -----------------------------------------------------------------------
    def _load(self, make, label: str) -> bool:
        try:
            graph = make()
            self.state.set_graph(graph)
        except VizPlaceError as err:
            self.load_message.value = error_html(f"{label}: {err}")
            return False
        self.load_message.value = ok_html(f"loaded {label}: {graph.num_nodes} nodes, {graph.num_edges} edges")
        return True

    def load_sample(self, name: str | None = None) -> bool:
        name = name or self.sample.value
        return self._load(lambda: load_sample(name), f"sample {name!r}")

    def load_path(self, path: str | None = None) -> bool:
        path = path or self.path.value.strip()
        if not path:
            self.load_message.value = error_html("type a path first")
            return False
        return self._load(lambda: load_graph(path), path)

    def load_bytes(self, filename: str, content: bytes) -> bool:
        """Load an uploaded file (suffix chooses the reader)."""
        suffix = Path(filename).suffix or ".json"
        stem = Path(filename).stem or "upload"
        with tempfile.TemporaryDirectory() as d:
            tmp = Path(d) / f"{stem}{suffix}"
            tmp.write_bytes(bytes(content))
            return self._load(lambda: load_graph(tmp), filename)

    def _on_upload(self, change) -> None:
        files = change["new"]
        if not files:
            return
        f = files[0]
        self.load_bytes(f["name"], f["content"])

    # --- export ----------------------------------------------------------------------------
    def export(self, fmt_: str | None = None, path: str | None = None) -> Path | None:
        """Write the placement to disk and offer it as a download; returns the path."""
        fmt_ = fmt_ or self.export_format.value
        target = Path(path or self.export_path.value).expanduser()
        s = self.state
        try:
            text = export_text(s, fmt_)
            if fmt_ == "ours":
                write_placement(target, s.graph, s.cluster, s.placement, pins=s.pins, evaluation=s.evaluation)
            elif fmt_ == "paper":
                write_paper_split(target, s.graph, s.cluster, s.placement, s.evaluation.max_load,
                                  evaluation=s.evaluation)
            else:
                write_placement_csv(target, s.graph, s.placement, s.pins)
        except (VizPlaceError, OSError, ValueError) as err:
            self.export_message.value = error_html(f"export failed: {err}")
            return None
        mime = "text/csv" if fmt_ == "csv" else "application/json"
        self.export_message.value = ok_html(f"wrote {target.resolve()} ") + download_link(target.name, text, mime)
        return target

    # --- session ---------------------------------------------------------------------------
    def save(self, path: str | None = None) -> Path | None:
        target = Path(path or self.session_path.value).expanduser()
        try:
            save_session(self.state, target)
        except (VizPlaceError, OSError, ValueError) as err:
            self.session_message.value = error_html(f"save failed: {err}")
            return None
        self.session_message.value = ok_html(f"session saved to {target.resolve()}")
        return target

    def restore(self, path: str | None = None) -> bool:
        target = Path(path or self.session_path.value).expanduser()
        try:
            restore_session(self.state, target)
        except (VizPlaceError, OSError) as err:
            self.session_message.value = error_html(f"restore failed: {err}")
            return False
        self.session_message.value = ok_html(f"session restored from {target}")
        return True

    def _autosave(self) -> None:
        if self.autosave.value:
            self.save()
