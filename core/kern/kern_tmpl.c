/* kern_tmpl.c - the hot loops, compiled once per instruction-set level
 * (see kern.h; meson.build passes -DKERN_SFX=c|avx2|avx512 with that
 * level's flags).  Plain C that the compiler vectorises at the width of
 * its flags, and intrinsics under #ifdef __AVX512F__ / __AVX2__ / __SSE2__
 * where the compiler cannot find the idiom (movemask packing, the
 * rare-hit scan).  Serial over the range given: callers own the threads.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "kern.h"
#include "lbscale/rng.h"
#include "optim_impl.h"

#define CAT2(a, b) a##_##b
#define CAT(a, b) CAT2(a, b)
#define F(name) CAT(name, KERN_SFX)
#define STR2(x) #x
#define STR(x) STR2(x)

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

static void F(lamb)(const struct lbs_lamb_coef *k, const float *g, float *m,
                    float *v, const float *w, float *u, size_t n, double *sw,
                    double *su)
{
    const float b1 = k->b1, b2 = k->b2, c1 = k->c1, c2 = k->c2,
                ibc1 = k->ibc1, ibc2 = k->ibc2, eps = k->eps, wd = k->wd,
                gscale = k->gscale;
    for (size_t b = 0; b < n; b += LBS_NORM_BLOCK) {
        size_t e = b + LBS_NORM_BLOCK < n ? b + LBS_NORM_BLOCK : n;
        float fw = 0, fu = 0;
#pragma omp simd reduction(+ : fw, fu)
        for (size_t i = b; i < e; i++) {
            float gi = g[i] * gscale;
            float mi = b1 * m[i] + c1 * gi;
            float vi = b2 * v[i] + c2 * gi * gi;
            m[i] = mi;
            v[i] = vi;
            float wi = w[i];
            float ui = (mi * ibc1) / (sqrtf(vi * ibc2) + eps) + wd * wi;
            u[i] = ui;
            fw += wi * wi;
            fu += ui * ui;
        }
        *sw += fw;
        *su += fu;
    }
}

static void F(axpy)(float *restrict w, const float *restrict u, float a,
                    size_t n)
{
#pragma omp simd
    for (size_t i = 0; i < n; i++)
        w[i] -= a * u[i];
}

static double F(adamw)(const struct lbs_adamw_coef *k, const float *g,
                       float *m, float *v, float *w, size_t n)
{
    const float b1 = k->b1, b2 = k->b2, c1 = k->c1, c2 = k->c2,
                ibc1 = k->ibc1, ibc2 = k->ibc2, eps = k->eps, wd = k->wd,
                lr = k->lr;
    float su = 0;   /* only to detect NaN/Inf */
#pragma omp simd reduction(+ : su)
    for (size_t i = 0; i < n; i++) {
        float gi = g[i];
        float mi = b1 * m[i] + c1 * gi;
        float vi = b2 * v[i] + c2 * gi * gi;
        m[i] = mi;
        v[i] = vi;
        float u = (mi * ibc1) / (sqrtf(vi * ibc2) + eps) + wd * w[i];
        su += u;
        w[i] -= lr * u;
    }
    return su;
}

