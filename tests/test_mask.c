/* test_mask.c - the cyclic schedule is the one it has always been.
 *
 * lbs_mask_cyclic_new and lbs_mask_cyclic_ids no longer shuffle: they
 * swap chunk labels in the opposite order (core/mask.c says why that is
 * the same thing); the wire bytes of cyclick and SLAMB, their traces and
 * every recorded run depend on the exact chunks, so the construction is
 * compared, chunk by chunk, with a copy of the original one (one thread,
 * Fisher-Yates then a qsort of each chunk) for several seeds, layer sizes,
 * densities and thread counts: labels of 1, 2 and 4 bytes, and the
 * counting pass's per-chunk cursor walk (C close to n).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lbscale/lbscale.h"

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* The construction as it was until issue 34 (core/mask.c at 5b3e5d9). */
static uint32_t *reference_cyclic(uint64_t seed, int layer, size_t n,
                                  double k)
{
    uint32_t *perm = malloc(n * sizeof *perm);
    cr_assert(perm);
    size_t chunks = lbs_mask_cyclic_count(k, n);
    for (size_t i = 0; i < n; i++)
        perm[i] = (uint32_t)i;
    const uint64_t key = lbs_rng_key(seed, UINT64_MAX, (uint64_t)layer);
    for (size_t i = n - 1; i > 0; i--) {
        size_t j = (size_t)lbs_rng_below(key, i, i + 1);
        uint32_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    for (size_t c = 0; c < chunks; c++) {
        size_t lo = n * c / chunks, hi = n * (c + 1) / chunks;
        qsort(perm + lo, hi - lo, sizeof *perm, cmp_u32);
    }
    return perm;
}

/* The new construction on `threads` threads against the reference: same
 * chunk count, every chunk the same indices in the same order. */
static void same_as_reference(const uint32_t *ref, uint64_t seed, int layer,
                              size_t n, double k, int threads)
{
    struct lbs_mask_cyclic *m = NULL;
    struct lbs_err e = {0};
    omp_set_num_threads(threads);
    cr_assert_eq(lbs_mask_cyclic_new(seed, layer, n, k, &m, &e), 0, "%s",
                 e.msg);
    size_t C = lbs_mask_cyclic_chunks(m), at = 0;
    cr_assert_eq(C, lbs_mask_cyclic_count(k, n));
    for (size_t c = 0; c < C; c++) {
        const uint32_t *idx;
        size_t cnt;
        lbs_mask_cyclic_get(m, (long)c, &idx, &cnt);
        cr_assert_eq(cnt, n * (c + 1) / C - n * c / C);
        cr_assert(!memcmp(idx, ref + at, cnt * sizeof *idx),
                  "seed %llu layer %d n %zu k %g threads %d: chunk %zu "
                  "differs", (unsigned long long)seed, layer, n, k, threads,
                  c);
        at += cnt;
    }
    cr_assert_eq(at, n);
    lbs_mask_cyclic_free(m);
}

static void check(uint64_t seed, int layer, size_t n, double k)
{
    static const int threads[] = {1, 2, 3, 4, 7};
    uint32_t *ref = reference_cyclic(seed, layer, n, k);
    /* below the parallel floor every thread count is the serial path */
    size_t nt = n >= 32768 ? sizeof threads / sizeof *threads : 2;
    for (size_t t = 0; t < nt; t++)
        same_as_reference(ref, seed, layer, n, k, threads[t]);
    free(ref);
}

Test(cyclic, small_layers_as_before)
{
    static const size_t sizes[] = {1, 2, 3, 17, 1000, 32767};
    static const double ks[] = {1, 0.5, 0.3, 0.01, 1e-9};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
        for (size_t j = 0; j < sizeof ks / sizeof *ks; j++)
            for (uint64_t seed = 0; seed < 3; seed++)
                check(seed * 0x9e3779b9ull + 1, (int)s, sizes[s], ks[j]);
}

Test(cyclic, parallel_layers_as_before, .timeout = 240)
{
    /* 1-byte ids (k >= 1/256), 2-byte (C = 10^4: per-thread counts) and
     * 4-byte (C = 10^5 and C = n: the one cursor walk) */
    static const size_t sizes[] = {32768, 100003, (1u << 20) + 7};
    static const double ks[] = {1, 0.1, 0.01, 1e-4, 1e-5, 1e-9};
    static const uint64_t seeds[] = {42, 0xdeadbeefcafeull};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
        for (size_t j = 0; j < sizeof ks / sizeof *ks; j++)
            for (size_t q = 0; q < 2; q++)
                check(seeds[q], (int)(s + 3 * q), sizes[s], ks[j]);
}

/* lbs_mask_cyclic_ids names, for each element, the chunk the reference
 * puts it in (SLAMB's chunk-id layers are made from it), whatever the
 * buffer held before and on 1-4 threads; over 256 chunks it refuses. */
Test(cyclic, ids_as_before)
{
    static const size_t sizes[] = {1, 2, 1000, 100003, 2049, 4097};
    static const double ks[] = {1, 0.3, 0.01, 1.0 / 256};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
        for (size_t j = 0; j < sizeof ks / sizeof *ks; j++) {
            size_t n = sizes[s], C = lbs_mask_cyclic_count(ks[j], n);
            uint32_t *ref = reference_cyclic(11, 2, n, ks[j]);
            uint8_t *q = malloc(n);
            for (int t = 1; t <= 4; t++) {
                struct lbs_err e = {0};
                omp_set_num_threads(t);
                memset(q, t & 1 ? 0xff : 0xab, n);
                cr_assert_eq(lbs_mask_cyclic_ids(11, 2, n, ks[j], q, &e), 0,
                             "%s", e.msg);
                for (size_t c = 0; c < C; c++)
                    for (size_t p = n * c / C; p < n * (c + 1) / C; p++)
                        cr_assert_eq(q[ref[p]], c, "n %zu k %g threads %d: "
                                     "element %u", n, ks[j], t, ref[p]);
            }
            free(q);
            free(ref);
        }
    struct lbs_err e = {0};
    uint8_t q[1000];
    cr_assert_eq(lbs_mask_cyclic_ids(1, 0, 1000, 1.0 / 257, q, &e), -EINVAL);
    cr_assert(strstr(e.msg, "257 chunks"), "%s", e.msg);
}
