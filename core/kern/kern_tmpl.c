/* kern_tmpl.c - the hot loops, compiled once per instruction-set level
 * (see kern.h; meson.build passes -DKERN_SFX=c|avx2|avx512 with that
 * level's flags).  Plain C that the compiler vectorises at the width of
 * its flags, and intrinsics under #ifdef __AVX512F__ / __AVX2__ / __SSE2__
 * where the compiler cannot find the idiom (movemask packing, the
 * rare-hit scan).  Serial over the range given: callers own the threads.
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

static void F(slamb_moments)(const struct lbs_slamb_coef *k, const float *g,
                             float *m, float *v, uint32_t *c, size_t n)
{
    const float b1 = k->b1, b2 = k->b2, c1 = k->c1, c2 = k->c2;
#pragma omp simd
    for (size_t i = 0; i < n; i++) {
        float gi = g[i];
        m[i] = b1 * m[i] + c1 * gi;
        v[i] = b2 * v[i] + c2 * gi * gi;
    }
    if (c) {
#pragma omp simd
        for (size_t i = 0; i < n; i++)
            c[i] += c[i] != UINT32_MAX;
    }
}

/* synced: c[i] == 0 (counters; chunk-id layers: slamb_q1_chunks) */
static void F(slamb_split)(const struct lbs_slamb_coef *k, const float *m,
                           const float *v, const float *w, const uint32_t *c,
                           float *u, size_t n, double p[4])
{
    const float ibc1 = k->ibc1, ibc2 = k->ibc2, eps = k->eps, wd = k->wd;
    for (size_t b = 0; b < n; b += LBS_NORM_BLOCK) {
        size_t e = b + LBS_NORM_BLOCK < n ? b + LBS_NORM_BLOCK : n;
        float ws = 0, us = 0, wr = 0, ur = 0;
        if (!c) {   /* all synced: lamb's loop and sums exactly */
#pragma omp simd reduction(+ : ws, us)
            for (size_t i = b; i < e; i++) {
                float wi = w[i];
                float ui = (m[i] * ibc1) / (sqrtf(v[i] * ibc2) + eps) +
                           wd * wi;
                u[i] = ui;
                ws += wi * wi;
                us += ui * ui;
            }
        } else {
#pragma omp simd reduction(+ : ws, us, wr, ur)
            for (size_t i = b; i < e; i++) {
                float wi = w[i];
                float ui = (m[i] * ibc1) / (sqrtf(v[i] * ibc2) + eps) +
                           wd * wi;
                u[i] = ui;
                float w2 = wi * wi, u2 = ui * ui;
                int synced = c[i] == 0;
                ws += synced ? w2 : 0.0f;
                us += synced ? u2 : 0.0f;
                wr += synced ? 0.0f : w2;
                ur += synced ? 0.0f : u2;
            }
        }
        p[0] += ws;
        p[1] += us;
        p[2] += wr;
        p[3] += ur;
    }
}

static inline float clampf(float x, float lo, float hi)
{
    return x < lo ? lo : x > hi ? hi : x;
}

/* Counters: the step of each element from its staleness (table of
 * beta3^c below ntab, powf above). */
static void F(slamb_update)(const struct lbs_slamb_blend *b,
                            const float *spow, size_t ntab, const float *u,
                            const uint32_t *c, float *w, size_t n)
{
    const float lr = b->lr, lr_min = b->lr_min, pmax = b->phi_max,
                pmin = b->phi_min, cmin = b->cmin, cmax = b->cmax,
                ssync = b->step_synced;
    const int clamp = b->clamp;
    for (size_t i = 0; i < n; i++) {
        float step;
        uint32_t ci = c[i];
        if (ci == 0) {
            step = ssync;
        } else {
            float s = ci < ntab ? spow[ci] : powf(b->beta3, (float)ci);
            float lr_e = s * lr + (1 - s) * lr_min;
            float phi_e = s * pmax + (1 - s) * pmin;
            if (clamp)
                phi_e = clampf(phi_e, cmin, cmax);
            step = lr_e * phi_e;
        }
        w[i] -= step * u[i];
    }
}

