"""``python -m viz_place``: the same as the ``viz-place`` command."""
from .cli.entry import run

run()
