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
 *
 * price() below: the sources' layout (layout_build), the Lagrangian tables (lagrangian_build, every multiplier
 * pair in one backward sweep) and the knapsack tables (knapsacks_build), all three in _pricing_tables.c; then
 * group by group: room for the children (dp_room), the children that may still win (dp_children), exact
 * dominance (dp_dominance) and, with a beam, the cut to the beam's width (dp_beam); dp_result builds what it
 * returns.
 */
#include "_pricing.h"
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    long long state;
    double pi, load, mem;
    long long bi;     /* index of the set's W words in the layer's bit store */
} Label;

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

/* The label DP's run: the problem, its tables, the two label layers and what it found. */
typedef struct {
    int G, W;
    const double *pi, *work, *gmem, *cost, *lam, *mu;
    double T, cap, Ttol, captol, enough;
    const Layout *lay;
    const Lagrangian *lg;
    const Knapsacks *kn;
    int *status, *newst, *mark;     /* scratch over the sources (mark: -1, or the position that touched it last) */
    double *lagv;                   /* scratch over the multiplier pairs */
    /* the layers: n_cur labels in cur (their sets in bits_cur), the children in next (bits_next); room for
     * `room` labels in each store */
    long long room, n_cur;
    Label *cur, *next;
    uint64_t *bits_cur, *bits_next;
    Pt *stair;
    Run *runs;
    Cursor *heap;
    /* what was found: the best value and set, whether a set was found (beyond the lower bound passed), whether
     * one worth `enough` stopped the run, the best sets met */
    double best, tol;
    uint64_t *best_bits;
    int best_found, stopped;
    Pool pool;
} Dp;

static void dp_free(Dp *d) {
    free(d->cur); free(d->next); free(d->bits_cur); free(d->bits_next); free(d->stair); free(d->runs); free(d->heap);
    free(d->best_bits); free(d->pool.val); free(d->pool.bits);
}

/* Room for every child of the current layer (two per label) in both layers' stores: 0, or -1 beyond `limit`
 * labels or when memory cannot be had. The first call puts the empty set in the first layer. */
static int dp_room(Dp *d, long long limit) {
    if (2 * d->n_cur <= d->room) return 0;
    long long want = d->room ? d->room : 1024;
    while (2 * d->n_cur > want) want *= 2;
    if (want > limit) return -1;
    const int W = d->W;
    Label *c2 = realloc(d->cur, sizeof(Label) * want), *n2 = realloc(d->next, sizeof(Label) * want);
    uint64_t *bc = realloc(d->bits_cur, sizeof(uint64_t) * (size_t)want * W);
    uint64_t *bn = realloc(d->bits_next, sizeof(uint64_t) * (size_t)want * W);
    Pt *s2 = realloc(d->stair, sizeof(Pt) * want);
    Run *r2 = realloc(d->runs, sizeof(Run) * want);
    Cursor *h2 = realloc(d->heap, sizeof(Cursor) * want);
    if (c2) d->cur = c2;
    if (n2) d->next = n2;
    if (bc) d->bits_cur = bc;
    if (bn) d->bits_next = bn;
    if (s2) d->stair = s2;
    if (r2) d->runs = r2;
    if (h2) d->heap = h2;
    if (!c2 || !n2 || !bc || !bn || !s2 || !r2 || !h2) return -1;
    if (d->room == 0) {   /* the empty set, before any group */
        d->cur[0].state = 0; d->cur[0].pi = 0; d->cur[0].load = 0; d->cur[0].mem = 0; d->cur[0].bi = 0;
        memset(d->bits_cur, 0, sizeof(uint64_t) * W);
    }
    d->room = want;
    return 0;
}

/* The children of layer k-1's labels (deciding group k) that may still beat the best value, into next, state
 * group by state group of the layer (sorted by state): what a decision does to the sources (the new state, the
 * communication it cuts, what closing would cut, the Lagrangian completion values) depends on the state only;
 * each (state, decision) gives one run of children in label order. Every child completed by taking no more
 * groups is a candidate for the best value (and for the pool). The number of runs, or -1 when a set worth
 * `enough` stopped the run. */
