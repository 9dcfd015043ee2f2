/* mask.c - Bernoulli and cyclic random-k masks (see lbscale/mask.h). */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "lbscale/mask.h"
#include "lbscale/rng.h"

/* Bernoulli selection, parallel and order-preserving, one sweep: each
 * thread writes the indices of its static block [lo, hi) starting at
 * idx + lo (a block keeps at most hi - lo of them, so blocks never
 * overlap), then the blocks are moved together in thread order.  The
 * draws are those of lbs_rng_u64, so the mask is the same on every path.
 * With AVX-512 (checked at run time; the build targets plain x86-64) eight
 * counters are hashed at once with vpmullq and the hits compress-stored:
 * about 4x the scalar speed, which is what lets random-k run near memory
 * bandwidth. */
static size_t sweep_scalar(uint64_t key, uint64_t thr, size_t lo, size_t hi,
                           uint32_t *out)
{
    size_t o = 0;
    for (size_t i = lo; i < hi; i++)
        if ((lbs_rng_u64(key, i) >> 11) < thr)
            out[o++] = (uint32_t)i;
    return o;
}

#if defined(__x86_64__) && defined(__GNUC__)
#define AVX512_TARGET __attribute__((target("avx512f,avx512dq,avx512vl")))

AVX512_TARGET static inline __m512i mix64x8(__m512i z)
{
    z = _mm512_add_epi64(z, _mm512_set1_epi64((long long)0x9e3779b97f4a7c15ull));
    z = _mm512_mullo_epi64(_mm512_xor_si512(z, _mm512_srli_epi64(z, 30)),
                           _mm512_set1_epi64((long long)0xbf58476d1ce4e5b9ull));
    z = _mm512_mullo_epi64(_mm512_xor_si512(z, _mm512_srli_epi64(z, 27)),
                           _mm512_set1_epi64((long long)0x94d049bb133111ebull));
    return _mm512_xor_si512(z, _mm512_srli_epi64(z, 31));
}

/* lbs_rng_u64(key, i) = mix64(key ^ mix64(i)), eight i at a time */
AVX512_TARGET static size_t sweep_avx512(uint64_t key, uint64_t thr,
                                         size_t lo, size_t hi, uint32_t *out)
{
    size_t o = 0, i = lo;
    const __m512i vk = _mm512_set1_epi64((long long)key),
                  vt = _mm512_set1_epi64((long long)thr),
                  v8 = _mm512_set1_epi64(8);
    __m512i vi = _mm512_add_epi64(_mm512_set1_epi64((long long)lo),
                                  _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7));
    for (; i + 8 <= hi; i += 8) {
        __m512i z = mix64x8(_mm512_xor_si512(vk, mix64x8(vi)));
        __mmask8 m = _mm512_cmplt_epu64_mask(_mm512_srli_epi64(z, 11), vt);
        /* compress in a register, then a plain 8-lane store: it stays
         * inside this block (o <= i - lo and i + 8 <= hi) and only
         * writes slots not filled yet.  clang 14 folded the truncation
         * into compressstoreu as a masked (not compressing) vpmovqd
         * store, leaving holes of uninitialised indices (found by
         * tests/fuzz/fuzz_spec: randk read x[0xbebebebe]). */
        _mm256_storeu_si256((__m256i *)(out + o),
                            _mm256_maskz_compress_epi32(
                                m, _mm512_cvtepi64_epi32(vi)));
        o += (size_t)__builtin_popcount(m);
        vi = _mm512_add_epi64(vi, v8);
    }
    return o + sweep_scalar(key, thr, i, hi, out + o);
}

static int have_avx512(void)
{
    static int v = -1;
    if (v < 0)
        v = __builtin_cpu_supports("avx512f") &&
            __builtin_cpu_supports("avx512dq") &&
            __builtin_cpu_supports("avx512vl");
    return v;
}
#else
static int have_avx512(void) { return 0; }
static size_t sweep_avx512(uint64_t key, uint64_t thr, size_t lo, size_t hi,
                           uint32_t *out)
{
    return sweep_scalar(key, thr, lo, hi, out);
}
#endif

size_t lbs_mask_bernoulli(uint64_t seed, long step, int layer, size_t n,
                          double k, uint32_t *idx)
{
    const uint64_t key = lbs_rng_key(seed, (uint64_t)step, (uint64_t)layer);
    /* compare 53-bit integers: exact, no float rounding per element */
    const uint64_t thr = k >= 1.0 ? UINT64_MAX
                                  : (uint64_t)(k * 9007199254740992.0);
    const int wide = have_avx512();
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
            cnt[t] = wide ? sweep_avx512(key, thr, lo, hi, idx + lo)
                          : sweep_scalar(key, thr, lo, hi, idx + lo);
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
        m->perm = malloc(n * sizeof *m->perm);
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
