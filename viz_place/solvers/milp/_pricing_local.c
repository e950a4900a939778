#include "_pricing.h"
#include <stdlib.h>

/* The pricing's local search (set_local.py, LocalPricer.improve), move for move: from a set that fits,
 * rounds of single-group additions and removals (groups in ``cand`` order) and then swaps (a dearer group in
 * for a cheaper one out), each kept when the load stays within T and the memory within cap; stops after a
 * round without a move. The load is kept up to date as the Python loop keeps it (the same operations in the
 * same order, so the same doubles): a toggle of group g changes it by +-work[g] plus the change of
 * communication over the sources g touches (CSR tptr/tsrc with flags town, tsucc; cost already times the
 * device's link factor). ``load`` and ``mem`` are the start set's, as the caller computed them. */
static double ls_delta(int g, const unsigned char *S, const int *inside, const long long *tptr,
                       const long long *tsrc, const unsigned char *town, const unsigned char *tsucc,
                       const long long *src, const long long *nsucc, const double *cost) {
    double d = 0.0;
    int step = S[g] ? -1 : 1;
    for (long long e = tptr[g]; e < tptr[g + 1]; e++) {
        long long i = tsrc[e];
        int ins = inside[i], own = S[src[i]];
        int new_ins = tsucc[e] ? ins + step : ins;
        int new_own = town[e] ? !own : own;
        int before = own ? ins < nsucc[i] : ins > 0;
        int after = new_own ? new_ins < nsucc[i] : new_ins > 0;
        if (before != after) d += after ? cost[i] : -cost[i];
    }
    return d;
}

static void ls_toggle(int g, unsigned char *S, int *inside, const long long *tptr, const long long *tsrc,
                      const unsigned char *tsucc) {
    int step = S[g] ? -1 : 1;
    for (long long e = tptr[g]; e < tptr[g + 1]; e++)
        if (tsucc[e]) inside[tsrc[e]] += step;
    S[g] = !S[g];
}

PyObject *local_improve(PyObject *self, PyObject *args) {
    Py_buffer b_price, b_start, b_cand, b_work, b_gmem, b_tptr, b_tsrc, b_town, b_tsucc, b_src, b_nsucc, b_cost,
        b_sptr, b_succ;
    double T, load, mem, cap;
    int rounds;
    if (!PyArg_ParseTuple(args, "y*dy*dddy*y*y*y*y*y*y*y*y*y*y*y*i", &b_price, &T, &b_start, &load, &mem, &cap,
                          &b_cand, &b_work, &b_gmem, &b_tptr, &b_tsrc, &b_town, &b_tsucc, &b_src, &b_nsucc,
                          &b_cost, &b_sptr, &b_succ, &rounds))
        return NULL;
    const double *price = b_price.buf, *work = b_work.buf, *gm = b_gmem.buf, *cost = b_cost.buf;
    const long long *cand = b_cand.buf, *tptr = b_tptr.buf, *tsrc = b_tsrc.buf, *src = b_src.buf,
                    *nsucc = b_nsucc.buf, *sptr = b_sptr.buf, *succ = b_succ.buf;
    const unsigned char *town = b_town.buf, *tsucc = b_tsucc.buf;
    const int G = (int)b_start.len, C = (int)(b_cand.len / sizeof(long long)),
              NS = (int)(b_nsucc.len / sizeof(long long));
    unsigned char *S = malloc(G + 1);
    int *inside = calloc(NS + 1, sizeof(int)), *outs = malloc(sizeof(int) * (C + 1));
    PyObject *result = NULL;
    if (!S || !inside || !outs) {
        PyErr_NoMemory();
        goto done;
    }
    for (int g = 0; g < G; g++) S[g] = ((const unsigned char *)b_start.buf)[g] != 0;
    for (int i = 0; i < NS; i++)
        for (long long e = sptr[i]; e < sptr[i + 1]; e++) inside[i] += S[succ[e]];
#define DELTA(g) ls_delta((g), S, inside, tptr, tsrc, town, tsucc, src, nsucc, cost)
#define TOGGLE(g) ls_toggle((g), S, inside, tptr, tsrc, tsucc)
    for (int r = 0; r < rounds; r++) {
        int moved = 0;
        for (int k = 0; k < C; k++) {          /* additions (best price first) and removals */
            int g = (int)cand[k];
            if ((S[g] && price[g] < 0) || (!S[g] && price[g] > 0)) {
                double sign = S[g] ? -1.0 : 1.0;
                double dl = sign * work[g] + DELTA(g);
                double dm = sign * gm[g];
                if (load + dl <= T && mem + dm <= cap) {
                    TOGGLE(g);
                    load = load + dl;
                    mem = mem + dm;
                    moved = 1;
                }
            }
        }
        int n_outs = 0;
        for (int k = C - 1; k >= 0; k--)
            if (S[cand[k]]) outs[n_outs++] = (int)cand[k];
        for (int k = 0; k < C; k++) {          /* swaps: a dearer group in for a cheaper one out */
            int g = (int)cand[k];
            if (S[g] || price[g] <= 0) continue;
            for (int j = 0; j < n_outs; j++) {
                int h = outs[j];
                if (!S[h] || price[h] >= price[g] || mem - gm[h] + gm[g] > cap) continue;
                double dl1 = -work[h] + DELTA(h);
                TOGGLE(h);
                double dl2 = work[g] + DELTA(g);
                if (load + dl1 + dl2 <= T) {
                    TOGGLE(g);
                    load = load + dl1 + dl2;
                    mem = mem - gm[h] + gm[g];
                    moved = 1;
                    break;
                }
                TOGGLE(h);
            }
        }
        if (!moved) break;
    }
#undef DELTA
#undef TOGGLE
    result = PyBytes_FromStringAndSize((const char *)S, G);
done:
    free(S); free(inside); free(outs);
    PyBuffer_Release(&b_price); PyBuffer_Release(&b_start); PyBuffer_Release(&b_cand); PyBuffer_Release(&b_work);
    PyBuffer_Release(&b_gmem); PyBuffer_Release(&b_tptr); PyBuffer_Release(&b_tsrc); PyBuffer_Release(&b_town);
    PyBuffer_Release(&b_tsucc); PyBuffer_Release(&b_src); PyBuffer_Release(&b_nsucc); PyBuffer_Release(&b_cost);
    PyBuffer_Release(&b_sptr); PyBuffer_Release(&b_succ);
    return result;
}