/* SLAMB, cyclic schedule with chunk ids: the synced coordinates of a
 * step are the elements with q[i] == qc, and every rank holds the same
 * q, so the values to average can travel in element order rather than
 * in the permutation's.  compact_eq writes them (m, v, w) while pass 1
 * has the block in L1 and expand_eq puts the averages back in the next
 * step's pass 1 (and u_S into the update's block): sequential streams of
 * k n values instead of a gather and a scatter at random over m (at
 * k = 0.1 one of those touches 80% of m's cache lines, in random order).  Both return how many they moved;
 * expand_eq writes x[i] = in[o] inv only where q[i] == qc. */
#if defined(__AVX512F__)
static inline __mmask16 F(qmask16)(const uint8_t *q, __m128i qv)
{
    return _mm_cmpeq_epi8_mask(_mm_loadu_si128((const __m128i *)q), qv);
}
#define QW 16
static size_t F(compact_vec)(const float *x, const uint8_t *q, uint8_t qc,
                             float *out, size_t n, size_t *pi)
{
    const __m128i qv = _mm_set1_epi8((char)qc);
    size_t o = 0, i = 0;
    for (; i + QW <= n; i += QW) {
        __mmask16 k = F(qmask16)(q + i, qv);
        if (!k)
            continue;
        unsigned c = (unsigned)__builtin_popcount(k);
        /* compress in a register and store c lanes: the memory form of
         * vcompressps is microcoded on some cores */
        _mm512_mask_storeu_ps(out + o, (__mmask16)((1u << c) - 1),
                              _mm512_maskz_compress_ps(
                                  k, _mm512_loadu_ps(x + i)));
        o += c;
    }
    *pi = i;
    return o;
}
static size_t F(expand_vec)(float *x, const uint8_t *q, uint8_t qc,
                            const float *in, float inv, size_t n, size_t *pi)
{
    const __m128i qv = _mm_set1_epi8((char)qc);
    const __m512 iv = _mm512_set1_ps(inv);
    size_t o = 0, i = 0;
    for (; i + QW <= n; i += QW) {
        __mmask16 k = F(qmask16)(q + i, qv);
        if (!k)
            continue;
        unsigned c = (unsigned)__builtin_popcount(k);
        __m512 y = _mm512_maskz_loadu_ps((__mmask16)((1u << c) - 1), in + o);
        _mm512_mask_storeu_ps(x + i, k, _mm512_mul_ps(
                                            _mm512_maskz_expand_ps(k, y), iv));
        o += c;
    }
    *pi = i;
    return o;
}
#undef QW
#elif defined(__AVX2__)
/* 4-bit lane indices, 8 lanes: compact: the set lanes of m first, in
 * order; expand: set lane l takes source popcount(m below l) */
#define NB(m, l) ((uint32_t)__builtin_popcount((m) & ((1u << (l)) - 1)))
#define CL(m, l) (((m) >> (l) & 1) ? (uint32_t)(l) << (4 * NB(m, l)) : 0u)
#define EL(m, l) (((m) >> (l) & 1) ? NB(m, l) << (4 * (l)) : 0u)
#define CP(m) (CL(m, 0) | CL(m, 1) | CL(m, 2) | CL(m, 3) | CL(m, 4) | \
               CL(m, 5) | CL(m, 6) | CL(m, 7))
#define EP(m) (EL(m, 0) | EL(m, 1) | EL(m, 2) | EL(m, 3) | EL(m, 4) | \
               EL(m, 5) | EL(m, 6) | EL(m, 7))
#define R4(P, b) P(b), P(b + 1), P(b + 2), P(b + 3)
#define R16(P, b) R4(P, b), R4(P, b + 4), R4(P, b + 8), R4(P, b + 12)
#define R64(P, b) R16(P, b), R16(P, b + 16), R16(P, b + 32), R16(P, b + 48)
static const uint32_t F(cperm)[256] = {R64(CP, 0), R64(CP, 64),
                                       R64(CP, 128), R64(CP, 192)};
static const uint32_t F(eperm)[256] = {R64(EP, 0), R64(EP, 64),
                                       R64(EP, 128), R64(EP, 192)};
#undef R64
#undef R16
#undef R4
#undef EP
#undef CP
#undef EL
#undef CL
#undef NB
#define QW 8
static inline unsigned F(qmask8)(const uint8_t *q, __m128i qv)
{
    __m128i b = _mm_loadl_epi64((const __m128i *)q);
    return (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(b, qv)) & 0xffu;
}
static inline __m256i F(nibbles)(uint32_t p)
{
    return _mm256_and_si256(
        _mm256_srlv_epi32(_mm256_set1_epi32((int32_t)p),
                          _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28)),
        _mm256_set1_epi32(15));
}
/* lanes [0, c) of 8 */
static inline __m256i F(first)(unsigned c)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int32_t)c),
                              _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
