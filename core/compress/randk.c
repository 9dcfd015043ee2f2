/* randk.c - random-k from a shared seed: the Bernoulli(k) mask of
 * core/mask.c, keyed by (seed, step, layer), so every rank selects the same
 * coordinates, no index travels and the values are summed with allreduce.
 *
 * The count varies per step (Binomial(n, k)) but is the same on all ranks;
 * the payload is those values in index order (4 bytes each).  Values are
 * sent as they are (biased; pair with ef=1 or SLAMB-style local
 * compensation) or, with scale=1, multiplied by 1/k on decompression,
 * which makes D(C(x)) an unbiased estimate of x.
 * The mask of the last (layer, step, n) is kept, so wire_bytes, compress
 * and decompress of one step draw it once.
 */
#include <math.h>
#include <stdlib.h>

#include "compress_impl.h"
#include "lbscale/mask.h"

struct randk_cfg {
    double k, seed, scale;
};

#define K_(f) offsetof(struct randk_cfg, f)
static const struct lbs_param_spec randk_params[] = {
    {"k", LBS_P_REAL, 0.01, 0, 1, LBS_P_MIN_OPEN, K_(k),
     "density: each element kept with probability k", NULL},
    {"seed", LBS_P_INT, 1, 0, 4294967295.0, 0, K_(seed),
     "shared seed (all ranks must agree)", NULL},
    {"scale", LBS_P_BOOL, 0, 0, 1, 0, K_(scale),
     "decompress as x/k (unbiased) instead of x", NULL},
    {NULL, 0, 0, 0, 0, 0, 0, NULL, NULL},
};
#undef K_

struct randk_state {
    struct lbs_cbuf idx;
    int layer, valid;
    long step;
    size_t n, count;
};

/* The mask of (layer, step) for n elements, drawn at most once. */
static const uint32_t *mask(struct lbs_compressor *c, size_t n,
                            const struct lbs_cctx *ctx, size_t *count)
{
    const struct randk_cfg *k = c->cfg;
    struct randk_state *s = c->state;
    if (!(s->valid && s->layer == ctx->layer && s->step == ctx->step &&
          s->n == n)) {
        uint32_t *idx = lbs_cbuf_get(&s->idx, n * 4);
        if (!idx)
            return NULL;
        s->count = lbs_mask_bernoulli((uint64_t)k->seed, ctx->step,
                                      ctx->layer, n, k->k, idx);
        s->layer = ctx->layer;
        s->step = ctx->step;
        s->n = n;
        s->valid = 1;
    }
    *count = s->count;
    return s->idx.p;
}

static size_t randk_bytes(struct lbs_compressor *c, size_t n,
                          const struct lbs_cctx *ctx)
{
    size_t m = 0;
    return mask(c, n, ctx, &m) ? 4 * m : 0;
}

static size_t randk_max(const struct lbs_compressor *c, size_t n)
{
    (void)c;
    return 4 * n;   /* the mask may, however unlikely, hold everything */
}

static int randk_compress(struct lbs_compressor *c, const float *x, size_t n,
                          const struct lbs_cctx *ctx, void *payload,
                          size_t *bytes, struct lbs_err *err)
{
    size_t m;
    const uint32_t *idx = mask(c, n, ctx, &m);
    if (!idx)
        return lbs_err_set(err, -ENOMEM, "randk: out of memory for the mask");
    lbs_cmp_gather(payload, x, idx, m);
    *bytes = 4 * m;
    return 0;
}

static int randk_decompress_add(struct lbs_compressor *c, const void *payload,
                                size_t bytes, size_t n,
                                const struct lbs_cctx *ctx, float alpha,
                                float *out, struct lbs_err *err)
{
    const struct randk_cfg *k = c->cfg;
    size_t m;
    const uint32_t *idx = mask(c, n, ctx, &m);
    if (!idx)
        return lbs_err_set(err, -ENOMEM, "randk: out of memory for the mask");
    int rc = lbs_cmp_expect_bytes(c, bytes, 4 * m, err);
    if (rc)
        return rc;
    const float *p = payload;
    float a = k->scale ? alpha / (float)k->k : alpha;
    lbs_cmp_scatter_add(out, idx, p, a, m);
    return 0;
}

