/* nccl.c - collectives priced the way NCCL's tuner prices them, for GPU
 * platforms (a platform with an "nccl" object).
 *
 * Source of every constant and formula: NVIDIA/nccl v2.21.5-1,
 * src/graph/tuning.cc (ncclTopoTuneModel, ncclTopoGetAlgoTime):
 *   busBw  = graph channels x per-channel bandwidth (the one-node graph on
 *            one node, the multi-node graph otherwise), then per algorithm
 *            and protocol: ring LL x0.5 capped by llMaxBw; ring LL128
 *            x0.92 (x0.7 at one GPU per node) capped at channels x
 *            perChMaxRingLL128Bw; tree x0.92 capped at channels x
 *            perChMaxTreeBw, tree LL /3.8 capped by llMaxBw, tree LL128
 *            x7/9 (one node) or x120/128, capped at channels x
 *            perChMaxTreeLL128Bw; NVLS min(intra, inter) x channels;
 *   algBw  = busBw x P/nsteps (ring), x5/6 (NVLS), x0.5 (tree);
 *   lat    = baseLat + ring: (nsteps - nInterSteps) x max(intra hwLat, net
 *            overhead) + nInterSteps x (NET hwLat + fabric latency);
 *            tree: 2 ((g-1) intra hwLat + log2(N) inter latency);
 *            NVLS: its NVLink latency (+ NET latency across nodes);
 *   time   = lat + bytes / (1000 algBw) us, the tree's bandwidth times
 *            treeCorrectionFactor[proto][log2(bytes/64)] for 64 B..256 MB,
 *            ring Simple allreduce across nodes with bytes/(channels x P)
 *            >= 64: lat x1.4 (x1.9 before Ampere) ("plateau effect").
 * NCCL picks the (algorithm, protocol) of least time: so does
 * lbs_sim_coll_cost.  Bytes are NCCL's: the buffer for allreduce and
 * bcast, the whole output (P x this rank's part) for allgather.
 *
 * What lbscale adds, each said where it enters: on a fat-tree the
 * multi-node bandwidth is multiplied by the leaf-uplink share of coll.c
 * (1 on a non-blocking fabric); a step that crosses the spine pays
 * fabric.lat_spine_us instead of fabric.lat_us; alltoall and neighbour
 * exchanges, which NCCL runs as grouped point-to-point sends outside its
 * tuner, are priced as below (p2p).
 */
#include <math.h>

#include "sim_internal.h"

/* tuning.cc: baseLat[algo][proto], us; rows tree, ring. */
static const double base_lat[2][3] = {{6.8, 14.0, 0}, {6.6, 14.0, 8.4}};
/* tuning.cc: hwLat[NVLINK, PCI, NET][tree, ring][LL, LL128, Simple], us */
static const double hw_lat[3][2][3] = {
    {{.6, 1.25, 28}, {.6, 1.9, 3.4}},
    {{1.0, 1.9, 28}, {1.0, 2.5, 5.7}},
    {{5.0, 8.5, 28}, {2.7, 4.0, 14.0}}};
/* tuning.cc: NVLS hwLat, us: NVLink 25, NET 18 */
#define NVLS_LAT_NVL 25.0
#define NVLS_LAT_NET 18.0
#define NVLS_TREE_LAT_NET 14.0  /* tuning.cc: NVLSTree NET hwLat */
/* tuning.cc, [arch or CPU row][nodes 1 / 2 / more], GB/s */
static const double ll_max_bw[3][3] = {{39.0, 39.0, 20.4},
                                       {87.7, 22.5, 19.0},
                                       {141.0, 45.0, 35.0}};
static const double ring_ll128_ch[3][3] = {{20, 20, 20}, {20, 20, 20},
                                           {36.7, 36.7, 36.7}};
static const double tree_ll128_ch[3][3] = {{20, 20, 20}, {20, 20, 20},
                                           {36.7, 36.7, 29.0}};
static const double tree_ch[3][3] = {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8},
                                     {38.7, 41.4, 36.0}};
/* tuning.cc: treeCorrectionFactor[proto][log2(bytes / 64)], 64 B..256 MB */
static const double tree_corr[3][23] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7,
     .8, .9, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8,
     .9, .9, .9, .9, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8,
     .7, .7, .8, .9, .9}};

static int log2i(double x)        /* NCCL's log2i: floor, 0 for x < 2 */
{
    int k = 0;
    while (x >= 2) {
        x /= 2;
        k++;
    }
    return k;
}

