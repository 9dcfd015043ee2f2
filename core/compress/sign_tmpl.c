/* sign_tmpl.c - the sign compressor's packing (sign.c, sign_kern.h), one
 * table per level (core/kern/kfam.h): movemask packing where the
 * compiler cannot find the idiom.  The bits are elementwise; the scale's
 * sum is float partials of up to 4096 terms (LBS_KBOUND_SIGN). */
#include "kern_tmpl.h"
#include "sign_kern.h"

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

const struct lbs_sign_kern F(lbs_sign_kern) = {F(sign_pack)};

#ifdef KERN_REF
/* Both scales over two ranges split at an odd byte, with signed zeros. */
static void check(const void *t, struct lbs_kcheck *r)
{
    const struct lbs_sign_kern *K = t;
    enum { N = 10007, NB = (N + 7) / 8 };
    float *x = lbs_kcheck_f32(r, N, 1, 0);
    x[100] = -0.0f;
    x[101] = 0.0f;
    for (int l2 = 0; l2 < 2; l2++) {
        uint8_t *bits = lbs_kcheck_zalloc(r, NB);
        double a, b;
        LBS_KCALL(r, "sign_pack", 8 * 601,
                  a = K->sign_pack(x, N, bits, 0, 601, l2));
        LBS_KCALL(r, "sign_pack", N - 8 * 601,
                  b = K->sign_pack(x, N, bits, 601, NB, l2));
        lbs_kcheck_bits(r, "sign bits", bits, NB);
        lbs_kcheck_sum(r, "sign scale sum", a + b, LBS_KBOUND_SIGN);
    }
}
LBS_KFAM(lbs_sign, check);
#endif
