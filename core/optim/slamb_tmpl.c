/* slamb_tmpl.c - SLAMB's passes (slamb.c, slamb_kern.h), one table per
 * level (core/kern/kfam.h): the moments, the direction with its split
 * norms, the blended update, and the chunk-id layers' fused passes with
 * their compaction of the synced elements.  tests/test_isa.c also holds
 * the chunk-id passes and compact/expand to the scalar rules they state. */
#include "kern_tmpl.h"
#include "slamb_kern.h"

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

/* Counters: the step of each element from its staleness (synced: c = 0) */
static inline float F(stale_step1)(const struct lbs_slamb_blend *b,
                                   const float *spow, size_t ntab,
                                   uint32_t ci)
{
    return ci == 0 ? b->step_synced
                   : lbs_slamb_stale_step(b, spow, ntab, ci);
}

/* The same 16 lanes at a time, 8 at AVX2 (returns where it stopped):
 * the synced test per element is a branch the predictor cannot learn (k
 * of the elements, at random), and it was most of the counter form's
 * time.  The same operations in the same order, so the same bits; a
 * block with a count at or past ntab goes to the scalar rule (powf). */
#if defined(__AVX512F__)
static size_t F(upd_vec)(const struct lbs_slamb_blend *b, const float *spow,
                         size_t ntab, const float *u, const uint32_t *c,
                         float *w, size_t n)
{
    const __m512 lr = _mm512_set1_ps(b->lr), lrm = _mm512_set1_ps(b->lr_min),
                 pmax = _mm512_set1_ps(b->phi_max),
                 pmin = _mm512_set1_ps(b->phi_min),
                 lo = _mm512_set1_ps(b->cmin), hi = _mm512_set1_ps(b->cmax),
                 ss = _mm512_set1_ps(b->step_synced),
                 one = _mm512_set1_ps(1.0f);
    const __m512i nt = _mm512_set1_epi32((int)(ntab < INT32_MAX ? ntab
                                                                : INT32_MAX));
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512i ci = _mm512_loadu_si512((const void *)(c + i));
        if (_mm512_cmpge_epu32_mask(ci, nt)) {
            for (size_t j = i; j < i + 16; j++)
                w[j] -= F(stale_step1)(b, spow, ntab, c[j]) * u[j];
            continue;
        }
        __m512 s = _mm512_i32gather_ps(ci, spow, 4), r = _mm512_sub_ps(one, s);
        __m512 lre = _mm512_add_ps(_mm512_mul_ps(s, lr), _mm512_mul_ps(r, lrm));
        __m512 phi = _mm512_add_ps(_mm512_mul_ps(s, pmax),
                                   _mm512_mul_ps(r, pmin));
        if (b->clamp) {   /* lbs_slamb_stale_step's rule: below lo
                             first, both tests on phi as computed, NaN
                             kept */
            __mmask16 up = _mm512_cmp_ps_mask(phi, hi, _CMP_GT_OQ),
                      dn = _mm512_cmp_ps_mask(phi, lo, _CMP_LT_OQ);
            phi = _mm512_mask_blend_ps(dn, _mm512_mask_blend_ps(up, phi, hi),
                                       lo);
        }
        __m512 step = _mm512_mask_blend_ps(
            _mm512_cmpeq_epi32_mask(ci, _mm512_setzero_si512()),
            _mm512_mul_ps(lre, phi), ss);
        _mm512_storeu_ps(w + i, _mm512_sub_ps(_mm512_loadu_ps(w + i),
                                              _mm512_mul_ps(step,
                                                  _mm512_loadu_ps(u + i))));
    }
    return i;
}
#elif defined(__AVX2__)
static size_t F(upd_vec)(const struct lbs_slamb_blend *b, const float *spow,
                         size_t ntab, const float *u, const uint32_t *c,
                         float *w, size_t n)
{
    const __m256 lr = _mm256_set1_ps(b->lr), lrm = _mm256_set1_ps(b->lr_min),
                 pmax = _mm256_set1_ps(b->phi_max),
                 pmin = _mm256_set1_ps(b->phi_min),
                 lo = _mm256_set1_ps(b->cmin), hi = _mm256_set1_ps(b->cmax),
                 ss = _mm256_set1_ps(b->step_synced),
                 one = _mm256_set1_ps(1.0f);
    const __m256i nt = _mm256_set1_epi32((int)(ntab < INT32_MAX ? ntab
                                                                : INT32_MAX));
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256i ci = _mm256_loadu_si256((const __m256i *)(c + i));
        /* ci >= ntab, unsigned: max(ci, ntab) == ci */
        if (_mm256_movemask_epi8(
                _mm256_cmpeq_epi32(_mm256_max_epu32(ci, nt), ci))) {
            for (size_t j = i; j < i + 8; j++)
                w[j] -= F(stale_step1)(b, spow, ntab, c[j]) * u[j];
            continue;
        }
        __m256 s = _mm256_i32gather_ps(spow, ci, 4), r = _mm256_sub_ps(one, s);
        __m256 lre = _mm256_add_ps(_mm256_mul_ps(s, lr), _mm256_mul_ps(r, lrm));
        __m256 phi = _mm256_add_ps(_mm256_mul_ps(s, pmax),
                                   _mm256_mul_ps(r, pmin));
        if (b->clamp) {   /* as the AVX-512 form */
            __m256 up = _mm256_cmp_ps(phi, hi, _CMP_GT_OQ),
                   dn = _mm256_cmp_ps(phi, lo, _CMP_LT_OQ);
            phi = _mm256_blendv_ps(_mm256_blendv_ps(phi, hi, up), lo, dn);
        }
        __m256 step = _mm256_blendv_ps(
            _mm256_mul_ps(lre, phi), ss,
            _mm256_castsi256_ps(
                _mm256_cmpeq_epi32(ci, _mm256_setzero_si256())));
        _mm256_storeu_ps(w + i, _mm256_sub_ps(_mm256_loadu_ps(w + i),
                                              _mm256_mul_ps(step,
                                                  _mm256_loadu_ps(u + i))));
    }
    return i;
}
#else
static size_t F(upd_vec)(const struct lbs_slamb_blend *b, const float *spow,
                         size_t ntab, const float *u, const uint32_t *c,
                         float *w, size_t n)
{
    (void)b, (void)spow, (void)ntab, (void)u, (void)c, (void)w, (void)n;
    return 0;
}
#endif

