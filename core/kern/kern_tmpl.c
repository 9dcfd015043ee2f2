/* kern_tmpl.c - the shared hot loops (kern.h), compiled once per
 * instruction-set level like every family's template (kfam.h;
 * meson.build passes -DKERN_SFX=c|avx2|avx512 with that level's flags).
 * Plain C that the compiler vectorises at the width of its flags, and
 * intrinsics under #ifdef __AVX512F__ / __AVX2__ / __SSE2__ where the
 * compiler cannot find the idiom (the rare-hit scan, the mask's compares).
 * Serial over the range given: callers own the threads.
 */
#include "kern_tmpl.h"
#include "mix_tmpl.h"
#include "lbscale/rng.h"

static double F(sumsq)(const float *x, size_t n)
{
    double s = 0;
    for (size_t b = 0; b < n; b += LBS_NORM_BLOCK) {
        size_t e = b + LBS_NORM_BLOCK < n ? b + LBS_NORM_BLOCK : n;
        float f = 0;
#pragma omp simd reduction(+ : f)
        for (size_t i = b; i < e; i++)
            f += x[i] * x[i];
        s += f;
    }
    return s;
}

static void F(axpy)(float *restrict w, const float *restrict u, float a,
                    size_t n)
{
#pragma omp simd
    for (size_t i = 0; i < n; i++)
        w[i] -= a * u[i];
}

/* sum x_i^2 in one fixed order whatever the level: 16 double lanes
 * (x_i^2 is exact in double), then the lanes in order, then the tail.
 * Generic vectors, so the order is the source's at every width. */
typedef float F(v8f) __attribute__((vector_size(32)));
typedef double F(v8d) __attribute__((vector_size(64)));

static double F(sumsq_fixed)(const float *x, size_t n)
{
    F(v8d) a0 = {0}, a1 = {0};
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        F(v8f) f0, f1;
        memcpy(&f0, x + i, sizeof f0);
        memcpy(&f1, x + i + 8, sizeof f1);
        F(v8d) d0 = __builtin_convertvector(f0, F(v8d)),
               d1 = __builtin_convertvector(f1, F(v8d));
        a0 += d0 * d0;
        a1 += d1 * d1;
    }
    double s = 0;
    for (int j = 0; j < 8; j++)
        s += a0[j];
    for (int j = 0; j < 8; j++)
        s += a1[j];
    for (; i < n; i++)
        s += (double)x[i] * x[i];
    return s;
}

/* The index-driven loops (random-k, cyclic random-k and SLAMB's gather
 * and scatter-add) touch about one new line per index at k = 0.01, so a
 * core waits on one miss after another.  Asking for the line PF_IDX
 * indices ahead into L2 (prefetcht2; L1 prefetches gave nothing, the L1
 * keeps fewer misses in flight) took a sorted 1% gather over 100M floats
 * from 4.0-4.6 to 2.3-2.7 ms on the 2-core EPYC VM (docs/kernels.md).
 * Blocks of 16 keep the inner loop a plain vector loop. */
#define PF_IDX 128

static void F(gather)(float *restrict p, const float *restrict x,
                      const uint32_t *restrict idx, size_t m)
{
    size_t j = 0;
    for (; j + PF_IDX + 16 <= m; j += 16) {
        for (size_t q = j + PF_IDX; q < j + PF_IDX + 16; q++)
            __builtin_prefetch(x + idx[q], 0, 1);
#pragma omp simd
        for (size_t r = j; r < j + 16; r++)
            p[r] = x[idx[r]];
    }
#pragma omp simd
    for (size_t r = j; r < m; r++)
        p[r] = x[idx[r]];
}

static void F(scatter_add)(float *restrict out, const uint32_t *restrict idx,
                           const float *restrict p, float a, size_t m)
{
    /* indices are distinct (a mask): no conflicts between lanes */
    size_t j = 0;
    for (; j + PF_IDX + 16 <= m; j += 16) {
        for (size_t q = j + PF_IDX; q < j + PF_IDX + 16; q++)
            __builtin_prefetch(out + idx[q], 1, 1);
#pragma omp simd
        for (size_t r = j; r < j + 16; r++)
            out[idx[r]] += a * p[r];
    }
#pragma omp simd
    for (size_t r = j; r < m; r++)
        out[idx[r]] += a * p[r];
}

