/* probe_stats: latency summaries.  Prefix: pst_.
 *
 * Percentiles use the nearest-rank method: for n sorted samples the p-th
 * percentile is sample number ceil(p/100 * n) (1-based).  It always returns
 * a value that was actually measured, which is what evidence should quote. */
#ifndef PROBE_STATS_H
#define PROBE_STATS_H

#include <stddef.h>

struct pst_summary {
    size_t n;
    double min, p50, p95, p99, max; /* meaningless when n == 0 */
};

/* Summarise v[0..n) (the array is not modified). */
void pst_summarise(const double *v, size_t n, struct pst_summary *out);

/* Nearest-rank percentile of an ascending array, n > 0. */
double pst_nearest_rank(const double *sorted, size_t n, double pct);

#endif
