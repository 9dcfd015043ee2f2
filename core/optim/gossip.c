/* gossip.c - see gossip.h. */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "gossip.h"
#include "kern.h"

int lbs_gossip_init(struct lbs_gossip *g, const struct lbs_optim *o,
                    enum lbs_topo kind, struct lbs_err *err)
{
    memset(g, 0, sizeof *g);
    int rc = lbs_topology_new(kind, o->comm->size, &g->topo, err);
    if (rc)
        return rc;
    int deg = lbs_topology_degree(g->topo);
    for (size_t i = 0; i < o->nlayers; i++)
        if (o->layers[i].n > g->maxn)
            g->maxn = o->layers[i].n;
    g->peers.from = malloc((size_t)(deg + 1) * sizeof *g->peers.from);
    g->peers.to = malloc((size_t)(deg + 1) * sizeof *g->peers.to);
    g->peers.w = malloc((size_t)(deg + 1) * sizeof *g->peers.w);
    g->src = malloc((size_t)(deg + 1) * sizeof *g->src);
    g->wsrc = malloc((size_t)(deg + 1) * sizeof *g->wsrc);
    g->recv = deg ? lbs_zalloc_f32((size_t)deg * g->maxn) : NULL;
    if (!g->peers.from || !g->peers.to || !g->peers.w || !g->src ||
        !g->wsrc || (deg && !g->recv))
        return lbs_err_set(err, -ENOMEM, "%s: out of memory for %d "
                           "neighbour buffers", o->ops->name, deg);
    return 0;
}

void lbs_gossip_fini(struct lbs_gossip *g)
{
    lbs_topology_free(g->topo);
    free(g->peers.from);
    free(g->peers.to);
    free(g->peers.w);
    free(g->src);
    free(g->wsrc);
    free(g->recv);
    memset(g, 0, sizeof *g);
}

void lbs_gossip_begin(struct lbs_gossip *g, const struct lbs_optim *o)
{
    lbs_topology_peers(g->topo, o->comm->rank, o->t, &g->peers);
    g->peers_step = o->t;
    g->nsrc = g->peers.nfrom + 1;
    g->bytes = 0;
}

int lbs_gossip_exchange(struct lbs_gossip *g, struct lbs_optim *o,
                        size_t layer, const float *send, size_t n,
                        struct lbs_err *err)
{
    const struct lbs_topo_peers *p = &g->peers;
    int rank = o->comm->rank, k = 0, self_done = 0;
    /* sources in ascending rank order: in-neighbours below us, us, above */
    for (int j = 0; j < p->nfrom; j++) {
        if (!self_done && p->from[j] > rank) {
            g->src[k] = send;
            g->wsrc[k++] = p->wself;
            self_done = 1;
        }
        g->src[k] = g->recv + (size_t)j * n;
        g->wsrc[k++] = p->w[j];
    }
    if (!self_done) {
        g->src[k] = send;
        g->wsrc[k++] = p->wself;
    }
    if (p->nto == 0 && p->nfrom == 0)
        return 0;
    o->comm->err = err;
    g->bytes += (double)p->nto * (double)n * sizeof(float);
    return lbs_neighbor_exchange(o->comm, send, n, LBS_FLOAT32, p->to, p->nto,
                                 p->from, p->nfrom, g->recv, (int)layer);
}

double lbs_gossip_mix(const struct lbs_gossip *g, float *x, size_t n)
{
    const struct lbs_kern *K = lbs_kern();
    const float *const *src = g->src;
    if (n < LBS_PAR_MIN)
        return K->gossip_mix(src, g->wsrc, g->nsrc, x, 0, n);
    double sum = 0;
#pragma omp parallel for schedule(static) reduction(+ : sum)
    for (size_t c = 0; c < LBS_CHUNKS; c++)
        sum += K->gossip_mix(src, g->wsrc, g->nsrc, x, lbs_chunk_lo(n, c),
                             lbs_chunk_lo(n, c + 1));
    return sum;
}

