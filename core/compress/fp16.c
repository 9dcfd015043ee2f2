/* fp16.c - IEEE binary16, round to nearest even; 2 bytes per element.
 *
 * Values beyond the half range become +-inf and tiny ones half subnormals
 * or 0, exactly as a cast would (loss scaling is the caller's business).
 * The conversion uses F16C (vcvtps2ph / vcvtph2ps, 8 at a time) when the
 * CPU has it, checked once at run time because the build targets plain
 * x86-64; otherwise GCC's _Float16 (correctly rounded in libgcc), and
 * without _Float16 a bit-exact software routine (lbs_f32_to_f16_bits).
 *
 * Collective: allgather.  An fp16 allreduce (NCCL's ncclHalf, Horovod's
 * fp16 compression) would be cheaper at many ranks, but lbs_comm has no
 * half dtype and MPI no half sum, so every rank's halves are gathered
 * and summed in fp32 (exact accumulation, volume grows with the ranks).
 */
#include <omp.h>
#include <stdint.h>
#include <string.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#define HAVE_X86 1
#endif

#include "compress_impl.h"

static const struct lbs_param_spec fp16_params[] = {
    {NULL, 0, 0, 0, 0, 0, 0, NULL, NULL},
};

/* binary32 -> binary16 bits, round to nearest even, overflow to inf,
 * NaN stays NaN (quiet).  The portable path and the reference the tests
 * compare the hardware path against. */
uint16_t lbs_f32_to_f16_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a >= 0x7f800000u)                         /* inf or NaN */
        return sign | (a > 0x7f800000u ? 0x7e00u : 0x7c00u);
    if (a >= 0x477ff000u)                         /* rounds to >= 65520 */
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
    if (e == 31)
        u = sign | 0x7f800000u | (m << 13);
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
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static inline uint16_t to_half(float f)
{
#ifdef __FLT16_MAX__
    _Float16 h = (_Float16)f;
    uint16_t b;
    memcpy(&b, &h, 2);
    return b;
#else
    return lbs_f32_to_f16_bits(f);
#endif
}

static inline float from_half(uint16_t b)
{
#ifdef __FLT16_MAX__
    _Float16 h;
    memcpy(&h, &b, 2);
    return (float)h;
#else
    return lbs_f16_bits_to_f32(b);
#endif
}

#ifdef HAVE_X86
__attribute__((target("avx,f16c")))
static void enc_f16c(const float *x, uint16_t *h, size_t lo, size_t hi)
{
    size_t i = lo;
    for (; i + 8 <= hi; i += 8) {
        __m128i r = _mm256_cvtps_ph(_mm256_loadu_ps(x + i),
                                    _MM_FROUND_TO_NEAREST_INT);
        _mm_storeu_si128((__m128i *)(h + i), r);
    }
    for (; i < hi; i++)
        h[i] = to_half(x[i]);
}

__attribute__((target("avx,f16c")))
static void dec_f16c(const uint16_t *h, float a, float *out, size_t lo,
                     size_t hi)
{
    size_t i = lo;
    __m256 va = _mm256_set1_ps(a);
    for (; i + 8 <= hi; i += 8) {
        __m256 v = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(h + i)));
        __m256 o = _mm256_loadu_ps(out + i);
        _mm256_storeu_ps(out + i, _mm256_add_ps(o, _mm256_mul_ps(va, v)));
    }
    for (; i < hi; i++)
        out[i] += a * from_half(h[i]);
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
static void enc_f16c(const float *x, uint16_t *h, size_t lo, size_t hi)
{ (void)x; (void)h; (void)lo; (void)hi; }
static void dec_f16c(const uint16_t *h, float a, float *out, size_t lo,
                     size_t hi)
{ (void)h; (void)a; (void)out; (void)lo; (void)hi; }
#endif

static size_t fp16_bytes(struct lbs_compressor *c, size_t n,
                         const struct lbs_cctx *ctx)
{
    (void)c; (void)ctx;
    return 2 * n;
}

static size_t fp16_max(const struct lbs_compressor *c, size_t n)
{
    (void)c;
    return 2 * n;
}

/* Static blocks per thread, so the vector body sees long runs. */
#define BLOCK_RANGE(n, lo, hi)                                           \
    size_t lo = (n) * (size_t)omp_get_thread_num() /                     \
                (size_t)omp_get_num_threads();                           \
    size_t hi = (n) * (size_t)(omp_get_thread_num() + 1) /               \
                (size_t)omp_get_num_threads()

static int fp16_compress(struct lbs_compressor *c, const float *x, size_t n,
                         const struct lbs_cctx *ctx, void *payload,
                         size_t *bytes, struct lbs_err *err)
{
    (void)c; (void)ctx; (void)err;
    uint16_t *h = payload;
    int hw = have_f16c();
#pragma omp parallel if (n > LBS_PAR_MIN)
    {
        BLOCK_RANGE(n, lo, hi);
        if (hw)
            enc_f16c(x, h, lo, hi);
        else
            for (size_t i = lo; i < hi; i++)
                h[i] = to_half(x[i]);
    }
    *bytes = 2 * n;
    return 0;
}

static int fp16_decompress_add(struct lbs_compressor *c, const void *payload,
                               size_t bytes, size_t n,
                               const struct lbs_cctx *ctx, float alpha,
                               float *out, struct lbs_err *err)
{
    (void)ctx;
    int rc = lbs_cmp_expect_bytes(c, bytes, 2 * n, err);
    if (rc)
        return rc;
    const uint16_t *h = payload;
    int hw = have_f16c();
#pragma omp parallel if (n > LBS_PAR_MIN)
    {
        BLOCK_RANGE(n, lo, hi);
        if (hw)
            dec_f16c(h, alpha, out, lo, hi);
        else
            for (size_t i = lo; i < hi; i++)
                out[i] += alpha * from_half(h[i]);
    }
    return 0;
}

const struct lbs_compress_ops lbs_cmp_fp16 = {
    .name = "fp16",
    .summary = "IEEE half precision, round to nearest even (2 B/element)",
    .params = fp16_params,
    .cfg_size = 0,
    .coll = LBS_COLL_ALLGATHER,
    .ef_ok = 0,
    .ef_why = "fp16's error is round-to-nearest (relative <= 2^-11, "
              "unbiased); a residual would double the state for nothing",
    .wire_bytes = fp16_bytes,
    .max_bytes = fp16_max,
    .compress = fp16_compress,
    .decompress_add = fp16_decompress_add,
};