static long ceil_div(long a, long b) { return (a + b - 1) / b; }

/* Latency of `hops` inter-node steps of which `spine` cross the spine:
 * each pays NCCL's NET hwLat plus the fabric's latency for its level,
 * the graph's latencyInter; Simple pays the latter twice ("Also add the
 * flush extra latency", tuning.cc).  A job that spans pods of a three-tier
 * fabric pays the core's latency on its spine steps (an upper bound: some
 * of them stay inside a pod). */
static double inter_lat(const struct lbs_sim_net *net, double net_hw,
                        enum lbs_sim_proto p, long hops, long spine)
{
    const struct lbs_sim_platform *pl = net->pl;
    double k = p == LBS_SIM_SIMPLE ? 2 : 1;
    double top = pl->tiers == 3 && net->N > pl->nodes_per_pod
                 ? pl->core_lat : pl->spine_lat;
    return (double)hops * (net_hw + k * pl->net_lat * 1e6) +
           k * (double)spine * (top - pl->net_lat) * 1e6;
}

/* Inter-node steps of a ring over N nodes that cross the spine: the ring
 * leaves each group of L nodes once per round (nothing when all nodes sit
 * under one leaf). */
static long ring_spine_hops(const struct lbs_sim_net *net, long hops,
                            long rounds)
{
    const struct lbs_sim_platform *pl = net->pl;
    long L = pl->fabric == LBS_SIM_FAT_TREE ? pl->nodes_per_leaf : net->N;
    if (net->N <= L)
        return 0;
    long s = rounds * ceil_div(net->N, L);
    return s < hops ? s : hops;
}

struct nctx {
    const struct lbs_sim_net *net;
    const struct lbs_sim_nccl *n;
    int row;            /* nodes: 0 one, 1 two, 2 more */
    int ar;             /* allreduce (else allgather, bcast) */
    int bcast;
    long nsteps, inter; /* ring steps and how many cross nodes */
};

/* NCCL's ring or tree (or NVLS) time in us for nbytes, NCCL convention;
 * INFINITY when the combination has no bandwidth. */
static double tuned_us(const struct nctx *x, enum lbs_sim_algo a,
                       enum lbs_sim_proto p, double nbytes)
{
    const struct lbs_sim_net *net = x->net;
    const struct lbs_sim_nccl *n = x->n;
    int nvls = a == LBS_SIM_AR_NVLS || a == LBS_SIM_AR_NVLS_TREE ||
               a == LBS_SIM_AG_NVLS;
    int ring = !nvls && a != LBS_SIM_AR_TREE;
    int tree = a == LBS_SIM_AR_TREE;
    const struct lbs_sim_nccl_graph *gr = net->N == 1 ? &n->intra : &n->inter;
    int arch = (int)n->arch;
    int llrow = net->N == 1 ? arch : n->cpu_amd ? 1 : 0;
    double P = (double)net->P, g = (double)net->g;
    double ch = gr->channels, bw = gr->bw / 1e9;
    /* tuning.cc: "bw = nNodes <= 2 ? bwIntra : bwInter"; a ring's are
     * equal, a tree's bwIntra may have been raised by the search */
    if (tree && net->N == 2)
        bw = n->inter.tree_bw_intra / 1e9;
    /* LL128 only where NCCL enables it (platform.c: NVLink, NIC path) */
    if (p == LBS_SIM_LL128 &&
        !(net->N == 1 ? n->ll128_intra : n->ll128_inter))
        return INFINITY;
    if (nvls) {
        /* NVLS inside one node (allreduce, allgather); NVLS_TREE across
         * nodes: bw = min(bwIntra, nNodes <= 2 ? bwInter : bwInter/2).
         * NVLS proper across nodes needs CollNet (SHARP switches), which
         * no preset describes */
        if (p != LBS_SIM_SIMPLE || !n->nvls.channels ||
            (a == LBS_SIM_AR_NVLS_TREE) != (net->N > 1))
            return INFINITY;
        ch = n->nvls.channels;
        bw = n->nvls.bw / 1e9;
        if (a == LBS_SIM_AR_NVLS_TREE)
            bw = fmin(bw, n->inter.bw / 1e9 / (net->N <= 2 ? 1 : 2));
    }
    double busbw = ch * bw;
    /* lbscale: the leaf uplinks' share on an oversubscribed fat-tree, and
     * never more than the node's NICs carry: NCCL's search speed is the
     * NIC's nominal rate, a platform may state a lower measured one
     * (bus bandwidth across nodes is what each node's NICs move) */
    if (net->N > 1) {
        double sh = tree || a == LBS_SIM_AR_NVLS_TREE ? net->sh_tree
                                                      : net->sh_ring;
        busbw = fmin(busbw * sh, net->Bn / 1e9 * sh);
    }
    if (ring && p == LBS_SIM_LL)
        busbw = fmin(ll_max_bw[llrow][x->row], busbw * .5);
    if (ring && p == LBS_SIM_LL128)
        busbw = fmin(busbw * (g < 2 ? 0.7 : 0.92),
                     ch * ring_ll128_ch[arch][x->row]);
    if (tree) {
        busbw = fmin(busbw * .92, ch * tree_ch[arch][x->row]);
        if (p == LBS_SIM_LL)
            busbw = fmin(busbw / 3.8, ll_max_bw[llrow][x->row]);
        if (p == LBS_SIM_LL128)
            busbw = fmin(busbw * (net->N == 1 ? 7.0 / 9.0 : 120.0 / 128.0),
                         ch * tree_ll128_ch[arch][x->row]);
        /* the plain TREE pattern (the sm90 search's fallback) */
        if (n->inter.tree_simple)
            busbw *= .85;
    }
    double algbw = busbw * (ring ? P / (double)x->nsteps
                            : nvls ? 5.0 / 6.0 : 0.5);
    if (tree) {
        /* log2i(nBytes >> 6): below 64 B the first entry applies too */
        int k = log2i(floor(nbytes / 64));
        if (k < 23)
            algbw *= tree_corr[p][k];
    }
    if (!(algbw > 0))
        return INFINITY;

