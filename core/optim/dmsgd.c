/* dmsgd.c - decentralized momentum SGD (DmSGD; as in Yuan et al., ICCV
 * 2021, the baseline of DecentLaM).
 *
 * No allreduce (.dense = 0).  Rank i of the comm's n ranks, at step t with
 * mixing matrix W = W_t of the topology (lbscale/topology.h), per layer:
 *
 *   m_i = mu m_i + (g_i + wd x_i)                  (g_i: the LOCAL gradient)
 *   y_i = x_i - lr m_i                             (in place in x_i)
 *   send y_i to the out-neighbours, receive y_j from the in-neighbours
 *   x_i = sum_j W[i][j] y_j                        (ascending j, in double)
 *
 * The first two lines are sgd's fused pass (lbs_momentum_pass), so on one
 * rank (W = [1]) dmsgd is sgd (nesterov=0) bit for bit; with the "full"
 * topology every rank computes the same average in the same order, so one
 * step from a common x and zero momentum equals momentum SGD on the
 * averaged gradient (to rounding: mean(x - lr g_j) vs x - lr mean(g_j)),
 * and the ranks stay bit-identical.
 *
 * One neighbour exchange per layer (layer index in the trace), degree x n
 * floats sent.  Memory (bytes per element, step alone): the momentum pass
 * 20, the mix (gossip_mix kernel, in place) reads y and the degree
 * received copies and writes x: 8 + 4 degree.
 */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>

#include "gossip.h"

static int dmsgd_init(struct lbs_optim *o, struct lbs_err *err)
{
    return lbs_gossip_state_init(o, 0, err);
}

static int dmsgd_step(struct lbs_optim *o, struct lbs_err *err)
{
    const struct lbs_gossip_cfg *c = o->cfg;
    struct lbs_gossip_state *st = o->state;
    struct lbs_gossip *g = &st->g;
    const struct lbs_momentum mp = {
        .gs = 1, .wd = (float)c->wd, .mu = (float)c->momentum, .a = 1,
        .k = (float)(c->lr * o->lr_scale),
    };
    int rc;
    lbs_gossip_begin(g, o);
    if (g->nsrc == 1) {   /* alone (W = [1]): sgd's pass, one region */
        size_t bad = lbs_momentum_layers(&mp, o->layers, st->m, o->nlayers);
        return bad < o->nlayers ? lbs_check_finite(o, bad, NAN, err) : 0;
    }
    for (size_t i = 0; i < o->nlayers; i++) {
        const struct lbs_layer *L = &o->layers[i];
        float *x = L->w;
        double sd = lbs_momentum_pass(&mp, L->g, st->m[i], x, L->n);
        if ((rc = lbs_check_finite(o, i, sd, err)))
            return rc;
        if ((rc = lbs_gossip_exchange(g, o, i, x, L->n, err)))
            return rc;
        lbs_gossip_mix(g, x, L->n);
    }
    return 0;
}

static double dmsgd_bytes(const struct lbs_optim *o)
{
    const struct lbs_gossip_state *st = o->state;
    int deg = lbs_topology_degree(st->g.topo);
    return 20.0 + (deg ? 8.0 + 4.0 * deg : 0.0);
}

const struct lbs_optim_ops lbs_optim_dmsgd = {
    .name = "dmsgd",
    .summary = "decentralized momentum SGD: x_i = sum_j w_ij (x_j - lr m_j) "
               "over a gossip topology",
    .params = lbs_gossip_params,
    .lr_rule = &lbs_lr_sgd,   /* untuned: SGD's rate */
    .dense = 0,
    .cfg_size = sizeof(struct lbs_gossip_cfg),
    .bytes_per_elem = dmsgd_bytes,
    .init = dmsgd_init,
    .step = dmsgd_step,
    .stats = lbs_gossip_stats,
    .stat = lbs_gossip_state_stat,
    .fini = lbs_gossip_state_fini,
    .kern = &lbs_momentum_kfam,
    .exact = 1,
};
