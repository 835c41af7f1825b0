/* The running statistics of a sampled variable (a PVAR, a user variable): Welford's mean and
 * sum of squared deviations, min, max and the last sample; read by the statistic names of the
 * policy language (ct_stat_names, generated into ct_language.h).
 */
#ifndef CT_RUNNING_H
#define CT_RUNNING_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "ct_language.h"

typedef struct {
    uint64_t samples;
    double min, max, mean, m2, last;
} ct_running;

static inline void ct_running_add(ct_running *r, double v) {
    r->samples++;
    double delta = v - r->mean;
    r->mean += delta / (double)r->samples;
    r->m2 += delta * (v - r->mean);
    r->min = r->samples == 1 || v < r->min ? v : r->min;
    r->max = r->samples == 1 || v > r->max ? v : r->max;
    r->last = v;
}

/* The statistic named `stat` of r (an unknown name: the last sample); `sum` is what "sum"
 * means for the variable (a counter's last reading is its total; a user variable's samples
 * add up). */
static inline double ct_running_value(const ct_running *r, const char *stat, double sum) {
    int id = CT_STAT_LAST;
    for (int i = 0; i < CT_STAT_COUNT; ++i)
        if (strcmp(stat, ct_stat_names[i]) == 0) id = i;
    switch (id) {
    case CT_STAT_MIN:
        return r->min;
    case CT_STAT_MAX:
        return r->max;
    case CT_STAT_MEAN:
        return r->mean;
    case CT_STAT_SD:
        return sqrt(r->m2 / (double)r->samples);
    case CT_STAT_N:
        return (double)r->samples;
    case CT_STAT_SUM:
        return sum;
    default:
        return r->last;
    }
}

#endif