    int hw_intra = n->intra_pci ? 1 : 0;
    double lat;
    if (a == LBS_SIM_AR_NVLS || a == LBS_SIM_AG_NVLS) {
        lat = NVLS_LAT_NVL;
    } else if (a == LBS_SIM_AR_NVLS_TREE) {
        /* tuning.cc: intraLat + 2 log2i(nNodes) interLat, NET hwLat 14 */
        long levels = log2i((double)net->N);
        long spine = net->spine_tree < levels ? net->spine_tree : levels;
        lat = NVLS_LAT_NVL + 2 * inter_lat(net, NVLS_TREE_LAT_NET, p, levels,
                                           spine);
    } else if (x->bcast) {
        /* tuning.cc: reduce/broadcast rings add one hop latency (same
         * channels on every node, as on NVSwitch systems) */
        lat = base_lat[1][p] + (net->N == 1 ? hw_lat[hw_intra][1][p]
                                : inter_lat(net, hw_lat[2][1][p], p, 1,
                                            ring_spine_hops(net, 1, 1)));
    } else if (tree) {
        long levels = log2i((double)net->N);
        /* the tree levels whose edges leave a leaf, as coll.c counts them
         * on NCCL's double binary tree */
        long spine = net->spine_tree < levels ? net->spine_tree : levels;
        double intra = hw_lat[hw_intra][0][p];
        lat = base_lat[0][p] +
              2 * ((g - 1) * intra +
                   inter_lat(net, hw_lat[2][0][p], p, levels, spine));
    } else {
        double intra = hw_lat[hw_intra][1][p];
        if (net->N > 1) {
            /* inter-node rings launch every step through the proxy */
            double ovh = n->cpu_amd ? 2.0 : 1.0;
            if (p == LBS_SIM_SIMPLE)
                ovh *= 3;
            intra = fmax(intra, ovh);
        }
        lat = base_lat[1][p] + (double)(x->nsteps - x->inter) * intra +
              inter_lat(net, hw_lat[2][1][p], p, x->inter,
                        ring_spine_hops(net, x->inter, x->ar ? 2 : 1));
        if (p == LBS_SIM_SIMPLE && net->N > 1 && x->ar &&
            nbytes / (2.0 * gr->channels * P) >= 64)
            lat *= arch >= LBS_SIM_AMPERE ? 1.4 : 1.9;
    }
    return lat + nbytes / (1000 * algbw);
}

