/* Shared by the _pricing module's two files: _pricing.c (the exact label DP, and the module's method table) and
 * _pricing_local.c (the local search). */
#ifndef VIZ_PLACE_MILP_PRICING_H
#define VIZ_PLACE_MILP_PRICING_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* local_improve(price, T, start, load, mem, cap, cand, ...) -> set bytes (see _pricing_local.c) */
PyObject *local_improve(PyObject *self, PyObject *args);

#endif