/* What a compress call moves on the CPU (lbs_compress_cpu_bytes): of x's
 * 64-byte lines (16 floats) it loads those holding a kept index, a share
 * 1 - (1 - k)^16 of them (k = 0.01: 15%); the mask's k n indices are
 * written and read back and the k n values written: 4n (1 - (1 - k)^16)
 * + 12 k n bytes (0.71 per element at k = 0.01 instead of the 4 of the
 * whole input).  The moving together of the threads' index blocks is
 * left out, so the model errs low.  The mask's draws cost arithmetic, not
 * bytes: random-k is bound by them, far below this model's memory time.
 * .traffic below is the simulator's GPU model, a different fact. */
static double randk_cpu_bytes(const struct lbs_compressor *c, size_t n)
{
    const struct randk_cfg *k = c->cfg;   /* k in (0, 1]: randk_params */
    return 4.0 * (double)n * (1.0 - pow(1.0 - k->k, 16.0)) +
           12.0 * k->k * (double)n;
}

static int randk_init(struct lbs_compressor *c, struct lbs_err *err)
{
    c->state = calloc(1, sizeof(struct randk_state));
    return c->state ? 0 : lbs_err_set(err, -ENOMEM, "out of memory");
}

static void randk_fini(struct lbs_compressor *c)
{
    struct randk_state *s = c->state;
    if (s)
        lbs_cbuf_free(&s->idx);
    free(s);
}

/* Invariant (lbs_compress_wrong): unscaled (scale=0), every element is
 * either dropped (0) or kept exactly; the mask is random, not a
 * magnitude prefix, so min_kept means nothing here and is set to 0. */
static long randk_wrong(const struct lbs_compressor *c,
                        struct lbs_compress_check *ck)
{
    const struct randk_cfg *k = c->cfg;
    long bad = k->scale == 0 ? lbs_cmp_sparse_wrong(ck, 0) : 0;
    ck->min_kept = 0;
    return bad;
}

/* The GPU kernel (core/cuda/compress.cu: the same mask from the counter
 * generator on the device) and the cases tests/gpu/check_compress.c
 * compares it with this file on: bit-identical. */
static const struct lbs_compress_device_check randk_gpu_checks[] = {
    {"randk:k=0.05", 0},
    {"randk:k=0.2,seed=7,scale=1", 0},
    {"randk:k=0.05,scale=1,ef=1", 1},
    {NULL, 0},
};
static void randk_gpu_hp(const void *cfg, struct lbs_compress_device_hp *hp)
{
    const struct randk_cfg *k = cfg;
    hp->k = k->k;
    hp->seed = k->seed;
    hp->scale = k->scale != 0;
}
static const struct lbs_compress_device randk_gpu = {
    .kernel = LBS_CKERNEL_RANDK,
    .exact = 1,
    .checks = randk_gpu_checks,
    .hparams = randk_gpu_hp,
};

const struct lbs_compress_ops lbs_cmp_randk = {
    .name = "randk",
    .summary = "random-k: shared-seed Bernoulli(k) mask, values only",
    .params = randk_params,
    .cfg_size = sizeof(struct randk_cfg),
    .coll = LBS_COLL_ALLREDUCE,
    /* memory traffic (lbs_compress_traffic): x read at the mask (every sector
     * at k >= 1/8), values written; decoding reads 4 B and updates 8 B per
     * kept value */
    .traffic = {.comp = 4, .comp_w = 1, .dec_once = 4,
                .dec_part = 0, .dec_w = 3, .known = 1},
    .ef_ok = 1,
    .init = randk_init,
    .fini = randk_fini,
    .wire_bytes = randk_bytes,
    .max_bytes = randk_max,
    .cpu_bytes = randk_cpu_bytes,
    .compress = randk_compress,
    .decompress_add = randk_decompress_add,
    .wrong = randk_wrong,
    .device = &randk_gpu,
};
