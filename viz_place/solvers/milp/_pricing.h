/* Shared by the _pricing module's files: _pricing.c (the exact label DP, and the module's method table),
 * _pricing_tables.c (what the label DP precomputes: the sources' layout, the Lagrangian and knapsack tables) and
 * _pricing_local.c (the local search). */
#ifndef VIZ_PLACE_MILP_PRICING_H
#define VIZ_PLACE_MILP_PRICING_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>

/* local_improve(price, T, start, load, mem, cap, cand, ...) -> set bytes (see _pricing_local.c) */
PyObject *local_improve(PyObject *self, PyObject *args);

/* A source's status while it is open (see _pricing.c's opening comment) */
enum { U00 = 0, U10 = 1, U01 = 2, IN0 = 3, OUT0 = 4, DONE = 5 };

/* status change of one source when a group it touches is decided (y: the group is in the set);
 * *cut is set when the source becomes cut now */
static inline int step_status(int s, int own, int y, int *cut) {
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
static inline int to3(int s) { return s == IN0 || s == U10 ? 0 : (s == OUT0 || s == U01 ? 1 : 2); }
static inline int from3(int c, int own_decided) {
    return c == 2 ? DONE : (own_decided ? (c == 0 ? IN0 : OUT0) : (c == 0 ? U10 : U01));
}

/* a Lagrangian completion value: the backward table's entry for a state (*v) plus the multipliers times the
 * room left on the load and memory rows (the memory term only with a memory multiplier) */
static inline double lag_value(const double *v, double lam, double mu, double load_room, double mem_room) {
    return *v + lam * load_room + (mu != 0 ? mu * mem_room : 0.0);
}

/* a group (or label) with a sort key; cmp_item orders by key, descending */
typedef struct { double key; int g; } Item;
int cmp_item(const void *a, const void *b);

/* Where the sources are open and which sources each group touches: fixed by the group order alone. */
typedef struct {
    int *first, *last;         /* per source: the first and the last group it touches */
    int *tptr, *tsrc, *town;   /* group k touches the sources tsrc[tptr[k] .. tptr[k + 1]) (town: as their own group) */
    int *optr, *olist;         /* the sources open after position k (first <= k < last): olist[optr[k] .. optr[k + 1]),
                                  in source order */
    int maxopen;               /* the most sources open at once */
} Layout;

/* 0, or -1 when memory cannot be had */
int layout_build(Layout *lay, int G, int S, const long long *own, const long long *sptr,
                 const long long *succ);
void layout_free(Layout *lay);

/* Lagrangian completion bounds: for multipliers (lam, mu) >= 0 on the load and the memory rows,
 * V[p][k][code] = max over the decisions of groups k.. of sum (pi - lam work - mu mem) - lam * cuts,
 * from the status code of the sources open before k (communication included, exactly; in base 3, see
 * to3); a label after group k can then reach at most pi + V[p][k+1][its code] + lam (T - load) + mu (cap - mem).
 * Pair p's table is V + p * per; position k's codes start at vptr[k]. P is 0 when there are none (too many
 * sources open at once, too large, no memory, or a memory multiplier without a memory limit). */
typedef struct {
    int P;
    long long *vptr, per;
    double *V;
    double root;     /* the smallest bound on the whole problem (INFINITY without tables) */
} Lagrangian;

/* pair p's bound on a label in state code (base 3) after position k-1, with the room left on each row */
static inline double lag_bound(const Lagrangian *lg, int p, int k, long long code, const double *lam, const double *mu,
                               double load_room, double mem_room) {
    return lag_value(lg->V + (size_t)p * lg->per + lg->vptr[k] + code, lam[p], mu[p], load_room, mem_room);
}

/* The tables of the P multiplier pairs, built backwards over the positions. What a decision does to the sources
 * (their new statuses, the sources it cuts, the next code) is the same for every pair, so it is worked out once
 * per (position, code, decision) and then applied to each pair (in the same order of operations as a pair alone
 * would take). Scratch: status, newst, mark (all -1, left so) and cuts over the sources, bestv over the pairs. */
void lagrangian_build(Lagrangian *lg, const Layout *lay, int G, int S, int P, const double *pi,
                      const double *work, const double *gmem, const double *cost, const long long *own,
                      const double *lam, const double *mu, double T, double cap, int *status, int *newst,
                      int *mark, int *cuts, double *bestv);
void lagrangian_free(Lagrangian *lg);

/* Per position k, the groups still to come (k..) with a positive price that fit in memory, sorted by price per
 * work (pw1, pv1: prefix sums of work and price) and by price per memory (pw2, pv2), nrest[k] of them: the
 * fractional knapsack bounds (knap) of what they can add. */
typedef struct { double *pw1, *pv1, *pw2, *pv2; int *nrest; } Knapsacks;

/* 0, or -1 when memory cannot be had; items: scratch for G + 1 */
int knapsacks_build(Knapsacks *kn, int G, const double *pi, const double *work, const double *gmem, double captol,
                    Item *items);
void knapsacks_free(Knapsacks *kn);

#endif
