/* kern.h - the shared hot loops (sums of squares, the apply, gathers,
 * scans, the gossip mix, the Bernoulli mask), one table per
 * instruction-set level, chosen once at start-up (internal to core).
 * Each algorithm's own loops are a kernel family beside it (kfam.h),
 * compiled and chosen the same way; nothing here knows an algorithm.
 *
 * dav1d-style runtime dispatch: kern_tmpl.c and every family's template
 * are compiled three times, each time into its own static library with
 * its own flags (meson.build):
 *
 *   c       baseline x86-64 (SSE2): the portable reference
 *   avx2    -mavx2 -mfma -mbmi2 (256-bit vectors)
 *   avx512  -mavx512f -mavx512bw -mavx512vl -mavx512dq, 512-bit vectors
 *
 * and every compilation of kern_tmpl.c fills one struct lbs_kern; its
 * isa field indexes the families' tables.  isa.c picks the best
 * level the CPU has (__builtin_cpu_supports, which checks the OS enables
 * the vector state too) unless LBSCALE_ISA=c|avx2|avx512 asks for a lower
 * one; asking for a level the CPU lacks is refused (-ENOTSUP), never run.
 *
 * Every level is compiled with -ffp-contract=off -fno-math-errno, so an
 * elementwise result (m, v, u, w, payload values) is bit for bit the same
 * at every level: IEEE add, mul, div and sqrt are correctly rounded at any
 * vector width and no multiply-add is fused.  Sums (norms, NaN detectors)
 * are summed in another order at another vector width: kfam.h states the
 * bound tests/test_isa.c holds them to.  The kernels are serial over the range they are given;
 * the callers cut layers into chunks and own the OpenMP parallelism.
 * The bytes model of each optimizer and compressor stays in its own file.
 */
#ifndef LBS_KERN_H
#define LBS_KERN_H

#include <stddef.h>
#include <stdint.h>

#include <omp.h>

enum lbs_isa { LBS_ISA_C = 0, LBS_ISA_AVX2 = 1, LBS_ISA_AVX512 = 2,
               LBS_ISA_COUNT };

struct lbs_kern {
    const char *name;
    enum lbs_isa isa;             /* the families' tables: kfam.h */
    /* sum x^2 over [0, n): float partials over LBS_NORM_BLOCK blocks from
     * x (block boundaries relative to x), double across blocks */
    double (*sumsq)(const float *x, size_t n);
    /* w -= a u */
    void (*axpy)(float *w, const float *u, float a, size_t n);
    /* sum of x^2 over [0, n) in an order fixed at every level: the same
     * double at each (QSGD's bucket norms) */
    double (*sumsq_fixed)(const float *x, size_t n);
    /* p[j] = x[idx[j]] and out[idx[j]] += a p[j] over j < m */
    void (*gather)(float *p, const float *x, const uint32_t *idx, size_t m);
    void (*scatter_add)(float *out, const uint32_t *idx, const float *p,
                        float a, size_t m);
    /* The chunked form of sumsq: chunks [c0, c1)
     * of LBS_CHUNKS over a layer of n elements (chunks.h), one
     * partial per chunk - a call per thread per layer, not per chunk */
    void (*sumsq_chunks)(const float *x, size_t n, size_t c0, size_t c1,
                         double *part);
    /* Gossip mix (gossip.h) over [lo, hi) of full-layer arrays:
     * x[e] = sum_k w[k] src[k][e] (double, ascending k, from 0); x may
     * be one of src.  Returns the sum of the x written (NaN detector). */
    double (*gossip_mix)(const float *const *src, const double *w, int ns,
                         float *x, size_t lo, size_t hi);
    /* lbs_scan_ge (compress_impl.h) */
    size_t (*scan_ge)(const float *x, size_t lo, size_t hi, uint32_t t,
                      uint32_t *gi, float *gv, size_t room);
    /* scan_ge over a candidate list: the pairs (vi[j], v[j]) with
     * magnitude bits >= t, j in [lo, hi), stored at most room of them
     * (top-k's output pass) */
    size_t (*filter_ge)(const float *v, const uint32_t *vi, size_t lo,
                        size_t hi, uint32_t t, uint32_t *oi, float *ov,
                        size_t room);
    /* the Bernoulli mask's hits (lbs_rng_hit with key, thr) over
     * [lo, hi), ascending into out; returns how many */
    size_t (*mask_hits)(uint64_t key, uint64_t thr, size_t lo, size_t hi,
                        uint32_t *out);
    /* The cyclic mask's Fisher-Yates targets (mask.c): j[s] =
     * lbs_rng_below(key, i - 1 - s, i - s) for s < m, i <= 2^32 - 1 */
    void (*fy_draws)(uint64_t key, size_t i, size_t m, uint32_t *j);
};

extern const struct lbs_kern lbs_kern_c, lbs_kern_avx2, lbs_kern_avx512;

/* Run body(c0, c1) over the chunks [0, LBS_CHUNKS): on the calling thread
 * below LBS_PAR_MIN elements, else one contiguous share per OpenMP thread
 * (as schedule(static) would cut them).  Static on purpose: a layer's
 * passes give each thread the same share, so what one pass leaves in a
 * core's caches the next finds there.  Claiming chunks instead (a done
 * thread taking the other's) made LARS's step 1.16x slower in the
 * guest's high-bandwidth mode (results/studies/slamb-load-20261207). */
#define LBS_KERN_CHUNKED(n, body)                                           \
    do {                                                                    \
        if ((n) < LBS_PAR_MIN) {                                            \
            size_t c0 = 0, c1 = LBS_CHUNKS;                                 \
            body;                                                           \
        } else {                                                            \
            _Pragma("omp parallel")                                         \
            {                                                               \
                size_t T_ = (size_t)omp_get_num_threads(),                  \
                       t_ = (size_t)omp_get_thread_num();                   \
                size_t c0 = LBS_CHUNKS * t_ / T_,                           \
                       c1 = LBS_CHUNKS * (t_ + 1) / T_;                     \
                body;                                                       \
            }                                                               \
        }                                                                   \
    } while (0)

/* The table in use (selected on first use, see isa.c). */
extern const struct lbs_kern *lbs_kern_cur;
const struct lbs_kern *lbs_kern_init(void);
static inline const struct lbs_kern *lbs_kern(void)
{
    const struct lbs_kern *k = __atomic_load_n(&lbs_kern_cur,
                                               __ATOMIC_ACQUIRE);
    return k ? k : lbs_kern_init();
}
/* The table of one level, or NULL when the CPU lacks it. */
const struct lbs_kern *lbs_kern_of(enum lbs_isa isa);

#endif
