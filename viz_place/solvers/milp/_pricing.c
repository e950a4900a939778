/* The set-partitioning bound's pricing problem, solved exactly by a label DP (see set_pricing.py,
 * ExactPricer): max pi(S) over the sets S of groups one device can hold, with
 *   work(S) + sum of the costs of the sources S cuts <= T   and   mem(S) <= cap,
 * where a source (own group g, successor groups H, cost c) is cut when g is in S and some group of H is
 * not, or g is not and some group of H is.
 *
 * Groups are decided in index order. A source is "open" between the first and the last group it
 * touches; which sources are open at each position depends on the position only, so a state is the
 * status of each open source (6 values, a base-6 number):
 *   U00  own group undecided, no successor decided       U10  ... a successor in     U01  ... one out
 *   IN0  own group in, no successor out yet              OUT0 own group out, no successor in yet
 *   DONE cut (its cost already paid)
 * A label is (pi, load, mem, the set's bits); within a state, a label is dropped when another has pi >=,
 * load <= and mem <= (exact dominance), or when pi plus a bound on what the groups still to come can add
 * cannot beat the best value known: a fractional knapsack (load and memory each alone) and Lagrangian
 * bounds (a backward DP over the same states, multipliers on load and memory, communication exact).
 * Every label, completed by taking no more groups, is a candidate for the best value. The result is the
 * exact maximum (and a set reaching it), or None when a layer would exceed the label limit, the time
 * limit runs out or memory cannot be had (the caller then prices otherwise). With a beam width (the last,
 * optional argument), each layer keeps only that many labels, those with the highest Lagrangian completion
 * bound: a heuristic, fast, whose best set starts the exact run (ExactPricer.solve). With keep > 1 (the argument
 * after the beam), the best sets met on the way are returned too, up to keep of them (every label that has just
 * taken a group, completed by taking no more, is one: each set is met once), as more columns per call.
 * The module's other function, the local search, is in _pricing_local.c.
 */
#include "_pricing.h"
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { U00 = 0, U10 = 1, U01 = 2, IN0 = 3, OUT0 = 4, DONE = 5 };

typedef struct {
    long long state;
    double pi, load, mem;
    long long bi;     /* index of the set's W words in the layer's bit store */
} Label;

/* status change of one source when a group it touches is decided (y: the group is in the set);
 * *cut is set when the source becomes cut now */
static int step_status(int s, int own, int y, int *cut) {
    *cut = 0;
    if (s == DONE) return DONE;
    if (own) {
        if (s == U00) return y ? IN0 : OUT0;
        if (s == U10) { if (y) return IN0; *cut = 1; return DONE; }
        if (s == U01) { if (y) { *cut = 1; return DONE; } return OUT0; }
        return s;   /* cannot happen: the own group is decided once */
    }
    switch (s) {
    case U00: return y ? U10 : U01;
    case U10: if (y) return U10; *cut = 1; return DONE;
    case U01: if (y) { *cut = 1; return DONE; } return U01;
    case IN0: if (y) return IN0; *cut = 1; return DONE;
    case OUT0: if (y) { *cut = 1; return DONE; } return OUT0;
    }
    return s;
}

/* The Lagrangian tables index a state in base 3, not 6: once open, a source's status is one of three,
 * and which three depends on the position only (its own group decided: IN0, OUT0, DONE; not yet: U10,
 * U01, DONE). 0 = its decided groups are in the set, 1 = out, 2 = cut. */
static int to3(int s) { return s == IN0 || s == U10 ? 0 : (s == OUT0 || s == U01 ? 1 : 2); }
static int from3(int c, int own_decided) {
    return c == 2 ? DONE : (own_decided ? (c == 0 ? IN0 : OUT0) : (c == 0 ? U10 : U01));
}

/* a Lagrangian completion value: the backward table's entry for a state (*v) plus the multipliers times the
 * room left on the load and memory rows (the memory term only with a memory multiplier) */
static inline double lag_value(const double *v, double lam, double mu, double load_room, double mem_room) {
    return *v + lam * load_room + (mu != 0 ? mu * mem_room : 0.0);
}