static inline uint32_t F(mag)(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u & 0x7fffffffu;
}

/* The index stored for a hit at position l: l itself (scan_ge), or the
 * index it carries (filter_ge: xi[l]). */
static inline uint32_t F(hit_index)(const uint32_t *xi, size_t l)
{
    return xi ? xi[l] : (uint32_t)l;
}

/* Hits of one vector group (lanes' mask m, first index j, n lanes) one
 * by one, stopping the stores at room: the scalar rule of scan_ge. */
static inline size_t F(scan_lanes)(const float *x, const uint32_t *xi,
                                   size_t j, unsigned m, uint32_t *gi,
                                   float *gv, size_t o, size_t room)
{
    for (; m; m &= m - 1) {
        size_t l = j + (size_t)__builtin_ctz(m);
        if (o < room) {
            gi[o] = F(hit_index)(xi, l);
            gv[o] = x[l];
        }
        o++;
    }
    return o;
}

/* Hits are about k of the elements, so at k = 0.01 half of all
 * 64-element blocks hold one: a block with none costs loads, ands,
 * compares and one mask test; a group of lanes with hits writes them
 * branch-free (AVX-512: compress in a register, one full-width store
 * of values and of indices, o += popcount; AVX2: a permutation from a
 * table), while 16 (8) more fit in room, else one by one.  Magnitude
 * bits are < 2^31: a signed compare orders them, and a >= t  <=>
 * a > t - 1 (t = 0 gives -1: all pass; t = 2^31 gives INT32_MAX: none).
 * Indices are uint32 (the layer is below 2^32 elements, as the
 * payload's); with xi the stored indices are loaded from xi instead.
 * Always inlined, so scan_ge's copy (xi = NULL) keeps its iota. */