static size_t F(compact_vec)(const float *x, const uint8_t *q, uint8_t qc,
                             float *out, size_t n, size_t *pi)
{
    const __m128i qv = _mm_set1_epi8((char)qc);
    size_t o = 0, i = 0;
    for (; i + QW <= n; i += QW) {
        unsigned k = F(qmask8)(q + i, qv);
        if (!k)
            continue;
        unsigned c = (unsigned)__builtin_popcount(k);
        __m256 y = _mm256_permutevar8x32_ps(_mm256_loadu_ps(x + i),
                                            F(nibbles)(F(cperm)[k]));
        _mm256_maskstore_ps(out + o, F(first)(c), y);
        o += c;
    }
    *pi = i;
    return o;
}
static size_t F(expand_vec)(float *x, const uint8_t *q, uint8_t qc,
                            const float *in, float inv, size_t n, size_t *pi)
{
    const __m128i qv = _mm_set1_epi8((char)qc);
    const __m256 iv = _mm256_set1_ps(inv);
    const __m256i bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    size_t o = 0, i = 0;
    for (; i + QW <= n; i += QW) {
        unsigned k = F(qmask8)(q + i, qv);
        if (!k)
            continue;
        unsigned c = (unsigned)__builtin_popcount(k);
        __m256 y = _mm256_maskload_ps(in + o, F(first)(c));
        y = _mm256_permutevar8x32_ps(y, F(nibbles)(F(eperm)[k]));
        __m256i lanes = _mm256_cmpeq_epi32(
            _mm256_and_si256(_mm256_set1_epi32((int32_t)k), bit), bit);
        _mm256_maskstore_ps(x + i, lanes, _mm256_mul_ps(y, iv));
        o += c;
    }
    *pi = i;
    return o;
}
#undef QW
#else
static size_t F(compact_vec)(const float *x, const uint8_t *q, uint8_t qc,
                             float *out, size_t n, size_t *pi)
{
    (void)x, (void)q, (void)qc, (void)out, (void)n;
    *pi = 0;
    return 0;
}
static size_t F(expand_vec)(float *x, const uint8_t *q, uint8_t qc,
                            const float *in, float inv, size_t n, size_t *pi)
{
    (void)x, (void)q, (void)qc, (void)in, (void)inv, (void)n;
    *pi = 0;
    return 0;
}
#endif

static size_t F(compact_eq)(const float *x, const uint8_t *q, uint8_t qc,
                            float *out, size_t n)
{
    size_t i, o = F(compact_vec)(x, q, qc, out, n, &i);
    for (; i < n; i++)
        if (q[i] == qc)
            out[o++] = x[i];
    return o;
}

static size_t F(expand_eq)(float *x, const uint8_t *q, uint8_t qc,
                           const float *in, float inv, size_t n)
{
    size_t i, o = F(expand_vec)(x, q, qc, in, inv, n, &i);
    for (; i < n; i++)
        if (q[i] == qc)
            x[i] = in[o++] * inv;
    return o;
}

/* SLAMB's chunk-id layers (slamb.c: two passes over the layer, one over
 * its synced elements).  Pass 1's u and stale sums: u stored for every
 * element (a synced one's is replaced by the update from the compact
 * u_S), ||w||^2 and ||u||^2 summed where q != qc. */
static void F(slamb_qu)(const struct lbs_slamb_coef *k, const float *m,
                        const float *v, const float *w, const uint8_t *q,
                        uint8_t qc, float *u, size_t n, double p[4])
{
    const float ibc1 = k->ibc1, ibc2 = k->ibc2, eps = k->eps, wd = k->wd;
    float wr = 0, ur = 0;
#pragma omp simd reduction(+ : wr, ur)
    for (size_t i = 0; i < n; i++) {
        float wi = w[i];
        float ui = (m[i] * ibc1) / (sqrtf(v[i] * ibc2) + eps) + wd * wi;
        u[i] = ui;
        int stale = q[i] != qc;
        wr += stale ? wi * wi : 0.0f;
        ur += stale ? ui * ui : 0.0f;
    }
    p[2] += wr;
    p[3] += ur;
}

