/* Shared by the DP kernel's two files (_kernel.c: the exact pass; _kernel_tables.c: the tables): buffers through
 * the buffer protocol, and the packed subset test. */
#ifndef VIZ_PLACE_DP_KERNEL_H
#define VIZ_PLACE_DP_KERNEL_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    Py_buffer b;
    int held;
} Buf;

static inline int get_buf(PyObject *obj, Buf *out, Py_ssize_t itemsize, int writable, const char *name) {
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, &out->b, flags) < 0) {
        PyErr_Format(PyExc_TypeError, "_kernel.group: argument %s must be a C-contiguous%s buffer", name,
                     writable ? " writable" : "");
        return -1;
    }
    out->held = 1;
    if (out->b.itemsize != itemsize) {
        PyErr_Format(PyExc_TypeError, "_kernel.group: argument %s has items of %zd bytes, expected %zd", name,
                     out->b.itemsize, itemsize);
        return -1;
    }
    return 0;
}

static inline Py_ssize_t nitems(const Buf *b) { return b->b.len / b->b.itemsize; }

/* small ⊆ big on packed per-chain counts: one subtraction per word (see recursion.packed_subset_mask) */
static inline int within(const uint64_t *small, const uint64_t *big, const uint64_t *guard, Py_ssize_t P) {
    for (Py_ssize_t w = 0; w < P; w++)
        if ((((big[w] | guard[w]) - small[w]) & guard[w]) != guard[w]) return 0;
    return 1;
}

/* the table builders of _kernel_tables.c (Python functions of the module) */
PyObject *kernel_prefix_sums(PyObject *self, PyObject *args);
PyObject *kernel_cuts(PyObject *self, PyObject *args);
PyObject *kernel_node_counts(PyObject *self, PyObject *args);
/* ... and the ideals themselves (_kernel_ideals.c) */
PyObject *kernel_ideals(PyObject *self, PyObject *args);

#endif
