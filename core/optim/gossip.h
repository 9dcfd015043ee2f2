/* gossip.h - the neighbour exchange and mixing shared by the decentralized
 * optimizers (dmsgd.c, decentlam.c).  Internal to core.
 *
 * One struct lbs_gossip per optimizer holds the topology for the comm's
 * ranks, this rank's neighbours for the current step and one receive
 * buffer (degree x largest layer floats).  Per layer the optimizer calls
 * lbs_gossip_exchange(send) - the send buffer goes to every out-neighbour
 * through lbs_neighbor_exchange (Isend/Irecv on MPI), the in-neighbours'
 * buffers land in recv - and then, per element e, the mix
 *
 *   sum_j W[i][j] v_j[e]
 *
 * with v_i = the send buffer itself, summed in ascending rank order (self
 * included) in double, from 0 (the gossip_mix kernel, core/kern/kern.h,
 * and decentlam_update, decentlam_tmpl.c, over g->src and g->wsrc).
 * Every rank of a fully connected topology therefore
 * adds the same numbers in the same order and gets the same bits.
 *
 * Ownership: init allocates, fini frees (safe after a failed init).
 */
#ifndef LBS_GOSSIP_H
#define LBS_GOSSIP_H

#include <stddef.h>

#include "lbscale/topology.h"
#include "optim_impl.h"

struct lbs_gossip {
    struct lbs_topology *topo;
    struct lbs_topo_peers peers;    /* this rank, step `peers_step` */
    long peers_step;
    float *recv;                    /* degree * maxn */
    size_t maxn;
    int nsrc;                       /* peers.nfrom + 1 */
    const float **src;              /* ascending rank order, self included */
    double *wsrc;
    double bytes;                   /* sent at the last step, all layers */
};

int lbs_gossip_init(struct lbs_gossip *g, const struct lbs_optim *o,
                    enum lbs_topo kind, struct lbs_err *err);
void lbs_gossip_fini(struct lbs_gossip *g);
/* Neighbours for step o->t; resets the byte count. */
void lbs_gossip_begin(struct lbs_gossip *g, const struct lbs_optim *o);
/* Exchange the n floats of layer `layer` in send; afterwards
 * lbs_gossip_mix_at reads send and the received buffers. */
int lbs_gossip_exchange(struct lbs_gossip *g, struct lbs_optim *o,
                        size_t layer, const float *send, size_t n,
                        struct lbs_err *err);

/* x = the mix sum_j W[i][j] v_j over [0, n) (the dispatched gossip_mix
 * kernel; x may be the send buffer).  Returns the sum of x (a NaN
 * detector). */
double lbs_gossip_mix(const struct lbs_gossip *g, float *x, size_t n);
/* Alone at this step (no in- or out-neighbours): the mix is wself v_i
 * and nothing needs to be exchanged. */
static inline int lbs_gossip_alone(const struct lbs_gossip *g)
{
    return g->peers.nfrom == 0 && g->peers.nto == 0;
}

/* mean over ranks of ||x_i - x_bar|| over all layers (collective). */
int lbs_gossip_consensus(const struct lbs_optim *o, double *value,
                         struct lbs_err *err);
/* The stats both optimizers answer: consensus_distance, bytes, degree. */
extern const char *const lbs_gossip_stats[];
int lbs_gossip_stat(const struct lbs_optim *o, const struct lbs_gossip *g,
                    const char *name, double *value, struct lbs_err *err);

/* DecentLaM's per-step coefficients (decentlam.c): z = x - lr (g + wd x),
 * g~ = (x - mix) inv, m = mu m + g~, x -= lr m; wself weighs z itself
 * when the rank is alone (the fused form, no exchange). */
struct lbs_decentlam_coef {
    double inv, wself;
    float lr, wd, mu;
};

/* DecentLaM's kernel family (decentlam_tmpl.c, core/kern/kfam.h). */
struct lbs_decentlam_kern {
    /* DecentLaM: z = x - lr (g + wd x) over [0, n) */
    void (*decentlam_z)(const struct lbs_decentlam_coef *k, const float *g,
                        const float *x, float *z, size_t n);
    /* DecentLaM's update over [lo, hi) of full-layer arrays, the mix of
     * src as gossip_mix; src NULL: alone, z from g in registers and the
     * mix is wself z.  Returns a NaN detector: the sum of m, or alone 0
     * (the sum of m - m, float and so cheaper), either not finite where an
     * m is not. */
    double (*decentlam_update)(const struct lbs_decentlam_coef *k,
                               const float *const *src, const double *w,
                               int ns, const float *g, float *m, float *x,
                               size_t lo, size_t hi);
};
extern const struct lbs_kfam lbs_decentlam_kfam;

/* What dmsgd.c and decentlam.c share beyond the exchange: the same keys
 * (config and params table), and a state of the exchange, the per-layer
 * momentum and, for DecentLaM, a send buffer z of the largest layer.
 * state_init allocates o->state (messages name o->ops->name) and frees
 * it again on failure; state_fini and state_stat are ops hooks. */
struct lbs_gossip_cfg {
    double topology, lr, momentum, wd;
};
extern const struct lbs_param_spec lbs_gossip_params[];
struct lbs_gossip_state {
    struct lbs_gossip g;
    float **m;
    float *z;           /* want_z only */
};
int lbs_gossip_state_init(struct lbs_optim *o, int want_z,
                          struct lbs_err *err);
void lbs_gossip_state_fini(struct lbs_optim *o);
int lbs_gossip_state_stat(const struct lbs_optim *o, const char *name,
                          double *value, struct lbs_err *err);
/* Choices and default of the "topology" spec key. */
/* Ring by default: its mixing matrix is symmetric.  On the directed
 * exponential graph (4 ranks: eigenvalue i/3) DecentLaM's momentum
 * recursion has an unstable mode and diverged in 4-rank training. */
#define LBS_GOSSIP_TOPOLOGY_DEFAULT LBS_TOPO_RING

#endif