static long long dp_children(Dp *d, int k) {
    const Layout *lay = d->lay;
    const Lagrangian *lg = d->lg;
    const int G = d->G, W = d->W, P = lg->P;
    const double *pi = d->pi, *work = d->work, *gmem = d->gmem, *cost = d->cost, *lam = d->lam, *mu = d->mu;
    const double Ttol = d->Ttol, captol = d->captol, tol = d->tol;
    int *status = d->status, *newst = d->newst, *mark = d->mark;
    const int *tptr = lay->tptr, *tsrc = lay->tsrc, *town = lay->town, *first = lay->first;
    const int *ob = k ? lay->olist + lay->optr[k - 1] : lay->olist, nb = k ? lay->optr[k] - lay->optr[k - 1] : 0;
    const int *oa = lay->olist + lay->optr[k], na = lay->optr[k + 1] - lay->optr[k];
    const int allowed = isfinite(work[k]);
    for (int e = tptr[k]; e < tptr[k + 1]; e++) mark[tsrc[e]] = k;
    const double *kw1 = d->kn->pw1 + (size_t)(k + 1) * (G + 1), *kv1 = d->kn->pv1 + (size_t)(k + 1) * (G + 1);
    const double *kw2 = d->kn->pw2 + (size_t)(k + 1) * (G + 1), *kv2 = d->kn->pv2 + (size_t)(k + 1) * (G + 1);
    const int nrest = d->kn->nrest[k + 1];
    const Label *cur = d->cur;
    long long n_next = 0, n_runs = 0;
    for (long long a0 = 0, a1; a0 < d->n_cur; a0 = a1) {
        a1 = a0 + 1;
        while (a1 < d->n_cur && cur[a1].state == cur[a0].state) a1++;
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
                d->lagv[p] = lag_bound(lg, p, k + 1, state3, lam, mu, d->T, d->cap);
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
                    if (pv + d->lagv[p] - lam[p] * load - (mu[p] != 0 ? mu[p] * mem : 0.0) < d->best - tol) cut_off = 1;
                if (cut_off) continue;
                /* what the groups still to come can add (communication only adds load: ignored) */
                double ub = fmin(knap(kw1, kv1, nrest, d->T - load), knap(kw2, kv2, nrest, d->cap - mem));
                if (pv + ub < d->best - tol) continue;
                Label *N = d->next + n_next;
                N->state = state; N->pi = pv; N->load = load; N->mem = mem; N->bi = n_next;
                uint64_t *nb_ = d->bits_next + (size_t)n_next * W;
                const uint64_t *pb = d->bits_cur + (size_t)L->bi * W;
                for (int w = 0; w < W; w++) nb_[w] = pb[w];
                if (y) nb_[k / 64] |= (uint64_t)1 << (k % 64);
                n_next++;
                if (pv > d->best && load + close <= Ttol) {   /* this set, completed by no more groups */
                    d->best = pv; d->best_found = 1;
                    for (int w = 0; w < W; w++) d->best_bits[w] = nb_[w];
                    if (d->best >= d->enough) { d->stopped = 1; return -1; }
                }
                if (d->pool.keep > 1 && y && pv > 0 && load + close <= Ttol) pool_offer(&d->pool, pv, nb_);
            }
            if (n_next > run_start) {
                d->runs[n_runs].state = state; d->runs[n_runs].start = run_start; d->runs[n_runs].len = n_next - run_start;
                n_runs++;
            }
        }
    }
    return n_runs;
}

/* Exact dominance within each state: its runs of children merged by pi (desc), a label is kept unless a kept one
 * has load <= and mem <= (the kept ones' (load, mem) staircase answers that); the kept labels go to the consumed
 * layer's array (cur), which becomes the new layer. The number kept. */
static long long dp_dominance(Dp *d, long long n_runs) {
    Run *runs = d->runs;
    Cursor *heap = d->heap;
    qsort(runs, n_runs, sizeof(Run), cmp_run);
    long long kept = 0;
    for (long long r0 = 0, r1; r0 < n_runs; r0 = r1) {
        r1 = r0 + 1;
        while (r1 < n_runs && runs[r1].state == runs[r0].state) r1++;
        int nh = 0, ns = 0;
        for (long long r = r0; r < r1; r++) {
            heap[nh].at = runs[r].start; heap[nh].end = runs[r].start + runs[r].len; nh++;
        }
        for (int i = nh / 2 - 1; i >= 0; i--) sift_down(heap, nh, i, d->next);
        while (nh > 0) {
            const Label *x = d->next + heap[0].at;
            if (!dominated(d->stair, ns, x->load, x->mem)) {
                ns = insert_pt(d->stair, ns, x->load, x->mem);
                d->cur[kept++] = *x;
            }
            if (++heap[0].at == heap[0].end) heap[0] = heap[--nh];
            sift_down(heap, nh, 0, d->next);
        }
    }
    return kept;
}

