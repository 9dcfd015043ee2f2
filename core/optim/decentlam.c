/* decentlam.c - DecentLaM (Yuan et al., ICCV 2021): decentralized
 * momentum SGD without the momentum-amplified inconsistency bias.
 *
 * No allreduce (.dense = 0).  Rank i, step t, W = W_t of the topology
 * (lbscale/topology.h), per layer:
 *
 *   z_i = x_i - lr (g_i + wd x_i)                  (g_i: the LOCAL gradient)
 *   send z_i to the out-neighbours, receive z_j from the in-neighbours
 *   g~_i = (x_i - sum_j W[i][j] z_j) / lr          (mix in ascending j, double)
 *   m_i = mu m_i + g~_i
 *   x_i -= lr m_i
 *
 * equivalently x+ = W(x - lr g) + mu (x - x_prev) for a constant lr.  One
 * vector per layer on the wire, as DmSGD.  g~ carries the rounding of the
 * float32 z (about eps |x| / lr); on one rank g~ = g up to that rounding.
 * lr * scale = 0 (a schedule at zero): g~ is undefined, so the step only
 * mixes - x_i = sum_j W[i][j] x_j, m untouched.
 *
 * Memory (bytes per element, step alone): z (read g, x, write z: 12),
 * then read z, the degree received copies, x, m and write m, x:
 * 20 + 4 degree; 32 + 4 degree in all.  A rank without neighbours (one
 * rank) sends nothing, so z never leaves registers: one pass reads g, x,
 * m and writes m, x, 20 bytes, the same arithmetic (decentlam_update with
 * src NULL).  Both passes are dispatched kernels (core/kern/kern.h).
 */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>

#include "gossip.h"
#include "kfam.h"

static int decentlam_init(struct lbs_optim *o, struct lbs_err *err)
{
    return lbs_gossip_state_init(o, 1, err);
}

/* z = x - lr (g + wd x) over a layer (decentlam_z kernel). */
static void send_buffer(const struct lbs_decentlam_coef *k, const float *gr,
                        const float *x, float *z, size_t n)
{
    const struct lbs_decentlam_kern *K = lbs_kfam_cur(&lbs_decentlam_kfam);
    if (n < LBS_PAR_MIN) {
        K->decentlam_z(k, gr, x, z, n);
        return;
    }
#pragma omp parallel for schedule(static)
    for (size_t c = 0; c < LBS_CHUNKS; c++) {
        size_t lo = lbs_chunk_lo(n, c), hi = lbs_chunk_lo(n, c + 1);
        K->decentlam_z(k, gr + lo, x + lo, z + lo, hi - lo);
    }
}

/* g~, m and x over a layer (decentlam_update kernel); src NULL: alone,
 * z is formed in registers from gr.  Returns the sum of m. */
static double update(const struct lbs_decentlam_coef *k,
                     const struct lbs_gossip *g, const float *const *src,
                     const float *gr, float *m, float *x, size_t n)
{
    const struct lbs_decentlam_kern *K = lbs_kfam_cur(&lbs_decentlam_kfam);
    if (n < LBS_PAR_MIN)
        return K->decentlam_update(k, src, g->wsrc, g->nsrc, gr, m, x, 0, n);
    double sum = 0;
#pragma omp parallel for schedule(static) reduction(+ : sum)
    for (size_t c = 0; c < LBS_CHUNKS; c++)
        sum += K->decentlam_update(k, src, g->wsrc, g->nsrc, gr, m, x,
                                   lbs_chunk_lo(n, c),
                                   lbs_chunk_lo(n, c + 1));
    return sum;
}

struct alone_ctx {
    const struct lbs_decentlam_kern *K;
    const struct lbs_decentlam_coef *k;
    const struct lbs_gossip *g;
    const struct lbs_layer *L;
    float *const *m;
};

static double alone_chunk(const void *ctx, size_t i, size_t lo, size_t hi)
{
    const struct alone_ctx *x = ctx;
    return x->K->decentlam_update(x->k, NULL, x->g->wsrc, x->g->nsrc,
                                  x->L[i].g, x->m[i], x->L[i].w, lo, hi);
}

/* Alone (one rank, lr > 0): decentlam_update with src NULL over every
 * layer in one parallel region (lbs_layers_pass), chunk by chunk as
 * update(): the same m and x.  Returns the first layer whose sum is not
 * finite, or nlayers (every layer is updated). */
static size_t update_alone(const struct lbs_decentlam_coef *k,
                           const struct lbs_gossip *g,
                           const struct lbs_layer *L, float *const *m,
                           size_t nl)
{
    const struct alone_ctx x = {lbs_kfam_cur(&lbs_decentlam_kfam), k, g, L,
                                m};
    return lbs_layers_pass(L, nl, alone_chunk, &x);
}

static int decentlam_step(struct lbs_optim *o, struct lbs_err *err)
{
    const struct lbs_gossip_cfg *c = o->cfg;
    struct lbs_gossip_state *st = o->state;
    struct lbs_gossip *g = &st->g;
    const double lr = c->lr * o->lr_scale;
    int rc;
    lbs_gossip_begin(g, o);
    const struct lbs_decentlam_coef k = {
        .inv = lr > 0 ? 1.0 / lr : 0, .wself = g->peers.wself,
        .lr = (float)lr, .wd = (float)c->wd, .mu = (float)c->momentum,
    };
    /* alone, nothing is sent: one pass instead of z's and the update's */
    if (lr > 0 && lbs_gossip_alone(g)) {
        size_t bad = update_alone(&k, g, o->layers, st->m, o->nlayers);
        return bad < o->nlayers ? lbs_check_finite(o, bad, NAN, err) : 0;
    }
    for (size_t i = 0; i < o->nlayers; i++) {
        const struct lbs_layer *L = &o->layers[i];
        const size_t n = L->n;
        float *x = L->w, *m = st->m[i], *z = st->z;
        double sum;
        send_buffer(&k, L->g, x, z, n);
        if ((rc = lbs_gossip_exchange(g, o, i, z, n, err)))
            return rc;
        sum = lr > 0 ? update(&k, g, g->src, NULL, m, x, n)
                     : lbs_gossip_mix(g, x, n);
        if ((rc = lbs_check_finite(o, i, sum, err)))
            return rc;
    }
    return 0;
}

static double decentlam_bytes(const struct lbs_optim *o)
{
    const struct lbs_gossip_state *st = o->state;
    int deg = lbs_topology_degree(st->g.topo);
    return deg ? 32.0 + 4.0 * deg : 20.0;
}

const struct lbs_optim_ops lbs_optim_decentlam = {
    .name = "decentlam",
    .summary = "DecentLaM: decentralized momentum SGD on g~ = (x - W(x - lr g))"
               "/lr, free of DmSGD's momentum bias",
    .params = lbs_gossip_params,
    .lr_rule = &lbs_lr_sgd,   /* untuned: SGD's rate */
    .dense = 0,
    .cfg_size = sizeof(struct lbs_gossip_cfg),
    .bytes_per_elem = decentlam_bytes,
    .init = decentlam_init,
    .step = decentlam_step,
    .stats = lbs_gossip_stats,
    .stat = lbs_gossip_state_stat,
    .fini = lbs_gossip_state_fini,
    .kern = &lbs_decentlam_kfam,
    .exact = 1,
};
