/* onebit_lamb_tmpl.c - 1-bit LAMB's compressed phase (onebit_lamb.c,
 * lamb_kernel.h: struct lbs_onebit_kern), one table per level
 * (core/kern/kfam.h).  tests/test_isa.c also holds each level to the
 * scalar loops these replaced. */
#include "kern_tmpl.h"
#include "lamb_kernel.h"

/* ---- 1-bit LAMB's compressed phase (onebit_lamb.c) ---- */

/* Sign bits: element j is bit j % 8 of byte j / 8, 1 for x >= 0 (a NaN
 * packs as 0).  The decoders read 32 at a time as a little-endian word,
 * so that a vector compare, a mask blend or a variable shift does the
 * work of 32 bit extractions (a per-element extraction vectorises as a
 * gather and ran the server at 0.2 elements/ns). */
static inline uint32_t F(bits32)(const uint8_t *b)
{
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
           (uint32_t)b[3] << 24;
}

static inline float F(unsign)(const uint8_t *bits, size_t j, float s)
{
    return (bits[j >> 3] >> (j & 7) & 1u) ? s : -s;
}

/* d = bit t of w ? s : -s;  x[t] = d, or x[t] += d with add; t < 32 */
static inline void F(signs32)(uint32_t w, float s, float *restrict x,
                              int add)
{
#if defined(__AVX512F__)
    const __m512 ps = _mm512_set1_ps(s), ns = _mm512_set1_ps(-s);
    for (int h = 0; h < 2; h++) {
        __m512 d = _mm512_mask_blend_ps((__mmask16)(w >> 16 * h), ns, ps);
        if (add)
            d = _mm512_add_ps(_mm512_loadu_ps(x + 16 * h), d);
        _mm512_storeu_ps(x + 16 * h, d);
    }
#else
    if (add) {
#pragma omp simd
        for (unsigned t = 0; t < 32; t++)
            x[t] += (w >> t & 1u) ? s : -s;
    } else {
#pragma omp simd
        for (unsigned t = 0; t < 32; t++)
            x[t] = (w >> t & 1u) ? s : -s;
    }
#endif
}

/* signs32 over bits j0 + j, j < n: single bits up to a byte boundary,
 * then whole words, whole bytes, single bits */
static inline void F(signs)(const uint8_t *bits, size_t j0, float s,
                            float *restrict x, size_t n, int add)
{
    size_t j = 0;
    for (; j < n && ((j0 + j) & 7); j++)
        x[j] = add ? x[j] + F(unsign)(bits, j0 + j, s)
                   : F(unsign)(bits, j0 + j, s);
    for (; j + 32 <= n; j += 32)
        F(signs32)(F(bits32)(bits + ((j0 + j) >> 3)), s, x + j, add);
    for (; j + 8 <= n; j += 8) {
        const unsigned w = bits[(j0 + j) >> 3];
        float *restrict y = x + j;
        if (add) {
#pragma omp simd
            for (unsigned t = 0; t < 8; t++)
                y[t] += (w >> t & 1u) ? s : -s;
        } else {
#pragma omp simd
            for (unsigned t = 0; t < 8; t++)
                y[t] = (w >> t & 1u) ? s : -s;
        }
    }
    for (; j < n; j++)
        x[j] = add ? x[j] + F(unsign)(bits, j0 + j, s)
                   : F(unsign)(bits, j0 + j, s);
}

/* bits (bit 1: x >= 0) of bytes [b0, b1) of x */
static void F(onebit_pack)(const float *x, uint8_t *bits, size_t b0,
                           size_t b1)
{
    size_t b = b0;
#if defined(__AVX512F__)
    for (; b + 2 <= b1; b += 2) {   /* 16 signs: two bytes */
        __mmask16 k = _mm512_cmp_ps_mask(_mm512_loadu_ps(x + 8 * b),
                                         _mm512_setzero_ps(), _CMP_GE_OQ);
        memcpy(bits + b, &k, 2);
    }
#elif defined(__AVX2__)
    for (; b < b1; b++)   /* 8 signs: one byte */
        bits[b] = (uint8_t)_mm256_movemask_ps(_mm256_cmp_ps(
            _mm256_loadu_ps(x + 8 * b), _mm256_setzero_ps(), _CMP_GE_OQ));
#endif
    for (; b < b1; b++) {
        unsigned v = 0;
        for (unsigned t = 0; t < 8; t++)
            v |= (unsigned)(x[8 * b + t] >= 0.0f) << t;
        bits[b] = (uint8_t)v;
    }
}

/* The bytes of [j0, j1) packed so far end at *pj (a byte boundary): pack
 * on to the last whole byte before j1.  x is indexed like the bits. */
static inline void F(pack_upto)(const float *x, uint8_t *bits, size_t *pj,
                                size_t j1)
{
    size_t stop = j1 & ~(size_t)7;
    if (stop > *pj) {
        F(onebit_pack)(x, bits, *pj / 8, stop / 8);
        *pj = stop;
    }
}

