"""Shared test utilities: random small instances, the validity checks every solver's output goes through, and the
common checks over every registered solver (used by the test suite and by benchmarks).

* :mod:`.instances` — :func:`random_instance`, :func:`check_placement`, :func:`assert_valid`;
* :mod:`.solver_checks` — :func:`check_solver` (the idea of scikit-learn's ``check_estimator``).

>>> inst = random_instance(0)
>>> inst.graph.num_nodes > 0 and len(inst.cluster.classes) >= 2
True
"""
from .instances import Instance, assert_valid, check_placement, random_dag, random_instance
from .solver_checks import CHECKS, applicable_checks, check_solver, run_check, unavailable_reason

__all__ = ["Instance", "assert_valid", "check_placement", "random_dag", "random_instance",
           "CHECKS", "applicable_checks", "check_solver", "run_check", "unavailable_reason"]