static double F(momentum)(const struct lbs_momentum *p, const float *g,
                          float *v, float *w, size_t n)
{
    const float gs = p->gs, wd = p->wd, mu = p->mu, a = p->a, k = p->k;
    float sum = 0;
    if (!g) {
        if (p->nesterov) {
#pragma omp simd reduction(+ : sum)
            for (size_t i = 0; i < n; i++) {
                float vi = mu * v[i];
                v[i] = vi;
                float s = mu * vi;
                sum += s;
                w[i] -= k * s;
            }
        } else {
#pragma omp simd reduction(+ : sum)
            for (size_t i = 0; i < n; i++) {
                float vi = mu * v[i];
                v[i] = vi;
                sum += vi;
                w[i] -= k * vi;
            }
        }
        return sum;
    }
    if (p->nesterov) {
#pragma omp simd reduction(+ : sum)
        for (size_t i = 0; i < n; i++) {
            float d = gs * g[i] + wd * w[i];
            float vi = mu * v[i] + a * d;
            v[i] = vi;
            float s = a * d + mu * vi;
            sum += s;
            w[i] -= k * s;
        }
    } else {
#pragma omp simd reduction(+ : sum)
        for (size_t i = 0; i < n; i++) {
            float d = gs * g[i] + wd * w[i];
            float vi = mu * v[i] + a * d;
            v[i] = vi;
            sum += vi;
            w[i] -= k * vi;
        }
    }
    return sum;
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

/* synced: c[i] == 0 (counters), or q[i] == cur (chunk ids) */
static void F(slamb_split)(const struct lbs_slamb_coef *k, const float *m,
                           const float *v, const float *w, const uint32_t *c,
                           const uint8_t *q, unsigned cur, float *u,
                           size_t n, double p[4])
{
    const float ibc1 = k->ibc1, ibc2 = k->ibc2, eps = k->eps, wd = k->wd;
    const uint8_t qc = (uint8_t)cur;
    for (size_t b = 0; b < n; b += LBS_NORM_BLOCK) {
        size_t e = b + LBS_NORM_BLOCK < n ? b + LBS_NORM_BLOCK : n;
        float ws = 0, us = 0, wr = 0, ur = 0;
        if (!c && !q) {   /* all synced: lamb's loop and sums exactly */
#pragma omp simd reduction(+ : ws, us)
            for (size_t i = b; i < e; i++) {
                float wi = w[i];
                float ui = (m[i] * ibc1) / (sqrtf(v[i] * ibc2) + eps) +
                           wd * wi;
                u[i] = ui;
                ws += wi * wi;
                us += ui * ui;
            }
        } else if (c) {
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
        } else {
#pragma omp simd reduction(+ : ws, us, wr, ur)
            for (size_t i = b; i < e; i++) {
                float wi = w[i];
                float ui = (m[i] * ibc1) / (sqrtf(v[i] * ibc2) + eps) +
                           wd * wi;
                u[i] = ui;
                float w2 = wi * wi, u2 = ui * ui;
                int synced = q[i] == qc;
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

/* Chunk ids: w -= tab[q] u (tab: one step per chunk of the schedule). */
static void F(slamb_update_q)(const float *tab, const uint8_t *q,
                              const float *restrict u, float *restrict w,
                              size_t n)
{
#pragma omp simd
    for (size_t i = 0; i < n; i++)
        w[i] -= tab[q[i]] * u[i];
}

static double F(sign_pack)(const float *x, size_t n, uint8_t *bits,
                           size_t b0, size_t b1, int l2)
{
    double acc = 0;
    size_t b = b0;
    size_t full = n / 8 < b1 ? n / 8 : b1;
#if defined(__AVX512F__) && defined(__AVX512BW__)
    /* 16 signs per compare: two bytes */
    while (b + 2 <= full) {
        size_t stop = b + 512 < full ? b + 512 : full;
        __m512 s = _mm512_setzero_ps();
        const __m512i absm = _mm512_set1_epi32(0x7fffffff);
        for (; b + 2 <= stop; b += 2) {
            __m512 v0 = _mm512_loadu_ps(x + 8 * b);
            __mmask16 k = _mm512_cmp_ps_mask(v0, _mm512_setzero_ps(),
                                             _CMP_LT_OQ);
            memcpy(bits + b, &k, 2);
            if (l2)
                s = _mm512_add_ps(s, _mm512_mul_ps(v0, v0));
            else
                s = _mm512_add_ps(s, _mm512_castsi512_ps(_mm512_and_si512(
                                         _mm512_castps_si512(v0), absm)));
        }
        float t[16];
        _mm512_storeu_ps(t, s);
        double d = 0;
        for (int j = 0; j < 16; j++)
            d += t[j];
        acc += d;
    }
#elif defined(__AVX2__)
    /* 8 signs per compare: one byte */
    while (b < full) {
        size_t stop = b + 512 < full ? b + 512 : full;
        __m256 s = _mm256_setzero_ps();
        const __m256 absm = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
        for (; b < stop; b++) {
            __m256 v0 = _mm256_loadu_ps(x + 8 * b);
            bits[b] = (uint8_t)_mm256_movemask_ps(
                _mm256_cmp_ps(v0, _mm256_setzero_ps(), _CMP_LT_OQ));
            if (l2)
                s = _mm256_add_ps(s, _mm256_mul_ps(v0, v0));
            else
                s = _mm256_add_ps(s, _mm256_and_ps(v0, absm));
        }
        float t[8];
        _mm256_storeu_ps(t, s);
        double d = 0;
        for (int j = 0; j < 8; j++)
            d += t[j];
        acc += d;
    }
#elif defined(__SSE2__)
    const __m128 zero = _mm_setzero_ps();
    const __m128 absm = _mm_castsi128_ps(_mm_set1_epi32(0x7fffffff));
    while (b < full) {   /* float partial sums over at most 512 bytes */
        size_t stop = b + 512 < full ? b + 512 : full;
        __m128 s = _mm_setzero_ps();
        for (; b < stop; b++) {
            __m128 v0 = _mm_loadu_ps(x + 8 * b), v1 = _mm_loadu_ps(x + 8 * b + 4);
            bits[b] = (uint8_t)(_mm_movemask_ps(_mm_cmplt_ps(v0, zero)) |
                                _mm_movemask_ps(_mm_cmplt_ps(v1, zero)) << 4);
            if (l2)
                s = _mm_add_ps(s, _mm_add_ps(_mm_mul_ps(v0, v0),
                                             _mm_mul_ps(v1, v1)));
            else
                s = _mm_add_ps(s, _mm_add_ps(_mm_and_ps(v0, absm),
                                             _mm_and_ps(v1, absm)));
        }
        float t[4];
        _mm_storeu_ps(t, s);
        acc += (double)t[0] + t[1] + t[2] + t[3];
    }
#endif
    for (; b < b1; b++) {
        uint8_t v = 0;
        for (size_t j = 0; j < 8 && 8 * b + j < n; j++) {
            float f = x[8 * b + j];
            v |= (uint8_t)((f < 0) << j);
            acc += l2 ? (double)f * f : fabs((double)f);
        }
        bits[b] = v;
    }
    return acc;
}

/* QSGD's levels (qsgd.c): element i uses 32 bits of lbs_rng_u64(key,
 * i / 2), the low half for even i, the high half for odd i; rounding in
 * double.  One draw per pair, no carried state, so the pair loop
 * vectorises (AVX-512DQ has the 64-bit multiply the mixer needs). */
static inline int F(level)(float x, double sc, double s, uint32_t h)
{
    double l = floor(fabs((double)x) * sc + (double)h * 0x1.0p-32);
    l = l > s ? s : l;
    return (int)(x < 0 ? -l : l);
}

static void F(qsgd_levels)(const float *x, size_t lo, size_t hi, double sc,
                           double s, uint64_t key, void *lvp, int wide)
{
    int8_t *l8 = lvp;
    int16_t *l16 = lvp;
    size_t i = lo;
    if (i < hi && (i & 1)) {   /* odd head: the high half of its pair */
        int l = F(level)(x[i], sc, s,
                         (uint32_t)(lbs_rng_u64(key, i >> 1) >> 32));
        if (wide) l16[i] = (int16_t)l; else l8[i] = (int8_t)l;
        i++;
    }
    size_t p0 = i >> 1, p1 = hi >> 1;   /* whole pairs [2 p0, 2 p1) */
    if (wide) {
#pragma omp simd
        for (size_t p = p0; p < p1; p++) {
            uint64_t r = lbs_rng_u64(key, p);
            l16[2 * p] = (int16_t)F(level)(x[2 * p], sc, s, (uint32_t)r);
            l16[2 * p + 1] = (int16_t)F(level)(x[2 * p + 1], sc, s,
                                               (uint32_t)(r >> 32));
        }
    } else {
#pragma omp simd
        for (size_t p = p0; p < p1; p++) {
            uint64_t r = lbs_rng_u64(key, p);
            l8[2 * p] = (int8_t)F(level)(x[2 * p], sc, s, (uint32_t)r);
            l8[2 * p + 1] = (int8_t)F(level)(x[2 * p + 1], sc, s,
                                             (uint32_t)(r >> 32));
        }
    }
    i = 2 * p1 > i ? 2 * p1 : i;
    if (i < hi) {   /* even tail: the low half */
        int l = F(level)(x[i], sc, s, (uint32_t)lbs_rng_u64(key, i >> 1));
        if (wide) l16[i] = (int16_t)l; else l8[i] = (int8_t)l;
    }
}

static void F(gather)(float *restrict p, const float *restrict x,
                      const uint32_t *restrict idx, size_t m)
{
#pragma omp simd
    for (size_t j = 0; j < m; j++)
        p[j] = x[idx[j]];
}

static void F(scatter_add)(float *restrict out, const uint32_t *restrict idx,
                           const float *restrict p, float a, size_t m)
{
    /* indices are distinct (a mask): no conflicts between lanes */
#pragma omp simd
    for (size_t j = 0; j < m; j++)
        out[idx[j]] += a * p[j];
}

static inline uint32_t F(mag)(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u & 0x7fffffffu;
}

static size_t F(scan_ge)(const float *x, size_t lo, size_t hi, uint32_t t,
                         uint32_t *gi, float *gv, size_t room)
{
    size_t o = 0, i = lo;
    /* Hits are rare (about k): most blocks cost loads, ands, compares and
     * one mask test.  Magnitude bits are < 2^31: a signed compare orders
     * them, and a >= t  <=>  a > t - 1 (t = 0 gives -1: all pass). */
#if defined(__AVX512F__)
    const __m512i am = _mm512_set1_epi32(0x7fffffff),
                  tv = _mm512_set1_epi32((int32_t)t - 1);
#define HIT(k) _mm512_cmpgt_epi32_mask(_mm512_and_si512( \
        _mm512_loadu_si512((const void *)(x + i + 16 * (k))), am), tv)
    for (; i + 64 <= hi; i += 64) {
        if (!(HIT(0) | HIT(1) | HIT(2) | HIT(3)))
            continue;
        for (size_t j = i; j < i + 64; j++)
            if (F(mag)(x[j]) >= t) {
                if (o < room) {
                    gi[o] = (uint32_t)j;
                    gv[o] = x[j];
                }
                o++;
            }
    }
#undef HIT
#elif defined(__AVX2__)
    const __m256i am = _mm256_set1_epi32(0x7fffffff),
                  tv = _mm256_set1_epi32((int32_t)t - 1);
#define HIT(k) _mm256_cmpgt_epi32(_mm256_and_si256(_mm256_loadu_si256( \
        (const __m256i *)(x + i + 8 * (k))), am), tv)
    for (; i + 32 <= hi; i += 32) {
        __m256i h = _mm256_or_si256(_mm256_or_si256(HIT(0), HIT(1)),
                                    _mm256_or_si256(HIT(2), HIT(3)));
        if (_mm256_testz_si256(h, h))
            continue;
        for (size_t j = i; j < i + 32; j++)
            if (F(mag)(x[j]) >= t) {
                if (o < room) {
                    gi[o] = (uint32_t)j;
                    gv[o] = x[j];
                }
                o++;
            }
    }
#undef HIT
#elif defined(__SSE2__)
    const __m128i am = _mm_set1_epi32(0x7fffffff),
                  tv = _mm_set1_epi32((int32_t)t - 1);
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
                    gi[o] = (uint32_t)j;
                    gv[o] = x[j];
                }
                o++;
            }
    }
