/* The ideals of the DP's DAG, compiled (viz_place/solvers/dp/ideals.py enumerate_ideals): the same ideals in the
 * same order, level by level, each with the same parent and added node. Every index read from an array is checked
 * before use; a bad one raises ValueError. */
#include "_kernel.h"

typedef struct {
    uint64_t *ideal, *avail; /* count x W words each */
    int64_t *parent, *added, *starts;
    Py_ssize_t count, cap, nstarts, cap_starts;
} Growing;

static void growing_free(Growing *g) {
    free(g->ideal);
    free(g->avail);
    free(g->parent);
    free(g->added);
    free(g->starts);
}

static int grow(Growing *g, Py_ssize_t W) {
    Py_ssize_t cap = g->cap ? 2 * g->cap : 1024;
    uint64_t *ideal = realloc(g->ideal, (size_t)(cap * W) * sizeof(uint64_t));
    if (ideal) g->ideal = ideal;
    uint64_t *avail = realloc(g->avail, (size_t)(cap * W) * sizeof(uint64_t));
    if (avail) g->avail = avail;
    int64_t *parent = realloc(g->parent, (size_t)cap * sizeof(int64_t));
    if (parent) g->parent = parent;
    int64_t *added = realloc(g->added, (size_t)cap * sizeof(int64_t));
    if (added) g->added = added;
    if (!ideal || !avail || !parent || !added) {
        PyErr_NoMemory();
        return -1;
    }
    g->cap = cap;
    return 0;
}

static int push_start(Growing *g, int64_t s) {
    if (g->nstarts == g->cap_starts) {
        Py_ssize_t cap = g->cap_starts ? 2 * g->cap_starts : 64;
        int64_t *starts = realloc(g->starts, (size_t)cap * sizeof(int64_t));
        if (!starts) {
            PyErr_NoMemory();
            return -1;
        }
        g->starts = starts;
        g->cap_starts = cap;
    }
    g->starts[g->nstarts++] = s;
    return 0;
}

static inline uint64_t hash_words(const uint64_t *x, Py_ssize_t W) {
    uint64_t h = 0x9E3779B97F4A7C15ull;
    for (Py_ssize_t w = 0; w < W; w++) {
        uint64_t z = x[w] + h + 0x9E3779B97F4A7C15ull; /* splitmix64 of each word, chained */
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        h = z ^ (z >> 31);
    }
    return h;
}

/* the slot of ideal x in the open-addressing table (entries: indices into g->ideal, -1 free) */
static inline Py_ssize_t slot_of(const int64_t *table, Py_ssize_t mask, const uint64_t *ideals, const uint64_t *x,
                                 Py_ssize_t W) {
    Py_ssize_t s = (Py_ssize_t)(hash_words(x, W) & (uint64_t)mask);
    while (table[s] >= 0 && memcmp(ideals + table[s] * W, x, (size_t)W * sizeof(uint64_t)) != 0) s = (s + 1) & mask;
    return s;
}

static PyObject *as_bytearray(const void *data, Py_ssize_t nbytes) {
    return PyByteArray_FromStringAndSize(nbytes ? (const char *)data : "", nbytes);
}

/* ideals(pred, succ_ptr, succ, limit, check) -> (bits, parent, added, level_starts) as bytearrays of uint64 /
   int64 items, or None once more than limit ideals are found. pred: (K, W) uint64, the predecessors of each node as
   a bitset; succ_ptr / succ: the successor lists (CSR). check(count), when not None, is called every 4096 ideals
   (it may raise: the enumeration then stops with its exception). */
