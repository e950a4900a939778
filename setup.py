"""Only the compiled parts of viz_place: the DP's kernel and the set bound's exact pricing (everything else is
configured in pyproject.toml).

Both extensions are optional at run time: when the kernel is missing (no C compiler at install), the DP runs its
numpy kernel and says so (``stats["kernel"] == "numpy"``); without the pricing DP the set bound prices with its
MILP alone.
"""
from setuptools import Extension, setup

setup(ext_modules=[Extension(
    "viz_place.solvers.dp._kernel",
    sources=["viz_place/solvers/dp/_kernel.c", "viz_place/solvers/dp/_kernel_tables.c",
             "viz_place/solvers/dp/_kernel_ideals.c"],
    depends=["viz_place/solvers/dp/_kernel.h"],
    # no fused multiply-add: the kernel's floating-point results must be the numpy kernel's, bit for bit
    extra_compile_args=["-O3", "-ffp-contract=off", "-std=c11", "-Wall"],
    optional=True), Extension(
    "viz_place.solvers.milp._pricing",
    sources=["viz_place/solvers/milp/_pricing.c", "viz_place/solvers/milp/_pricing_tables.c",
             "viz_place/solvers/milp/_pricing_local.c"],
    depends=["viz_place/solvers/milp/_pricing.h"],
    # no fused multiply-add (as -std=c11 already implies): the local search's loads must be the Python loop's
    extra_compile_args=["-O3", "-ffp-contract=off", "-std=c11", "-Wall"],
    optional=True)])
