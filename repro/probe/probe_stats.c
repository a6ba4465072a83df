/* probe_stats: nearest-rank percentiles; see probe_stats.h. */
#include "probe_stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int pst_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double pst_nearest_rank(const double *sorted, size_t n, double pct)
{
    /* The small epsilon keeps e.g. 0.95 * 20 = 19.000000000000004 at rank 19. */
    double rank = ceil(pct / 100.0 * (double)n - 1e-9);
    size_t k = rank < 1 ? 1 : (size_t)rank;
    if (k > n)
        k = n;
    return sorted[k - 1];
}

void pst_summarise(const double *v, size_t n, struct pst_summary *out)
{
    memset(out, 0, sizeof *out);
    out->n = n;
    if (n == 0)
        return;
    double *s = malloc(n * sizeof *s);
    if (!s) {
        out->n = 0;
        return;
    }
    memcpy(s, v, n * sizeof *s);
    qsort(s, n, sizeof *s, pst_cmp);
    out->min = s[0];
    out->max = s[n - 1];
    out->p50 = pst_nearest_rank(s, n, 50);
    out->p95 = pst_nearest_rank(s, n, 95);
    out->p99 = pst_nearest_rank(s, n, 99);
    free(s);
}
