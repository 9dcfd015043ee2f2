/* half.c - fp32 <-> binary16 / bfloat16 (see lbscale/half.h).
 *
 * Used by the fp16 and bf16 compressors, the record backend (its SUM of
 * identical ranks) and the mpi backend's half-precision reductions.  The
 * software routines are written on the bit patterns, so they behave the
 * same under any floating-point environment (no FTZ/DAZ surprises) and on
 * compilers without _Float16.
 */
#include <string.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#define HAVE_X86 1
#endif

#include "lbscale/half.h"

static inline uint32_t bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static inline float float_of(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

uint16_t lbs_f32_to_f16_bits(float f)
{
    uint32_t u = bits_of(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u)                          /* NaN: quiet, top payload */
        return sign | 0x7e00u | (uint16_t)((a >> 13) & 0x3ffu);
    if (a >= 0x477ff000u)                         /* rounds to >= 65520: inf */
        return sign | 0x7c00u;
    if (a < 0x33000000u)                          /* < 2^-25: to zero */
        return sign;
    uint32_t e = a >> 23;
    uint32_t m = (a & 0x7fffffu) | 0x800000u;     /* 24-bit significand */
    int shift;
    uint32_t base;
    if (e < 113) {                                /* half subnormal */
        shift = (int)(126 - e);                   /* 14..24 */
        base = 0;
    } else {
        shift = 13;
        base = (e - 112) << 10;
        m &= 0x7fffffu;
    }
    uint32_t q = m >> shift, rem = m & ((1u << shift) - 1);
    uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1)))
        q++;                                      /* may carry into exp */
    return sign | (uint16_t)(base + q);
}

float lbs_f16_bits_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 31,
             m = h & 0x3ffu, u;
    if (e == 31)   /* inf, or a NaN made quiet as vcvtph2ps makes it */
        u = sign | 0x7f800000u | (m ? 0x400000u : 0) | (m << 13);
    else if (e)
        u = sign | ((e + 112) << 23) | (m << 13);
    else if (!m)
        u = sign;
    else {                                        /* subnormal: normalise */
        int s = 0;
        while (!(m & 0x400u)) {
            m <<= 1;
            s++;
        }
        u = sign | ((uint32_t)(113 - s) << 23) | ((m & 0x3ffu) << 13);
    }
    return float_of(u);
}

/* Round the low 16 bits away, ties to even: adding 0x7fff plus the bit
 * that survives carries exactly when the dropped part is above half, or
 * half with an odd result.  The carry walks into the exponent where it
 * must (largest finite -> inf), and subnormals need nothing special.  No
 * 32-bit overflow: the largest non-NaN pattern is -inf, 0xff800000. */
static inline uint16_t bf16_round(uint32_t u)
{
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40u);     /* NaN: quiet, keep top */
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

uint16_t lbs_f32_to_bf16_bits(float f)
{
    return bf16_round(bits_of(f));
}

float lbs_bf16_bits_to_f32(uint16_t h)
{
    return float_of((uint32_t)h << 16);
}

/* ---- arrays ---- */

#ifdef HAVE_X86
__attribute__((target("avx,f16c")))
static void enc_f16c(const float *x, uint16_t *h, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i r = _mm256_cvtps_ph(_mm256_loadu_ps(x + i),
                                    _MM_FROUND_TO_NEAREST_INT);
        _mm_storeu_si128((__m128i *)(h + i), r);
    }
    for (; i < n; i++)
        h[i] = lbs_f32_to_f16_bits(x[i]);
}

__attribute__((target("avx,f16c")))
static void dec_f16c(const uint16_t *h, float *x, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i v = _mm_loadu_si128((const __m128i *)(h + i));
        _mm256_storeu_ps(x + i, _mm256_cvtph_ps(v));
    }
    for (; i < n; i++)
        x[i] = lbs_f16_bits_to_f32(h[i]);
}

/* AVX with the OS's support (the builtin checks both), and F16C from
 * CPUID leaf 1 (ECX bit 29): clang before 16 has no "f16c" name for
 * __builtin_cpu_supports, and the fuzz harnesses build with clang. */
static int have_f16c(void)
{
    static int v = -1;
    unsigned a, b, c, d;
    if (v < 0)
        v = __builtin_cpu_supports("avx") && __get_cpuid(1, &a, &b, &c, &d) &&
            (c >> 29 & 1);
    return v;
}
#else
static int have_f16c(void) { return 0; }
static void enc_f16c(const float *x, uint16_t *h, size_t n)
{ (void)x; (void)h; (void)n; }
static void dec_f16c(const uint16_t *h, float *x, size_t n)
{ (void)h; (void)x; (void)n; }
#endif

void lbs_f32_to_f16_array(const float *x, uint16_t *h, size_t n)
{
    if (have_f16c()) {
        enc_f16c(x, h, n);
        return;
    }
    for (size_t i = 0; i < n; i++)
        h[i] = lbs_f32_to_f16_bits(x[i]);
}

void lbs_f16_to_f32_array(const uint16_t *h, float *x, size_t n)
{
    if (have_f16c()) {
        dec_f16c(h, x, n);
        return;
    }
    for (size_t i = 0; i < n; i++)
        x[i] = lbs_f16_bits_to_f32(h[i]);
}

/* Branch-free, so the compiler vectorises it (SSE2 here; AVX2 when the
 * CPU has it).  Not AVX512-BF16's vcvtneps2bf16: it flushes subnormals
 * to zero. */
static inline void bf16_loop(const float *x, uint16_t *h, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t u = bits_of(x[i]);
        uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
        uint32_t q = (u >> 16) | 0x40u;
        h[i] = (uint16_t)((u & 0x7fffffffu) > 0x7f800000u ? q : r);
    }
}

#ifdef HAVE_X86
__attribute__((target("avx2")))
static void bf16_avx2(const float *x, uint16_t *h, size_t n)
{
    bf16_loop(x, h, n);
}
#endif

void lbs_f32_to_bf16_array(const float *x, uint16_t *h, size_t n)
{
#ifdef HAVE_X86
    if (__builtin_cpu_supports("avx2")) {
        bf16_avx2(x, h, n);
        return;
    }
#endif
    bf16_loop(x, h, n);
}

void lbs_bf16_to_f32_array(const uint16_t *h, float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] = float_of((uint32_t)h[i] << 16);
}