/* the deferred half of the last step's error feedback: e - s sign(e) */
#define ONEBIT_KEEP(e, s) ((e) - ((e) >= 0.0f ? (s) : -(s)))

static double F(onebit_fill_feed)(const struct lbs_onebit_coef *k,
                                  const float *restrict g,
                                  const float *restrict m,
                                  float *restrict e, float s,
                                  uint8_t *bits, size_t j0, size_t n)
{
    const float b1 = k->k.b1, c1 = k->k.c1, sc = k->sc;
    size_t pj = (j0 + 7) & ~(size_t)7;
    double sum = 0;
    for (size_t b = 0; b < n; b += LBS_NORM_BLOCK) {
        size_t end = b + LBS_NORM_BLOCK < n ? b + LBS_NORM_BLOCK : n;
        float f = 0;
#pragma omp simd reduction(+ : f)
        for (size_t j = b; j < end; j++) {
            float xj = (b1 * m[j] + c1 * g[j]) * sc + ONEBIT_KEEP(e[j], s);
            e[j] = xj;
            f += xj * xj;
        }
        sum += f;
        F(pack_upto)(e - j0, bits, &pj, j0 + end);   /* from L1 */
    }
    return sum;
}

static double F(onebit_server)(const uint8_t *rbits, size_t cb, size_t P,
                               const float *wsc, float invP,
                               float *restrict e, float s, uint8_t *bits,
                               size_t j0, size_t j1)
{
    float acc[LBS_NORM_BLOCK];
    size_t pj = (j0 + 7) & ~(size_t)7;
    double sum = 0;
    for (size_t b = j0; b < j1; b += LBS_NORM_BLOCK) {
        size_t len = j1 - b < LBS_NORM_BLOCK ? j1 - b : LBS_NORM_BLOCK;
        /* from +0, ascending q: a sum that starts at -0 would differ */
#pragma omp simd
        for (size_t j = 0; j < len; j++)
            acc[j] = 0;
        for (size_t q = 0; q < P; q++)
            F(signs)(rbits + q * cb, b, wsc[q] * invP, acc, len, 1);
        float f = 0;
#pragma omp simd reduction(+ : f)
        for (size_t j = 0; j < len; j++) {
            float y = acc[j] + ONEBIT_KEEP(e[b + j], s);
            e[b + j] = y;
            f += y * y;
        }
        sum += f;
        F(pack_upto)(e, bits, &pj, b + len);
    }
    return sum;
}
#undef ONEBIT_KEEP

