/* cyclick.c - cyclic random-k: per layer a fixed random permutation of
 * [0, n) (core/mask.c, keyed by seed and layer, identical on all ranks),
 * cut into C = ceil(1/k) chunks; step t sends chunk t mod C, so every
 * coordinate is sent exactly once every C steps.  Values only, summed with
 * allreduce.  With scale=1 decompression multiplies by C (each coordinate
 * is seen 1/C of the time).
 * The permutation is built on a layer's first use (linear time on the
 * OpenMP threads, core/mask.c) and kept: 4 bytes per element of state.
 */
#include <math.h>
#include <stdlib.h>

#include "compress_impl.h"
#include "lbscale/mask.h"

struct cyclick_cfg {
    double k, seed, scale;
};

#define K_(f) offsetof(struct cyclick_cfg, f)
static const struct lbs_param_spec cyclick_params[] = {
    {"k", LBS_P_REAL, 0.01, 0, 1, LBS_P_MIN_OPEN, K_(k),
     "density: chunks C = ceil(1/k)", NULL},
    {"seed", LBS_P_INT, 1, 0, 4294967295.0, 0, K_(seed),
     "shared seed (all ranks must agree)", NULL},
    {"scale", LBS_P_BOOL, 0, 0, 1, 0, K_(scale),
     "decompress as C x instead of x", NULL},
    {NULL, 0, 0, 0, 0, 0, 0, NULL, NULL},
};
#undef K_

struct cyclick_state {
    struct lbs_cslots masks;
};

static void free_mask(void *m)
{
    lbs_mask_cyclic_free(m);
}

static int chunk(struct lbs_compressor *c, size_t n,
                 const struct lbs_cctx *ctx, const uint32_t **idx,
                 size_t *count, size_t *chunks, struct lbs_err *err)
{
    const struct cyclick_cfg *k = c->cfg;
    struct cyclick_state *s = c->state;
    void *p;
    int rc = lbs_cslot_get(&s->masks, ctx->layer, n, &p, err);
    if (rc)
        return rc;
    if (!p) {
        struct lbs_mask_cyclic *m;
        rc = lbs_mask_cyclic_new((uint64_t)k->seed, ctx->layer, n, k->k, &m,
                                 err);
        if (rc)
            return rc;
        if ((rc = lbs_cslot_put(&s->masks, ctx->layer, n, m, err))) {
            lbs_mask_cyclic_free(m);
            return rc;
        }
        p = m;
    }
    lbs_mask_cyclic_get(p, ctx->step, idx, count);
    *chunks = lbs_mask_cyclic_chunks(p);
    return 0;
}

static size_t cyclick_bytes(struct lbs_compressor *c, size_t n,
                            const struct lbs_cctx *ctx)
{
    const uint32_t *idx;
    size_t m, C;
    return chunk(c, n, ctx, &idx, &m, &C, NULL) ? 0 : 4 * m;
}

static size_t cyclick_max(const struct lbs_compressor *c, size_t n)
{
    const struct cyclick_cfg *k = c->cfg;
    /* the largest chunk of n split into C nearly equal parts */
    size_t C = lbs_mask_cyclic_count(k->k, n);
    return C ? 4 * ((n + C - 1) / C) : 0;
}

/* What a compress call moves on the CPU: the gather reads x only at the
 * chunk's m sorted indices, so of x's 64-byte lines (16 floats) it loads
 * those holding a kept index, a share 1 - (1 - m/n)^16 of them for a
 * random chunk (k = 0.01: 15%); then the m indices and the m values
 * written: 4n (1 - (1 - m/n)^16) + 8m bytes (k = 0.01: 0.67 per element
 * instead of the 4 of the whole input).  .traffic below is a different
 * fact: the simulator's model of a GPU kernel, per 32-byte sector. */
static double cyclick_cpu_bytes(const struct lbs_compressor *c, size_t n)
{
    const struct cyclick_cfg *k = c->cfg;
    size_t C = lbs_mask_cyclic_count(k->k, n);
    if (!C)
        return 0;
    double m = (double)n / (double)C;
    return 4.0 * (double)n * (1.0 - pow(1.0 - m / (double)n, 16.0)) +
           8.0 * m;
}

static int cyclick_compress(struct lbs_compressor *c, const float *x,
                            size_t n, const struct lbs_cctx *ctx,
                            void *payload, size_t *bytes, struct lbs_err *err)
{
    const uint32_t *idx;
    size_t m, C;
    int rc = chunk(c, n, ctx, &idx, &m, &C, err);
    if (rc)
        return rc;
    lbs_cmp_gather(payload, x, idx, m);
    *bytes = 4 * m;
    return 0;
}

static int cyclick_decompress_add(struct lbs_compressor *c,
                                  const void *payload, size_t bytes, size_t n,
                                  const struct lbs_cctx *ctx, float alpha,
                                  float *out, struct lbs_err *err)
{
    const struct cyclick_cfg *k = c->cfg;
    const uint32_t *idx;
    size_t m, C;
    int rc = chunk(c, n, ctx, &idx, &m, &C, err);
    if (!rc)
        rc = lbs_cmp_expect_bytes(c, bytes, 4 * m, err);
    if (rc)
        return rc;
    const float *p = payload;
    float a = k->scale ? alpha * (float)C : alpha;
    lbs_cmp_scatter_add(out, idx, p, a, m);
    return 0;
}

static int cyclick_init(struct lbs_compressor *c, struct lbs_err *err)
{
    c->state = calloc(1, sizeof(struct cyclick_state));
    return c->state ? 0 : lbs_err_set(err, -ENOMEM, "out of memory");
}

static void cyclick_reset(struct lbs_compressor *c)
{
    struct cyclick_state *s = c->state;
    lbs_cslots_clear(&s->masks, free_mask);
}

static void cyclick_fini(struct lbs_compressor *c)
{
    struct cyclick_state *s = c->state;
    if (!s)
        return;
    lbs_cslots_clear(&s->masks, free_mask);
    free(s->masks.p);
    free(s->masks.n);
    free(s);
}

/* Invariant (lbs_compress_wrong): unscaled (scale=0), every element is
 * either dropped (0) or kept exactly; the mask is random, not a
 * magnitude prefix, so min_kept means nothing here and is set to 0. */
static long cyclick_wrong(const struct lbs_compressor *c,
                        struct lbs_compress_check *ck)
{
    const struct cyclick_cfg *k = c->cfg;
    long bad = k->scale == 0 ? lbs_cmp_sparse_wrong(ck, 0) : 0;
    ck->min_kept = 0;
    return bad;
}

const struct lbs_compress_ops lbs_cmp_cyclick = {
    .name = "cyclick",
    .summary = "cyclic random-k: fixed permutation, chunk t mod ceil(1/k)",
    .params = cyclick_params,
    .cfg_size = sizeof(struct cyclick_cfg),
    .coll = LBS_COLL_ALLREDUCE,
    /* memory traffic (lbs_compress_traffic): x and the stored permutation read
     * at the kept indices, values written; decoding as random-k */
    .traffic = {.comp = 4, .comp_w = 2, .dec_once = 4,
                .dec_part = 0, .dec_w = 3, .known = 1},
    .ef_ok = 1,
    .init = cyclick_init,
    .fini = cyclick_fini,
    .reset = cyclick_reset,
    .wire_bytes = cyclick_bytes,
    .max_bytes = cyclick_max,
    .cpu_bytes = cyclick_cpu_bytes,
    .compress = cyclick_compress,
    .decompress_add = cyclick_decompress_add,
    .wrong = cyclick_wrong,
};
