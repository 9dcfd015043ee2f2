/* mask.c - Bernoulli and cyclic random-k masks (see lbscale/mask.h). */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "lbscale/mask.h"
#include "lbscale/rng.h"

/* Bernoulli selection, parallel and order-preserving: each thread counts
 * its static block, a prefix sum places the blocks, then each thread
 * writes its indices.  The draw is recomputed in the second sweep rather
 * than stored (it is a few integer ops). */
size_t lbs_mask_bernoulli(uint64_t seed, long step, int layer, size_t n,
                          double k, uint32_t *idx)
{
    const uint64_t key = lbs_rng_key(seed, (uint64_t)step, (uint64_t)layer);
    /* compare 53-bit integers: exact, no float rounding per element */
    const uint64_t thr = k >= 1.0 ? UINT64_MAX
                                  : (uint64_t)(k * 9007199254740992.0);
    size_t offs[257] = {0};
    size_t total = 0;
#pragma omp parallel
    {
        int nt = omp_get_num_threads(), t = omp_get_thread_num();
        if (nt > 256)
            nt = 256;   /* extra threads idle below */
        size_t lo = t < nt ? n * (size_t)t / (size_t)nt : n;
        size_t hi = t < nt ? n * (size_t)(t + 1) / (size_t)nt : n;
        size_t c = 0;
        for (size_t i = lo; i < hi; i++)
            c += (lbs_rng_u64(key, i) >> 11) < thr;
        if (t < nt)
            offs[t + 1] = c;
#pragma omp barrier
#pragma omp single
        {
            for (int j = 1; j <= nt; j++)
                offs[j] += offs[j - 1];
            total = offs[nt];
        }
        size_t o = t < nt ? offs[t] : 0;
        for (size_t i = lo; i < hi; i++)
            if ((lbs_rng_u64(key, i) >> 11) < thr)
                idx[o++] = (uint32_t)i;
    }
    return total;
}

struct lbs_mask_cyclic {
    uint32_t *perm;     /* n indices, chunk by chunk, each chunk sorted */
    size_t n, chunks;
};

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

int lbs_mask_cyclic_new(uint64_t seed, int layer, size_t n, double k,
                        struct lbs_mask_cyclic **out, struct lbs_err *err)
{
    if (!(k > 0 && k <= 1))
        return lbs_err_set(err, -EINVAL, "cyclic mask: k = %g not in (0, 1]",
                           k);
    if (n == 0 || n > UINT32_MAX)
        return lbs_err_set(err, -EINVAL, "cyclic mask: layer of %zu elements "
                           "(must be 1..2^32-1)", n);
    struct lbs_mask_cyclic *m = calloc(1, sizeof *m);
    if (m)
        m->perm = malloc(n * sizeof *m->perm);
    if (!m || !m->perm) {
        free(m);
        return lbs_err_set(err, -ENOMEM, "cyclic mask: out of memory");
    }
    m->n = n;
    m->chunks = (size_t)ceil(1.0 / k - 1e-12);
    if (m->chunks > n)
        m->chunks = n;
    for (size_t i = 0; i < n; i++)
        m->perm[i] = (uint32_t)i;
    /* Fisher-Yates driven by the counter generator: same on every rank */
    const uint64_t key = lbs_rng_key(seed, UINT64_MAX, (uint64_t)layer);
    for (size_t i = n - 1; i > 0; i--) {
        size_t j = (size_t)lbs_rng_below(key, i, i + 1);
        uint32_t t = m->perm[i];
        m->perm[i] = m->perm[j];
        m->perm[j] = t;
    }
    for (size_t c = 0; c < m->chunks; c++) {
        size_t lo = n * c / m->chunks, hi = n * (c + 1) / m->chunks;
        qsort(m->perm + lo, hi - lo, sizeof *m->perm, cmp_u32);
    }
    *out = m;
    return 0;
}

void lbs_mask_cyclic_get(const struct lbs_mask_cyclic *m, long step,
                         const uint32_t **idx, size_t *count)
{
    size_t c = (size_t)(step < 0 ? 0 : step) % m->chunks;
    size_t lo = m->n * c / m->chunks, hi = m->n * (c + 1) / m->chunks;
    *idx = m->perm + lo;
    *count = hi - lo;
}

size_t lbs_mask_cyclic_chunks(const struct lbs_mask_cyclic *m)
{
    return m->chunks;
}

void lbs_mask_cyclic_free(struct lbs_mask_cyclic *m)
{
    if (m)
        free(m->perm);
    free(m);
}