/* w -= tab[q[i]] u[i], the vector part (returns where it stopped): a
 * compiler turns the lookup into one scalar load and insert per lane,
 * which cost more than the rest of the pass.  With at most 32 chunks
 * (k >= 1/32) the table sits in two AVX-512 registers and a permute picks
 * the lanes' steps; AVX2 gathers. */
#if defined(__AVX512F__)
static size_t F(qt_vec)(const float *tab, unsigned nq, const uint8_t *q,
                        const float *u, float *w, size_t n)
{
    if (nq > 32)
        return 0;
    const __m512 t0 = _mm512_loadu_ps(tab), t1 = _mm512_loadu_ps(tab + 16);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512i qi = _mm512_cvtepu8_epi32(
            _mm_loadu_si128((const __m128i *)(q + i)));
        __m512 t = _mm512_permutex2var_ps(t0, qi, t1);
        _mm512_storeu_ps(w + i, _mm512_sub_ps(_mm512_loadu_ps(w + i),
                                              _mm512_mul_ps(
                                                  t, _mm512_loadu_ps(u + i))));
    }
    return i;
}
#elif defined(__AVX2__)
static size_t F(qt_vec)(const float *tab, unsigned nq, const uint8_t *q,
                        const float *u, float *w, size_t n)
{
    (void)nq;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256i qi = _mm256_cvtepu8_epi32(
            _mm_loadl_epi64((const __m128i *)(q + i)));
        __m256 t = _mm256_i32gather_ps(tab, qi, 4);
        _mm256_storeu_ps(w + i, _mm256_sub_ps(_mm256_loadu_ps(w + i),
                                              _mm256_mul_ps(
                                                  t, _mm256_loadu_ps(u + i))));
    }
    return i;
}
#else
static size_t F(qt_vec)(const float *tab, unsigned nq, const uint8_t *q,
                        const float *u, float *w, size_t n)
{
    (void)tab, (void)nq, (void)q, (void)u, (void)w, (void)n;
    return 0;
}
#endif

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

static void F(slamb_split_chunks)(const struct lbs_slamb_coef *k,
                                  const float *m, const float *v,
                                  const float *w, const uint32_t *c, float *u,
                                  size_t n, size_t c0, size_t c1,
                                  double (*part)[4])
{
    for (size_t j = c0; j < c1; j++) {
        size_t lo = lbs_chunk_lo(n, j), hi = lbs_chunk_lo(n, j + 1);
        part[j][0] = part[j][1] = part[j][2] = part[j][3] = 0;
        F(slamb_split)(k, m + lo, v + lo, w + lo, c ? c + lo : NULL, u + lo,
                       hi - lo, part[j]);
    }
}

/* The fused AVX-512 and AVX2 forms of pass 1 and the update over a
 * block: the same elementwise expressions in registers, 16 or 8 lanes at
 * a time, where
 * the composed form (below) sweeps the block in L1 once per step - at
 * AVX-512 widths those sweeps and their data-dependent branches cost
 * more than the memory traffic.  They return where they stopped (the
 * composed form does the rest); *in and *o advance over the compact
 * values read and written, up to oend, the end of the chunk's share. */
