/* mask.c - Bernoulli and cyclic random-k masks (see lbscale/mask.h). */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "kern.h"
#include "lbscale/mask.h"
#include "lbscale/mem.h"
#include "lbscale/rng.h"

/* Bernoulli selection, parallel and order-preserving, one sweep: each
 * thread writes the hits (lbs_rng_hit) of its static block [lo, hi)
 * starting at idx + lo (a block keeps at most hi - lo of them, so blocks
 * never overlap), then the blocks are moved together in thread order.
 * The sweep is the kernel table's (core/kern: one draw per eight
 * elements, 64 compared per vector), so the mask is the same at every
 * level, thread count and on the GPU. */
size_t lbs_mask_bernoulli(uint64_t seed, long step, int layer, size_t n,
                          double k, uint32_t *idx)
{
    const uint64_t key = lbs_rng_key(seed, (uint64_t)step, (uint64_t)layer);
    const uint64_t thr = lbs_rng_thr61(k);
    const struct lbs_kern *K = lbs_kern();
    size_t cnt[256], los[256];
    int nblk = 1;
#pragma omp parallel
    {
        int nt = omp_get_num_threads(), t = omp_get_thread_num();
        if (nt > 256)
            nt = 256;   /* extra threads idle below */
        if (t < nt) {
            size_t lo = n * (size_t)t / (size_t)nt;
            size_t hi = n * (size_t)(t + 1) / (size_t)nt;
            los[t] = lo;
            cnt[t] = K->mask_hits(key, thr, lo, hi, idx + lo);
        }
        if (t == 0)
            nblk = nt;
    }
    size_t total = 0;
    for (int t = 0; t < nblk; t++) {   /* destinations only move left */
        memmove(idx + total, idx + los[t], cnt[t] * sizeof *idx);
        total += cnt[t];
    }
    return total;
}

size_t lbs_mask_cyclic_count(double k, size_t n)
{
    /* compared as doubles: a tiny k (1/k = 2.7e70, found by
     * tests/fuzz/fuzz_spec) must not be cast to size_t */
    double c = ceil(1.0 / k - 1e-12);
    return c < (double)n ? (size_t)c : n;
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
        m->perm = lbs_array_alloc(n, sizeof *m->perm);
    if (!m || !m->perm) {
        free(m);
        return lbs_err_set(err, -ENOMEM, "cyclic mask: out of memory");
    }
    m->n = n;
    m->chunks = lbs_mask_cyclic_count(k, n);
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