#undef HIT
#endif
    for (; i < hi; i++)
        if (F(mag)(x[i]) >= t) {
            if (o < room) {
                gi[o] = (uint32_t)i;
                gv[o] = x[i];
            }
            o++;
        }
    return o;
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

static void F(lamb_chunks)(const struct lbs_lamb_coef *k, const float *g,
                           float *m, float *v, const float *w, float *u,
                           size_t n, size_t c0, size_t c1, double *pw,
                           double *pu)
{
    for (size_t c = c0; c < c1; c++) {
        size_t lo = lbs_chunk_lo(n, c), hi = lbs_chunk_lo(n, c + 1);
        pw[c] = pu[c] = 0;
        F(lamb)(k, g + lo, m + lo, v + lo, w + lo, u + lo, hi - lo, &pw[c],
                &pu[c]);
    }
}

static void F(slamb_split_chunks)(const struct lbs_slamb_coef *k,
                                  const float *m, const float *v,
                                  const float *w, const uint32_t *c,
                                  const uint8_t *q, unsigned cur, float *u,
                                  size_t n, size_t c0, size_t c1,
                                  double (*part)[4])
{
    for (size_t j = c0; j < c1; j++) {
        size_t lo = lbs_chunk_lo(n, j), hi = lbs_chunk_lo(n, j + 1);
        part[j][0] = part[j][1] = part[j][2] = part[j][3] = 0;
        F(slamb_split)(k, m + lo, v + lo, w + lo, c ? c + lo : NULL,
                       q ? q + lo : NULL, cur, u + lo, hi - lo, part[j]);
    }
}

