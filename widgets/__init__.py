"""The JupyterLab explorer (installed as ``viz_place.widgets``).

``PlacementExplorer(graph_or_path)`` shows the graph coloured by device and
lets you edit devices, pin and move nodes, run every registered solver in the
background, compare runs and export. Thin views over
:class:`~viz_place.widgets.state.ExplorerState`; every number comes from
:mod:`viz_place.cost`.

>>> from viz_place.widgets import PlacementExplorer, ExplorerState
"""
from .common import load_bokehjs
from .explorer import PlacementExplorer, resolve_graph
from .session import restore_session, save_session
from .state import ExplorerState

__all__ = ["PlacementExplorer", "ExplorerState", "load_bokehjs", "resolve_graph", "save_session",
           "restore_session"]