/* A beam (a heuristic, not exact): of the `kept` labels of the new layer after position k, the `beam` with the
 * highest completion bound, in the layer's order (by state, label order within it). The new count, or -1 when
 * memory cannot be had. */
static long long dp_beam(Dp *d, int k, long long kept, long long beam) {
    const Lagrangian *lg = d->lg;
    const int na = d->lay->optr[k + 1] - d->lay->optr[k];
    Item *sc = malloc(sizeof(Item) * (size_t)kept);
    Label *chosen = malloc(sizeof(Label) * (size_t)beam);
    if (!sc || !chosen) { free(sc); free(chosen); return -1; }
    for (long long l = 0; l < kept; l++) {
        const Label *L = d->cur + l;
        double bound = L->pi;
        if (lg->P > 0) {
            long long code = L->state, s3 = 0, mult = 1;
            for (int j = 0; j < na; j++) { s3 += to3((int)(code % 6)) * mult; code /= 6; mult *= 3; }
            double m = INFINITY;
            for (int p = 0; p < lg->P; p++) {
                double v = lag_bound(lg, p, k + 1, s3, d->lam, d->mu, d->T - L->load, d->cap - L->mem);
                if (v < m) m = v;
            }
            bound += m;
        }
        sc[l].key = bound;
        sc[l].g = (int)l;
    }
    qsort(sc, (size_t)kept, sizeof(Item), cmp_item);
    for (long long l = 0; l < beam; l++) chosen[l] = d->cur[sc[l].g];
    qsort(chosen, (size_t)beam, sizeof(Label), cmp_state_label);
    memcpy(d->cur, chosen, sizeof(Label) * (size_t)beam);
    free(sc); free(chosen);
    return beam;
}

/* (best, set bytes, found, labels, widest layer, root bound, the pool's sets best first (G bytes each), stopped) */
static PyObject *dp_result(Dp *d, long long total_labels, long long widest, double root) {
    const int G = d->G, W = d->W;
    Pool *pool = &d->pool;
    PyObject *set = PyBytes_FromStringAndSize(NULL, G);
    if (!set) return NULL;
    char *p = PyBytes_AS_STRING(set);
    for (int g = 0; g < G; g++) p[g] = d->best_found ? (char)((d->best_bits[g / 64] >> (g % 64)) & 1) : 0;
    PyObject *more = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)pool->n * G);
    if (!more) { Py_DECREF(set); return NULL; }
    char *q = PyBytes_AS_STRING(more);
    for (int r = 0; r < pool->n; r++) {     /* selection by value: pool->n is small */
        int top = r;
        for (int i = r + 1; i < pool->n; i++) if (pool->val[i] > pool->val[top]) top = i;
        double tv = pool->val[r]; pool->val[r] = pool->val[top]; pool->val[top] = tv;
        for (int w = 0; w < W; w++) {
            uint64_t tb = pool->bits[(size_t)r * W + w];
            pool->bits[(size_t)r * W + w] = pool->bits[(size_t)top * W + w];
            pool->bits[(size_t)top * W + w] = tb;
        }
        for (int g = 0; g < G; g++) q[(size_t)r * G + g] = (char)((pool->bits[(size_t)r * W + g / 64] >> (g % 64)) & 1);
    }
    return Py_BuildValue("(dNiLLdNi)", d->best, set, d->best_found, total_labels, widest, root, more, d->stopped);
}