int lbs_gossip_consensus(const struct lbs_optim *o, double *value,
                         struct lbs_err *err)
{
    struct lbs_comm *c = o->comm;
    *value = 0;
    if (c->size == 1)
        return 0;
    size_t maxn = 0;
    for (size_t i = 0; i < o->nlayers; i++)
        if (o->layers[i].n > maxn)
            maxn = o->layers[i].n;
    double *mean = lbs_array_alloc(maxn, sizeof *mean);
    if (!mean)
        return lbs_err_set(err, -ENOMEM, "out of memory");
    int rc = 0;
    double local = 0, inv = 1.0 / c->size;
    c->err = err;
    for (size_t i = 0; i < o->nlayers && !rc; i++) {
        const float *w = o->layers[i].w;
        size_t n = o->layers[i].n;
        for (size_t e = 0; e < n; e++)
            mean[e] = w[e];
        rc = lbs_allreduce(c, mean, n, LBS_FLOAT64, LBS_SUM, (int)i);
        if (rc)
            break;
        double s = 0;
#pragma omp parallel for reduction(+ : s) schedule(static) if (n >= LBS_PAR_MIN)
        for (size_t e = 0; e < n; e++) {
            double d = w[e] - mean[e] * inv;
            s += d * d;
        }
        local += s;
    }
    free(mean);
    if (rc)
        return rc;
    double dist = sqrt(local);
    rc = lbs_allreduce(c, &dist, 1, LBS_FLOAT64, LBS_SUM, -1);
    if (!rc)
        *value = dist * inv;
    return rc;
}

const char *const lbs_gossip_stats[] = {"consensus_distance", "bytes",
                                        "degree", NULL};

int lbs_gossip_stat(const struct lbs_optim *o, const struct lbs_gossip *g,
                    const char *name, double *value, struct lbs_err *err)
{
    if (!strcmp(name, "consensus_distance"))
        return lbs_gossip_consensus(o, value, err);
    if (!strcmp(name, "bytes"))
        *value = g->bytes;
    else if (!strcmp(name, "degree"))
        *value = g->peers_step ? g->peers.nto : 0;
    else
        return -ENOENT;
    return 0;
}

#define K(f) offsetof(struct lbs_gossip_cfg, f)
const struct lbs_param_spec lbs_gossip_params[] = {
    {"topology", LBS_P_ENUM, LBS_GOSSIP_TOPOLOGY_DEFAULT, 0, 0, 0, K(topology), "communication graph (mixing matrix W)", lbs_topo_names},
    {"lr", LBS_P_REAL, 0.1, 0, INFINITY, 0, K(lr), "learning rate", NULL},
    {"momentum", LBS_P_REAL, 0.9, 0, 1, LBS_P_MAX_OPEN, K(momentum), "momentum factor b", NULL},
    {"wd", LBS_P_REAL, 0, 0, INFINITY, 0, K(wd), "L2 weight decay (added to g)", NULL},
    {NULL, 0, 0, 0, 0, 0, 0, NULL, NULL},
};
#undef K

void lbs_gossip_state_fini(struct lbs_optim *o)
{
    struct lbs_gossip_state *st = o->state;
    if (!st)
        return;
    lbs_gossip_fini(&st->g);
    lbs_free_layer_state(o, st->m);
    free(st->z);
    free(st);
    o->state = NULL;
}

int lbs_gossip_state_init(struct lbs_optim *o, int want_z,
                          struct lbs_err *err)
{
    const struct lbs_gossip_cfg *c = o->cfg;
    const char *name = o->ops->name;
    struct lbs_gossip_state *st = calloc(1, sizeof *st);
    if (!st)
        return lbs_err_set(err, -ENOMEM, "%s: out of memory", name);
    o->state = st;
    int rc = lbs_gossip_init(&st->g, o, (enum lbs_topo)c->topology, err);
    if (!rc && (!(st->m = lbs_alloc_layer_state(o)) ||
                (want_z && !(st->z = lbs_zalloc_f32(st->g.maxn)))))
        rc = lbs_err_set(err, -ENOMEM, "%s: out of memory for state", name);
    if (rc)
        lbs_gossip_state_fini(o);  /* the driver does not call fini after
                                      init fails */
    return rc;
}

int lbs_gossip_state_stat(const struct lbs_optim *o, const char *name,
                          double *value, struct lbs_err *err)
{
    const struct lbs_gossip_state *st = o->state;
    return lbs_gossip_stat(o, &st->g, name, value, err);
}
