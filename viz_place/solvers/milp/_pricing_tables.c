/* What the pricing's label DP (_pricing.c) precomputes before its first layer: the sources' layout over the
 * group order, the Lagrangian completion tables and the fractional knapsack tables (types in _pricing.h). */
#include "_pricing.h"
#include <stdlib.h>
#include <string.h>

int cmp_item(const void *a, const void *b) {
    double x = ((const Item *)a)->key, y = ((const Item *)b)->key;
    return x > y ? -1 : (x < y ? 1 : 0);
}

void layout_free(Layout *lay) {
    free(lay->first); free(lay->last); free(lay->tptr); free(lay->tsrc); free(lay->town);
    free(lay->optr); free(lay->olist);
}

int layout_build(Layout *lay, int G, int S, const long long *own, const long long *sptr,
                 const long long *succ) {
    memset(lay, 0, sizeof *lay);
    int *first = lay->first = malloc(sizeof(int) * (S + 1)), *last = lay->last = malloc(sizeof(int) * (S + 1));
    int *tptr = lay->tptr = calloc(G + 1, sizeof(int)), *optr = lay->optr = calloc(G + 2, sizeof(int));
    if (!first || !last || !tptr || !optr) return -1;
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
    int *tsrc = lay->tsrc = malloc(sizeof(int) * (tptr[G] + 1)), *town = lay->town = malloc(sizeof(int) * (tptr[G] + 1));
    int *fill = calloc(G + 1, sizeof(int));
    if (!tsrc || !town || !fill) { free(fill); return -1; }
    for (int i = 0; i < S; i++) {
        int k = (int)own[i];
        tsrc[tptr[k] + fill[k]] = i; town[tptr[k] + fill[k]++] = 1;
        for (long long e = sptr[i]; e < sptr[i + 1]; e++) {
            k = (int)succ[e];
            tsrc[tptr[k] + fill[k]] = i; town[tptr[k] + fill[k]++] = 0;
        }
    }
    free(fill);
    for (int k = 0; k < G; k++)
        for (int i = 0; i < S; i++)
            if (first[i] <= k && k < last[i]) optr[k + 1]++;
    for (int k = 0; k < G; k++) optr[k + 1] += optr[k];
    int *olist = lay->olist = malloc(sizeof(int) * (optr[G] + 1));
    if (!olist) return -1;
    for (int k = 0, at = 0; k < G; k++) {
        for (int i = 0; i < S; i++)
            if (first[i] <= k && k < last[i]) olist[at++] = i;
        if (optr[k + 1] - optr[k] > lay->maxopen) lay->maxopen = optr[k + 1] - optr[k];
    }
    return 0;
}

