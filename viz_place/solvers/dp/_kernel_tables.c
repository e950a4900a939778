/* The per-ideal and per-node tables of the throughput DP, compiled (viz_place/solvers/dp/ideals.py prefix sums,
 * viz_place/solvers/dp/hyperedges.py cut tables and chain counts): the numpy code's results exactly (the same sums in
 * the same order). Every index read from an array is checked before use; a bad one raises ValueError. */
#include "_kernel.h"

/* prefix_sums(parent, added, weights, out): out[i] = out[parent[i]] + weights[added[i]] row by row, for i >= 1 in
   order (parents come first), rows of F float64 or uint64 (wrapping) items; out[0] is left as it is. */
PyObject *kernel_prefix_sums(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o_parent, *o_added, *o_w, *o_out;
    Buf bp = {0}, ba = {0}, bw = {0}, bo = {0};
    PyObject *result = NULL;
    if (!PyArg_ParseTuple(args, "OOOO", &o_parent, &o_added, &o_w, &o_out)) return NULL;
    if (get_buf(o_parent, &bp, 8, 0, "parent") < 0 || get_buf(o_added, &ba, 8, 0, "added") < 0 ||
        get_buf(o_w, &bw, 8, 0, "weights") < 0 || get_buf(o_out, &bo, 8, 1, "out") < 0)
        goto done;
    {
        const char fw = bw.b.format ? bw.b.format[strlen(bw.b.format) - 1] : 'B';
        const char fo = bo.b.format ? bo.b.format[strlen(bo.b.format) - 1] : 'B';
        const int is_float = fw == 'd';
        if (fw != fo || !(fw == 'd' || fw == 'Q' || fw == 'L')) {
            PyErr_SetString(PyExc_TypeError, "_kernel.prefix_sums: weights and out must both be float64 or uint64");
            goto done;
        }
        const Py_ssize_t N = nitems(&bp), out_items = nitems(&bo);
        if (N <= 0 || nitems(&ba) != N || out_items % N != 0) {
            PyErr_SetString(PyExc_ValueError, "_kernel.prefix_sums: parent, added and the rows of out must agree");
            goto done;
        }
        const Py_ssize_t F = out_items / N;
        if (F == 0 || nitems(&bw) % F != 0) {
            PyErr_SetString(PyExc_ValueError, "_kernel.prefix_sums: weights must have the row width of out");
            goto done;
        }
        const Py_ssize_t K = nitems(&bw) / F;
        const int64_t *parent = bp.b.buf, *added = ba.b.buf;
        for (Py_ssize_t i = 1; i < N; i++)
            if (parent[i] < 0 || parent[i] >= i || added[i] < 0 || added[i] >= K) {
                PyErr_Format(PyExc_ValueError, "_kernel.prefix_sums: ideal %zd has parent %lld and node %lld "
                             "(a parent must come first, a node below %zd)", i, (long long)parent[i],
                             (long long)added[i], K);
                goto done;
            }
        if (is_float) {
            double *out = bo.b.buf;
            const double *w = bw.b.buf;
            for (Py_ssize_t i = 1; i < N; i++) {
                const double *src = out + parent[i] * F, *wi = w + added[i] * F;
                double *dst = out + i * F;
                for (Py_ssize_t f = 0; f < F; f++) dst[f] = src[f] + wi[f];
            }
        } else {
            uint64_t *out = bo.b.buf;
            const uint64_t *w = bw.b.buf;
            for (Py_ssize_t i = 1; i < N; i++) {
                const uint64_t *src = out + parent[i] * F, *wi = w + added[i] * F;
                uint64_t *dst = out + i * F;
                for (Py_ssize_t f = 0; f < F; f++) dst[f] = src[f] + wi[f];
            }
        }
    }
    Py_INCREF(Py_None);
    result = Py_None;
done:
    if (bp.held) PyBuffer_Release(&bp.b);
    if (ba.held) PyBuffer_Release(&ba.b);
    if (bw.held) PyBuffer_Release(&bw.b);
    if (bo.held) PyBuffer_Release(&bo.b);
    return result;
}