PyObject *kernel_ideals(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o_pred, *o_sptr, *o_succ, *check;
    long long limit;
    Buf bp = {0}, bs = {0}, bc = {0};
    Growing g = {0};
    int64_t *table = NULL;
    uint64_t *tmp = NULL;
    PyObject *result = NULL;
    if (!PyArg_ParseTuple(args, "OOOLO", &o_pred, &o_sptr, &o_succ, &limit, &check)) return NULL;
    if (get_buf(o_pred, &bp, 8, 0, "pred") < 0 || get_buf(o_sptr, &bs, 8, 0, "succ_ptr") < 0 ||
        get_buf(o_succ, &bc, 8, 0, "succ") < 0)
        goto done;
    {
        const Py_ssize_t K = nitems(&bs) - 1, M = nitems(&bc);
        if (K <= 0 || nitems(&bp) % K != 0 || nitems(&bp) / K != (K + 63) / 64) {
            PyErr_SetString(PyExc_ValueError, "_kernel.ideals: pred must hold one row of (K + 63) // 64 words per node");
            goto done;
        }
        const Py_ssize_t W = nitems(&bp) / K;
        const uint64_t *pred = bp.b.buf;
        const int64_t *sptr = bs.b.buf, *succ = bc.b.buf;
        if (sptr[0] != 0 || sptr[K] != M) {
            PyErr_SetString(PyExc_ValueError, "_kernel.ideals: succ_ptr must run from 0 to len(succ)");
            goto done;
        }
        for (Py_ssize_t v = 0; v < K; v++)
            if (sptr[v + 1] < sptr[v]) {
                PyErr_SetString(PyExc_ValueError, "_kernel.ideals: succ_ptr must not decrease");
                goto done;
            }
        for (Py_ssize_t e = 0; e < M; e++)
            if (succ[e] < 0 || succ[e] >= K) {
                PyErr_Format(PyExc_ValueError, "_kernel.ideals: successor %lld out of range", (long long)succ[e]);
                goto done;
            }
        tmp = calloc((size_t)(2 * W), sizeof(uint64_t));
        if (!tmp || grow(&g, W) < 0) {
            if (!tmp) PyErr_NoMemory();
            goto done;
        }
        uint64_t *rest = tmp, *next = tmp + W; /* the parent's available nodes still to try; the new ideal */
        /* the empty ideal: every source node available */
        memset(g.ideal, 0, (size_t)W * sizeof(uint64_t));
        memset(g.avail, 0, (size_t)W * sizeof(uint64_t));
        for (Py_ssize_t v = 0; v < K; v++) {
            int none = 1;
            for (Py_ssize_t w = 0; w < W; w++) none &= pred[v * W + w] == 0;
            if (none) g.avail[v >> 6] |= 1ull << (v & 63);
        }
        g.parent[0] = g.added[0] = -1;
        g.count = 1;
        if (push_start(&g, 0) < 0 || push_start(&g, 1) < 0) goto done;
        Py_ssize_t lo = 0, hi = 1; /* the current level */
        while (lo < hi) {
            Py_ssize_t mask = 15, used = 0;
            free(table);
            table = malloc(16 * sizeof(int64_t));
            if (!table) {
                PyErr_NoMemory();
                goto done;
            }
            memset(table, 0xff, 16 * sizeof(int64_t));
            for (Py_ssize_t i = lo; i < hi; i++) {
                memcpy(rest, g.avail + i * W, (size_t)W * sizeof(uint64_t));
                for (Py_ssize_t w = 0; w < W; w++) {
                    while (rest[w]) {
                        const uint64_t low = rest[w] & (~rest[w] + 1);
                        rest[w] ^= low;
                        const Py_ssize_t v = w * 64 + __builtin_ctzll(low);
                        memcpy(next, g.ideal + i * W, (size_t)W * sizeof(uint64_t));
                        next[w] |= low;
                        Py_ssize_t s = slot_of(table, mask, g.ideal, next, W);
                        if (table[s] >= 0) continue; /* reached from an earlier ideal of this level */
                        if (g.count == g.cap && grow(&g, W) < 0) goto done;
                        const Py_ssize_t n = g.count;
                        memcpy(g.ideal + n * W, next, (size_t)W * sizeof(uint64_t));
                        uint64_t *av = g.avail + n * W;
                        memcpy(av, g.avail + i * W, (size_t)W * sizeof(uint64_t));
                        av[w] ^= low;
                        for (int64_t e = sptr[v]; e < sptr[v + 1]; e++) {
                            const int64_t x = succ[e];
                            int ready = 1;
                            for (Py_ssize_t u = 0; u < W; u++) ready &= (pred[x * W + u] & ~next[u]) == 0;
                            if (ready) av[x >> 6] |= 1ull << (x & 63);
                        }
                        g.parent[n] = i;
                        g.added[n] = v;
                        g.count = n + 1;
                        table[s] = n;
                        if (2 * ++used > mask) { /* keep the table at most half full: rehash this level's ideals */
                            const Py_ssize_t nmask = 2 * mask + 1;
                            int64_t *bigger = malloc((size_t)(nmask + 1) * sizeof(int64_t));
                            if (!bigger) {
                                PyErr_NoMemory();
                                goto done;
                            }
                            memset(bigger, 0xff, (size_t)(nmask + 1) * sizeof(int64_t));
                            for (Py_ssize_t j = hi; j < g.count; j++)
                                bigger[slot_of(bigger, nmask, g.ideal, g.ideal + j * W, W)] = j;
                            free(table);
                            table = bigger;
                            mask = nmask;
                        }
                        if (g.count > limit) {
                            Py_INCREF(Py_None);
                            result = Py_None;
                            goto done;
                        }
                        if (check != Py_None && g.count % 4096 == 0) {
                            PyObject *r = PyObject_CallFunction(check, "n", g.count);
                            if (!r) goto done;
                            Py_DECREF(r);
                        }
                    }
                }
            }
            if (g.count > hi && push_start(&g, g.count) < 0) goto done;
            lo = hi;
            hi = g.count;
        }
        const Py_ssize_t N = g.count;
        PyObject *bits = as_bytearray(g.ideal, N * W * 8), *parent = as_bytearray(g.parent, N * 8);
        PyObject *added = as_bytearray(g.added, N * 8), *starts = as_bytearray(g.starts, g.nstarts * 8);
        if (bits && parent && added && starts) result = PyTuple_Pack(4, bits, parent, added, starts);
        Py_XDECREF(bits);
        Py_XDECREF(parent);
        Py_XDECREF(added);
        Py_XDECREF(starts);
    }
done:
    free(table);
    free(tmp);
    growing_free(&g);
    if (bp.held) PyBuffer_Release(&bp.b);
    if (bs.held) PyBuffer_Release(&bs.b);
    if (bc.held) PyBuffer_Release(&bc.b);
    return result;
}