void lagrangian_build(Lagrangian *lg, const Layout *lay, int G, int S, int P, const double *pi,
                      const double *work, const double *gmem, const double *cost, const long long *own,
                      const double *lam, const double *mu, double T, double cap, int *status, int *newst,
                      int *mark, int *cuts, double *bestv) {
    lg->P = 0; lg->vptr = NULL; lg->per = 0; lg->V = NULL; lg->root = INFINITY;
    if (P <= 0 || lay->maxopen > 14) return;     /* 3^14 codes per position at most */
    if (!isfinite(cap)) for (int p = 0; p < P; p++) if (mu[p] != 0) return;
    const int *tptr = lay->tptr, *tsrc = lay->tsrc, *town = lay->town, *optr = lay->optr, *olist = lay->olist;
    const int *first = lay->first;
    long long *vptr = malloc(sizeof(long long) * (G + 2));
    if (!vptr) return;
    vptr[0] = 0;
    for (int k = 0; k <= G; k++) {
        int nbk = k ? optr[k] - optr[k - 1] : 0;
        long long size = 1;
        for (int j = 0; j < nbk; j++) size *= 3;
        vptr[k + 1] = vptr[k] + size;
    }
    const long long per = vptr[G + 1];
    double *V = (double)P * (double)per > (double)(1 << 24) ? NULL      /* at most 128 MB of tables */
        : malloc(sizeof(double) * (size_t)P * per);
    if (!V) { free(vptr); return; }
    for (int p = 0; p < P; p++)
        for (long long c = vptr[G]; c < per; c++) V[(size_t)p * per + c] = 0.0;
    for (int k = G - 1; k >= 0; k--) {
        const int *obk = k ? olist + optr[k - 1] : olist, nbk = k ? optr[k] - optr[k - 1] : 0;
        const int *oak = olist + optr[k], nak = optr[k + 1] - optr[k];
        for (int e = tptr[k]; e < tptr[k + 1]; e++) mark[tsrc[e]] = k;
        const int allowed = isfinite(work[k]);
        for (long long c = 0; c < vptr[k + 1] - vptr[k]; c++) {
            long long code = c;
            for (int j = 0; j < nbk; j++) { status[obk[j]] = from3((int)(code % 3), own[obk[j]] < k); code /= 3; }
            for (int p = 0; p < P; p++) bestv[p] = -INFINITY;
            for (int y = 0; y <= 1; y++) {
                if (y && !allowed) continue;
                int ncut = 0;
                for (int e = tptr[k]; e < tptr[k + 1]; e++) {
                    int i = tsrc[e], cut;
                    newst[i] = step_status(first[i] == k ? U00 : status[i], town[e], y, &cut);
                    if (cut) cuts[ncut++] = i;
                }
                long long nc = 0;
                for (int j = nak - 1; j >= 0; j--) {
                    int i = oak[j];
                    nc = nc * 3 + to3(mark[i] == k ? newst[i] : status[i]);
                }
                for (int p = 0; p < P; p++) {
                    double v = y ? pi[k] - lam[p] * work[k] - mu[p] * gmem[k] : 0.0;
                    for (int j = 0; j < ncut; j++) v -= lam[p] * cost[cuts[j]];
                    v += V[(size_t)p * per + vptr[k + 1] + nc];
                    if (v > bestv[p]) bestv[p] = v;
                }
            }
            for (int p = 0; p < P; p++) V[(size_t)p * per + vptr[k] + c] = bestv[p];
        }
    }
    for (int i = 0; i < S; i++) mark[i] = -1;
    lg->P = P; lg->vptr = vptr; lg->per = per; lg->V = V;
    for (int p = 0; p < P; p++) {
        double r = lag_bound(lg, p, 0, 0, lam, mu, T, cap);
        if (r < lg->root) lg->root = r;
    }
}

void lagrangian_free(Lagrangian *lg) { free(lg->V); free(lg->vptr); }

void knapsacks_free(Knapsacks *kn) { free(kn->pw1); free(kn->pv1); free(kn->pw2); free(kn->pv2); free(kn->nrest); }

int knapsacks_build(Knapsacks *kn, int G, const double *pi, const double *work, const double *gmem, double captol,
                    Item *items) {
    const size_t cells = (size_t)(G + 1) * (G + 1);
    kn->pw1 = malloc(sizeof(double) * cells); kn->pv1 = malloc(sizeof(double) * cells);
    kn->pw2 = malloc(sizeof(double) * cells); kn->pv2 = malloc(sizeof(double) * cells);
    kn->nrest = calloc(G + 1, sizeof(int));
    if (!kn->pw1 || !kn->pv1 || !kn->pw2 || !kn->pv2 || !kn->nrest) return -1;
    for (int k = 0; k <= G; k++) {
        int n = 0;
        for (int g = k; g < G; g++)
            if (pi[g] > 0 && isfinite(work[g]) && gmem[g] <= captol) {
                items[n].key = work[g] > 0 ? pi[g] / work[g] : INFINITY;
                items[n++].g = g;
            }
        qsort(items, n, sizeof(Item), cmp_item);
        double *a = kn->pw1 + (size_t)k * (G + 1), *v = kn->pv1 + (size_t)k * (G + 1);
        a[0] = v[0] = 0;
        for (int j = 0; j < n; j++) { a[j + 1] = a[j] + fmax(0.0, work[items[j].g]); v[j + 1] = v[j] + pi[items[j].g]; }
        for (int j = 0; j < n; j++) items[j].key = gmem[items[j].g] > 0 ? pi[items[j].g] / gmem[items[j].g] : INFINITY;
        qsort(items, n, sizeof(Item), cmp_item);
        a = kn->pw2 + (size_t)k * (G + 1); v = kn->pv2 + (size_t)k * (G + 1);
        a[0] = v[0] = 0;
        for (int j = 0; j < n; j++) { a[j + 1] = a[j] + fmax(0.0, gmem[items[j].g]); v[j + 1] = v[j] + pi[items[j].g]; }
        kn->nrest[k] = n;
    }
    return 0;
}