/* fractional knapsack bound: items sorted by ratio (prefix sums of weight and value), capacity cap */
static double knap(const double *pw, const double *pv, int n, double cap) {
    if (n == 0) return 0.0;
    if (cap <= 0) {   /* only weightless items fit */
        int lo = 0;
        while (lo < n && pw[lo + 1] <= 0) lo++;
        return pv[lo];
    }
    if (pw[n] <= cap) return pv[n];
    int lo = 0, hi = n;   /* largest i with pw[i] <= cap */
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (pw[mid] <= cap) lo = mid; else hi = mid - 1;
    }
    double w = pw[lo + 1] - pw[lo], v = pv[lo + 1] - pv[lo];
    return pv[lo] + (w > 0 ? v * (cap - pw[lo]) / w : v);
}

typedef struct { double key; int g; } Item;
static int cmp_item(const void *a, const void *b) {
    double x = ((const Item *)a)->key, y = ((const Item *)b)->key;
    return x > y ? -1 : (x < y ? 1 : 0);
}

/* staircase of kept (load, mem) points within one state: load ascending, mem strictly descending */
typedef struct { double load, mem; } Pt;

static int dominated(const Pt *st, int n, double load, double mem) {
    if (n == 0) return 0;
    const Pt *b = st;   /* the last point with load <= the new one's (branch-free search) */
    for (int len = n; len > 1;) {
        int half = len >> 1;
        b = b[half].load <= load ? b + half : b;
        len -= half;
    }
    return b->load <= load && b->mem <= mem;
}

static int insert_pt(Pt *st, int n, double load, double mem) {
    int pos = 0;   /* first with load >= new (branch-free search) */
    for (int len = n; len > 0;) {
        int half = len >> 1;
        if (st[pos + half].load < load) { pos += half + 1; len -= half + 1; } else len = half;
    }
    int end = pos;
    while (end < n && st[end].mem >= mem) end++;     /* those the new point dominates */
    memmove(st + pos + 1, st + end, (size_t)(n - end) * sizeof(Pt));
    st[pos].load = load;
    st[pos].mem = mem;
    return n - (end - pos) + 1;
}

/* a run of children: one parent state's labels with one decision, all to one new state, in label order */
typedef struct { long long state, start, len; } Run;

static int cmp_run(const void *a, const void *b) {
    const Run *x = (const Run *)a, *y = (const Run *)b;
    if (x->state != y->state) return x->state < y->state ? -1 : 1;
    return x->start < y->start ? -1 : (x->start > y->start);
}

/* label order within a state: pi descending, then load and memory ascending (what dominance needs) */
static int before(const Label *x, const Label *y) {
    if (x->pi != y->pi) return x->pi > y->pi;
    if (x->load != y->load) return x->load < y->load;
    return x->mem < y->mem;
}

/* a beam's order of a layer: by state, then label order within a state (as the layer is kept) */
static int cmp_state_label(const void *a, const void *b) {
    const Label *x = (const Label *)a, *y = (const Label *)b;
    if (x->state != y->state) return x->state < y->state ? -1 : 1;
    return before(x, y) ? -1 : (before(y, x) ? 1 : 0);
}

/* the best `keep` sets met (value, bits): a set is offered when its label has just taken a group (so each
 * set once), and replaces the worst kept when better */
typedef struct { int keep, n, worst, W; double *val; uint64_t *bits; } Pool;

static void pool_offer(Pool *p, double v, const uint64_t *bits) {
    int at;
    if (p->n < p->keep) at = p->n++;
    else if (v > p->val[p->worst]) at = p->worst;
    else return;
    p->val[at] = v;
    memcpy(p->bits + (size_t)at * p->W, bits, sizeof(uint64_t) * p->W);
    if (p->n == p->keep) {
        p->worst = 0;
        for (int i = 1; i < p->n; i++) if (p->val[i] < p->val[p->worst]) p->worst = i;
    }
}