static void F(onebit_unpack)(const uint8_t *bits, size_t j0, float s,
                             float *x, size_t n)
{
    F(signs)(bits, j0, s, x, n, 0);
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
#define FRESH(MN)                                                           \
    for (size_t i = b; i < e; i++) {                                        \
        float mo = m[i];                                                    \
        float mn = (MN);                                                    \
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
            FRESH((b1 * mo + c1 * g[i]) * sc / sc)
        } else if (x) {
#pragma omp simd reduction(+ : fp, fu) reduction(max : fm)
            FRESH(x[i] / sc)
        } else {   /* decode the block into L1 first, split at ranks;
                      (+-s)/sc is +-(s/sc) exactly: no divide per element */
            float xb[LBS_NORM_BLOCK];
            for (size_t j = c->off + b, end = c->off + e; j < end;) {
                size_t r = j / c->chunk, stop = (r + 1) * c->chunk;
                stop = stop < end ? stop : end;
                F(onebit_unpack)(c->bits, j, c->ssc[r] / sc,
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

const struct lbs_onebit_kern F(lbs_onebit_kern) = {
    .onebit_fill_feed = F(onebit_fill_feed),
    .onebit_pack = F(onebit_pack),
    .onebit_server = F(onebit_server),
    .onebit_unpack = F(onebit_unpack),
    .onebit_fresh_chunks = F(onebit_fresh_chunks),
};

#ifdef KERN_REF
/* Each kernel over ranges that start and end off byte and vector
 * boundaries; the update pass in its three forms (buffer, g, decoded). */
static void check(const void *t, struct lbs_kcheck *r)
{
    const struct lbs_onebit_kern *K = t;
    enum { N = 10007, N8 = N / 8 * 8, P = 3, CB = N8 / 8 / P };
    struct lbs_onebit_coef k = {
        .k = {.b1 = 0.9f, .b2 = 0.999f, .c1 = 0.1f, .c2 = 0.001f,
              .ibc1 = 1.5f, .ibc2 = 3.3f, .eps = 1e-6f, .wd = 0.01f},
        .ibc2r = 2.1f, .sc = 1.7f};
    const float *g = lbs_kcheck_f32(r, N, 2, 0),
                *m0 = lbs_kcheck_f32(r, N, 0.1f, 0),
                *v = lbs_kcheck_f32(r, N, 0.01f, 1),
                *vf0 = lbs_kcheck_f32(r, N, 0.01f, 1),
                *w = lbs_kcheck_f32(r, N, 1, 0);
    float *e = lbs_kcheck_f32(r, N, 0.05f, 0);
    uint8_t *bits = lbs_kcheck_zalloc(r, N8 / 8 + 8);
    const size_t cut[4] = {0, 3001, 6000, N8};
    double s = 0;
    for (int i = 0; i < 3; i++)
        LBS_KCALL(r, "onebit_fill_feed", cut[i + 1] - cut[i],
                  s += K->onebit_fill_feed(&k, g + cut[i], m0 + cut[i],
                                           e + cut[i], 0.037f, bits, cut[i],
                                           cut[i + 1] - cut[i]));
    LBS_KCALL(r, "onebit_pack", 8, K->onebit_pack(e, bits, 375, 376));
    lbs_kcheck_bits(r, "onebit fill e", e, N8 * sizeof *e);
    lbs_kcheck_bits(r, "onebit fill bits", bits, N8 / 8);
    lbs_kcheck_sum(r, "onebit fill ||e||^2", s, LBS_KBOUND_NORM);

    const float wsc[P] = {0.5f, 0.0f, 2.25f};
    float *es = lbs_kcheck_f32(r, 8 * CB, 0.3f, 0);
    uint8_t *cbits = lbs_kcheck_zalloc(r, CB);
    double y0, y1;
    LBS_KCALL(r, "onebit_server", 333,
              y0 = K->onebit_server(bits, CB, P, wsc, 1.0f / 3, es, 0.41f,
                                    cbits, 0, 333));
    LBS_KCALL(r, "onebit_server", 8 * CB - 333,
              y1 = K->onebit_server(bits, CB, P, wsc, 1.0f / 3, es, 0.41f,
                                    cbits, 333, 8 * CB));
    lbs_kcheck_bits(r, "onebit server e", es, 8 * CB * sizeof *es);
    lbs_kcheck_bits(r, "onebit server bits", cbits, CB);
    lbs_kcheck_sum(r, "onebit server ||e||^2", y0, LBS_KBOUND_NORM);
    lbs_kcheck_sum(r, "onebit server ||e||^2", y1, LBS_KBOUND_NORM);

    float *d = lbs_kcheck_zalloc(r, N8 * sizeof *d);
    LBS_KCALL(r, "onebit_unpack", N8 - 18,
              K->onebit_unpack(bits, 13, 0.75f, d + 13, N8 - 18));
    lbs_kcheck_bits(r, "onebit unpack", d, N8 * sizeof *d);

    float ssc[8];
    for (int i = 0; i < 8; i++)
        ssc[i] = 0.01f * (float)(i + 1);
    for (int form = 0; form < 3; form++) {
        static const char *const name[3] = {
            "onebit_fresh (buffer)", "onebit_fresh (g)",
            "onebit_fresh (decoded)"};
        struct lbs_onebit_coef kf = k;
        if (form == 2)
            kf.bits = bits, kf.ssc = ssc, kf.chunk = 3001, kf.off = 5;
        float *m = lbs_kcheck_dup(r, m0, N), *vf = lbs_kcheck_dup(r, vf0, N),
              *u = lbs_kcheck_zalloc(r, N * sizeof *u);
        double(*part)[2] = lbs_kcheck_zalloc(r, LBS_CHUNKS * sizeof *part);
        float *fm = lbs_kcheck_zalloc(r, LBS_CHUNKS * sizeof *fm);
        for (int half = 0; half < 2; half++) {
            size_t c0 = half ? 101 : 0, c1 = half ? LBS_CHUNKS : 101;
            LBS_KCALL(r, name[form], lbs_chunk_lo(N, c1) - lbs_chunk_lo(N, c0),
                      K->onebit_fresh_chunks(&kf, form == 0 ? e : NULL,
                                             form == 1 ? g : NULL, m, v, vf,
                                             w, u, N, c0, c1, part, fm));
        }
        lbs_kcheck_bits(r, "onebit_fresh m", m, N * sizeof *m);
        lbs_kcheck_bits(r, "onebit_fresh v_fresh", vf, N * sizeof *vf);
        lbs_kcheck_bits(r, "onebit_fresh u", u, N * sizeof *u);
        lbs_kcheck_bits(r, "onebit_fresh max", fm, LBS_CHUNKS * sizeof *fm);
        for (size_t c = 0; c < LBS_CHUNKS; c++) {
            lbs_kcheck_sum(r, "onebit_fresh ||p||^2", part[c][0],
                           LBS_KBOUND_NORM);
            lbs_kcheck_sum(r, "onebit_fresh ||u||^2", part[c][1],
                           LBS_KBOUND_NORM);
        }
    }
}
LBS_KFAM(lbs_onebit, check);
#endif