#if defined(__AVX512F__)
static size_t F(q1_vec)(const struct lbs_slamb_coef *k, const float *g,
                        float *m, float *v, const float *w, float *u,
                        const struct lbs_slamb_qbuf *B, const uint8_t *q,
                        const float **in, size_t *o, size_t oend, size_t n,
                        double p[4])
{
    const __m512 b1 = _mm512_set1_ps(k->b1), b2 = _mm512_set1_ps(k->b2),
                 c1 = _mm512_set1_ps(k->c1), c2 = _mm512_set1_ps(k->c2),
                 ibc1 = _mm512_set1_ps(k->ibc1),
                 ibc2 = _mm512_set1_ps(k->ibc2), eps = _mm512_set1_ps(k->eps),
                 wd = _mm512_set1_ps(k->wd);
    const __m128i qc = _mm_set1_epi8((char)B->cur),
                  qp = _mm_set1_epi8((char)B->prev);
    const float *pi = *in;
    float *cm = B->cm + *o, *cv = B->cv + *o, *cw = B->cw + *o;
    const float *end = B->cm + oend;
    __m512 wr = _mm512_setzero_ps(), ur = _mm512_setzero_ps();
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m128i qi = _mm_loadu_si128((const __m128i *)(q + i));
        __m512 mi = _mm512_loadu_ps(m + i);
        if (pi) {
            __mmask16 kp = _mm_cmpeq_epi8_mask(qi, qp);
            unsigned cp = (unsigned)__builtin_popcount(kp);
            mi = _mm512_mask_expand_ps(
                mi, kp,
                _mm512_maskz_loadu_ps((__mmask16)((1u << cp) - 1), pi));
            pi += cp;
        }
        __m512 gi = _mm512_loadu_ps(g + i);
        mi = _mm512_add_ps(_mm512_mul_ps(b1, mi), _mm512_mul_ps(c1, gi));
        __m512 vi = _mm512_add_ps(
            _mm512_mul_ps(b2, _mm512_loadu_ps(v + i)),
            _mm512_mul_ps(_mm512_mul_ps(c2, gi), gi));
        _mm512_storeu_ps(m + i, mi);
        _mm512_storeu_ps(v + i, vi);
        __m512 wi = _mm512_loadu_ps(w + i);
        __m512 ui = _mm512_add_ps(
            _mm512_div_ps(_mm512_mul_ps(mi, ibc1),
                          _mm512_add_ps(
                              _mm512_sqrt_ps(_mm512_mul_ps(vi, ibc2)), eps)),
            _mm512_mul_ps(wd, wi));
        _mm512_storeu_ps(u + i, ui);
        __mmask16 kc = _mm_cmpeq_epi8_mask(qi, qc);
        wr = _mm512_mask_add_ps(wr, (__mmask16)~kc, wr,
                                _mm512_mul_ps(wi, wi));
        ur = _mm512_mask_add_ps(ur, (__mmask16)~kc, ur,
                                _mm512_mul_ps(ui, ui));
        /* compress in registers and store the first c lanes (the memory
         * form of vcompressps is microcoded on some cores) */
        unsigned c = (unsigned)__builtin_popcount(kc);
        __mmask16 first = cm + 16 <= end ? (__mmask16)0xffff
                                         : (__mmask16)((1u << c) - 1);
        _mm512_mask_storeu_ps(cm, first, _mm512_maskz_compress_ps(kc, mi));
        _mm512_mask_storeu_ps(cv, first, _mm512_maskz_compress_ps(kc, vi));
        _mm512_mask_storeu_ps(cw, first, _mm512_maskz_compress_ps(kc, wi));
        cm += c;
        cv += c;
        cw += c;
    }
    p[2] += _mm512_reduce_add_ps(wr);
    p[3] += _mm512_reduce_add_ps(ur);
    if (pi)
        *in = pi;
    *o = (size_t)(cm - B->cm);
    return i;
}
static size_t F(qupd_vec)(const float *tab, unsigned nq, const uint8_t *q,
                          unsigned cur, const float **in, const float *u,
                          float *w, size_t n)
{
    if (nq > 32)
        return 0;
    const __m512 t0 = _mm512_loadu_ps(tab), t1 = _mm512_loadu_ps(tab + 16);
    const __m128i qc = _mm_set1_epi8((char)cur);
    const float *pi = *in;
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m128i qb = _mm_loadu_si128((const __m128i *)(q + i));
        __mmask16 kc = _mm_cmpeq_epi8_mask(qb, qc);
        unsigned c = (unsigned)__builtin_popcount(kc);
        __m512 ui = _mm512_mask_expand_ps(
            _mm512_loadu_ps(u + i), kc,
            _mm512_maskz_loadu_ps((__mmask16)((1u << c) - 1), pi));
        pi += c;
        __m512 t = _mm512_permutex2var_ps(t0, _mm512_cvtepu8_epi32(qb), t1);
        _mm512_storeu_ps(w + i, _mm512_sub_ps(_mm512_loadu_ps(w + i),
                                              _mm512_mul_ps(t, ui)));
    }
    *in = pi;
    return i;
}
#elif defined(__AVX2__)
/* lane l of 8 set where bit l of k is */
static inline __m256 F(lanes8)(unsigned k)
{
    const __m256i bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    return _mm256_castsi256_ps(_mm256_cmpeq_epi32(
        _mm256_and_si256(_mm256_set1_epi32((int32_t)k), bit), bit));
}
static inline float F(hsum8)(__m256 x)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(x),
                          _mm256_extractf128_ps(x, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_shuffle_ps(s, s, 1)));
}
/* the 8 lanes of x where bit l of k is, first, in order: c of them; all
 * 8 stored when room (the next store overwrites the rest), as AMD cores
 * take many cycles for a masked store */
