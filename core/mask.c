/* mask.c - Bernoulli and cyclic random-k masks (see lbscale/mask.h). */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "kern.h"
#include "par.h"
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

/* The schedule's permutation is Fisher-Yates driven by the counter
 * generator (the same on every rank): for i = n-1 down to 1, swap
 * positions i and j_i = lbs_rng_below(key, i, i + 1); chunk c is its
 * positions [n c / C, n (c + 1) / C), ascending.  Sorted chunks need only
 * which chunk holds each element, its id, and the ids come without the
 * shuffle: label each position with its chunk, then apply the same swaps
 * in the opposite order.  Why: the shuffle a (position -> element) is
 * the identity with the swaps (i j_i) applied for i = n-1 down to 1, a =
 * t_{n-1} o ... o t_1 as maps, so a^-1 = t_1 o ... o t_{n-1}, and the
 * ids, chunk o a^-1, are the labels with the swaps applied for i = 1 up
 * to n-1.  Labels of 1 byte (up to 256 chunks) instead of 4-byte
 * indices: a quarter of the memory the random swaps touch, and no
 * scatter pass after them.  The swaps are one chain of dependent random
 * accesses, so one thread runs a layer (SLAMB gives its layers to
 * threads side by side); tests/test_mask.c compares every chunk with the
 * shuffle itself. */
#define DRAW_AHEAD 2048     /* draws computed before their swaps */
#define PREFETCH 16         /* swaps the target line is fetched ahead */

/* Chunk ids in the narrowest width that holds C: 1, 2 or 4 bytes. */
static size_t id_width(size_t C)
{
    return C <= 256 ? 1 : C <= 65536 ? 2 : 4;
}

static inline void id_set(void *q, size_t w, size_t i, size_t c)
{
    if (w == 1)
        ((uint8_t *)q)[i] = (uint8_t)c;
    else if (w == 2)
        ((uint16_t *)q)[i] = (uint16_t)c;
    else
        ((uint32_t *)q)[i] = (uint32_t)c;
}

static inline size_t id_get(const void *q, size_t w, size_t i)
{
    return w == 1 ? ((const uint8_t *)q)[i]
         : w == 2 ? ((const uint16_t *)q)[i] : ((const uint32_t *)q)[i];
}

/* q (n ids of w bytes) := the labels, swapped (above); inlined with a
 * constant w, so each width gets its own loop. */
static inline __attribute__((always_inline)) void
label_swaps_w(void *q, size_t w, size_t n, size_t C, uint64_t key)
{
    for (size_t c = 0; c < C; c++)
        for (size_t p = n * c / C; p < n * (c + 1) / C; p++)
            id_set(q, w, p, c);
    uint32_t j[DRAW_AHEAD];
    void (*draws)(uint64_t, size_t, size_t, uint32_t *) = lbs_kern()->fy_draws;
    for (size_t lo = 1; lo < n;) {
        size_t m = n - lo < DRAW_AHEAD ? n - lo : DRAW_AHEAD;
        draws(key, lo + m, m, j);       /* j[s]: step lo + m - 1 - s */
        for (size_t s = m; s-- > 0;) {
            if (s >= PREFETCH)
                __builtin_prefetch((char *)q + w * j[s - PREFETCH], 1);
            size_t i = lo + m - 1 - s, t = id_get(q, w, i);
            id_set(q, w, i, id_get(q, w, j[s]));
            id_set(q, w, j[s], t);
        }
        lo += m;
    }
}

static void label_swaps(void *q, size_t w, size_t n, size_t C,
                        uint64_t seed, int layer)
{
    const uint64_t key = lbs_rng_key(seed, UINT64_MAX, (uint64_t)layer);
    if (w == 1)
        label_swaps_w(q, 1, n, C, key);
    else if (w == 2)
        label_swaps_w(q, 2, n, C, key);
    else
        label_swaps_w(q, 4, n, C, key);
}

