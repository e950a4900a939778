/* The compiled inner loop of the throughput DP's exact pass (viz_place/solvers/dp/recursion.py).
 *
 * group(...) fills best[I, u] for one group of consecutive ideals exactly as the numpy path does
 * (_Pass.candidates / feasible_pairs / Tables.comm / relax): the same candidates in the same order, the same
 * floating-point operations in the same order, the same tie-breaking (per state: the first class of the plan,
 * then the first candidate J reaching the minimum), so the tables it leaves are bit for bit the numpy path's.
 * The windows, the alive states and the reached ideals stay in Python (numpy, per group); Python calls this once
 * per group, so cancellation and progress run between groups.
 *
 * Every array comes through the buffer protocol (C-contiguous, checked element size and length); every index
 * read from an array is checked against the array it indexes before use (a bad index raises ValueError).
 * The GIL is released while a group runs. Compiled with -ffp-contract=off (no fused multiply-add, as numpy).
 */
#include "_kernel.h"

typedef struct {
    Py_ssize_t n, P, m, k, H, S;
    const int64_t *inv, *start, *stop, *r_ideal, *plan, *cut_ptr, *cut_h, *strides, *tptr, *targets;
    int64_t a;
    const uint64_t *pk, *guard, *dk, *freeh, *cut_down;
    int64_t *cand;
    double *clow, *cost, *best;
    const double *r_low, *comp, *lo, *hi, *unsup, *forbid, *size, *capmul, *link, *wcut, *htc;
    const uint8_t *need, *pays, *alive;
    int32_t *prev_ideal;
    int8_t *prev_class;
    int windowed, use_gap, bounded, has_alive;
    double T;
} Ctx;

/* The loop over the group's ideals; inlined twice: once with one packed word (P == 1, every published
   workload), once for any P. */