/* ---- decentralized optimizers (gossip.h, dmsgd.c, decentlam.c) ---- */

/* The mix sum_k w[k] src[k][e] in double, ascending k from 0, into a
 * block in L1: one sweep per source vectorises (a loop over k inside the
 * loop over e does not), and each element adds the same terms in the same
 * order as lbs_gossip_mix_at.  Every source is read before x is written,
 * so x may be one of them. */
#define MIX_BLOCK 512
static inline void F(mix_block)(const float *const *src, const double *w,
                                int ns, size_t b, size_t len, double *acc)
{
#pragma omp simd
    for (size_t j = 0; j < len; j++)
        acc[j] = 0;
    for (int k = 0; k < ns; k++) {
        const float *restrict s = src[k] + b;
        const double wk = w[k];
#pragma omp simd
        for (size_t j = 0; j < len; j++)
            acc[j] += wk * (double)s[j];
    }
}

static double F(gossip_mix)(const float *const *src, const double *w, int ns,
                            float *x, size_t lo, size_t hi)
{
    double acc[MIX_BLOCK], sum = 0;
    for (size_t b = lo; b < hi; b += MIX_BLOCK) {
        size_t len = hi - b < MIX_BLOCK ? hi - b : MIX_BLOCK;
        F(mix_block)(src, w, ns, b, len, acc);
#pragma omp simd reduction(+ : sum)
        for (size_t j = 0; j < len; j++) {
            float xj = (float)acc[j];
            x[b + j] = xj;
            sum += xj;
        }
    }
    return sum;
}