/* a min-heap of run cursors by their head label (the k-way merge of one state's runs) */
typedef struct { long long at, end; } Cursor;

static void sift_down(Cursor *h, int n, int i, const Label *lab) {
    for (;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && before(lab + h[l].at, lab + h[m].at)) m = l;
        if (r < n && before(lab + h[r].at, lab + h[m].at)) m = r;
        if (m == i) return;
        Cursor t = h[i]; h[i] = h[m]; h[m] = t;
        i = m;
    }
}

static PyObject *price(PyObject *self, PyObject *args) {
    Py_buffer b_pi, b_work, b_mem, b_own, b_cost, b_sptr, b_succ, b_lam, b_mu;
    double cap, T, lb, seconds;
    long long limit, beam = 0;
    int keep = 1;
    double enough = INFINITY;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*y*dddLy*y*d|Lid", &b_pi, &b_work, &b_mem, &b_own, &b_cost, &b_sptr, &b_succ,
                          &cap, &T, &lb, &limit, &b_lam, &b_mu, &seconds, &beam, &keep, &enough))
        return NULL;
    struct timespec t_start, t_now;
    clock_gettime(CLOCK_MONOTONIC, &t_start);
    const double *lam = b_lam.buf, *mu = b_mu.buf;
    int P = (int)(b_lam.len / sizeof(double));
    PyObject *result = NULL;
    const double *pi = b_pi.buf, *work = b_work.buf, *gmem = b_mem.buf, *cost = b_cost.buf;
    const long long *own = b_own.buf, *sptr = b_sptr.buf, *succ = b_succ.buf;
    const int G = (int)(b_pi.len / sizeof(double)), S = (int)(b_own.len / sizeof(long long));
    const int W = (G + 63) / 64;   /* words per set */
    const double Ttol = T + 1e-12 * fabs(T) + 1e-12, captol = cap + 1e-12 * fabs(cap) + 1e-12;

    /* sources: first and last group touched; per group, (source, own?) touches */
    int *first = malloc(sizeof(int) * (S + 1)), *last = malloc(sizeof(int) * (S + 1));
    int *tptr = calloc(G + 1, sizeof(int));
    for (int i = 0; i < S; i++) {
        int f = (int)own[i], l = (int)own[i];
        tptr[own[i] + 1]++;
        for (long long e = sptr[i]; e < sptr[i + 1]; e++) {
            int h = (int)succ[e];
            if (h < f) f = h;
            if (h > l) l = h;
            tptr[h + 1]++;
        }
        first[i] = f;
        last[i] = l;
    }
    for (int k = 0; k < G; k++) tptr[k + 1] += tptr[k];
    int *tsrc = malloc(sizeof(int) * (tptr[G] + 1)), *town = malloc(sizeof(int) * (tptr[G] + 1));
    int *fill = calloc(G + 1, sizeof(int));
    for (int i = 0; i < S; i++) {
        int k = (int)own[i];
        tsrc[tptr[k] + fill[k]] = i; town[tptr[k] + fill[k]++] = 1;
        for (long long e = sptr[i]; e < sptr[i + 1]; e++) {
            k = (int)succ[e];
            tsrc[tptr[k] + fill[k]] = i; town[tptr[k] + fill[k]++] = 0;
        }
    }
    /* open lists after each position k (sources with first <= k < last), in source order */
    int *optr = calloc(G + 2, sizeof(int));
    for (int k = 0; k < G; k++)
        for (int i = 0; i < S; i++)
            if (first[i] <= k && k < last[i]) optr[k + 1]++;
    for (int k = 0; k < G; k++) optr[k + 1] += optr[k];
    int *olist = malloc(sizeof(int) * (optr[G] + 1));
    int maxopen = 0;
    for (int k = 0, at = 0; k < G; k++) {
        for (int i = 0; i < S; i++)
            if (first[i] <= k && k < last[i]) olist[at++] = i;
        if (optr[k + 1] - optr[k] > maxopen) maxopen = optr[k + 1] - optr[k];
    }
    /* per position: the groups still to come with positive price, by price per work and per memory */
    double *pw1 = malloc(sizeof(double) * (size_t)(G + 1) * (G + 1)), *pv1 = malloc(sizeof(double) * (size_t)(G + 1) * (G + 1));
    double *pw2 = malloc(sizeof(double) * (size_t)(G + 1) * (G + 1)), *pv2 = malloc(sizeof(double) * (size_t)(G + 1) * (G + 1));
    int *nrest = calloc(G + 1, sizeof(int));
    Item *items = malloc(sizeof(Item) * (G + 1));
    int *status = malloc(sizeof(int) * (S + 1)), *newst = malloc(sizeof(int) * (S + 1));
    int *mark = malloc(sizeof(int) * (S + 1));   /* the small tables; the label layers are checked as they grow */
    for (int i = 0; i < S; i++) mark[i] = -1;
    long long cap_labels = 0, n_cur = 1, n_next = 0;
    Label *cur = NULL, *next = NULL;
    uint64_t *bits_cur = NULL, *bits_next = NULL, *best_bits = calloc(W, sizeof(uint64_t));
    Pt *stair = NULL;
    Run *runs = NULL;
    Cursor *heap = NULL;
    double *lagv = malloc(sizeof(double) * (P > 0 ? P : 1));
    int best_found = 0, gave_up = 0, stopped = 0;   /* stopped: a set worth `enough` was found (not exact) */
    if (keep < 1) keep = 1;
    Pool pool = {keep, 0, 0, W, malloc(sizeof(double) * keep), malloc(sizeof(uint64_t) * (size_t)keep * W)};
    long long total_labels = 0, widest = 0;
    double root = INFINITY;
    double best = lb > 0 ? lb : 0.0;
    const double tol = 1e-9 * (fabs(best) + 1.0);
    /* Lagrangian completion bounds: for multipliers (lam, mu) >= 0 on the load and the memory rows,
     * V[p][k][code] = max over the decisions of groups k.. of sum (pi - lam work - mu mem) - lam * cuts,
     * from the status code of the sources open before k (communication included, exactly; in base 3, see
     * to3); a label after group k can then reach at most pi + V[p][k+1][its code] + lam (T - load) + mu (cap - mem). */
    long long *vptr = NULL;
    double *V = NULL;
    if (maxopen > 14) P = 0;   /* 3^14 codes per position at most */
    if (!isfinite(cap)) for (int p = 0; p < P; p++) if (mu[p] != 0) { P = 0; break; }
    if (P > 0) {
        vptr = malloc(sizeof(long long) * (G + 2));
        vptr[0] = 0;
        for (int k = 0; k <= G; k++) {
            int nbk = k ? optr[k] - optr[k - 1] : 0;
            long long size = 1;
            for (int j = 0; j < nbk; j++) size *= 3;
            vptr[k + 1] = vptr[k] + size;
        }
        if ((double)P * (double)vptr[G + 1] > (double)(1 << 24)) P = 0;   /* at most 128 MB of tables */
        V = P > 0 ? malloc(sizeof(double) * (size_t)P * vptr[G + 1]) : NULL;
        if (V == NULL) P = 0;
        for (int p = 0; p < P; p++) {
            double *Vp = V + (size_t)p * vptr[G + 1];
            for (long long c = vptr[G]; c < vptr[G + 1]; c++) Vp[c] = 0.0;
            for (int k = G - 1; k >= 0; k--) {
                const int *obk = k ? olist + optr[k - 1] : olist, nbk = k ? optr[k] - optr[k - 1] : 0;
                const int *oak = olist + optr[k], nak = optr[k + 1] - optr[k];
                for (int e = tptr[k]; e < tptr[k + 1]; e++) mark[tsrc[e]] = k;
                const int allowed = isfinite(work[k]);
                for (long long c = 0; c < vptr[k + 1] - vptr[k]; c++) {
                    long long code = c;
                    for (int j = 0; j < nbk; j++) { status[obk[j]] = from3((int)(code % 3), own[obk[j]] < k); code /= 3; }
                    double bestv = -INFINITY;
                    for (int y = 0; y <= 1; y++) {
                        if (y && !allowed) continue;
                        double v = y ? pi[k] - lam[p] * work[k] - mu[p] * gmem[k] : 0.0;
                        for (int e = tptr[k]; e < tptr[k + 1]; e++) {
                            int i = tsrc[e], cut;
                            newst[i] = step_status(first[i] == k ? U00 : status[i], town[e], y, &cut);
                            if (cut) v -= lam[p] * cost[i];
                        }
                        long long nc = 0;
                        for (int j = nak - 1; j >= 0; j--) {
                            int i = oak[j];
                            nc = nc * 3 + to3(mark[i] == k ? newst[i] : status[i]);
                        }
                        v += Vp[vptr[k + 1] + nc];
                        if (v > bestv) bestv = v;
                    }
                    Vp[vptr[k] + c] = bestv;
                }
            }
        }
        for (int i = 0; i < S; i++) mark[i] = -1;
        for (int p = 0; p < P; p++) {
            double r = V[(size_t)p * vptr[G + 1]] + lam[p] * T + (mu[p] != 0 ? mu[p] * cap : 0.0);
            if (r < root) root = r;
        }
    }
    if (limit <= 0) {   /* the Lagrangian bounds alone (min over the multipliers; one per multiplier after it) */
        result = PyTuple_New(P + 1);
        if (result) {
            PyTuple_SET_ITEM(result, 0, PyFloat_FromDouble(root));
            for (int p = 0; p < P; p++)
                PyTuple_SET_ITEM(result, p + 1, PyFloat_FromDouble(V[(size_t)p * vptr[G + 1]] + lam[p] * T +
                                                                   (mu[p] != 0 ? mu[p] * cap : 0.0)));
        }
        goto cleanup;
    }
    if (maxopen > 24) { gave_up = 1; goto finish; }   /* 6^24 would overflow the state number */
    if (lagv == NULL || pool.val == NULL || pool.bits == NULL) { gave_up = 1; goto finish; }   /* no memory */
    for (int k = 0; k <= G; k++) {
        int n = 0;
        for (int g = k; g < G; g++)
            if (pi[g] > 0 && isfinite(work[g]) && gmem[g] <= captol) {
                items[n].key = work[g] > 0 ? pi[g] / work[g] : INFINITY;
                items[n++].g = g;
            }
        qsort(items, n, sizeof(Item), cmp_item);
        double *a = pw1 + (size_t)k * (G + 1), *v = pv1 + (size_t)k * (G + 1);
        a[0] = v[0] = 0;
        for (int j = 0; j < n; j++) { a[j + 1] = a[j] + fmax(0.0, work[items[j].g]); v[j + 1] = v[j] + pi[items[j].g]; }
        for (int j = 0; j < n; j++) items[j].key = gmem[items[j].g] > 0 ? pi[items[j].g] / gmem[items[j].g] : INFINITY;
        qsort(items, n, sizeof(Item), cmp_item);
        a = pw2 + (size_t)k * (G + 1); v = pv2 + (size_t)k * (G + 1);
        a[0] = v[0] = 0;
        for (int j = 0; j < n; j++) { a[j + 1] = a[j] + fmax(0.0, gmem[items[j].g]); v[j + 1] = v[j] + pi[items[j].g]; }
        nrest[k] = n;
    }
    for (int k = 0; k < G; k++) {
        clock_gettime(CLOCK_MONOTONIC, &t_now);
        if ((t_now.tv_sec - t_start.tv_sec) + 1e-9 * (t_now.tv_nsec - t_start.tv_nsec) > seconds) {
            gave_up = 1;   /* out of time: the caller prices otherwise */
            goto finish;
        }
        if (2 * n_cur > cap_labels) {   /* room for every child of this layer, in both layers' stores */
            long long want = cap_labels ? cap_labels : 1024;
            while (2 * n_cur > want) want *= 2;
            if (want > limit) { gave_up = 1; goto finish; }
            Label *c2 = realloc(cur, sizeof(Label) * want), *n2 = realloc(next, sizeof(Label) * want);
            uint64_t *bc = realloc(bits_cur, sizeof(uint64_t) * (size_t)want * W);
            uint64_t *bn = realloc(bits_next, sizeof(uint64_t) * (size_t)want * W);
            Pt *s2 = realloc(stair, sizeof(Pt) * want);
            Run *r2 = realloc(runs, sizeof(Run) * want);
            Cursor *h2 = realloc(heap, sizeof(Cursor) * want);
            if (c2) cur = c2;
            if (n2) next = n2;
            if (bc) bits_cur = bc;
            if (bn) bits_next = bn;
            if (s2) stair = s2;
            if (r2) runs = r2;
            if (h2) heap = h2;
            if (!c2 || !n2 || !bc || !bn || !s2 || !r2 || !h2) { gave_up = 1; goto finish; }
            if (cap_labels == 0) {   /* the empty set, before any group */
                cur[0].state = 0; cur[0].pi = 0; cur[0].load = 0; cur[0].mem = 0; cur[0].bi = 0;
                memset(bits_cur, 0, sizeof(uint64_t) * W);
            }
            cap_labels = want;
        }
        const int *ob = k ? olist + optr[k - 1] : olist, nb = k ? optr[k] - optr[k - 1] : 0;
        const int *oa = olist + optr[k], na = optr[k + 1] - optr[k];
        const int allowed = isfinite(work[k]);
        for (int e = tptr[k]; e < tptr[k + 1]; e++) mark[tsrc[e]] = k;
        const double *kw1 = pw1 + (size_t)(k + 1) * (G + 1), *kv1 = pv1 + (size_t)(k + 1) * (G + 1);
        const double *kw2 = pw2 + (size_t)(k + 1) * (G + 1), *kv2 = pv2 + (size_t)(k + 1) * (G + 1);
        /* children, state group by state group of the layer (sorted by state): what a decision does to the
         * sources (the new state, the communication it cuts, what closing would cut, the Lagrangian
         * completion values) depends on the state only; each (state, decision) gives one run of children in
         * label order */
        n_next = 0;
        long long n_runs = 0;
        for (long long a0 = 0, a1; a0 < n_cur; a0 = a1) {
            a1 = a0 + 1;
            while (a1 < n_cur && cur[a1].state == cur[a0].state) a1++;
            long long code = cur[a0].state;
            for (int j = 0; j < nb; j++) { status[ob[j]] = (int)(code % 6); code /= 6; }
            for (int y = 0; y <= 1; y++) {
                if (y && !allowed) continue;
                double dload = y ? work[k] : 0.0, dmem = y ? gmem[k] : 0.0, dpi = y ? pi[k] : 0.0;
                for (int e = tptr[k]; e < tptr[k + 1]; e++) {
                    int i = tsrc[e], cut;
                    newst[i] = step_status(first[i] == k ? U00 : status[i], town[e], y, &cut);
                    if (cut) dload += cost[i];
                }
                long long state = 0, state3 = 0;
                double close = 0.0;   /* what leaving every group still to come out would cut */
                for (int j = na - 1; j >= 0; j--) {
                    int i = oa[j];
                    int st_ = mark[i] == k ? newst[i] : status[i];
                    state = state * 6 + st_;
                    state3 = state3 * 3 + to3(st_);
                    if (st_ == IN0 || st_ == U10) close += cost[i];
                }
                for (int p = 0; p < P; p++)   /* room for the whole row; the label's load and mem come off below */
                    lagv[p] = lag_value(V + (size_t)p * vptr[G + 1] + vptr[k + 1] + state3, lam[p], mu[p], T, cap);
                const long long run_start = n_next;
                for (long long l = a0; l < a1; l++) {
                    const Label *L = cur + l;
                    double mem = L->mem + dmem;
                    if (y && mem > captol) continue;
                    double load = L->load + dload;
                    if (load > Ttol) continue;
                    double pv = L->pi + dpi;
                    int cut_off = 0;
                    for (int p = 0; p < P && !cut_off; p++)
                        if (pv + lagv[p] - lam[p] * load - (mu[p] != 0 ? mu[p] * mem : 0.0) < best - tol) cut_off = 1;
                    if (cut_off) continue;
                    /* what the groups still to come can add (communication only adds load: ignored) */
                    double ub = fmin(knap(kw1, kv1, nrest[k + 1], T - load), knap(kw2, kv2, nrest[k + 1], cap - mem));
                    if (pv + ub < best - tol) continue;
                    Label *N = next + n_next;
                    N->state = state; N->pi = pv; N->load = load; N->mem = mem; N->bi = n_next;
                    uint64_t *nb_ = bits_next + (size_t)n_next * W;
                    const uint64_t *pb = bits_cur + (size_t)L->bi * W;
                    for (int w = 0; w < W; w++) nb_[w] = pb[w];
                    if (y) nb_[k / 64] |= (uint64_t)1 << (k % 64);
                    n_next++;
                    if (pv > best && load + close <= Ttol) {   /* this set, completed by no more groups */
                        best = pv; best_found = 1;
                        for (int w = 0; w < W; w++) best_bits[w] = nb_[w];
                        if (best >= enough) { stopped = 1; goto finish; }
                    }
                    if (keep > 1 && y && pv > 0 && load + close <= Ttol) pool_offer(&pool, pv, nb_);
                }
                if (n_next > run_start) {
                    runs[n_runs].state = state; runs[n_runs].start = run_start; runs[n_runs].len = n_next - run_start;
                    n_runs++;
                }
            }
        }
        /* exact dominance within each state: its runs merged by pi (desc), a label is kept unless a kept one
         * has load <= and mem <= (the kept ones' (load, mem) staircase answers that); the kept labels go to
         * the consumed layer's array, which becomes the new layer */
        qsort(runs, n_runs, sizeof(Run), cmp_run);
        long long kept = 0;
        for (long long r0 = 0, r1; r0 < n_runs; r0 = r1) {
            r1 = r0 + 1;
            while (r1 < n_runs && runs[r1].state == runs[r0].state) r1++;
            int nh = 0, ns = 0;
            for (long long r = r0; r < r1; r++) {
                heap[nh].at = runs[r].start; heap[nh].end = runs[r].start + runs[r].len; nh++;
            }
            for (int i = nh / 2 - 1; i >= 0; i--) sift_down(heap, nh, i, next);
            while (nh > 0) {
                const Label *x = next + heap[0].at;
                if (!dominated(stair, ns, x->load, x->mem)) {
                    ns = insert_pt(stair, ns, x->load, x->mem);
                    cur[kept++] = *x;
                }
                if (++heap[0].at == heap[0].end) heap[0] = heap[--nh];
                sift_down(heap, nh, 0, next);
            }
        }
        if (beam > 0 && kept > beam) {
            /* a beam (a heuristic, not exact): the beam labels with the highest completion bound, in the layer's
             * order (by state, label order within it) */
            Item *sc = malloc(sizeof(Item) * (size_t)kept);
            Label *keep = malloc(sizeof(Label) * (size_t)beam);
            if (!sc || !keep) { free(sc); free(keep); gave_up = 1; goto finish; }
            for (long long l = 0; l < kept; l++) {
                double bound = cur[l].pi;
                if (P > 0) {
                    long long code = cur[l].state, s3 = 0, mult = 1;
                    for (int j = 0; j < na; j++) { s3 += to3((int)(code % 6)) * mult; code /= 6; mult *= 3; }
                    double m = INFINITY;
                    for (int p = 0; p < P; p++) {
                        double v = lag_value(V + (size_t)p * vptr[G + 1] + vptr[k + 1] + s3, lam[p], mu[p],
                                             T - cur[l].load, cap - cur[l].mem);
                        if (v < m) m = v;
                    }
                    bound += m;
                }
                sc[l].key = bound;
                sc[l].g = (int)l;
            }
            qsort(sc, (size_t)kept, sizeof(Item), cmp_item);
            for (long long l = 0; l < beam; l++) keep[l] = cur[sc[l].g];
            qsort(keep, (size_t)beam, sizeof(Label), cmp_state_label);
            memcpy(cur, keep, sizeof(Label) * (size_t)beam);
            kept = beam;
            free(sc); free(keep);
        }
        uint64_t *tb = bits_cur; bits_cur = bits_next; bits_next = tb;
        n_cur = kept;
        total_labels += kept;
        if (kept > widest) widest = kept;
        if (n_cur == 0) break;
    }