static inline __attribute__((always_inline)) long long run_group(const Ctx *c, const Py_ssize_t P) {
    const __typeof__(c->n) n = c->n;
    const __typeof__(c->m) m = c->m;
    const __typeof__(c->k) k = c->k;
    const __typeof__(c->H) H = c->H;
    const __typeof__(c->S) S = c->S;
    const __typeof__(c->inv) inv = c->inv;
    const __typeof__(c->start) start = c->start;
    const __typeof__(c->stop) stop = c->stop;
    const __typeof__(c->r_ideal) r_ideal = c->r_ideal;
    const __typeof__(c->plan) plan = c->plan;
    const __typeof__(c->cut_ptr) cut_ptr = c->cut_ptr;
    const __typeof__(c->cut_h) cut_h = c->cut_h;
    const __typeof__(c->strides) strides = c->strides;
    const __typeof__(c->tptr) tptr = c->tptr;
    const __typeof__(c->targets) targets = c->targets;
    const __typeof__(c->a) a = c->a;
    const __typeof__(c->pk) pk = c->pk;
    const __typeof__(c->guard) guard = c->guard;
    const __typeof__(c->dk) dk = c->dk;
    const __typeof__(c->freeh) freeh = c->freeh;
    const __typeof__(c->cut_down) cut_down = c->cut_down;
    const __typeof__(c->cand) cand = c->cand;
    const __typeof__(c->clow) clow = c->clow;
    const __typeof__(c->cost) cost = c->cost;
    const __typeof__(c->best) best = c->best;
    const __typeof__(c->r_low) r_low = c->r_low;
    const __typeof__(c->comp) comp = c->comp;
    const __typeof__(c->lo) lo = c->lo;
    const __typeof__(c->hi) hi = c->hi;
    const __typeof__(c->unsup) unsup = c->unsup;
    const __typeof__(c->forbid) forbid = c->forbid;
    const __typeof__(c->size) size = c->size;
    const __typeof__(c->capmul) capmul = c->capmul;
    const __typeof__(c->link) link = c->link;
    const __typeof__(c->wcut) wcut = c->wcut;
    const __typeof__(c->htc) htc = c->htc;
    const __typeof__(c->need) need = c->need;
    const __typeof__(c->pays) pays = c->pays;
    const __typeof__(c->alive) alive = c->alive;
    const __typeof__(c->prev_ideal) prev_ideal = c->prev_ideal;
    const __typeof__(c->prev_class) prev_class = c->prev_class;
    const __typeof__(c->windowed) windowed = c->windowed;
    const __typeof__(c->use_gap) use_gap = c->use_gap;
    const __typeof__(c->bounded) bounded = c->bounded;
    const __typeof__(c->has_alive) has_alive = c->has_alive;
    const __typeof__(c->T) T = c->T;
    const double gap_scale = 1.0 - 1e-12;
    long long pairs = 0;
    for (Py_ssize_t x = 0; x < n; x++) {
        const Py_ssize_t l = inv[x];
        const int64_t i = a + x;
        const uint64_t *pi = pk + i * P;
        /* candidates: J in the window, J ⊆ I, J != I, in window order */
        Py_ssize_t nc = 0;
        for (int64_t q = start[l]; q < stop[l]; q++) {
            int64_t J = r_ideal[q];
            if (J == i || !within(pk + J * P, pi, guard, P)) continue;
            cand[nc] = J;
            clow[nc] = r_low[q];
            nc++;
        }
        pairs += nc;
        if (nc == 0) continue;
        /* cost of I \ J per class of the plan (inf: does not fit within T) */
        for (Py_ssize_t q = 0; q < nc; q++) {
            const int64_t J = cand[q];
            double comm = NAN;
            int have_comm = 0;
            for (Py_ssize_t p = 0; p < m; p++) {
                const int64_t c = plan[p];
                double cp = comp[i * k + c] - comp[J * k + c];
                double out = INFINITY;
                int ok = cp <= T;
                if (ok && windowed) ok = clow[q] >= lo[p * n + l] && clow[q] <= hi[p * n + l];
                if (ok && need[c]) ok = unsup[J * k + c] == unsup[i * k + c];
                if (ok && need[k + c]) ok = forbid[J * k + c] == forbid[i * k + c];
                if (ok && need[2 * k + c]) ok = size[i] - size[J] <= capmul[c];
                if (ok && pays[c] && use_gap) ok = cp + link[c] * (fabs(wcut[i] - wcut[J]) * gap_scale) <= T;
                if (ok) {
                    if (pays[c]) {
                        if (!have_comm) {
                            /* Tables.comm: w(I) + w(J) minus, over the hyperedges h cut by I (when J may share
                               one: the down-closure of J's cut hyperedges leaves I), tc(h)·([J meets h] +
                               [h ∩ I ⊆ J]) */
                            comm = wcut[i] + wcut[J];
                            if (H > 0 && !within(dk + J * P, pi, guard, P)) {
                                const uint64_t *pj = pk + J * P;
                                double corr = 0.0;
                                for (int64_t e = cut_ptr[i]; e < cut_ptr[i + 1]; e++) {
                                    const int64_t h = cut_h[e];
                                    double meets = within(pj, freeh + h * P, guard, P) ? 0.0 : 1.0;
                                    double inside = within(cut_down + e * P, pj, guard, P) ? 1.0 : 0.0;
                                    corr += htc[h] * (meets + inside);
                                }
                                comm -= corr;
                            }
                            have_comm = 1;
                        }
                        out = cp + link[c] * comm;
                    } else {
                        out = cp;
                    }
                    if (bounded && !(out <= T)) out = INFINITY;
                }
                cost[p * nc + q] = out;
            }
        }
        /* relax, class by class of the plan, state by state, candidates in order: the first best kept (strict
           improvement), as numpy's minimum.reduceat and first arg */
        double *bi = best + i * S;
        for (Py_ssize_t p = 0; p < m; p++) {
            const int64_t c = plan[p], st = strides[c];
            const double *cp = cost + p * nc;
            for (int64_t t = tptr[c]; t < tptr[c + 1]; t++) {
                const int64_t u = targets[t], src = u - st;
                if (has_alive && !alive[l * S + u]) continue;
                double bu = bi[u];
                Py_ssize_t arg = -1;
                for (Py_ssize_t q = 0; q < nc; q++) {
                    const double cq = cp[q];
                    if (!(cq < bu)) continue;              /* max(b, cq) >= cq: no strict improvement */
                    const double b = best[cand[q] * S + src];
                    if (b < bu) {                          /* then v = max(b, cq) < bu */
                        bu = b > cq ? b : cq;
                        arg = q;
                    }
                }
                if (arg >= 0) {
                    bi[u] = bu;
                    prev_ideal[i * S + u] = (int32_t)cand[arg];
                    prev_class[i * S + u] = (int8_t)c;
                }
            }
        }
    }
    return pairs;
}

static long long run_group_one_word(const Ctx *c) { return run_group(c, 1); }
static long long run_group_any(const Ctx *c) { return run_group(c, c->P); }