static void F(decentlam_z)(const struct lbs_decentlam_coef *k,
                           const float *restrict g, const float *restrict x,
                           float *restrict z, size_t n)
{
    const float lr = k->lr, wd = k->wd;
#pragma omp simd
    for (size_t e = 0; e < n; e++)
        z[e] = x[e] - lr * (g[e] + wd * x[e]);
}

static double F(decentlam_update)(const struct lbs_decentlam_coef *k,
                                  const float *const *src, const double *w,
                                  int ns, const float *g, float *m, float *x,
                                  size_t lo, size_t hi)
{
    const double inv = k->inv, ws = k->wself;
    const float lr = k->lr, wd = k->wd, mu = k->mu;
    double sum = 0;
    if (!src) {   /* alone: z, its mix ws z and the update in one pass */
#pragma omp simd reduction(+ : sum)
        for (size_t e = lo; e < hi; e++) {
            float xe = x[e];
            float z = xe - lr * (g[e] + wd * xe);
            double mix = 0;
            mix += ws * (double)z;
            float gt = (float)(((double)xe - mix) * inv);
            float mi = mu * m[e] + gt;
            m[e] = mi;
            sum += mi;
            x[e] = xe - lr * mi;
        }
        return sum;
    }
    double acc[MIX_BLOCK];
    for (size_t b = lo; b < hi; b += MIX_BLOCK) {
        size_t len = hi - b < MIX_BLOCK ? hi - b : MIX_BLOCK;
        F(mix_block)(src, w, ns, b, len, acc);
        float *restrict xb = x + b, *restrict mb = m + b;
#pragma omp simd reduction(+ : sum)
        for (size_t j = 0; j < len; j++) {
            float gt = (float)(((double)xb[j] - acc[j]) * inv);
            float mi = mu * mb[j] + gt;
            mb[j] = mi;
            sum += mi;
            xb[j] -= lr * mi;
        }
    }
    return sum;
}

