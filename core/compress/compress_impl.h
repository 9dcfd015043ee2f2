/* compress_impl.h - what a compressor file implements (internal to core).
 *
 * One file per compressor fills one struct lbs_compress_ops and adds one
 * line to registry.c.  The driver (compress.c) parses the spec against
 * ops->params plus the common keys (ef), owns the error-feedback decorator
 * (ef.c) and the exchange over a comm; a compressor file only turns floats
 * into a payload and back.
 */
#ifndef LBS_COMPRESS_IMPL_H
#define LBS_COMPRESS_IMPL_H

#include <stdint.h>
#include <string.h>

#include "lbscale/compress.h"
#include "lbscale/mem.h"
#include "lbscale/param.h"
#include "par.h"

/* Loops shorter than this run on the calling thread: a fork/join costs
 * more than the work, and layers (biases, LayerNorm) are often tiny
 * (par.h: why the compressors' floor differs from the optimizers'). */
#define LBS_PAR_MIN LBS_PAR_MIN_COMPRESS

/* Where a call happens: the masks and random draws depend on it. */
struct lbs_cctx {
    int layer;
    long step;
    int rank;
};

/* Device memory traffic of compress and decompress, bytes per gradient
 * element, from the passes the compressor's file states; w is the
 * payload's bytes per element (lbs_compress_traffic).  comp + comp_w w
 * to compress; decompressing reads dec_once once plus, per payload
 * decoded (one when the payloads were summed, P when gathered), dec_part
 * + dec_w w.  known = 0: no memory model (PowerSGD's matmuls). */
struct lbs_kfam;

struct lbs_cmp_traffic {
    double comp, comp_w, dec_once, dec_part, dec_w;
    int known;
};

struct lbs_compress_ops {
    const char *name;
    const char *summary;                  /* one line for --help */
    const struct lbs_param_spec *params;  /* {NULL}-terminated */
    size_t cfg_size;                      /* a struct of doubles */
    enum lbs_coll coll;
    /* LBS_COLL_ALLREDUCE: the element type the payload is summed in
     * (payload bytes / its size elements); unset = LBS_FLOAT32. */
    enum lbs_dtype dtype;
    struct lbs_cmp_traffic traffic;       /* for the simulator */
    int ef_ok;                            /* 0: ef=1 is refused */
    const char *ef_why;                   /* ...and why, for the message */
    /* Optional: cross-key checks of the parsed config (thresh: lower <= 1
     * <= upper) that need no state, so lbs_compressor_check answers what
     * lbs_compressor_new would.  Called right after parsing, before init. */
    int (*check)(const void *cfg, struct lbs_err *err);
    int (*init)(struct lbs_compressor *c, struct lbs_err *err);
    void (*fini)(struct lbs_compressor *c);
    /* Forget per-layer warm state (optional). */
    void (*reset)(struct lbs_compressor *c);
    /* Exact payload bytes, or 0 when they depend on the values. */
    size_t (*wire_bytes)(struct lbs_compressor *c, size_t n,
                         const struct lbs_cctx *ctx);
    size_t (*max_bytes)(const struct lbs_compressor *c, size_t n);
    int (*compress)(struct lbs_compressor *c, const float *x, size_t n,
                    const struct lbs_cctx *ctx, void *payload, size_t *bytes,
                    struct lbs_err *err);
    /* out += alpha * D(payload).  Linear in the payload's values, which
     * is what lets allreduce compressors decode a summed payload. */
    int (*decompress_add)(struct lbs_compressor *c, const void *payload,
                          size_t bytes, size_t n, const struct lbs_cctx *ctx,
                          float alpha, float *out, struct lbs_err *err);
    /* Optional: the whole exchange (PowerSGD's two allreduces): out = the
     * mean over ranks of the approximation of x.  x and out may alias. */
    int (*exchange)(struct lbs_compressor *c, struct lbs_comm *comm,
                    float *x, float *out, size_t n,
                    const struct lbs_cctx *ctx, struct lbs_err *err);
    /* Optional: this compressor's own invariant of one round trip, the
     * way nccl-tests keeps each collective's data check beside it
     * (lbs_compress_wrong, lbscale/compress.h).  NULL: no invariant
     * beyond the driver's generic ones. */
    long (*wrong)(const struct lbs_compressor *c,
                  struct lbs_compress_check *ck);
    /* Optional: the bytes one CPU compress call moves (lbs_compress_cpu_bytes)
     * when that is not its 4n input, i.e. when it reads only part of it. */
    double (*cpu_bytes)(const struct lbs_compressor *c, size_t n);
    /* Optional: the sgemm calls and flop model (lbs_compress_flops) */
    int (*flops)(const struct lbs_compressor *c, size_t n,
                 struct lbs_compress_flops *out);
    /* Optional GPU override (lbscale/compress.h: struct
     * lbs_compress_device); NULL = CPU only. */
    const struct lbs_compress_device *device;
    /* Optional: the compressor's own kernel family (core/kern/kfam.h),
     * the one tests/test_isa.c checks at every level, or NULL. */
    const struct lbs_kfam *kern;
};