static inline void F(compact8)(float *out, __m256 x, unsigned k, unsigned c,
                               int room)
{
    __m256 y = _mm256_permutevar8x32_ps(x, F(nibbles)(F(cperm)[k]));
    if (room)
        _mm256_storeu_ps(out, y);
    else
        _mm256_maskstore_ps(out, F(first)(c), y);
}
/* x with the lanes where bit l of k is taken from in, in order */
static inline __m256 F(expand8)(__m256 x, unsigned k, unsigned c,
                                const float *in)
{
    __m256 y = _mm256_permutevar8x32_ps(_mm256_maskload_ps(in, F(first)(c)),
                                        F(nibbles)(F(eperm)[k]));
    return _mm256_blendv_ps(x, y, F(lanes8)(k));
}
static size_t F(q1_vec)(const struct lbs_slamb_coef *k, const float *g,
                        float *m, float *v, const float *w, float *u,
                        const struct lbs_slamb_qbuf *B, const uint8_t *q,
                        const float **in, size_t *o, size_t oend, size_t n,
                        double p[4])
{
    const __m256 b1 = _mm256_set1_ps(k->b1), b2 = _mm256_set1_ps(k->b2),
                 c1 = _mm256_set1_ps(k->c1), c2 = _mm256_set1_ps(k->c2),
                 ibc1 = _mm256_set1_ps(k->ibc1),
                 ibc2 = _mm256_set1_ps(k->ibc2), eps = _mm256_set1_ps(k->eps),
                 wd = _mm256_set1_ps(k->wd);
    const __m128i qc = _mm_set1_epi8((char)B->cur),
                  qp = _mm_set1_epi8((char)B->prev);
    const float *pi = *in;
    float *cm = B->cm + *o, *cv = B->cv + *o, *cw = B->cw + *o;
    const float *end = B->cm + oend;
    __m256 wr = _mm256_setzero_ps(), ur = _mm256_setzero_ps();
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 mi = _mm256_loadu_ps(m + i);
        if (pi) {
            unsigned kp = F(qmask8)(q + i, qp),
                     cp = (unsigned)__builtin_popcount(kp);
            mi = F(expand8)(mi, kp, cp, pi);
            pi += cp;
        }
        __m256 gi = _mm256_loadu_ps(g + i);
        mi = _mm256_add_ps(_mm256_mul_ps(b1, mi), _mm256_mul_ps(c1, gi));
        __m256 vi = _mm256_add_ps(
            _mm256_mul_ps(b2, _mm256_loadu_ps(v + i)),
            _mm256_mul_ps(_mm256_mul_ps(c2, gi), gi));
        _mm256_storeu_ps(m + i, mi);
        _mm256_storeu_ps(v + i, vi);
        __m256 wi = _mm256_loadu_ps(w + i);
        __m256 ui = _mm256_add_ps(
            _mm256_div_ps(_mm256_mul_ps(mi, ibc1),
                          _mm256_add_ps(
                              _mm256_sqrt_ps(_mm256_mul_ps(vi, ibc2)), eps)),
            _mm256_mul_ps(wd, wi));
        _mm256_storeu_ps(u + i, ui);
        unsigned kc = F(qmask8)(q + i, qc),
                 c = (unsigned)__builtin_popcount(kc);
        __m256 synced = F(lanes8)(kc);
        wr = _mm256_add_ps(wr, _mm256_andnot_ps(synced,
                                                _mm256_mul_ps(wi, wi)));
        ur = _mm256_add_ps(ur, _mm256_andnot_ps(synced,
                                                _mm256_mul_ps(ui, ui)));
        int room = cm + 8 <= end;
        F(compact8)(cm, mi, kc, c, room);
        F(compact8)(cv, vi, kc, c, room);
        F(compact8)(cw, wi, kc, c, room);
        cm += c;
        cv += c;
        cw += c;
    }
    p[2] += F(hsum8)(wr);
    p[3] += F(hsum8)(ur);
    if (pi)
        *in = pi;
    *o = (size_t)(cm - B->cm);
    return i;
}
/* tab[q] for 8 lanes: two permutes and a blend up to 16 chunks (k >=
 * 1/16), a gather above */