static double seconds_since(const struct timespec *start) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (now.tv_sec - start->tv_sec) + 1e-9 * (now.tv_nsec - start->tv_nsec);
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
    struct timespec t_start;
    clock_gettime(CLOCK_MONOTONIC, &t_start);
    const double *lam = b_lam.buf, *mu = b_mu.buf;
    const int P = (int)(b_lam.len / sizeof(double));
    const double *pi = b_pi.buf, *work = b_work.buf, *gmem = b_mem.buf, *cost = b_cost.buf;
    const long long *own = b_own.buf;
    const int G = (int)(b_pi.len / sizeof(double)), S = (int)(b_own.len / sizeof(long long));
    const int W = (G + 63) / 64;   /* words per set */
    PyObject *result = NULL;
    int gave_up = 0;
    long long total_labels = 0, widest = 0;
    Layout lay;
    Lagrangian lg = {0, NULL, 0, NULL, INFINITY};
    Knapsacks kn = {NULL, NULL, NULL, NULL, NULL};
    Dp d;
    memset(&d, 0, sizeof d);
    int *cuts = malloc(sizeof(int) * (S + 1));
    double *bestv = malloc(sizeof(double) * (P > 0 ? P : 1));
    Item *items = malloc(sizeof(Item) * (G + 1));
    d.status = malloc(sizeof(int) * (S + 1)); d.newst = malloc(sizeof(int) * (S + 1));
    d.mark = malloc(sizeof(int) * (S + 1));
    d.lagv = malloc(sizeof(double) * (P > 0 ? P : 1));
    if (layout_build(&lay, G, S, own, b_sptr.buf, b_succ.buf) || !cuts || !bestv || !items || !d.status || !d.newst ||
        !d.mark || !d.lagv) { gave_up = 1; goto finish; }    /* no memory: the caller prices otherwise */
    for (int i = 0; i < S; i++) d.mark[i] = -1;
    lagrangian_build(&lg, &lay, G, S, P, pi, work, gmem, cost, own, lam, mu, T, cap, d.status, d.newst, d.mark, cuts,
                     bestv);
    if (limit <= 0) {   /* the Lagrangian bounds alone (min over the multipliers; one per multiplier after it) */
        result = PyTuple_New(lg.P + 1);
        if (result) {
            PyTuple_SET_ITEM(result, 0, PyFloat_FromDouble(lg.root));
            for (int p = 0; p < lg.P; p++)
                PyTuple_SET_ITEM(result, p + 1, PyFloat_FromDouble(lag_bound(&lg, p, 0, 0, lam, mu, T, cap)));
        }
        goto cleanup;
    }
    if (lay.maxopen > 24) { gave_up = 1; goto finish; }   /* 6^24 would overflow the state number */
    if (keep < 1) keep = 1;
    d.G = G; d.W = W; d.pi = pi; d.work = work; d.gmem = gmem; d.cost = cost; d.lam = lam; d.mu = mu;
    d.T = T; d.cap = cap; d.enough = enough;
    d.Ttol = T + 1e-12 * fabs(T) + 1e-12; d.captol = cap + 1e-12 * fabs(cap) + 1e-12;
    d.lay = &lay; d.lg = &lg; d.kn = &kn;
    d.n_cur = 1;
    d.best = lb > 0 ? lb : 0.0;
    d.tol = 1e-9 * (fabs(d.best) + 1.0);
    d.best_bits = calloc(W, sizeof(uint64_t));
    d.pool = (Pool){keep, 0, 0, W, malloc(sizeof(double) * keep), malloc(sizeof(uint64_t) * (size_t)keep * W)};
    if (!d.best_bits || !d.pool.val || !d.pool.bits || knapsacks_build(&kn, G, pi, work, gmem, d.captol, items)) {
        gave_up = 1;   /* no memory */
        goto finish;
    }
    for (int k = 0; k < G; k++) {
        if (seconds_since(&t_start) > seconds || dp_room(&d, limit)) {
            gave_up = 1;   /* out of time, beyond the label limit or out of memory: the caller prices otherwise */
            goto finish;
        }
        long long n_runs = dp_children(&d, k);
        if (n_runs < 0) goto finish;      /* a set worth `enough` */
        long long kept = dp_dominance(&d, n_runs);
        if (beam > 0 && kept > beam && (kept = dp_beam(&d, k, kept, beam)) < 0) { gave_up = 1; goto finish; }
        uint64_t *tb = d.bits_cur; d.bits_cur = d.bits_next; d.bits_next = tb;
        d.n_cur = kept;
        total_labels += kept;
        if (kept > widest) widest = kept;
        if (d.n_cur == 0) break;
    }
finish:
    if (gave_up) {
        Py_INCREF(Py_None);
        result = Py_None;
    } else
        result = dp_result(&d, total_labels, widest, lg.root);
cleanup:
    lagrangian_free(&lg);
    layout_free(&lay);
    knapsacks_free(&kn);
    dp_free(&d);
    free(d.status); free(d.newst); free(d.mark); free(d.lagv); free(cuts); free(bestv); free(items);
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