/* Per-layer state keyed by layer index, grown on demand. */
struct lbs_cslots {
    void **p;
    size_t *n;
    size_t cap;
};

/* A grow-only scratch buffer (64-byte aligned). */
struct lbs_cbuf {
    void *p;
    size_t cap;
};

struct lbs_compressor {
    const struct lbs_compress_ops *ops;
    void *cfg;                  /* the compressor's own keys (owned) */
    double ef;                  /* common key */
    int rank;
    void *state;                /* owned by the compressor file */
    struct lbs_cslots resid;    /* ef residuals (float arrays) */
    struct lbs_cbuf payload, recv, tmp;
    size_t *sizes;              /* allgatherv counts/displs, 2*size */
    size_t sizes_cap;
    char params_str[1024];   /* the effective spec (lbs_params_format) */
};

/* ---- helpers (compress.c) ---- */

/* The layer's slot: *p NULL when absent.  -EINVAL when the layer exists
 * with another size or layer < 0. */
int lbs_cslot_get(struct lbs_cslots *s, int layer, size_t n, void **p,
                  struct lbs_err *err);
int lbs_cslot_put(struct lbs_cslots *s, int layer, size_t n, void *p,
                  struct lbs_err *err);
/* Free every slot with fn (NULL: free()) and empty the table. */
void lbs_cslots_clear(struct lbs_cslots *s, void (*fn)(void *));
/* At least bytes of scratch, or NULL. */
void *lbs_cbuf_get(struct lbs_cbuf *b, size_t bytes);
void lbs_cbuf_free(struct lbs_cbuf *b);

/* K = max(1, round(k n)), at most n: the count topk and thresh aim for. */
size_t lbs_topk_count(double k, size_t n);
/* k-th largest (1-based) of a[0, n), reordering a: a three-way quickselect
 * with pivots from the counter generator (topk.c; thresh.c uses it on its
 * sample). */
uint32_t lbs_kth_largest_u32(uint32_t *a, size_t n, size_t k);
/* p[j] = x[idx[j]] and out[idx[j]] += a p[j] for j < m, over OpenMP
 * threads above LBS_PAR_MIN, with the dispatched kernels (core/kern). */
void lbs_cmp_gather(float *p, const float *x, const uint32_t *idx, size_t m);
void lbs_cmp_scatter_add(float *out, const uint32_t *idx, const float *p,
                         float a, size_t m);
/* Parallel zero fill and out[i] += alpha * x[i]. */
void lbs_cmp_zero(float *out, size_t n);
/* The ops of fp16.c and bf16.c, one implementation for both: a cast to
 * the 2-byte float c->ops->dtype names (LBS_FLOAT16 or LBS_BFLOAT16), 2 n
 * bytes, over OpenMP threads: payload = round(x), out += alpha * payload
 * (lbscale/half.h does the conversions). */
size_t lbs_cmp_half_bytes(struct lbs_compressor *c, size_t n,
                          const struct lbs_cctx *ctx);
size_t lbs_cmp_half_max(const struct lbs_compressor *c, size_t n);
int lbs_cmp_half_compress(struct lbs_compressor *c, const float *x,
                          size_t n, const struct lbs_cctx *ctx,
                          void *payload, size_t *bytes, struct lbs_err *err);
int lbs_cmp_half_decompress_add(struct lbs_compressor *c,
                                const void *payload, size_t bytes, size_t n,
                                const struct lbs_cctx *ctx, float alpha,
                                float *out, struct lbs_err *err);