#if defined(__AVX512F__)
static inline __attribute__((always_inline)) size_t
F(scan_blocks)(const float *x, const uint32_t *xi, size_t *pi, size_t hi,
               uint32_t t, uint32_t *gi, float *gv, size_t room)
{
    size_t o = 0, i = *pi;
    const __m512i am = _mm512_set1_epi32(0x7fffffff),
                  tv = _mm512_set1_epi32((int32_t)(t - 1u)),
                  iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10,
                                           11, 12, 13, 14, 15);
    for (; i + 64 <= hi; i += 64) {
        __m512i v[4];
        __mmask16 m[4];
        for (int k = 0; k < 4; k++) {
            v[k] = _mm512_loadu_si512((const void *)(x + i + 16 * k));
            m[k] = _mm512_cmpgt_epi32_mask(_mm512_and_si512(v[k], am), tv);
        }
        if (!(m[0] | m[1] | m[2] | m[3]))
            continue;
        for (int k = 0; k < 4; k++) {
            if (!m[k])
                continue;
            size_t j = i + 16 * (size_t)k;
            if (o + 16 <= room) {
                __m512i ix = xi ? _mm512_loadu_si512((const void *)(xi + j))
                                : _mm512_add_epi32(_mm512_set1_epi32(
                                      (int32_t)(uint32_t)j), iota);
                _mm512_storeu_si512((void *)(gi + o),
                                    _mm512_maskz_compress_epi32(m[k], ix));
                _mm512_storeu_si512((void *)(gv + o),
                                    _mm512_maskz_compress_epi32(m[k], v[k]));
                o += (size_t)__builtin_popcount(m[k]);
            } else {
                o = F(scan_lanes)(x, xi, j, m[k], gi, gv, o, room);
            }
        }
    }
    *pi = i;
    return o;
}
#elif defined(__AVX2__)
static inline __attribute__((always_inline)) size_t
F(scan_blocks)(const float *x, const uint32_t *xi, size_t *pi, size_t hi,
               uint32_t t, uint32_t *gi, float *gv, size_t room)
{
    size_t o = 0, i = *pi;
    /* perm[m]: the lanes of mask m first, in order (4 bits per lane) */
    static const uint32_t perm[256] = {
#define NB(m, l) (__builtin_popcount((m) & ((1u << (l)) - 1)))
#define PERM(m) PERMX(m)
#define PL(m, l) (((m) >> (l) & 1) ? (uint32_t)(l) << (4 * NB(m, l)) : 0u)
#define PERMX(m) (PL(m, 0) | PL(m, 1) | PL(m, 2) | PL(m, 3) | PL(m, 4) | \
                  PL(m, 5) | PL(m, 6) | PL(m, 7))
#define R4(b) PERM(b), PERM(b + 1), PERM(b + 2), PERM(b + 3)
#define R16(b) R4(b), R4(b + 4), R4(b + 8), R4(b + 12)
#define R64(b) R16(b), R16(b + 16), R16(b + 32), R16(b + 48)
        R64(0), R64(64), R64(128), R64(192)
#undef R64
#undef R16
#undef R4
#undef PERMX
#undef PL
#undef PERM
#undef NB
    };
    const __m256i am = _mm256_set1_epi32(0x7fffffff),
                  tv = _mm256_set1_epi32((int32_t)(t - 1u)),
                  iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                  sh = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28),
                  nib = _mm256_set1_epi32(15);
    for (; i + 32 <= hi; i += 32) {
        __m256i v[4];
        unsigned m[4];
        for (int k = 0; k < 4; k++) {
            v[k] = _mm256_loadu_si256((const __m256i *)(x + i + 8 * k));
            m[k] = (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(
                _mm256_cmpgt_epi32(_mm256_and_si256(v[k], am), tv)));
        }
        if (!(m[0] | m[1] | m[2] | m[3]))
            continue;
        for (int k = 0; k < 4; k++) {
            if (!m[k])
                continue;
            size_t j = i + 8 * (size_t)k;
            if (o + 8 <= room) {
                __m256i pv = _mm256_and_si256(
                    _mm256_srlv_epi32(_mm256_set1_epi32((int32_t)perm[m[k]]),
                                      sh), nib);
                __m256i ix =
                    xi ? _mm256_loadu_si256((const __m256i *)(xi + j))
                       : _mm256_add_epi32(
                             _mm256_set1_epi32((int32_t)(uint32_t)j), iota);
                _mm256_storeu_si256((__m256i *)(gi + o),
                                    _mm256_permutevar8x32_epi32(ix, pv));
                _mm256_storeu_si256((__m256i *)(gv + o),
                                    _mm256_permutevar8x32_epi32(v[k], pv));
                o += (size_t)__builtin_popcount(m[k]);
            } else {
                o = F(scan_lanes)(x, xi, j, m[k], gi, gv, o, room);
            }
        }
    }
    *pi = i;
    return o;
}
#elif defined(__SSE2__)
static inline __attribute__((always_inline)) size_t
F(scan_blocks)(const float *x, const uint32_t *xi, size_t *pi, size_t hi,
               uint32_t t, uint32_t *gi, float *gv, size_t room)
{
    size_t o = 0, i = *pi;
    const __m128i am = _mm_set1_epi32(0x7fffffff),
                  tv = _mm_set1_epi32((int32_t)(t - 1u));
#define HIT(k) _mm_cmpgt_epi32(_mm_and_si128(_mm_loadu_si128(v + (k)), am), tv)
    for (; i + 16 <= hi; i += 16) {
        const __m128i *v = (const __m128i *)(x + i);
        __m128i h = _mm_or_si128(_mm_or_si128(HIT(0), HIT(1)),
                                 _mm_or_si128(HIT(2), HIT(3)));
        if (!_mm_movemask_epi8(h))
            continue;
        for (size_t j = i; j < i + 16; j++)
            if (F(mag)(x[j]) >= t) {
                if (o < room) {
                    gi[o] = F(hit_index)(xi, j);
                    gv[o] = x[j];
                }
                o++;
            }
    }
#undef HIT
    *pi = i;
    return o;
}
#else
static inline __attribute__((always_inline)) size_t
F(scan_blocks)(const float *x, const uint32_t *xi, size_t *pi, size_t hi,
               uint32_t t, uint32_t *gi, float *gv, size_t room)
{
    (void)x, (void)xi, (void)pi, (void)hi, (void)t, (void)gi, (void)gv,
        (void)room;
    return 0;
}
#endif

/* The hits |x_i| >= t (magnitude bits) of [lo, hi): whole blocks at the
 * level's width (scan_blocks), then the tail one by one; returns the
 * count, storing at most room of them. */