enum {
    A_COMP, A_UNSUP, A_FORBID, A_SIZE, A_PK, A_GUARD, A_DK, A_WCUT, A_CUTPTR, A_CUTH, A_CUTDOWN, A_FREE, A_HTC,
    A_PAYS, A_LINK, A_CAPMUL, A_NEED, A_TARGETS, A_TPTR, A_STRIDES,
    A_BEST, A_PREVI, A_PREVC,
    A_I, A_START, A_STOP, A_RIDEAL, A_RLOW, A_PLAN, A_LO, A_HI, A_ALIVE,
    A_COUNT
};

static const char *NAMES[A_COUNT] = {
    "comp", "unsup", "forbid", "size", "pk", "guard", "dk", "wcut", "cut_ptr", "cut_h", "cut_down", "free", "htc",
    "pays", "link", "capmul", "need", "targets", "tptr", "strides",
    "best", "prev_ideal", "prev_class",
    "I", "start", "stop", "r_ideal", "r_low", "plan", "lo", "hi", "alive"};
static const Py_ssize_t ITEM[A_COUNT] = {
    8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8,
    1, 8, 8, 1, 8, 8, 8,
    8, 4, 1,
    8, 8, 8, 8, 8, 8, 8, 8, 1};

#define BAD(...) do { PyErr_Format(PyExc_ValueError, "_kernel.group: " __VA_ARGS__); goto done; } while (0)