/* Point-to-point exchanges (NCCL's grouped ncclSend/ncclRecv: alltoall,
 * neighbour exchange).  NCCL's tuner does not model them.  Every GPU of a
 * node sends at once, so three limits hold together:
 *   - one GPU's off-node bytes at p2p_gbs, at most its NIC's rate
 *     ("alltoall cannot aggregate the bandwidth of multiple NICs",
 *     S. Jeaugey, NVIDIA/nccl-tests#267);
 *   - the node's off-node bytes through its NICs: GPUs share them (g GPUs
 *     on n NICs, rail-aligned: g/n GPUs per NIC), times the fabric's
 *     share for the pattern (leaf uplinks on a fat-tree);
 *   - the GPU's on-node bytes over NVLink at the one-node graph's rate.
 * Latency = ring Simple base + one NET (or NVLink) step + the network post
 * overhead of every off-node peer, spread over the multi-node graph's
 * channels.  us. */
struct p2p {
    double gpu_off, node_off, on;   /* bytes */
    long off_peers;
    double share;                   /* fabric share of the node's NICs */
};

static double p2p_us(const struct lbs_sim_net *net, const struct p2p *x)
{
    const struct lbs_sim_platform *pl = net->pl;
    const struct lbs_sim_nccl *n = &pl->nccl;
    double intra_bw = (double)n->intra.channels * n->intra.bw;
    double ovh = n->cpu_amd ? 2.0 : 1.0;
    double lat = base_lat[1][LBS_SIM_SIMPLE];
    if (x->off_peers > 0)
        lat += inter_lat(net, hw_lat[2][1][LBS_SIM_SIMPLE], LBS_SIM_SIMPLE,
                         1, ring_spine_hops(net, 1, 1)) +
               ovh * (double)ceil_div(x->off_peers, n->inter.channels);
    else
        lat += hw_lat[n->intra_pci ? 1 : 0][1][LBS_SIM_SIMPLE];
    double gpu_bw = fmin(n->p2p_bw, pl->nic_bw);
    double node_bw = (double)pl->nics_per_node * pl->nic_bw * x->share;
    double t = fmax(x->gpu_off / gpu_bw, x->on / intra_bw);
    if (net->N > 1)
        t = fmax(t, x->node_off / node_bw);
    return lat + t * 1e6;
}

/* The NCCL-model cost functions of coll.c's algorithm table (one per
 * family of algorithms; sim_internal.h): seconds, wire bytes in *wire,
 * INFINITY when NCCL cannot run the algorithm with protocol p. */

static struct nctx nctx_of(const struct lbs_sim_net *net)
{
    long N = net->N;
    return (struct nctx){.net = net, .n = &net->pl->nccl,
                         .row = N == 1 ? 0 : N == 2 ? 1 : 2};
}

/* Ring, tree and NVLS allreduce. */
double lbs_sim_nccl_allreduce(const struct lbs_sim_net *net,
                              enum lbs_sim_algo a, enum lbs_sim_proto p,
                              double bytes, enum lbs_topo topo, long step,
                              double *wire)
{
    (void)topo; (void)step;
    double P = (double)net->P;
    struct nctx x = nctx_of(net);
    x.ar = 1;
    x.nsteps = 2 * (net->P - 1);
    x.inter = net->N > 1 ? 2 * net->N : 0;
    *wire = a == LBS_SIM_AR_RING ? 2 * (P - 1) / P * bytes : 2 * bytes;
    return tuned_us(&x, a, p, bytes) * 1e-6;
}

/* Ring allgather: NCCL's bytes are the whole output. */
double lbs_sim_nccl_allgather(const struct lbs_sim_net *net,
                              enum lbs_sim_algo a, enum lbs_sim_proto p,
                              double bytes, enum lbs_topo topo, long step,
                              double *wire)
{
    (void)topo; (void)step;
    double P = (double)net->P;
    struct nctx x = nctx_of(net);
    x.nsteps = net->P - 1;
    x.inter = net->N - 1;
    *wire = (P - 1) * bytes;
    return tuned_us(&x, a, p, bytes * P) * 1e-6;
}

/* Pipelined (ring) broadcast. */
double lbs_sim_nccl_bcast(const struct lbs_sim_net *net, enum lbs_sim_algo a,
                          enum lbs_sim_proto p, double bytes,
                          enum lbs_topo topo, long step, double *wire)
{
    (void)topo; (void)step;
    struct nctx x = nctx_of(net);
    x.bcast = 1;
    x.nsteps = net->P;
    x.inter = net->N;
    *wire = bytes;
    return tuned_us(&x, a, p, bytes) * 1e-6;
}

