/* Order statistics of a small array of timings, shared by commtune's benchmark programs. */
#ifndef CT_STATS_H
#define CT_STATS_H

#include <stdlib.h>

static int ct_by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorts v in place and returns its q-quantile (linear interpolation; 0.5: the median). */
static inline double ct_quantile(double *v, int n, double q) {
    qsort(v, (size_t)n, sizeof *v, ct_by_value);
    double pos = q * (n - 1);
    int lo = (int)pos;
    int hi = lo + 1 < n ? lo + 1 : lo;
    return v[lo] + (pos - lo) * (v[hi] - v[lo]);
}

#endif
