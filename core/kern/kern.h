/* kern.h - the hot loops of the optimizers and compressors, one table per
 * instruction-set level, chosen once at start-up (internal to core).
 *
 * dav1d-style runtime dispatch: kern_tmpl.c is compiled three times, each
 * time into its own static library with its own flags (meson.build):
 *
 *   c       baseline x86-64 (SSE2): the portable reference
 *   avx2    -mavx2 -mfma -mbmi2 (256-bit vectors)
 *   avx512  -mavx512f -mavx512bw -mavx512vl -mavx512dq, 512-bit vectors
 *
 * and every compilation fills one struct lbs_kern.  isa.c picks the best
 * level the CPU has (__builtin_cpu_supports, which checks the OS enables
 * the vector state too) unless LBSCALE_ISA=c|avx2|avx512 asks for a lower
 * one; asking for a level the CPU lacks is refused (-ENOTSUP), never run.
 *
 * Every level is compiled with -ffp-contract=off -fno-math-errno, so an
 * elementwise result (m, v, u, w, payload values) is bit for bit the same
 * at every level: IEEE add, mul, div and sqrt are correctly rounded at any
 * vector width and no multiply-add is fused.  Sums (norms, NaN detectors)
 * are summed in another order at another vector width: tests/test_isa.c
 * states the bound.  The kernels are serial over the range they are given;
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

/* SLAMB's per-step coefficients (slamb.c). */
struct lbs_slamb_coef {
    float b1, b2, c1, c2, ibc1, ibc2, eps, wd;
};
struct lbs_slamb_blend {
    float step_synced;            /* lr * clamp(phi_max): s = 1 */
    float lr, lr_min, phi_max, phi_min, cmin, cmax, beta3;
    int clamp;                    /* clamp the blended phi to [cmin, cmax] */
};

/* SLAMB's chunk-id layer at one step (slamb.c): q holds each element's
 * chunk, chunk cur is synced; off (poff) is qoff's row for cur (prev):
 * where each parallel chunk's share starts in the compact values. */
struct lbs_slamb_qbuf {
    const uint8_t *q;
    unsigned cur, prev;
    const uint32_t *off, *poff;
    float *cm, *cv, *cw;          /* compact m, v (u_S after the fix-up),
                                     w of chunk cur */
    const float *pm;              /* averaged m of chunk prev from the
                                     last step, or NULL */
};

struct lbs_kern {
    const char *name;
    enum lbs_isa isa;             /* the families' tables: kfam.h */
    /* sum x^2 over [0, n): float partials over LBS_NORM_BLOCK blocks from
     * x (block boundaries relative to x), double across blocks */
    double (*sumsq)(const float *x, size_t n);
    /* w -= a u */
    void (*axpy)(float *w, const float *u, float a, size_t n);
    /* SLAMB: local moments (and c += 1, saturating, when c != NULL) */
    void (*slamb_moments)(const struct lbs_slamb_coef *k, const float *g,
                          float *m, float *v, uint32_t *c, size_t n);
    /* SLAMB: u = direction; p += {||w_S||^2, ||u_S||^2, ||w_~S||^2,
     * ||u_~S||^2} split by synced: c[i] == 0 (counters); c NULL: all
     * synced (p[2], p[3] stay).  Chunk-id layers: slamb_q1_chunks */
    void (*slamb_split)(const struct lbs_slamb_coef *k, const float *m,
                        const float *v, const float *w, const uint32_t *c,
                        float *u, size_t n, double p[4]);
    /* SLAMB: w -= lr_e phi_e u, s = beta3^c from spow[c] below ntab */
    void (*slamb_update)(const struct lbs_slamb_blend *b, const float *spow,
                         size_t ntab, const float *u, const uint32_t *c,
                         float *w, size_t n);
    /* sum of x^2 over [0, n) in an order fixed at every level: the same
     * double at each (QSGD's bucket norms) */
    double (*sumsq_fixed)(const float *x, size_t n);
    /* p[j] = x[idx[j]] and out[idx[j]] += a p[j] over j < m */
    void (*gather)(float *p, const float *x, const uint32_t *idx, size_t m);
    void (*scatter_add)(float *out, const uint32_t *idx, const float *p,
                        float a, size_t m);
    /* The chunked forms of sumsq and slamb_split: chunks [c0, c1)
     * of LBS_CHUNKS over a layer of n elements (optim_impl.h), one
     * partial per chunk - a call per thread per layer, not per chunk */
    void (*sumsq_chunks)(const float *x, size_t n, size_t c0, size_t c1,
                         double *part);
    void (*slamb_split_chunks)(const struct lbs_slamb_coef *k,
                               const float *m, const float *v,
                               const float *w, const uint32_t *c, float *u,
                               size_t n, size_t c0, size_t c1,
                               double (*part)[4]);
    /* SLAMB on chunk-id layers (slamb.c, struct lbs_slamb_qbuf), chunks
     * [c0, c1) of a layer of n elements.  Pass 1: m = pm where q == prev
     * (pm given), the moments, u (every element), part[c][2..3] += the
     * stale sums (q != cur), part[c][0..1] = 0, and m, v, w where q ==
     * cur appended to cm, cv, cw from off[c] on.  The fix-up, over the
     * compact values only: pm = cm inv, cv = u_S from pm, cv, cw, and
     * part[c][0..1] += ||w_S||^2, ||u_S||^2.  The update: w -= tab[q] u,
     * u_S taken from cv where q == cur (tab: 256 entries, q < nq) */
    void (*slamb_q1_chunks)(const struct lbs_slamb_coef *k, const float *g,
                            float *m, float *v, const float *w, float *u,
                            const struct lbs_slamb_qbuf *B, size_t n,
                            size_t c0, size_t c1, double (*part)[4]);
    void (*slamb_qfix_chunks)(const struct lbs_slamb_coef *k,
                              const struct lbs_slamb_qbuf *B, float inv,
                              float *pm, size_t c0, size_t c1,
                              double (*part)[4]);
    void (*slamb_qupd_chunks)(const float *tab, unsigned nq,
                              const struct lbs_slamb_qbuf *B, const float *u,
                              float *w, size_t n, size_t c0, size_t c1);
    /* out[o++] = x[i] for q[i] == qc, and x[i] = in[o++] inv for
     * q[i] == qc, over [0, n); both return o (the tests' handles, and
     * expand_eq lbs_slamb_momentum's) */
    size_t (*compact_eq)(const float *x, const uint8_t *q, uint8_t qc,
                         float *out, size_t n);
    size_t (*expand_eq)(float *x, const uint8_t *q, uint8_t qc,
                        const float *in, float inv, size_t n);
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
};

extern const struct lbs_kern lbs_kern_c, lbs_kern_avx2, lbs_kern_avx512;

/* Run body(c0, c1) over the chunks [0, LBS_CHUNKS): on the calling thread
 * below LBS_PAR_MIN elements, else one contiguous share per OpenMP thread
 * (as schedule(static) would cut them). */
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