static inline __attribute__((always_inline)) size_t
F(scan_any)(const float *x, const uint32_t *xi, size_t lo, size_t hi,
            uint32_t t, uint32_t *gi, float *gv, size_t room)
{
    size_t i = lo;
    size_t o = F(scan_blocks)(x, xi, &i, hi, t, gi, gv, room);
    for (; i < hi; i++)
        if (F(mag)(x[i]) >= t) {
            if (o < room) {
                gi[o] = F(hit_index)(xi, i);
                gv[o] = x[i];
            }
            o++;
        }
    return o;
}

static size_t F(scan_ge)(const float *x, size_t lo, size_t hi, uint32_t t,
                         uint32_t *gi, float *gv, size_t room)
{
    return F(scan_any)(x, NULL, lo, hi, t, gi, gv, room);
}

static size_t F(filter_ge)(const float *v, const uint32_t *vi, size_t lo,
                           size_t hi, uint32_t t, uint32_t *oi, float *ov,
                           size_t room)
{
    return F(scan_any)(v, vi, lo, hi, t, oi, ov, room);
}

/* The chunked reductions (optim_impl.h): chunks [c0, c1) of a layer of
 * n elements, one partial sum per chunk, so one call per thread per layer
 * and the same sums for any thread count. */
static void F(sumsq_chunks)(const float *x, size_t n, size_t c0, size_t c1,
                            double *part)
{
    for (size_t c = c0; c < c1; c++) {
        size_t lo = lbs_chunk_lo(n, c);
        part[c] = F(sumsq)(x + lo, lbs_chunk_lo(n, c + 1) - lo);
    }
}

/* ---- the gossip mix (gossip.h, dmsgd.c) ---- */

static double F(gossip_mix)(const float *const *src, const double *w, int ns,
                            float *x, size_t lo, size_t hi)
{
    double acc[MIX_BLOCK], sum = 0;
    for (size_t b = lo; b < hi; b += MIX_BLOCK) {
        size_t len = hi - b < MIX_BLOCK ? hi - b : MIX_BLOCK;
        lbs_mix_block(src, w, ns, b, len, acc);
#pragma omp simd reduction(+ : sum)
        for (size_t j = 0; j < len; j++) {
            float xj = (float)acc[j];
            x[b + j] = xj;
            sum += xj;
        }
    }
    return sum;
}

/* ---- Bernoulli mask (lbs_rng_hit) ---- */

/* The 64 top bytes of elements [64 j, 64 j + 64) (draws of counters
 * 8 j .. 8 j + 7, byte b of draw d being element 8 d + b) compared with
 * t < 256: bit e of *lt set where byte e < t, of *eq where it equals t. */
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__)
static inline __m512i F(mix64x8)(__m512i z)
{
    z = _mm512_add_epi64(z, _mm512_set1_epi64((long long)0x9e3779b97f4a7c15ull));
    z = _mm512_mullo_epi64(_mm512_xor_si512(z, _mm512_srli_epi64(z, 30)),
                           _mm512_set1_epi64((long long)0xbf58476d1ce4e5b9ull));
    z = _mm512_mullo_epi64(_mm512_xor_si512(z, _mm512_srli_epi64(z, 27)),
                           _mm512_set1_epi64((long long)0x94d049bb133111ebull));
    return _mm512_xor_si512(z, _mm512_srli_epi64(z, 31));
}

static inline void F(top64)(uint64_t key, uint64_t j, unsigned t,
                            uint64_t *lt, uint64_t *eq)
{
    __m512i d = _mm512_add_epi64(_mm512_set1_epi64((long long)(8 * j)),
                                 _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7));
    __m512i z = F(mix64x8)(_mm512_xor_si512(
        _mm512_set1_epi64((long long)key), F(mix64x8)(d)));
    __m512i vt = _mm512_set1_epi8((char)t);
    *lt = _mm512_cmplt_epu8_mask(z, vt);
    *eq = _mm512_cmpeq_epu8_mask(z, vt);
}
#elif defined(__AVX2__)
static inline uint64_t F(cmp32)(const uint64_t *w, __m256i vt, uint64_t *eq)
{
    __m256i z = _mm256_loadu_si256((const __m256i *)w);
    /* unsigned z >= t iff max(z, t) == z */
    unsigned ge = (unsigned)_mm256_movemask_epi8(
        _mm256_cmpeq_epi8(_mm256_max_epu8(z, vt), z));
    *eq = (unsigned)_mm256_movemask_epi8(_mm256_cmpeq_epi8(z, vt));
    return (uint32_t)~ge;
}