/* The chunks, each ascending, by one counting pass: v = 0, 1, ... goes
 * to the next free slot of chunk q[v].  Threads take consecutive ranges
 * of v; where the per-thread counts (T x C) would outweigh the pass, one
 * thread walks it with a cursor per chunk. */
static int chunks_bucket(const void *q, size_t w, size_t n, size_t C,
                         uint32_t *perm)
{
    size_t T = n >= LBS_PAR_MIN_COMPRESS ? (size_t)omp_get_max_threads() : 1;
    if (T < 1 || T * C > n / 8)
        T = 1;
    uint32_t *cur = malloc(T * C * sizeof *cur);
    if (!cur)
        return -ENOMEM;
    int nt = 1;
#pragma omp parallel num_threads((int)T) if (T > 1)
    {
        size_t t = (size_t)omp_get_thread_num();
        size_t lo = n * t / T, hi = n * (t + 1) / T;
        uint32_t *k = cur + t * C;
#pragma omp single
        nt = omp_get_num_threads();
        if ((size_t)nt == T) {          /* else the serial walk below */
            memset(k, 0, C * sizeof *k);
            for (size_t v = lo; v < hi; v++)
                k[id_get(q, w, v)]++;
#pragma omp barrier
#pragma omp single
            for (size_t c = 0; c < C; c++) {
                size_t o = n * c / C;
                for (size_t u = 0; u < T; u++) {
                    size_t x = cur[u * C + c];
                    cur[u * C + c] = (uint32_t)o;
                    o += x;
                }
            }
            for (size_t v = lo; v < hi; v++)
                perm[k[id_get(q, w, v)]++] = (uint32_t)v;
        }
    }
    if ((size_t)nt != T) {
        for (size_t c = 0; c < C; c++)
            cur[c] = (uint32_t)(n * c / C);
        for (size_t v = 0; v < n; v++)
            perm[cur[id_get(q, w, v)]++] = (uint32_t)v;
    }
    free(cur);
    return 0;
}

static int cyclic_check(size_t n, double k, struct lbs_err *err)
{
    if (!(k > 0 && k <= 1))
        return lbs_err_set(err, -EINVAL, "cyclic mask: k = %g not in (0, 1]",
                           k);
    if (n == 0 || n > UINT32_MAX)
        return lbs_err_set(err, -EINVAL, "cyclic mask: layer of %zu elements "
                           "(must be 1..2^32-1)", n);
    return 0;
}

int lbs_mask_cyclic_new(uint64_t seed, int layer, size_t n, double k,
                        struct lbs_mask_cyclic **out, struct lbs_err *err)
{
    int rc = cyclic_check(n, k, err);
    if (rc)
        return rc;
    struct lbs_mask_cyclic *m = calloc(1, sizeof *m);
    const size_t C = lbs_mask_cyclic_count(k, n), w = id_width(C);
    void *q = lbs_array_alloc(n, w);
    if (m)
        m->perm = lbs_array_alloc(n, sizeof *m->perm);
    if (!m || !m->perm || !q) {
        free(q);
        lbs_mask_cyclic_free(m);
        return lbs_err_set(err, -ENOMEM, "cyclic mask: out of memory");
    }
    m->n = n;
    m->chunks = C;
    label_swaps(q, w, n, C, seed, layer);
    rc = chunks_bucket(q, w, n, C, m->perm);
    free(q);
    if (rc) {
        lbs_mask_cyclic_free(m);
        return lbs_err_set(err, -ENOMEM, "cyclic mask: out of memory");
    }
    *out = m;
    return 0;
}

int lbs_mask_cyclic_ids(uint64_t seed, int layer, size_t n, double k,
                        uint8_t *q, struct lbs_err *err)
{
    int rc = cyclic_check(n, k, err);
    if (rc)
        return rc;
    size_t C = lbs_mask_cyclic_count(k, n);
    if (C > 256)
        return lbs_err_set(err, -EINVAL, "cyclic mask: %zu chunks do not fit "
                           "in one-byte ids", C);
    label_swaps(q, 1, n, C, seed, layer);
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
