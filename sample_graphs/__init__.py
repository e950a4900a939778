"""The shipped sample graphs (data only): installed as ``viz_place.sample_graphs``.

Read them through :func:`viz_place.samples.load_sample` (by name) or
:func:`viz_place.samples.sample_names`; ``make samples`` regenerates the files.

>>> from importlib import resources
>>> resources.files("viz_place.sample_graphs").joinpath("residual.json").is_file()
True
"""