static inline void F(top64)(uint64_t key, uint64_t j, unsigned t,
                            uint64_t *lt, uint64_t *eq)
{
    uint64_t w[8], e0, e1;
    for (int d = 0; d < 8; d++)
        w[d] = lbs_rng_u64(key, 8 * j + (uint64_t)d);
    __m256i vt = _mm256_set1_epi8((char)t);
    *lt = F(cmp32)(w, vt, &e0) | F(cmp32)(w + 4, vt, &e1) << 32;
    *eq = e0 | e1 << 32;
}
#else
static inline void F(top64)(uint64_t key, uint64_t j, unsigned t,
                            uint64_t *lt, uint64_t *eq)
{
    uint64_t l = 0, q = 0;
    for (unsigned d = 0; d < 8; d++) {
        uint64_t w = lbs_rng_u64(key, 8 * j + d);
        for (unsigned b = 0; b < 8; b++) {
            unsigned top = (unsigned)(w >> (8 * b)) & 0xffu;
            l |= (uint64_t)(top < t) << (8 * d + b);
            q |= (uint64_t)(top == t) << (8 * d + b);
        }
    }
    *lt = l;
    *eq = q;
}
#endif

/* out[] = i + the set bits of lt, ascending; returns how many.  At
 * k = 0.01 about half the groups hit, at random, so a branch on "any
 * hit" would be mispredicted every other group: up to two hits, both
 * slots are written unconditionally (the caller's block has room for 64
 * from out on: out - block start <= i - lo and i + 64 <= hi, and slots
 * past the count are filled later or never read); only a third branches. */
static inline unsigned F(low)(uint64_t x)
{
    return (unsigned)__builtin_ctzll(x | 1ull << 63);   /* 63 for none */
}

/* emit64 with more than two hits (many when k is large): AVX-512
 * compresses 16 lanes at a time in a register; each plain 16-lane store
 * starts at most 16 q slots after out for lanes 16 q.., so it ends within
 * the 64 slots emit64 has room for (a compressing store to memory was
 * miscompiled by clang 14 as a masked one). */
static inline void F(emit_many)(uint64_t lt, uint32_t i, uint32_t *out)
{
#if defined(__AVX512F__)
    __m512i v = _mm512_add_epi32(_mm512_set1_epi32((int)i),
                                 _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8,
                                                   9, 10, 11, 12, 13, 14, 15));
    for (; lt; lt >>= 16) {
        __mmask16 m = (__mmask16)lt;
        _mm512_storeu_si512(out, _mm512_maskz_compress_epi32(m, v));
        out += __builtin_popcount(m);
        v = _mm512_add_epi32(v, _mm512_set1_epi32(16));
    }
#else
    for (; lt; lt &= lt - 1)
        *out++ = i + (uint32_t)__builtin_ctzll(lt);
#endif
}

static inline size_t F(emit64)(uint64_t lt, uint32_t i, uint32_t *out)
{
    size_t c = (size_t)__builtin_popcountll(lt);
    if (c > 2) {
        F(emit_many)(lt, i, out);
        return c;
    }
    out[0] = i + F(low)(lt);
    out[1] = i + F(low)(lt & (lt - 1));
    return c;
}

/* The hits of [lo, hi), ascending into out; returns their count.  Whole
 * 64-element groups through top64 (a tie, 1 in 256, is decided by
 * lbs_rng_hit itself), the ends element by element. */
static size_t F(mask_hits)(uint64_t key, uint64_t thr, size_t lo, size_t hi,
                           uint32_t *out)
{
    size_t o = 0, i = lo;
    for (; i < hi && (i & 63); i++)
        if (lbs_rng_hit(key, i, thr))
            out[o++] = (uint32_t)i;
    const uint64_t t = thr >> 53;
    for (; i + 64 <= hi; i += 64) {
        uint64_t lt = ~0ull, eq = 0;
        if (t < 256)
            F(top64)(key, i >> 6, (unsigned)t, &lt, &eq);
        for (; eq; eq &= eq - 1) {
            unsigned e = (unsigned)__builtin_ctzll(eq);
            lt |= (uint64_t)lbs_rng_hit(key, i + e, thr) << e;
        }
        o += F(emit64)(lt, (uint32_t)i, out + o);
    }
    for (; i < hi; i++)
        if (lbs_rng_hit(key, i, thr))
            out[o++] = (uint32_t)i;
    return o;
}