static size_t F(qupd_vec)(const float *tab, unsigned nq, const uint8_t *q,
                          unsigned cur, const float **in, const float *u,
                          float *w, size_t n)
{
    const __m256 t0 = _mm256_loadu_ps(tab), t1 = _mm256_loadu_ps(tab + 8);
    const __m256i seven = _mm256_set1_epi32(7);
    const __m128i qc = _mm_set1_epi8((char)cur);
    const float *pi = *in;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        unsigned kc = F(qmask8)(q + i, qc),
                 c = (unsigned)__builtin_popcount(kc);
        __m256 ui = F(expand8)(_mm256_loadu_ps(u + i), kc, c, pi);
        pi += c;
        __m256i qi = _mm256_cvtepu8_epi32(
            _mm_loadl_epi64((const __m128i *)(q + i)));
        __m256 t = nq <= 16
                       ? _mm256_blendv_ps(
                             _mm256_permutevar8x32_ps(t0, qi),
                             _mm256_permutevar8x32_ps(t1, qi),
                             _mm256_castsi256_ps(
                                 _mm256_cmpgt_epi32(qi, seven)))
                       : _mm256_i32gather_ps(tab, qi, 4);
        _mm256_storeu_ps(w + i, _mm256_sub_ps(_mm256_loadu_ps(w + i),
                                              _mm256_mul_ps(t, ui)));
    }
    *in = pi;
    return i;
}
#else
static size_t F(q1_vec)(const struct lbs_slamb_coef *k, const float *g,
                        float *m, float *v, const float *w, float *u,
                        const struct lbs_slamb_qbuf *B, const uint8_t *q,
                        const float **in, size_t *o, size_t oend, size_t n,
                        double p[4])
{
    (void)k, (void)g, (void)m, (void)v, (void)w, (void)u, (void)B, (void)q;
    (void)in, (void)o, (void)oend, (void)n, (void)p;
    return 0;
}
static size_t F(qupd_vec)(const float *tab, unsigned nq, const uint8_t *q,
                          unsigned cur, const float **in, const float *u,
                          float *w, size_t n)
{
    (void)tab, (void)nq, (void)q, (void)cur, (void)in, (void)u, (void)w;
    (void)n;
    return 0;
}
#endif

/* SLAMB's chunk-id layers, chunks [c0, c1), block by block (blocks of
 * LBS_NORM_BLOCK, as slamb_split_chunks, so the sums are chunked alike).
 * Pass 1: last step's averaged momenta back into m (B->pm, where q ==
 * prev), the moments, u and the stale sums, and the synced m, v, w
 * appended to cm, cv, cw from off[c] on while the block is in L1. */
static void F(slamb_q1_chunks)(const struct lbs_slamb_coef *k,
                               const float *g, float *m, float *v,
                               const float *w, float *u,
                               const struct lbs_slamb_qbuf *B, size_t n,
                               size_t c0, size_t c1, double (*part)[4])
{
    const uint8_t *q = B->q, cur = (uint8_t)B->cur, prev = (uint8_t)B->prev;
    for (size_t j = c0; j < c1; j++) {
        size_t hi = lbs_chunk_lo(n, j + 1), o = B->off[j];
        const float *in = B->pm ? B->pm + B->poff[j] : NULL;
        part[j][0] = part[j][1] = part[j][2] = part[j][3] = 0;
        for (size_t b0 = lbs_chunk_lo(n, j); b0 < hi; b0 += LBS_NORM_BLOCK) {
            size_t e = b0 + LBS_NORM_BLOCK < hi ? b0 + LBS_NORM_BLOCK : hi;
            size_t b = b0 + F(q1_vec)(k, g + b0, m + b0, v + b0, w + b0,
                                      u + b0, B, q + b0, &in, &o,
                                      B->off[j + 1], e - b0, part[j]);
            if (b == e)
                continue;
            size_t len = e - b;
            if (in)
                in += F(expand_eq)(m + b, q + b, prev, in, 1.0f, len);
            F(slamb_moments)(k, g + b, m + b, v + b, NULL, len);
            F(slamb_qu)(k, m + b, v + b, w + b, q + b, cur, u + b, len,
                        part[j]);
            F(compact_eq)(v + b, q + b, cur, B->cv + o, len);
            F(compact_eq)(w + b, q + b, cur, B->cw + o, len);
            o += F(compact_eq)(m + b, q + b, cur, B->cm + o, len);
        }
    }
}

