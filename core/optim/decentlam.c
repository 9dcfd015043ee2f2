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
 * 20 + 4 degree.
 */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>

#include "gossip.h"

static int decentlam_init(struct lbs_optim *o, struct lbs_err *err)
{
    return lbs_gossip_state_init(o, 1, err);
}

static int decentlam_step(struct lbs_optim *o, struct lbs_err *err)
{
    const struct lbs_gossip_cfg *c = o->cfg;
    struct lbs_gossip_state *st = o->state;
    struct lbs_gossip *g = &st->g;
    const double lr = c->lr * o->lr_scale;
    const float lrf = (float)lr, wd = (float)c->wd, mu = (float)c->momentum;
    int rc;
    lbs_gossip_begin(g, o);
    for (size_t i = 0; i < o->nlayers; i++) {
        const struct lbs_layer *L = &o->layers[i];
        const size_t n = L->n;
        const float *gr = L->g;
        float *x = L->w, *m = st->m[i], *z = st->z;
#pragma omp parallel for simd schedule(static) if (n >= LBS_PAR_MIN)
        for (size_t e = 0; e < n; e++)
            z[e] = x[e] - lrf * (gr[e] + wd * x[e]);
        if ((rc = lbs_gossip_exchange(g, o, i, z, n, err)))
            return rc;
        double sum = 0;
        if (lr > 0) {
            const double inv = 1.0 / lr;
#pragma omp parallel for reduction(+ : sum) schedule(static) if (n >= LBS_PAR_MIN)
            for (size_t e = 0; e < n; e++) {
                float gt = (float)((x[e] - lbs_gossip_mix_at(g, e)) * inv);
                float mi = mu * m[e] + gt;
                m[e] = mi;
                sum += mi;
                x[e] -= lrf * mi;
            }
        } else {
#pragma omp parallel for reduction(+ : sum) schedule(static) if (n >= LBS_PAR_MIN)
            for (size_t e = 0; e < n; e++) {
                x[e] = (float)lbs_gossip_mix_at(g, e);
                sum += x[e];
            }
        }
        if ((rc = lbs_check_finite(o, i, sum, err)))
            return rc;
    }
    return 0;
}

static double decentlam_bytes(const struct lbs_optim *o)
{
    const struct lbs_gossip_state *st = o->state;
    return 32.0 + 4.0 * lbs_topology_degree(st->g.topo);
}

const struct lbs_optim_ops lbs_optim_decentlam = {
    .name = "decentlam",
    .summary = "DecentLaM: decentralized momentum SGD on g~ = (x - W(x - lr g))"
               "/lr, free of DmSGD's momentum bias",
    .params = lbs_gossip_params,
    .dense = 0,
    .cfg_size = sizeof(struct lbs_gossip_cfg),
    .bytes_per_elem = decentlam_bytes,
    .init = decentlam_init,
    .step = decentlam_step,
    .stats = lbs_gossip_stats,
    .stat = lbs_gossip_state_stat,
    .fini = lbs_gossip_state_fini,
};