finish:
    if (gave_up) {
        Py_INCREF(Py_None);
        result = Py_None;
    } else {
        PyObject *set = PyBytes_FromStringAndSize(NULL, G);
        if (set) {
            char *p = PyBytes_AS_STRING(set);
            for (int g = 0; g < G; g++) p[g] = best_found ? (char)((best_bits[g / 64] >> (g % 64)) & 1) : 0;
            /* the pool's sets, best first, G bytes each */
            PyObject *more = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)pool.n * G);
            if (more) {
                char *q = PyBytes_AS_STRING(more);
                for (int r = 0; r < pool.n; r++) {     /* selection by value: pool.n is small */
                    int top = r;
                    for (int i = r + 1; i < pool.n; i++) if (pool.val[i] > pool.val[top]) top = i;
                    double tv = pool.val[r]; pool.val[r] = pool.val[top]; pool.val[top] = tv;
                    for (int w = 0; w < W; w++) {
                        uint64_t tb = pool.bits[(size_t)r * W + w];
                        pool.bits[(size_t)r * W + w] = pool.bits[(size_t)top * W + w];
                        pool.bits[(size_t)top * W + w] = tb;
                    }
                    for (int g = 0; g < G; g++) q[(size_t)r * G + g] = (char)((pool.bits[(size_t)r * W + g / 64] >> (g % 64)) & 1);
                }
                result = Py_BuildValue("(dNiLLdNi)", best, set, best_found, total_labels, widest, root, more, stopped);
            } else Py_DECREF(set);
        }
    }