/* ---- the cyclic mask's shuffle targets ---- */

/* lbs_rng_below(key, c, b) for b < 2^32 from 32-bit halves of the draw u:
 * (u b) >> 64 = ((u_hi b) + ((u_lo b) >> 32)) >> 32 exactly (the low
 * product's dropped 32 bits cannot carry past 2^64, and the sum stays
 * below 2^64), and no 128-bit product, so the loop vectorises (AVX-512:
 * about 3.5x the scalar __int128 loop on Zen 4). */
static void F(fy_draws)(uint64_t key, size_t i, size_t m, uint32_t *j)
{
#pragma omp simd
    for (size_t s = 0; s < m; s++) {
        uint64_t u = lbs_rng_u64(key, i - 1 - s), b = i - s;
        uint64_t lo = (u & 0xffffffffu) * b >> 32;
        j[s] = (uint32_t)(((u >> 32) * b + lo) >> 32);
    }
}

const struct lbs_kern F(lbs_kern) = {
    .sumsq_chunks = F(sumsq_chunks),
    .name = STR(KERN_SFX),
    .isa = KERN_LEVEL,
    .sumsq = F(sumsq),
    .axpy = F(axpy),
    .sumsq_fixed = F(sumsq_fixed),
    .gather = F(gather),
    .scatter_add = F(scatter_add),
    .scan_ge = F(scan_ge),
    .filter_ge = F(filter_ge),
    .gossip_mix = F(gossip_mix),
    .mask_hits = F(mask_hits),
    .fy_draws = F(fy_draws),
};

#ifdef KERN_REF
/* The shared kernels as a family of their own (kfam.h: lbs_kern_kfam), so
 * the checkasm loop of tests/test_isa.c and its bench mode cover them
 * too: each over an odd length off alignment; sums within their bound,
 * sumsq_fixed exactly (its order is fixed at every level). */
static void check_sums(const struct lbs_kern *K, struct lbs_kcheck *r,
                       const float *x, size_t n)
{
    double s, f;
    LBS_KCALL(r, "sumsq", n, s = K->sumsq(x, n));
    lbs_kcheck_sum(r, "sumsq", s, LBS_KBOUND_NORM);
    LBS_KCALL(r, "sumsq_fixed", n, f = K->sumsq_fixed(x, n));
    lbs_kcheck_sum(r, "sumsq_fixed", f, 0);
    double *part = lbs_kcheck_zalloc(r, LBS_CHUNKS * sizeof *part);
    for (int h = 0; h < 2; h++)
        LBS_KCALL(r, "sumsq_chunks", n / 2,
                  K->sumsq_chunks(x, n, h * LBS_CHUNKS / 2,
                                  (h + 1) * LBS_CHUNKS / 2, part));
    int same = 1;
    for (size_t c = 0; c < LBS_CHUNKS; c++) {
        size_t lo = lbs_chunk_lo(n, c);
        same &= part[c] == K->sumsq(x + lo, lbs_chunk_lo(n, c + 1) - lo);
        lbs_kcheck_sum(r, "sumsq_chunks", part[c], LBS_KBOUND_NORM);
    }
    lbs_kcheck_true(r, "sumsq_chunks = sumsq per chunk", same);
}