static PyObject *group(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *obj[A_COUNT];
    double T;
    int bounded, use_gap;
    Buf buf[A_COUNT];
    memset(buf, 0, sizeof buf);
    PyObject *result = NULL;
    int64_t *inv = NULL, *cand = NULL;
    double *clow = NULL, *cost = NULL;
    if (!PyArg_ParseTuple(args, "OOOOOOOOOOOOOOOOOOOOOOOOOOOOOOOOdpp", &obj[0], &obj[1], &obj[2], &obj[3], &obj[4],
                          &obj[5], &obj[6], &obj[7], &obj[8], &obj[9], &obj[10], &obj[11], &obj[12], &obj[13],
                          &obj[14], &obj[15], &obj[16], &obj[17], &obj[18], &obj[19], &obj[20], &obj[21], &obj[22],
                          &obj[23], &obj[24], &obj[25], &obj[26], &obj[27], &obj[28], &obj[29], &obj[30], &obj[31],
                          &T, &bounded, &use_gap))
        return NULL;
    for (int a = 0; a < A_COUNT; a++) {
        int writable = a == A_BEST || a == A_PREVI || a == A_PREVC;
        if (get_buf(obj[a], &buf[a], ITEM[a], writable, NAMES[a]) < 0) goto done;
    }
    const Py_ssize_t N = nitems(&buf[A_SIZE]), k = nitems(&buf[A_PAYS]), P = nitems(&buf[A_GUARD]);
    const Py_ssize_t E = nitems(&buf[A_CUTH]), H = nitems(&buf[A_HTC]), n = nitems(&buf[A_I]);
    const Py_ssize_t M = nitems(&buf[A_RIDEAL]), m = nitems(&buf[A_PLAN]);
    if (N <= 0 || P <= 0 || k <= 0) BAD("empty tables (N=%zd, P=%zd, k=%zd)", N, P, k);
    const Py_ssize_t S = nitems(&buf[A_BEST]) / N;
    if (S <= 0 || nitems(&buf[A_BEST]) != N * S || nitems(&buf[A_PREVI]) != N * S || nitems(&buf[A_PREVC]) != N * S)
        BAD("best / prev_ideal / prev_class must hold N x S items (N=%zd)", N);
    if (nitems(&buf[A_COMP]) != N * k || nitems(&buf[A_UNSUP]) != N * k || nitems(&buf[A_FORBID]) != N * k)
        BAD("comp / unsup / forbid must hold N x k items (N=%zd, k=%zd)", N, k);
    if (nitems(&buf[A_PK]) != N * P || nitems(&buf[A_DK]) != N * P || nitems(&buf[A_WCUT]) != N)
        BAD("pk / dk must hold N x P items and wcut N (N=%zd, P=%zd)", N, P);
    if (nitems(&buf[A_CUTPTR]) != N + 1 || nitems(&buf[A_CUTDOWN]) != E * P || nitems(&buf[A_FREE]) != H * P)
        BAD("cut_ptr must hold N + 1 items, cut_down E x P, free H x P (N=%zd, E=%zd, H=%zd)", N, E, H);
    if (nitems(&buf[A_LINK]) != k || nitems(&buf[A_CAPMUL]) != k || nitems(&buf[A_NEED]) != 3 * k ||
        nitems(&buf[A_TPTR]) != k + 1 || nitems(&buf[A_STRIDES]) != k)
        BAD("per-class arrays must hold k items (need 3 k, tptr k + 1; k=%zd)", k);
    if (nitems(&buf[A_START]) != n || nitems(&buf[A_STOP]) != n || nitems(&buf[A_RLOW]) != M)
        BAD("start / stop must hold one item per ideal of the group, r_low one per r_ideal");
    const int windowed = nitems(&buf[A_LO]) > 0, has_alive = nitems(&buf[A_ALIVE]) > 0;
    if (windowed && (nitems(&buf[A_LO]) != m * n || nitems(&buf[A_HI]) != m * n))
        BAD("lo / hi must hold (classes in the plan) x (ideals of the group) items");
    if (has_alive && nitems(&buf[A_ALIVE]) != n * S) BAD("alive must hold (ideals of the group) x S items");

    const double *comp = buf[A_COMP].b.buf, *unsup = buf[A_UNSUP].b.buf, *forbid = buf[A_FORBID].b.buf;
    const double *size = buf[A_SIZE].b.buf, *wcut = buf[A_WCUT].b.buf, *htc = buf[A_HTC].b.buf;
    const uint64_t *pk = buf[A_PK].b.buf, *guard = buf[A_GUARD].b.buf, *dk = buf[A_DK].b.buf;
    const uint64_t *cut_down = buf[A_CUTDOWN].b.buf, *freeh = buf[A_FREE].b.buf;
    const int64_t *cut_ptr = buf[A_CUTPTR].b.buf, *cut_h = buf[A_CUTH].b.buf;
    const uint8_t *pays = buf[A_PAYS].b.buf, *need = buf[A_NEED].b.buf, *alive = buf[A_ALIVE].b.buf;
    const double *link = buf[A_LINK].b.buf, *capmul = buf[A_CAPMUL].b.buf;
    const int64_t *targets = buf[A_TARGETS].b.buf, *tptr = buf[A_TPTR].b.buf, *strides = buf[A_STRIDES].b.buf;
    double *best = buf[A_BEST].b.buf;
    int32_t *prev_ideal = buf[A_PREVI].b.buf;
    int8_t *prev_class = buf[A_PREVC].b.buf;
    const int64_t *I = buf[A_I].b.buf, *start = buf[A_START].b.buf, *stop = buf[A_STOP].b.buf;
    const int64_t *r_ideal = buf[A_RIDEAL].b.buf, *plan = buf[A_PLAN].b.buf;
    const double *r_low = buf[A_RLOW].b.buf, *lo = buf[A_LO].b.buf, *hi = buf[A_HI].b.buf;
    const Py_ssize_t NT = nitems(&buf[A_TARGETS]);

    if (N > INT32_MAX) BAD("more than 2**31 - 1 ideals");
    if (k > 127) BAD("more than 127 device classes");
    /* states and classes: every target state u of class c has a source u - stride[c] in [0, S) */
    if (tptr[0] != 0 || tptr[k] != NT) BAD("tptr must run from 0 to len(targets)");
    for (Py_ssize_t c = 0; c < k; c++) {
        if (tptr[c + 1] < tptr[c]) BAD("tptr must not decrease");
        for (int64_t t = tptr[c]; t < tptr[c + 1]; t++)
            if (targets[t] < 0 || targets[t] >= S || targets[t] - strides[c] < 0 || targets[t] - strides[c] >= S)
                BAD("target state %lld of class %zd or its source out of range", (long long)targets[t], c);
    }
    for (Py_ssize_t p = 0; p < m; p++)
        if (plan[p] < 0 || plan[p] >= k) BAD("plan class %lld out of range", (long long)plan[p]);
    for (Py_ssize_t q = 0; q < M; q++)
        if (r_ideal[q] < 0 || r_ideal[q] >= N) BAD("candidate ideal %lld out of range", (long long)r_ideal[q]);
    /* the group's ideals: a permutation of a contiguous range a .. a + n - 1, processed by index (so by size:
       a candidate J ⊊ I is final before I reads it) */
    int64_t a = n ? I[0] : 0;
    Py_ssize_t widest = 0;
    for (Py_ssize_t l = 0; l < n; l++) {
        if (I[l] < a) a = I[l];
        if (start[l] < 0 || start[l] > stop[l] || stop[l] > M) BAD("window of ideal %lld out of range",
                                                                   (long long)I[l]);
        if (stop[l] - start[l] > widest) widest = stop[l] - start[l];
    }
    inv = malloc(sizeof(int64_t) * (n ? n : 1));
    cand = malloc(sizeof(int64_t) * (widest ? widest : 1));
    clow = malloc(sizeof(double) * (widest ? widest : 1));
    cost = malloc(sizeof(double) * (widest ? widest : 1) * (m ? m : 1));
    if (!inv || !cand || !clow || !cost) { PyErr_NoMemory(); goto done; }
    for (Py_ssize_t l = 0; l < n; l++) inv[l] = -1;
    for (Py_ssize_t l = 0; l < n; l++) {
        int64_t x = I[l] - a;
        if (I[l] >= N || x >= n || inv[x] >= 0) BAD("the group's ideals must be distinct and consecutive");
        inv[x] = l;
    }
    for (Py_ssize_t x = 0; x < n; x++) {  /* communication tables of the group's ideals */
        int64_t i = a + x;
        if (cut_ptr[i] < 0 || cut_ptr[i] > cut_ptr[i + 1] || cut_ptr[i + 1] > E) BAD("cut_ptr out of range");
        for (int64_t e = cut_ptr[i]; e < cut_ptr[i + 1]; e++)
            if (cut_h[e] < 0 || cut_h[e] >= H) BAD("hyperedge %lld out of range", (long long)cut_h[e]);
    }

    long long pairs = 0;
    const Ctx ctx = {
        .n = n,
        .P = P,
        .m = m,
        .k = k,
        .H = H,
        .S = S,
        .inv = inv,
        .start = start,
        .stop = stop,
        .r_ideal = r_ideal,
        .plan = plan,
        .cut_ptr = cut_ptr,
        .cut_h = cut_h,
        .strides = strides,
        .tptr = tptr,
        .targets = targets,
        .a = a,
        .pk = pk,
        .guard = guard,
        .dk = dk,
        .freeh = freeh,
        .cut_down = cut_down,
        .cand = cand,
        .clow = clow,
        .cost = cost,
        .best = best,
        .r_low = r_low,
        .comp = comp,
        .lo = lo,
        .hi = hi,
        .unsup = unsup,
        .forbid = forbid,
        .size = size,
        .capmul = capmul,
        .link = link,
        .wcut = wcut,
        .htc = htc,
        .need = need,
        .pays = pays,
        .alive = alive,
        .prev_ideal = prev_ideal,
        .prev_class = prev_class,
        .windowed = windowed,
        .use_gap = use_gap,
        .bounded = bounded,
        .has_alive = has_alive,
        .T = T,
    };
    Py_BEGIN_ALLOW_THREADS
    pairs = P == 1 ? run_group_one_word(&ctx) : run_group_any(&ctx);
    Py_END_ALLOW_THREADS
    result = PyLong_FromLongLong(pairs);
done:
    free(inv);
    free(cand);
    free(clow);
    free(cost);
    for (int a2 = 0; a2 < A_COUNT; a2++)
        if (buf[a2].held) PyBuffer_Release(&buf[a2].b);
    return result;
}

static PyMethodDef methods[] = {
    {"ideals", kernel_ideals, METH_VARARGS,
     "ideals(pred, succ_ptr, succ, limit, check) -> (bits, parent, added, level_starts) or None beyond limit "
     "(viz_place/solvers/dp/ideals.py enumerate_ideals, the same order)."},
    {"node_counts", kernel_node_counts, METH_VARARGS, "Per node and chain: the counts of its down-set and free set."},
    {"cuts", kernel_cuts, METH_VARARGS, "The hyperedge cut tables of viz_place/solvers/dp/hyperedges.py (see the source)."},
    {"prefix_sums", kernel_prefix_sums, METH_VARARGS,
     "prefix_sums(parent, added, weights, out): out[i] = out[parent[i]] + weights[added[i]] for i >= 1, in order."},
    {"group", group, METH_VARARGS,
     "group(tables..., I, start, stop, r_ideal, r_low, plan, lo, hi, alive, T, bounded, use_gap) -> pairs\n\n"
     "Fill best / prev_ideal / prev_class for one group of ideals (see viz_place/solvers/dp/recursion.py)."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_kernel",
                                    "The compiled inner loop of the throughput DP's exact pass.", -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__kernel(void) { return PyModule_Create(&module); }