cleanup:
    free(V); free(vptr);
    free(mark); free(first); free(last); free(tptr); free(tsrc); free(town); free(fill); free(optr); free(olist);
    free(pw1); free(pv1); free(pw2); free(pv2); free(nrest); free(items); free(status); free(newst);
    free(cur); free(next); free(bits_cur); free(bits_next); free(best_bits); free(stair); free(runs); free(heap);
    free(lagv); free(pool.val); free(pool.bits);
    PyBuffer_Release(&b_pi); PyBuffer_Release(&b_work); PyBuffer_Release(&b_mem); PyBuffer_Release(&b_own);
    PyBuffer_Release(&b_cost); PyBuffer_Release(&b_sptr); PyBuffer_Release(&b_succ);
    PyBuffer_Release(&b_lam); PyBuffer_Release(&b_mu);
    return result;
}

static PyMethodDef methods[] = {
    {"price", price, METH_VARARGS,
     "price(pi, work, mem, own, cost, succ_ptr, succ, cap, T, lb, label_limit, lam, mu, seconds[, beam[, keep[, enough]]]) -> "
     "(max pi(S), set bytes, found, labels kept in all, in the widest layer, the Lagrangian root bound, the best sets met: G "
     "bytes each, up to keep of them, stopped: a set worth enough was found and the search stopped there) or None beyond label_limit or seconds; with beam > 0, at most beam labels per layer (a heuristic: "
     "the best set found, not the maximum) (see viz_place/solvers/milp/set_pricing.py ExactPricer)."},
    {"local_improve", local_improve, METH_VARARGS,
     "local_improve(price, T, start, load, mem, cap, cand, work, mem_of, touch_ptr, touch_src, touch_own, touch_succ, "
     "src, nsucc, cost, succ_ptr, succ, rounds) -> set bytes (see viz_place/solvers/milp/set_local.py LocalPricer)."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_pricing", NULL, -1, methods};

PyMODINIT_FUNC PyInit__pricing(void) { return PyModule_Create(&module); }