/* Invariant of a round-to-nearest cast (fp16.c, bf16.c): the count of
 * elements with |out - x| > 2^ulp_exp |x| + tiny (tiny: half the format's
 * smallest subnormal, for values that underflow). */
long lbs_cmp_half_wrong(const struct lbs_compress_check *ck, int ulp_exp,
                        double tiny);
/* An ops table's keys when it has none of its own (the driver adds ef). */
extern const struct lbs_param_spec lbs_cmp_no_params[];
/* The fields fp16.c and bf16.c share in their ops tables: no keys, an
 * allreduce of the 2-byte values in their own dtype, the lbs_cmp_half_
 * ops and their memory traffic (lbs_compress_traffic: x read once,
 * halves written; decoding the summed halves updates every element). */
#define LBS_CMP_HALF_OPS                                               \
    .params = lbs_cmp_no_params, .cfg_size = 0,                        \
    .coll = LBS_COLL_ALLREDUCE,                                        \
    .traffic = {.comp = 4, .comp_w = 1, .dec_once = 4,                 \
                .dec_part = 8, .dec_w = 1, .known = 1},                \
    .ef_ok = 0, .wire_bytes = lbs_cmp_half_bytes,                      \
    .max_bytes = lbs_cmp_half_max, .compress = lbs_cmp_half_compress,  \
    .decompress_add = lbs_cmp_half_decompress_add
/* Check a payload size, -EINVAL naming the compressor otherwise. */
int lbs_cmp_expect_bytes(const struct lbs_compressor *c, size_t got,
                         size_t want, struct lbs_err *err);

/* The sparse invariant shared by topk, thresh, randk and cyclick: every
 * out[i] is 0 or x[i]; with prefix, no dropped |x| exceeds the smallest
 * kept one.  Counts the offenders and sets ck->min_kept. */
long lbs_cmp_sparse_wrong(struct lbs_compress_check *ck, int prefix);

/* ---- exact top-k by radix select (topk.c), shared with thresh ---- */
struct lbs_topk_scratch {
    struct lbs_cbuf hist, gidx, gval, cand;   /* radix select */
    struct lbs_cbuf smp, pidx, pval;          /* sampled pre-filter */
};
/* Write the K largest |x| (ties: lowest indices first; NaN ranks above
 * inf) as ascending indices and their values.  K <= n < 2^32. */
int lbs_topk_select(const float *x, size_t n, size_t K, uint32_t *idx,
                    float *val, struct lbs_topk_scratch *s,
                    struct lbs_err *err);
void lbs_topk_scratch_free(struct lbs_topk_scratch *s);
/* |x|'s bits as an unsigned integer: ordered as |x| is (NaN above inf). */
static inline uint32_t lbs_mag(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u & 0x7fffffffu;
}
/* smp[j] = lbs_mag(x[lbs_rng_below(key, j, n)]) for j < m (n < 2^32): the
 * magnitudes at m random positions, for top-k's and threshold's sampled
 * thresholds. */
void lbs_sample_mags(const float *x, size_t n, uint64_t key, uint32_t *smp,
                     size_t m);
/* Write (i, x[i]) for every i in [lo, hi) with magnitude bits >= t, in
 * order, at most room of them; returns how many there are in all. */
size_t lbs_scan_ge(const float *x, size_t lo, size_t hi, uint32_t t,
                   uint32_t *gi, float *gv, size_t room);
/* Sparse (idx, val) payload helpers shared by topk and thresh. */
int lbs_sparse_decompress_add(const struct lbs_compressor *c,
                              const void *payload, size_t bytes, size_t n,
                              float alpha, float *out, struct lbs_err *err);

/* ---- error feedback (ef.c) ---- */
/* x = g + e for the layer's residual; *x points at e (now holding x). */
int lbs_ef_begin(struct lbs_compressor *c, const float *g, size_t n,
                 int layer, float **x, struct lbs_err *err);
/* e -= D(payload) */
int lbs_ef_end(struct lbs_compressor *c, float *e, const void *payload,
               size_t bytes, size_t n, const struct lbs_cctx *ctx,
               struct lbs_err *err);

#endif