/* Barrier: frameworks run a one-element allreduce. */
double lbs_sim_nccl_barrier(const struct lbs_sim_net *net,
                            enum lbs_sim_algo a, enum lbs_sim_proto p,
                            double bytes, enum lbs_topo topo, long step,
                            double *wire)
{
    (void)a; (void)bytes; (void)topo; (void)step;
    struct nctx x = nctx_of(net);
    x.ar = 1;
    x.nsteps = 2 * (net->P - 1);
    x.inter = net->N > 1 ? 2 * net->N : 0;
    *wire = 0;
    return tuned_us(&x, LBS_SIM_AR_RING, p, 4) * 1e-6;
}

/* Alltoall as grouped point-to-point sends (p2p_us), Simple only. */
double lbs_sim_nccl_alltoall(const struct lbs_sim_net *net,
                             enum lbs_sim_algo a, enum lbs_sim_proto p,
                             double bytes, enum lbs_topo topo, long step,
                             double *wire)
{
    (void)a; (void)topo; (void)step;
    *wire = 0;
    if (p != LBS_SIM_SIMPLE)
        return INFINITY;
    double P = (double)net->P, g = (double)net->g;
    *wire = (P - 1) / P * bytes;
    struct p2p x = {(P - g) / P * bytes, g * (P - g) / P * bytes,
                    (g - 1) / P * bytes, net->P - net->g,
                    net->N > 1 ? net->sh_a2a : 1};
    return p2p_us(net, &x) * 1e-6;
}

/* Neighbour exchange as direct point-to-point sends (p2p_us) to the
 * graph's destinations (core's offsets), Simple only. */
double lbs_sim_nccl_neighbor(const struct lbs_sim_net *net,
                             enum lbs_sim_algo a, enum lbs_sim_proto p,
                             double bytes, enum lbs_topo topo, long step,
                             double *wire)
{
    (void)a;
    *wire = 0;
    if (p != LBS_SIM_SIMPLE)
        return INFINITY;
    long d[LBS_SIM_LOGMAX];
    int nd = lbs_sim_nb_offsets(topo, net->P, step, d);
    if (!nd)
        return INFINITY;
    struct p2p x = {0, 0, 0, 0, 1};
    long maxd = 1;
    /* the busiest rank: the node's last GPU, whose every offset >= 1
     * leaves the node when N > 1; the node: offset d takes min(|d|, g)
     * of its GPUs' messages off the node (coll.c's nb_direct counts the
     * same flows) */
    for (int i = 0; i < nd; i++) {
        long ad = d[i] < 0 ? -d[i] : d[i];
        int leaves = net->N > 1 && (d[i] % net->P) != 0;
        if (leaves && topo == LBS_TOPO_RING && i == 1 && net->g > 1)
            leaves = 0;     /* ring: one neighbour shares the node */
        x.gpu_off += leaves ? bytes : 0;
        x.on += leaves ? 0 : bytes;
        x.off_peers += leaves;
        if (net->N > 1 && (d[i] % net->P) != 0)
            x.node_off += bytes * (double)(ad < net->g ? ad : net->g);
        maxd = ad > maxd ? ad : maxd;
    }
    if (net->N > 1) {
        long dn = maxd / net->g;
        int lv = 0;
        while (dn > 1) {
            dn /= 2;
            lv++;
        }
        x.share = net->sh_shift[lv];
    }
    *wire = bytes * nd;
    return p2p_us(net, &x) * 1e-6;
}

/* The channels NCCL would run algorithm a with on net (its graph's), and
 * NCCL's own number for the algorithm (src/include/nccl_common.h: tree 0,
 * ring 1, NVLS 4, NVLS_TREE 5; -1 for the point-to-point sends, which NCCL
 * does not tune). */
int lbs_sim_nccl_channels(const struct lbs_sim_net *net, enum lbs_sim_algo a,
                          int *nccl_algo)
{
    const struct lbs_sim_nccl *n = &net->pl->nccl;
    int ch = net->N == 1 ? n->intra.channels : n->inter.channels;
    switch (a) {
    case LBS_SIM_AR_TREE: *nccl_algo = 0; return ch;
    case LBS_SIM_AR_NVLS:
    case LBS_SIM_AG_NVLS: *nccl_algo = 4; return n->nvls.channels;
    case LBS_SIM_AR_NVLS_TREE: *nccl_algo = 5; return n->nvls.channels;
    case LBS_SIM_A2A_PAIRWISE:
    case LBS_SIM_NB_DIRECT: *nccl_algo = -1; return n->inter.channels;
    default: *nccl_algo = 1; return ch;
    }
}