/* The fix-up over the synced elements only, in their compact order:
 * averaged m = cm inv (kept in pm for the next step's pass 1), u_S from
 * it into cv, and ||w_S||^2, ||u_S||^2 - chunk c's share [off[c],
 * off[c+1]) in blocks of LBS_NORM_BLOCK, so with every element synced
 * the blocks, the expressions and the sums are lamb's. */
static void F(slamb_qfix_chunks)(const struct lbs_slamb_coef *k,
                                 const struct lbs_slamb_qbuf *B, float inv,
                                 float *pm, size_t c0, size_t c1,
                                 double (*part)[4])
{
    const float ibc1 = k->ibc1, ibc2 = k->ibc2, eps = k->eps, wd = k->wd;
    const float *cm = B->cm, *cw = B->cw;
    float *cv = B->cv;
    for (size_t j = c0; j < c1; j++) {
        size_t hi = B->off[j + 1];
        for (size_t b = B->off[j]; b < hi; b += LBS_NORM_BLOCK) {
            size_t e = b + LBS_NORM_BLOCK < hi ? b + LBS_NORM_BLOCK : hi;
            float fw = 0, fu = 0;
#pragma omp simd reduction(+ : fw, fu)
            for (size_t i = b; i < e; i++) {
                float mi = cm[i] * inv;
                pm[i] = mi;
                float wi = cw[i];
                float ui = (mi * ibc1) / (sqrtf(cv[i] * ibc2) + eps) +
                           wd * wi;
                cv[i] = ui;
                fw += wi * wi;
                fu += ui * ui;
            }
            part[j][0] += fw;
            part[j][1] += fu;
        }
    }
}

/* The update: w -= tab[q] u, with u_S from cv where q == cur (put into
 * a copy of the block, so u's lines stay clean). */
static void F(slamb_qupd_chunks)(const float *tab, unsigned nq,
                                 const struct lbs_slamb_qbuf *B,
                                 const float *u, float *w, size_t n,
                                 size_t c0, size_t c1)
{
    const uint8_t *q = B->q, cur = (uint8_t)B->cur;
    float t[LBS_NORM_BLOCK];
    for (size_t j = c0; j < c1; j++) {
        size_t hi = lbs_chunk_lo(n, j + 1);
        const float *in = B->cv + B->off[j];
        for (size_t b0 = lbs_chunk_lo(n, j); b0 < hi; b0 += LBS_NORM_BLOCK) {
            size_t e = b0 + LBS_NORM_BLOCK < hi ? b0 + LBS_NORM_BLOCK : hi;
            size_t b = b0 + F(qupd_vec)(tab, nq, q + b0, B->cur, &in, u + b0,
                                        w + b0, e - b0);
            if (b == e)
                continue;
            size_t len = e - b;
            memcpy(t, u + b, len * sizeof *t);
            in += F(expand_eq)(t, q + b, cur, in, 1.0f, len);
            size_t i = F(qt_vec)(tab, nq, q + b, t, w + b, len);
            for (; i < len; i++)
                w[b + i] -= tab[q[b + i]] * t[i];
        }
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

const struct lbs_kern F(lbs_kern) = {
    .sumsq_chunks = F(sumsq_chunks),
    .slamb_split_chunks = F(slamb_split_chunks),
    .slamb_q1_chunks = F(slamb_q1_chunks),
    .slamb_qfix_chunks = F(slamb_qfix_chunks),
    .slamb_qupd_chunks = F(slamb_qupd_chunks),
    .compact_eq = F(compact_eq),
    .expand_eq = F(expand_eq),
    .name = STR(KERN_SFX),
    .isa = KERN_LEVEL,
    .sumsq = F(sumsq),
    .axpy = F(axpy),
    .slamb_moments = F(slamb_moments),
    .slamb_split = F(slamb_split),
    .slamb_update = F(slamb_update),
    .sumsq_fixed = F(sumsq_fixed),
    .gather = F(gather),
    .scatter_add = F(scatter_add),
    .scan_ge = F(scan_ge),
    .filter_ge = F(filter_ge),
    .gossip_mix = F(gossip_mix),
    .mask_hits = F(mask_hits),
};