static void check_scans(const struct lbs_kern *K, struct lbs_kcheck *r,
                        const float *x, size_t n)
{
    const uint32_t t = 0x3f600000u;   /* |x| >= 0.875 */
    uint32_t *gi = lbs_kcheck_zalloc(r, n * sizeof *gi);
    float *gv = lbs_kcheck_zalloc(r, n * sizeof *gv);
    for (size_t room = 10; room; room = room == 10 ? n : 0) {
        size_t h;
        LBS_KCALL(r, "scan_ge", n - 5,
                  h = K->scan_ge(x, 5, n, t, gi, gv, room));
        lbs_kcheck_sum(r, "scan_ge hits", (double)h, 0);
        h = h < room ? h : room;
        lbs_kcheck_bits(r, "scan_ge indices", gi, h * sizeof *gi);
        lbs_kcheck_bits(r, "scan_ge values", gv, h * sizeof *gv);
        uint32_t *oi = lbs_kcheck_zalloc(r, n * sizeof *oi);
        float *ov = lbs_kcheck_zalloc(r, n * sizeof *ov);
        size_t f;
        LBS_KCALL(r, "filter_ge", h,
                  f = K->filter_ge(gv, gi, 1, h, 0x3f700000u, oi, ov, room));
        lbs_kcheck_sum(r, "filter_ge hits", (double)f, 0);
        f = f < room ? f : room;
        lbs_kcheck_bits(r, "filter_ge indices", oi, f * sizeof *oi);
        lbs_kcheck_bits(r, "filter_ge values", ov, f * sizeof *ov);
    }
}

static void check(const void *t, struct lbs_kcheck *r)
{
    const struct lbs_kern *K = t;
    enum { N = 10007, M = N / 3 };
    float *x = lbs_kcheck_f32(r, N, 1, 0), *w = lbs_kcheck_f32(r, N, 1, 0);
    x[100] = -0.0f;
    x[101] = 0.0f;
    check_sums(K, r, x, N);
    LBS_KCALL(r, "axpy", N, K->axpy(w, x, 0.37f, N));
    lbs_kcheck_bits(r, "axpy w", w, N * sizeof *w);
    uint32_t *idx = lbs_kcheck_zalloc(r, M * sizeof *idx);
    for (size_t j = 0; j < M; j++)
        idx[j] = (uint32_t)(3 * j + j % 3);
    float *p = lbs_kcheck_zalloc(r, M * sizeof *p);
    LBS_KCALL(r, "gather", M, K->gather(p, x, idx, M));
    lbs_kcheck_bits(r, "gather", p, M * sizeof *p);
    LBS_KCALL(r, "scatter_add", M, K->scatter_add(w, idx, p, 0.25f, M));
    lbs_kcheck_bits(r, "scatter_add", w, N * sizeof *w);
    check_scans(K, r, x, N);
    const float *src[3] = {x, w, lbs_kcheck_f32(r, N, 1, 0)};
    const double wt[3] = {0.25, 0.5, 0.25};
    double s;
    LBS_KCALL(r, "gossip_mix", N, s = K->gossip_mix(src, wt, 3, w, 0, N));
    lbs_kcheck_true(r, "gossip_mix sum finite", isfinite(s));
    lbs_kcheck_bits(r, "gossip_mix (in place)", w, N * sizeof *w);
    uint32_t *hits = lbs_kcheck_zalloc(r, 200003 * sizeof *hits);
    const uint64_t key = 0x9e3779b97f4a7c15ull;
    for (int k = 0; k < 3; k++) {
        const double prob[3] = {0.001, 0.03, 0.5};
        size_t h;
        LBS_KCALL(r, "mask_hits", 200003 - 5,
                  h = K->mask_hits(key, lbs_rng_thr61(prob[k]), 5, 200003,
                                   hits));
        lbs_kcheck_sum(r, "mask_hits count", (double)h, 0);
        lbs_kcheck_bits(r, "mask_hits", hits, h * sizeof *hits);
    }
    /* the shuffle's targets at the top of the range (bounds near 2^32,
     * where a 32-bit split would first lose a carry) and near 1; each
     * level's output against lbs_rng_below itself too */
    const size_t ends[2] = {(size_t)UINT32_MAX, 3001};
    for (int k = 0; k < 2; k++) {
        LBS_KCALL(r, "fy_draws", 3000, K->fy_draws(key, ends[k], 3000, hits));
        lbs_kcheck_bits(r, "fy_draws", hits, 3000 * sizeof *hits);
        int same = 1;
        for (size_t s = 0; s < 3000; s++)
            same &= hits[s] ==
                    lbs_rng_below(key, ends[k] - 1 - s, ends[k] - s);
        lbs_kcheck_true(r, "fy_draws = lbs_rng_below", same);
    }
}
const struct lbs_kfam lbs_kern_kfam = {
    "kern", {&lbs_kern_c, &lbs_kern_avx2, &lbs_kern_avx512}, check};
#endif