/* ---- 1-bit LAMB's compressed phase (onebit_lamb.c) ---- */

static void F(onebit_fill)(const struct lbs_onebit_coef *k,
                           const float *restrict g, const float *restrict m,
                           float *restrict x, size_t n)
{
    const float b1 = k->k.b1, c1 = k->k.c1, sc = k->sc;
#pragma omp simd
    for (size_t j = 0; j < n; j++)
        x[j] = (b1 * m[j] + c1 * g[j]) * sc;
}

static double F(onebit_feed)(float *restrict x, const float *restrict e,
                             size_t n)
{
    double sum = 0;
    for (size_t b = 0; b < n; b += LBS_NORM_BLOCK) {
        size_t end = b + LBS_NORM_BLOCK < n ? b + LBS_NORM_BLOCK : n;
        float f = 0;
#pragma omp simd reduction(+ : f)
        for (size_t j = b; j < end; j++) {
            float xj = x[j] + e[j];
            x[j] = xj;
            f += xj * xj;
        }
        sum += f;
    }
    return sum;
}

static void F(onebit_keep_pack)(const float *restrict x, float *restrict e,
                                float s, uint8_t *restrict bits, size_t n)
{
#pragma omp simd
    for (size_t b = 0; b < n / 8; b++) {
        unsigned v = 0;
        for (unsigned t = 0; t < 8; t++) {
            float xj = x[8 * b + t];
            int p = xj >= 0.0f;
            v |= (unsigned)p << t;
            e[8 * b + t] = xj - (p ? s : -s);
        }
        bits[b] = (uint8_t)v;
    }
}

static inline float F(unsign)(const uint8_t *bits, size_t j, float s)
{
    return (bits[j >> 3] >> (j & 7) & 1u) ? s : -s;
}

static void F(onebit_server)(const uint8_t *rbits, size_t cb, size_t P,
                             const float *wsc, float invP, float *y,
                             size_t j0, size_t j1)
{
    float acc[MIX_BLOCK];
    for (size_t b = j0; b < j1; b += MIX_BLOCK) {
        size_t len = j1 - b < MIX_BLOCK ? j1 - b : MIX_BLOCK;
#pragma omp simd
        for (size_t j = 0; j < len; j++)
            acc[j] = 0;
        for (size_t q = 0; q < P; q++) {
            const uint8_t *bq = rbits + q * cb;
            const float s = wsc[q] * invP;
#pragma omp simd
            for (size_t j = 0; j < len; j++)
                acc[j] += F(unsign)(bq, b + j, s);
        }
        memcpy(y + b, acc, len * sizeof *acc);
    }
}

static void F(onebit_unpack)(const uint8_t *bits, size_t j0, float s,
                             float *x, size_t n)
{
    size_t j = 0;
    for (; j < n && ((j0 + j) & 7); j++)
        x[j] = F(unsign)(bits, j0 + j, s);
    const uint8_t *bb = bits + ((j0 + j) >> 3);
    size_t nb = (n - j) / 8;
    float *xb = x + j;
#pragma omp simd
    for (size_t b = 0; b < nb; b++)
        for (unsigned t = 0; t < 8; t++)
            xb[8 * b + t] = (bb[b] >> t & 1u) ? s : -s;
    for (j += 8 * nb; j < n; j++)
        x[j] = F(unsign)(bits, j0 + j, s);
}

/* One chunk of the update pass: blocks of LBS_NORM_BLOCK from lo, float
 * partials, double across blocks (onebit_lamb.c's fresh_range). */