static void F(slamb_update)(const struct lbs_slamb_blend *b,
                            const float *spow, size_t ntab, const float *u,
                            const uint32_t *c, float *w, size_t n)
{
    for (size_t i = F(upd_vec)(b, spow, ntab, u, c, w, n); i < n; i++)
        w[i] -= F(stale_step1)(b, spow, ntab, c[i]) * u[i];
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
 * the lanes' steps; above that a gather from the table (1 KiB, in L1).
 * AVX2 gathers here; its qupd_vec permutes up to 16 chunks. */
#if defined(__AVX512F__)
static inline __m512 F(qtab16)(const float *tab, unsigned nq, __m512 t0,
                               __m512 t1, __m512i qi)
{
    return nq <= 32 ? _mm512_permutex2var_ps(t0, qi, t1)
                    : _mm512_i32gather_ps(qi, tab, 4);
}
static size_t F(qt_vec)(const float *tab, unsigned nq, const uint8_t *q,
                        const float *u, float *w, size_t n)
{
    const __m512 t0 = _mm512_loadu_ps(tab), t1 = _mm512_loadu_ps(tab + 16);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512i qi = _mm512_cvtepu8_epi32(
            _mm_loadu_si128((const __m128i *)(q + i)));
        __m512 t = F(qtab16)(tab, nq, t0, t1, qi);
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
         * form of vcompressps is microcoded on some cores).  c <= 4 in 98%
         * of blocks at k = 0.1: then a 16-byte store, which splits a cache
         * line 3 times in 16, where a 64-byte one at a 4-byte offset
         * always does (two store slots each on Zen 4) */
        unsigned c = (unsigned)__builtin_popcount(kc);
        __m512 xm = _mm512_maskz_compress_ps(kc, mi),
               xv = _mm512_maskz_compress_ps(kc, vi),
               xw = _mm512_maskz_compress_ps(kc, wi);
        if (c <= 4 && cm + 4 <= end) {
            _mm_storeu_ps(cm, _mm512_castps512_ps128(xm));
            _mm_storeu_ps(cv, _mm512_castps512_ps128(xv));
            _mm_storeu_ps(cw, _mm512_castps512_ps128(xw));
        } else {
            __mmask16 first = cm + 16 <= end ? (__mmask16)0xffff
                                             : (__mmask16)((1u << c) - 1);
            _mm512_mask_storeu_ps(cm, first, xm);
            _mm512_mask_storeu_ps(cv, first, xv);
            _mm512_mask_storeu_ps(cw, first, xw);
        }
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
        __m512 t = F(qtab16)(tab, nq, t0, t1, _mm512_cvtepu8_epi32(qb));
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

const struct lbs_slamb_kern F(lbs_slamb_kern) = {
    .slamb_moments = F(slamb_moments),
    .slamb_split = F(slamb_split),
    .slamb_update = F(slamb_update),
    .slamb_split_chunks = F(slamb_split_chunks),
    .slamb_q1_chunks = F(slamb_q1_chunks),
    .slamb_qfix_chunks = F(slamb_qfix_chunks),
    .slamb_qupd_chunks = F(slamb_qupd_chunks),
    .compact_eq = F(compact_eq),
    .expand_eq = F(expand_eq),
};

#ifdef KERN_REF
enum { N = 10007 };
static const struct lbs_slamb_coef coef = {
    .b1 = 0.9f, .b2 = 0.999f, .c1 = 0.1f, .c2 = 0.001f, .ibc1 = 3.1f,
    .ibc2 = 7.7f, .eps = 1e-6f, .wd = 0.01f};

/* The counter form: moments (saturating counters), both split modes, the
 * chunked split in two calls, the blended update. */
static void check_counters(const struct lbs_slamb_kern *K,
                           struct lbs_kcheck *r)
{
    const float *g = lbs_kcheck_f32(r, N, 2, 0),
                *w0 = lbs_kcheck_f32(r, N, 1, 0);
    float *m = lbs_kcheck_f32(r, N, 0.1f, 0),
          *v = lbs_kcheck_f32(r, N, 0.01f, 1);
    uint32_t *c = lbs_kcheck_zalloc(r, N * sizeof *c);
    for (size_t i = 0; i < N; i++)
        c[i] = (uint32_t)(i % 7 == 0 ? 0 : i % 5000);
    c[5] = UINT32_MAX;   /* saturates */
    LBS_KCALL(r, "slamb_moments", N,
              K->slamb_moments(&coef, g, m, v, c, N));
    lbs_kcheck_bits(r, "slamb m", m, N * sizeof *m);
    lbs_kcheck_bits(r, "slamb v", v, N * sizeof *v);
    lbs_kcheck_bits(r, "slamb counters", c, N * sizeof *c);
    float *u = NULL;
    for (int mode = 0; mode < 2; mode++) {
        u = lbs_kcheck_zalloc(r, N * sizeof *u);
        double p[4] = {0};
        LBS_KCALL(r, mode ? "slamb_split (counters)" : "slamb_split", N,
                  K->slamb_split(&coef, m, v, w0, mode ? c : NULL, u, N, p));
        lbs_kcheck_bits(r, "slamb u", u, N * sizeof *u);
        for (int j = 0; j < (mode ? 4 : 2); j++)
            lbs_kcheck_sum(r, "slamb split norm", p[j], LBS_KBOUND_NORM);
        double(*part)[4] = lbs_kcheck_zalloc(r, LBS_CHUNKS * sizeof *part);
        float *uc = lbs_kcheck_zalloc(r, N * sizeof *uc);
        for (int h = 0; h < 2; h++)
            LBS_KCALL(r, "slamb_split_chunks", N / 2,
                      K->slamb_split_chunks(&coef, m, v, w0,
                                            mode ? c : NULL, uc, N,
                                            h * LBS_CHUNKS / 2,
                                            (h + 1) * LBS_CHUNKS / 2, part));
        lbs_kcheck_bits(r, "slamb_split_chunks u", uc, N * sizeof *uc);
        for (size_t j = 0; j < LBS_CHUNKS; j++)
            for (int i = 0; i < 4; i++)
                lbs_kcheck_sum(r, "slamb_split_chunks norm", part[j][i],
                               LBS_KBOUND_NORM);
    }
    float *spow = lbs_kcheck_zalloc(r, 4096 * sizeof *spow);
    for (int j = 0; j < 4096; j++)
        spow[j] = (float)pow(0.99, j);
    const struct lbs_slamb_blend b = {
        .step_synced = 0.02f, .lr = 0.01f, .lr_min = 0.005f,
        .phi_max = 1.3f, .phi_min = 0.7f, .cmin = 0.01f, .cmax = 1000,
        .beta3 = 0.99f, .clamp = 1};
    float *w = lbs_kcheck_dup(r, w0, N);
    LBS_KCALL(r, "slamb_update", N,
              K->slamb_update(&b, spow, 4096, u, c, w, N));
    lbs_kcheck_bits(r, "slamb update w", w, N * sizeof *w);
    /* bounds inside [phi_min, phi_max]: both clamps taken; then crossed
     * (cmin > cmax), where the rule's order decides */
    const float bounds[2][2] = {{0.9f, 1.1f}, {1.1f, 0.9f}};
    for (int j = 0; j < 2; j++) {
        struct lbs_slamb_blend bc = b;
        bc.cmin = bounds[j][0];
        bc.cmax = bounds[j][1];
        float *wc = lbs_kcheck_dup(r, w0, N);
        const char *what = j ? "slamb_update (crossed)"
                             : "slamb_update (clamped)";
        LBS_KCALL(r, what, N, K->slamb_update(&bc, spow, 4096, u, c, wc, N));
        lbs_kcheck_bits(r, what, wc, N * sizeof *wc);
    }
}

/* The chunk-id form: pass 1 (with last step's averages), the fix-up and
 * the update, each in two calls; compact_eq and expand_eq. */
static void check_chunk_ids(const struct lbs_slamb_kern *K,
                            struct lbs_kcheck *r)
{
    const unsigned C = 7, cur = 4, prev = 3;
    const float *g = lbs_kcheck_f32(r, N, 2, 0),
                *pm0 = lbs_kcheck_f32(r, N, 0.3f, 0);
    float *m = lbs_kcheck_f32(r, N, 0.1f, 0),
          *v = lbs_kcheck_f32(r, N, 0.01f, 1), *w = lbs_kcheck_f32(r, N, 1, 0);
    uint8_t *q = lbs_kcheck_zalloc(r, N);
    uint32_t *off = lbs_kcheck_zalloc(r, (LBS_CHUNKS + 1) * sizeof *off),
             *poff = lbs_kcheck_zalloc(r, (LBS_CHUNKS + 1) * sizeof *poff);
    for (size_t c = 0; c < LBS_CHUNKS; c++) {
        off[c + 1] = off[c];
        poff[c + 1] = poff[c];
        for (size_t i = lbs_chunk_lo(N, c); i < lbs_chunk_lo(N, c + 1); i++) {
            q[i] = (uint8_t)((i * 5 + i / 17) % C);
            off[c + 1] += q[i] == cur;
            poff[c + 1] += q[i] == prev;
        }
    }
    float *tab = lbs_kcheck_zalloc(r, 256 * sizeof *tab);
    for (unsigned j = 0; j < C; j++)
        tab[j] = 0.001f * (float)(j + 1);
    float *u = lbs_kcheck_zalloc(r, N * sizeof *u),
          *pm = lbs_kcheck_zalloc(r, N * sizeof *pm),
          *cm = lbs_kcheck_zalloc(r, N * sizeof *cm),
          *cv = lbs_kcheck_zalloc(r, N * sizeof *cv),
          *cw = lbs_kcheck_zalloc(r, N * sizeof *cw);
    const struct lbs_slamb_qbuf B = {
        .q = q, .cur = cur, .prev = prev, .off = off, .poff = poff,
        .cm = cm, .cv = cv, .cw = cw, .pm = pm0};
    double(*part)[4] = lbs_kcheck_zalloc(r, LBS_CHUNKS * sizeof *part);
    for (int h = 0; h < 2; h++)
        LBS_KCALL(r, "slamb_q1_chunks", N / 2,
                  K->slamb_q1_chunks(&coef, g, m, v, w, u, &B, N,
                                     h * LBS_CHUNKS / 2,
                                     (h + 1) * LBS_CHUNKS / 2, part));
    size_t cnt = off[LBS_CHUNKS];
    lbs_kcheck_bits(r, "slamb_q1_chunks m", m, N * sizeof *m);
    lbs_kcheck_bits(r, "slamb_q1_chunks v", v, N * sizeof *v);
    lbs_kcheck_bits(r, "slamb_q1_chunks u", u, N * sizeof *u);
    lbs_kcheck_bits(r, "slamb_q1_chunks cm", cm, cnt * sizeof *cm);
    lbs_kcheck_bits(r, "slamb_q1_chunks cv", cv, cnt * sizeof *cv);
    lbs_kcheck_bits(r, "slamb_q1_chunks cw", cw, cnt * sizeof *cw);
    for (int h = 0; h < 2; h++)
        LBS_KCALL(r, "slamb_qfix_chunks", cnt / 2,
                  K->slamb_qfix_chunks(&coef, &B, 0.25f, pm,
                                       h * LBS_CHUNKS / 2,
                                       (h + 1) * LBS_CHUNKS / 2, part));
    lbs_kcheck_bits(r, "slamb_qfix_chunks pm", pm, cnt * sizeof *pm);
    lbs_kcheck_bits(r, "slamb_qfix_chunks u_S", cv, cnt * sizeof *cv);
    for (size_t c = 0; c < LBS_CHUNKS; c++)
        for (int j = 0; j < 4; j++)
            lbs_kcheck_sum(r, "slamb chunk-id norm", part[c][j],
                           LBS_KBOUND_NORM);
    for (int h = 0; h < 2; h++)
        LBS_KCALL(r, "slamb_qupd_chunks", N / 2,
                  K->slamb_qupd_chunks(tab, C, &B, u, w, N,
                                       h * LBS_CHUNKS / 2,
                                       (h + 1) * LBS_CHUNKS / 2));
    lbs_kcheck_bits(r, "slamb_qupd_chunks w", w, N * sizeof *w);
    float *out = lbs_kcheck_zalloc(r, N * sizeof *out);
    size_t n;
    LBS_KCALL(r, "compact_eq", N, n = K->compact_eq(w, q, 2, out, N));
    lbs_kcheck_sum(r, "compact_eq count", (double)n, 0);
    lbs_kcheck_bits(r, "compact_eq", out, n * sizeof *out);
    LBS_KCALL(r, "expand_eq", N, n = K->expand_eq(m, q, 2, out, 0.5f, N));
    lbs_kcheck_sum(r, "expand_eq count", (double)n, 0);
    lbs_kcheck_bits(r, "expand_eq", m, N * sizeof *m);
}

static void check(const void *t, struct lbs_kcheck *r)
{
    check_counters(t, r);
    check_chunk_ids(t, r);
}
LBS_KFAM(lbs_slamb, check);
#endif