/* cuts(pk, guard, down_pk, free_pk, htc, bits, hn, hptr, below, h_down, lane_word, lane_shift, lane_mask,
        per_ideal, cut_ptr, cut_h, cut_down, dk, wcut):
   the hyperedge tables of viz_place/solvers/dp/hyperedges.py. Ideal X cuts hyperedge h iff neither down(h) ⊆ X
   nor X ⊆ free(h). With cut_h empty: count the hyperedges each ideal cuts into per_ideal. Else (cut_ptr from those
   counts): for each ideal, its cut hyperedges (ascending), the packed down-closure of h ∩ X per entry (cut_down),
   the packed down-closure of X with its cut hyperedges (dk), and w(X), their transfer costs summed in that order
   (wcut). below (K, C) / h_down (H, C): per-chain counts of the down-sets of each node / hyperedge. */
PyObject *kernel_cuts(PyObject *self, PyObject *args) {
    (void)self;
    enum { PK, GUARD, DOWN, FREE, HTC, BITS, HN, HPTR, BELOW, HDOWN, LWORD, LSHIFT, LMASK, PER, CPTR, CUTH, CDOWN, DK,
           WCUT, NB };
    static const char *names[NB] = {"pk", "guard", "down_pk", "free_pk", "htc", "bits", "hn", "hptr", "below",
                                    "h_down", "lane_word", "lane_shift", "lane_mask", "per_ideal", "cut_ptr",
                                    "cut_h", "cut_down", "dk", "wcut"};
    PyObject *o[NB];
    Buf b[NB];
    memset(b, 0, sizeof b);
    PyObject *result = NULL;
    if (!PyArg_ParseTuple(args, "OOOOOOOOOOOOOOOOOOO", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &o[7],
                          &o[8], &o[9], &o[10], &o[11], &o[12], &o[13], &o[14], &o[15], &o[16], &o[17], &o[18]))
        return NULL;
    for (int a = 0; a < NB; a++) {
        int writable = a >= PER && a != CPTR;
        if (get_buf(o[a], &b[a], 8, writable, names[a]) < 0) goto done;
    }
    {
        const Py_ssize_t P = nitems(&b[GUARD]), H = nitems(&b[HTC]), C = nitems(&b[LWORD]);
        const Py_ssize_t N = nitems(&b[PER]), NHN = nitems(&b[HN]);
        if (P <= 0 || N <= 0 || C <= 0 || nitems(&b[PK]) != N * P || nitems(&b[DOWN]) != H * P ||
            nitems(&b[FREE]) != H * P || nitems(&b[HPTR]) != H + 1 || nitems(&b[HDOWN]) != H * C ||
            nitems(&b[LSHIFT]) != C || nitems(&b[LMASK]) != C || nitems(&b[BITS]) % N != 0 ||
            nitems(&b[BELOW]) % C != 0) {
            PyErr_SetString(PyExc_ValueError, "_kernel.cuts: table sizes disagree");
            goto done;
        }
        const Py_ssize_t W = nitems(&b[BITS]) / N, K = nitems(&b[BELOW]) / C;
        const uint64_t *pk = b[PK].b.buf, *guard = b[GUARD].b.buf, *down = b[DOWN].b.buf, *freeh = b[FREE].b.buf;
        const uint64_t *bits = b[BITS].b.buf, *lmask = b[LMASK].b.buf;
        const double *htc = b[HTC].b.buf;
        const int64_t *hn = b[HN].b.buf, *hptr = b[HPTR].b.buf, *below = b[BELOW].b.buf, *h_down = b[HDOWN].b.buf;
        const int64_t *lword = b[LWORD].b.buf, *lshift = b[LSHIFT].b.buf;
        int64_t *per = b[PER].b.buf;
        if (hptr[0] != 0 || hptr[H] != NHN) { PyErr_SetString(PyExc_ValueError, "_kernel.cuts: bad hptr"); goto done; }
        for (Py_ssize_t h = 0; h < H; h++)
            if (hptr[h + 1] < hptr[h]) { PyErr_SetString(PyExc_ValueError, "_kernel.cuts: bad hptr"); goto done; }
        for (Py_ssize_t q = 0; q < NHN; q++)
            if (hn[q] < 0 || hn[q] >= K || hn[q] >= 64 * W) {
                PyErr_SetString(PyExc_ValueError, "_kernel.cuts: hyperedge node out of range");
                goto done;
            }
        for (Py_ssize_t c = 0; c < C; c++)
            if (lword[c] < 0 || lword[c] >= P || lshift[c] < 0 || lshift[c] > 63) {
                PyErr_SetString(PyExc_ValueError, "_kernel.cuts: lane out of range");
                goto done;
            }
        const int fill = nitems(&b[CUTH]) > 0 || nitems(&b[CPTR]) > 0;
        if (!fill) {
            Py_BEGIN_ALLOW_THREADS
            for (Py_ssize_t i = 0; i < N; i++) {
                int64_t cnt = 0;
                for (Py_ssize_t h = 0; h < H; h++)
                    cnt += !within(down + h * P, pk + i * P, guard, P) && !within(pk + i * P, freeh + h * P, guard, P);
                per[i] = cnt;
            }
            Py_END_ALLOW_THREADS
        } else {
            const Py_ssize_t E = nitems(&b[CUTH]);
            const int64_t *cptr = b[CPTR].b.buf;
            int64_t *cut_h = b[CUTH].b.buf;
            uint64_t *cut_down = b[CDOWN].b.buf, *dk = b[DK].b.buf;
            double *wcut = b[WCUT].b.buf;
            if (nitems(&b[CPTR]) != N + 1 || cptr[0] != 0 || cptr[N] != E || nitems(&b[CDOWN]) != E * P ||
                nitems(&b[DK]) != N * P || nitems(&b[WCUT]) != N) {
                PyErr_SetString(PyExc_ValueError, "_kernel.cuts: output sizes disagree");
                goto done;
            }
            for (Py_ssize_t i = 0; i < N; i++)
                if (cptr[i + 1] - cptr[i] != per[i]) {
                    PyErr_SetString(PyExc_ValueError, "_kernel.cuts: cut_ptr does not match per_ideal");
                    goto done;
                }
            int64_t *cnt = malloc(sizeof(int64_t) * 2 * C);
            if (!cnt) { PyErr_NoMemory(); goto done; }
            int64_t *part = cnt + C;
            Py_BEGIN_ALLOW_THREADS
            memset(cut_down, 0, sizeof(uint64_t) * E * P);
            for (Py_ssize_t i = 0; i < N; i++) {
                const uint64_t *pi = pk + i * P, *bi = bits + i * W;
                for (Py_ssize_t c = 0; c < C; c++) cnt[c] = (int64_t)((pi[lword[c]] >> lshift[c]) & lmask[c]);
                int64_t e = cptr[i];
                double w = 0.0;
                for (Py_ssize_t h = 0; h < H && e < cptr[i + 1]; h++) {
                    if (within(down + h * P, pi, guard, P) || within(pi, freeh + h * P, guard, P)) continue;
                    cut_h[e] = h;
                    w += htc[h];
                    for (Py_ssize_t c = 0; c < C; c++) {
                        part[c] = 0;
                        if (h_down[h * C + c] > cnt[c]) cnt[c] = h_down[h * C + c];
                    }
                    for (int64_t q = hptr[h]; q < hptr[h + 1]; q++) {
                        const int64_t v = hn[q];
                        if (!((bi[v >> 6] >> (v & 63)) & 1)) continue;
                        for (Py_ssize_t c = 0; c < C; c++)
                            if (below[v * C + c] > part[c]) part[c] = below[v * C + c];
                    }
                    for (Py_ssize_t c = 0; c < C; c++)
                        cut_down[e * P + lword[c]] += (uint64_t)part[c] << lshift[c];
                    e++;
                }
                wcut[i] = w;
                for (Py_ssize_t p = 0; p < P; p++) dk[i * P + p] = 0;
                for (Py_ssize_t c = 0; c < C; c++) dk[i * P + lword[c]] += (uint64_t)cnt[c] << lshift[c];
            }
            Py_END_ALLOW_THREADS
            free(cnt);
        }
    }
    Py_INCREF(Py_None);
    result = Py_None;
done:
    for (int a = 0; a < NB; a++)
        if (b[a].held) PyBuffer_Release(&b[a].b);
    return result;
}