static void F(onebit_fresh)(const struct lbs_onebit_coef *c, const float *x,
                            const float *g, float *m, const float *v,
                            float *vf, const float *w, float *u, size_t lo,
                            size_t hi, double p[2], float *fmax)
{
    const float b1 = c->k.b1, c1 = c->k.c1, b2 = c->k.b2, c2 = c->k.c2,
                ibc1 = c->k.ibc1, ibc2 = c->k.ibc2, eps = c->k.eps,
                wd = c->k.wd, ibc2r = c->ibc2r, sc = c->sc;
    const float ic1 = 1.0f / c1;
    float fm = 0;
    /* x from the buffer, (g) the fill computed in place, or decoded; a
     * loop each, so that none reads a NULL array */
#define FRESH(XI)                                                           \
    for (size_t i = b; i < e; i++) {                                        \
        float mo = m[i];                                                    \
        float xi = (XI);                                                    \
        float mn = xi / sc;                                                 \
        float gr = (mn - b1 * mo) * ic1;                                    \
        float f = b2 * vf[i] + c2 * gr * gr;                                \
        vf[i] = f;                                                          \
        m[i] = mn;                                                          \
        float d = sqrtf(v[i] * ibc2) + eps;                                 \
        float q = d / (sqrtf(f * ibc2r) + eps);                             \
        fm = q > fm ? q : fm;                                               \
        float pi = (mn * ibc1) / d;                                         \
        float ui = pi + wd * w[i];                                          \
        u[i] = ui;                                                          \
        fp += pi * pi;                                                      \
        fu += ui * ui;                                                      \
    }
    for (size_t b = lo; b < hi; b += LBS_NORM_BLOCK) {
        size_t e = b + LBS_NORM_BLOCK < hi ? b + LBS_NORM_BLOCK : hi;
        float fp = 0, fu = 0;
        if (g) {
#pragma omp simd reduction(+ : fp, fu) reduction(max : fm)
            FRESH((b1 * mo + c1 * g[i]) * sc)
        } else if (x) {
#pragma omp simd reduction(+ : fp, fu) reduction(max : fm)
            FRESH(x[i])
        } else {   /* decode the block into L1 first, split at ranks */
            float xb[LBS_NORM_BLOCK];
            for (size_t j = c->off + b, end = c->off + e; j < end;) {
                size_t r = j / c->chunk, stop = (r + 1) * c->chunk;
                stop = stop < end ? stop : end;
                F(onebit_unpack)(c->bits, j, c->ssc[r],
                                 xb + (j - c->off - b), stop - j);
                j = stop;
            }
#pragma omp simd reduction(+ : fp, fu) reduction(max : fm)
            FRESH(xb[i - b])
        }
        p[0] += fp;
        p[1] += fu;
    }
#undef FRESH
    *fmax = fm;
}

static void F(onebit_fresh_chunks)(const struct lbs_onebit_coef *k,
                                   const float *x, const float *g, float *m,
                                   const float *v, float *vf, const float *w,
                                   float *u, size_t n, size_t c0, size_t c1,
                                   double (*part)[2], float *fm)
{
    for (size_t c = c0; c < c1; c++) {
        size_t lo = lbs_chunk_lo(n, c), hi = lbs_chunk_lo(n, c + 1);
        part[c][0] = part[c][1] = 0;
        F(onebit_fresh)(k, x, g, m, v, vf, w, u, lo, hi, part[c], &fm[c]);
    }
}

const struct lbs_kern F(lbs_kern) = {
    .sumsq_chunks = F(sumsq_chunks),
    .lamb_chunks = F(lamb_chunks),
    .slamb_split_chunks = F(slamb_split_chunks),
    .name = STR(KERN_SFX),
    .sumsq = F(sumsq),
    .lamb = F(lamb),
    .axpy = F(axpy),
    .adamw = F(adamw),
    .momentum = F(momentum),
    .slamb_moments = F(slamb_moments),
    .slamb_split = F(slamb_split),
    .slamb_update = F(slamb_update),
    .slamb_update_q = F(slamb_update_q),
    .sign_pack = F(sign_pack),
    .qsgd_levels = F(qsgd_levels),
    .gather = F(gather),
    .scatter_add = F(scatter_add),
    .scan_ge = F(scan_ge),
    .gossip_mix = F(gossip_mix),
    .decentlam_z = F(decentlam_z),
    .decentlam_update = F(decentlam_update),
    .onebit_fill = F(onebit_fill),
    .onebit_feed = F(onebit_feed),
    .onebit_keep_pack = F(onebit_keep_pack),
    .onebit_server = F(onebit_server),
    .onebit_unpack = F(onebit_unpack),
    .onebit_fresh_chunks = F(onebit_fresh_chunks),
};