/* node_counts(succ_ptr, succ, chain_of, pos, chain_len, below, free): per node v (numbered topologically) and chain
   c, below[v, c] = how many nodes of c are ancestors of v or v itself (a prefix of c: 1 + the largest position
   among them, 0 if none) and free[v, c] = how many are not descendants of v or v itself (the smallest position
   among those, the chain's length if none). */
PyObject *kernel_node_counts(PyObject *self, PyObject *args) {
    (void)self;
    enum { SPTR, SUCC, CHAIN, POS, CLEN, BELOW, FREE, NB };
    static const char *names[NB] = {"succ_ptr", "succ", "chain_of", "pos", "chain_len", "below", "free"};
    PyObject *o[NB];
    Buf b[NB];
    memset(b, 0, sizeof b);
    PyObject *result = NULL;
    if (!PyArg_ParseTuple(args, "OOOOOOO", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6])) return NULL;
    for (int a = 0; a < NB; a++)
        if (get_buf(o[a], &b[a], 8, a >= BELOW, names[a]) < 0) goto done;
    {
        const Py_ssize_t K = nitems(&b[CHAIN]), C = nitems(&b[CLEN]), M = nitems(&b[SUCC]);
        const int64_t *sptr = b[SPTR].b.buf, *succ = b[SUCC].b.buf, *chain = b[CHAIN].b.buf, *pos = b[POS].b.buf;
        const int64_t *clen = b[CLEN].b.buf;
        int64_t *below = b[BELOW].b.buf, *freec = b[FREE].b.buf;
        if (nitems(&b[SPTR]) != K + 1 || nitems(&b[POS]) != K || nitems(&b[BELOW]) != K * C ||
            nitems(&b[FREE]) != K * C || (K > 0 && (sptr[0] != 0 || sptr[K] != M))) {
            PyErr_SetString(PyExc_ValueError, "_kernel.node_counts: sizes disagree");
            goto done;
        }
        for (Py_ssize_t v = 0; v < K; v++) {
            if (sptr[v + 1] < sptr[v] || chain[v] < 0 || chain[v] >= C || pos[v] < 0 || pos[v] >= clen[chain[v]]) {
                PyErr_SetString(PyExc_ValueError, "_kernel.node_counts: bad chain or successor list");
                goto done;
            }
            for (int64_t e = sptr[v]; e < sptr[v + 1]; e++)
                if (succ[e] <= v || succ[e] >= K) {
                    PyErr_SetString(PyExc_ValueError, "_kernel.node_counts: successors must come later");
                    goto done;
                }
        }
        memset(below, 0, sizeof(int64_t) * K * C);
        for (Py_ssize_t v = 0; v < K; v++) {   /* forward: push each node's counts to its successors */
            int64_t *bv = below + v * C;
            if (pos[v] + 1 > bv[chain[v]]) bv[chain[v]] = pos[v] + 1;
            for (int64_t e = sptr[v]; e < sptr[v + 1]; e++) {
                int64_t *bw = below + succ[e] * C;
                for (Py_ssize_t c = 0; c < C; c++)
                    if (bv[c] > bw[c]) bw[c] = bv[c];
            }
        }
        for (Py_ssize_t v = K - 1; v >= 0; v--) {   /* backward: pull from successors */
            int64_t *fv = freec + v * C;
            for (Py_ssize_t c = 0; c < C; c++) fv[c] = clen[c];
            fv[chain[v]] = pos[v];
            for (int64_t e = sptr[v]; e < sptr[v + 1]; e++) {
                const int64_t *fw = freec + succ[e] * C;
                for (Py_ssize_t c = 0; c < C; c++)
                    if (fw[c] < fv[c]) fv[c] = fw[c];
            }
        }
    }
    Py_INCREF(Py_None);
    result = Py_None;
done:
    for (int a = 0; a < NB; a++)
        if (b[a].held) PyBuffer_Release(&b[a].b);
    return result;
}

