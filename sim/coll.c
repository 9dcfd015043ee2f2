/* coll.c - alpha-beta cost models of the collectives, one function per
 * algorithm, and the per-call choice of the fastest (algorithm, protocol).
 *
 * Notation (per call): P GPUs = N nodes x g GPUs (g = min(P, GPUs per
 * node)); n the payload in the trace-v1 convention; for protocol p
 * (NCCL's LL, LL128, Simple):
 *   a0 = base latency (once per call), ai = intra-node step latency,
 *   an = inter-node step latency + fabric.lat_us, f = bandwidth factor;
 *   Bi = f x intra_bw (per GPU), Bn = f x NICs x NIC rate (per node),
 *   Bg = Bn / g (one rail's share), Bgpu = f x max(Bg, NIC rate) (what a
 *   GPU reaches when it is the only one of its node sending).
 * Every formula is latency terms + bytes / bandwidth; the bandwidth of an
 * inter-node phase is further multiplied by its link-sharing factor
 * sh <= 1 (below).  Sources:
 *   [T05] Thakur, Rabenseifner, Gropp, "Optimization of collective
 *         communication operations in MPICH", IJHPCA 2005 (ring, recursive
 *         halving-doubling, recursive doubling, Bruck, pairwise, binomial).
 *   [C07] Chan et al., "Collective communication: theory, practice, and
 *         experience", CCPE 2007 (alpha-beta lower bounds).
 *   [S09] Sanders, Speck, Traeff, "Two-tree algorithms for full bandwidth
 *         broadcast, reduction and scan", Parallel Computing 2009 (the
 *         double binary tree NCCL 2.4 adopted).
 *   [B97] Bruck et al., "Efficient algorithms for all-to-all
 *         communications in multiport message-passing systems", 1997.
 *   [NCCL] NCCL 2.8 src/graph/tuning.cc: latency = baseLat + intra steps x
 *         hwLat(NVLink) + inter steps x hwLat(NET); ring allreduce has
 *         2(P-1) steps (of which NCCL counts 2(N-1) across nodes; see
 *         ar_ring for the count used here); tree allreduce
 *         2((g-1) intra + log2 N inter); protocol bandwidth factors.
 *         Its busBw of a ring over nodes = channels x NIC speed, i.e. the
 *         node's aggregate NIC bandwidth, which is our Bn.
 *   [H18] Jia et al. 2018 / Horovod hierarchical allreduce: intra-node
 *         reduce-scatter, inter-node allreduce per rail, intra allgather.
 *
 * Link sharing on the fabric.  Flows that cross a node's NICs share Bn
 * (hence Bg per rail when all g GPUs send).  On a fat-tree, a leaf switch
 * holds L nodes and its uplinks carry L Bn / r (r = oversubscription);
 * when c flows of a leaf each wanting Bn leave it at once, each gets
 * min(1, (L/r)/c) of Bn.  c is counted exactly per leaf for the exchange
 * pattern of a step (XOR partners for recursive halving/doubling, shifts
 * for rings and Bruck), and taken as 2 per tree (a leaf holds a contiguous
 * piece of each binary tree, whose boundary is ~2 edges); alltoall sends
 * (N-L)/(N-1) of every node's traffic out of its leaf.  Above the leaves
 * the fabric has full bisection.  This is the flow-level "share the
 * bottleneck link" model (max-min fairness with one bottleneck), not a
 * packet simulation.
 *
 * Cost is O(1) per call for ring/tree/hier/pairwise and O(log P) for the
 * step-wise algorithms: never worse than O(P log P) per collective.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "sim_internal.h"

static const char *const coll_names[LBS_SIM_NCOLL] = {
    "allreduce", "allgather", "allgatherv", "alltoall", "bcast", "barrier",
    "neighbor"};
static const char *const algo_names[LBS_SIM_NALGO] = {
    "ring", "tree", "rhd", "hier", "allgather-ring", "allgather-rd",
    "allgather-bruck", "alltoall-pairwise", "alltoall-bruck",
    "bcast-pipeline", "bcast-binomial", "barrier-dissemination",
    "neighbor-direct", "nvls"};
static const enum lbs_sim_coll algo_colls[LBS_SIM_NALGO] = {
    LBS_SIM_ALLREDUCE, LBS_SIM_ALLREDUCE, LBS_SIM_ALLREDUCE,
    LBS_SIM_ALLREDUCE, LBS_SIM_ALLGATHER, LBS_SIM_ALLGATHER,
    LBS_SIM_ALLGATHER, LBS_SIM_ALLTOALL, LBS_SIM_ALLTOALL, LBS_SIM_BCAST,
    LBS_SIM_BCAST, LBS_SIM_BARRIER, LBS_SIM_NEIGHBOR, LBS_SIM_ALLREDUCE};
static const char *const proto_names[LBS_SIM_NPROTO] = {"LL", "LL128",
                                                        "Simple"};

const char *lbs_sim_coll_name(enum lbs_sim_coll c)
{
    return (unsigned)c < LBS_SIM_NCOLL ? coll_names[c] : "?";
}

int lbs_sim_coll_from_name(const char *s)
{
    for (int i = 0; i < LBS_SIM_NCOLL; i++)
        if (!strcmp(s, coll_names[i]))
            return i;
    return -1;
}

const char *lbs_sim_algo_name(enum lbs_sim_algo a)
{
    return (unsigned)a < LBS_SIM_NALGO ? algo_names[a] : "?";
}

int lbs_sim_algo_from_name(const char *s)
{
    for (int i = 0; i < LBS_SIM_NALGO; i++)
        if (!strcmp(s, algo_names[i]))
            return i;
    return -1;
}

enum lbs_sim_coll lbs_sim_algo_coll(enum lbs_sim_algo a)
{
    return (unsigned)a < LBS_SIM_NALGO ? algo_colls[a] : LBS_SIM_NCOLL;
}

const char *lbs_sim_proto_name(enum lbs_sim_proto p)
{
    return (unsigned)p < LBS_SIM_NPROTO ? proto_names[p] : "?";
}

static int ilog2(long x)          /* floor, x >= 1 */
{
    int k = 0;
    while (x >>= 1)
        k++;
    return k;
}

static int clog2(long x)          /* ceil, x >= 1 */
{
    int k = ilog2(x);
    return ((long)1 << k) < x ? k + 1 : k;
}

static int is_pow2(long x)
{
    return x > 0 && (x & (x - 1)) == 0;
}

/* ---- link sharing ---------------------------------------------------- */

/* Worst leaf's share for a pattern partner(i) over N nodes, leaves of L. */
static double leaf_share(long N, long L, double r, long d, int xor)
{
    if (N <= L)
        return 1.0;
    if (N > 65536) {            /* closed form: keeps init O(log N) */
        long c = xor ? (d >= L ? L : 0) : (d < L ? d : L);
        return c ? fmin(1.0, ((double)L / r) / (double)c) : 1.0;
    }
    double worst = 1.0;
    for (long b = 0; b < N; b += L) {
        long e = b + L < N ? b + L : N, c = 0;
        if (xor) {
            for (long i = b; i < e; i++) {
                long j = i ^ d;
                c += j < N && (j < b || j >= e);
            }
        } else {
            /* i + d leaves [b, e) unless it wraps back into it */
            for (long i = b; i < e; i++) {
                long j = i + d >= N ? i + d - N : i + d;
                c += j < b || j >= e;
            }
        }
        if (c)
            worst = fmin(worst, ((double)L / r) / (double)c);
    }
    return worst;
}

int lbs_sim_net_init(struct lbs_sim_net *net,
                     const struct lbs_sim_platform *pl, long P,
                     struct lbs_err *err)
{
    memset(net, 0, sizeof *net);
    if (P < 1)
        return lbs_err_set(err, -EINVAL, "%s: %ld GPUs: need at least 1",
                           pl->name, P);
    if (P > pl->max_gpus)
        return lbs_err_set(err, -EINVAL, "%s: %ld GPUs: the platform "
                           "describes at most %ld (max_gpus)", pl->name, P,
                           pl->max_gpus);
    long gpn = pl->gpus_per_node;
    if (P > gpn && P % gpn)
        return lbs_err_set(err, -EINVAL, "%s: %ld GPUs is not a multiple of "
                           "%ld GPUs per node", pl->name, P, gpn);
    net->pl = pl;
    net->P = P;
    net->g = P < gpn ? P : gpn;
    net->N = P / net->g;
    net->Bi = pl->intra_bw;
    net->Bn = pl->nics_per_node * pl->nic_bw;
    net->Bg = net->Bn / (double)net->g;
    net->gpu_nic = fmax(net->Bg, pl->nic_bw);
    long N = net->N;
    long L = pl->fabric == LBS_SIM_FAT_TREE ? pl->nodes_per_leaf : N;
    double r = pl->fabric == LBS_SIM_FAT_TREE ? pl->oversub : 1.0;
    net->sh_ring = leaf_share(N, L, r, 1, 0);
    net->sh_tree = N <= L ? 1.0 : fmin(1.0, ((double)L / r) / 2.0);
    net->sh_a2a = N <= L ? 1.0
                         : fmin(1.0, (double)(N - 1) / (r * (double)(N - L)));
    for (int k = 0; k < LBS_SIM_LOGMAX; k++) {
        long d = (long)1 << k;
        net->sh_xor[k] = d < N ? leaf_share(N, L, r, d, 1) : 1.0;
        net->sh_shift[k] = d < N ? leaf_share(N, L, r, d, 0) : 1.0;
    }
    return 0;
}

/* ---- the algorithms ---------------------------------------------------- */

struct ctx {
    const struct lbs_sim_net *net;
    long P, g, N;
    double a0, ai, an, Bi, Bn, Bg, Bgpu, mem;
};

/* Allreduce, ring [T05][NCCL]: reduce-scatter + allgather around one ring
 * of all P GPUs.  N = 1: a0 + 2(g-1) ai + 2(g-1)/g n / Bi.  N > 1:
 * a0 + (2(P-1) - h) ai + h an + 2(P-1)/P n / min(Bi, Bn sh_ring): the
 * ring's channels spread over the node's NICs, so the inter-node edge of
 * the ring moves at the node's aggregate rate.  h counts the inter-node
 * hops on the slowest chain of 2(P-1) consecutive hops of the pipelined
 * ring: 2N when g >= 3, 2N-1 at g = 2, 2(N-1) at g = 1.  (NCCL 2.8's
 * tuner counts 2(N-1); SimGrid's block-by-block ring, sim/xcheck, agrees
 * with h to 0.5% in the latency-bound cases, against 17% for 2(N-1).) */
static double ar_ring(const struct ctx *c, double n, double *w)
{
    double P = (double)c->P;
    *w = 2 * (P - 1) / P * n;
    if (c->N == 1)
        return c->a0 + 2 * (double)(c->g - 1) * c->ai + *w / c->Bi;
    long inter = 2 * c->N - (c->g >= 3 ? 0 : 3 - c->g);
    return c->a0 + (double)(2 * (c->P - 1) - inter) * c->ai +
           (double)inter * c->an +
           *w / fmin(c->Bi, c->Bn * c->net->sh_ring);
}

/* Allreduce, double binary tree [S09][NCCL]: a chain inside each node and
 * two complementary binary trees over the nodes, each carrying n/2,
 * pipelined: a0 + 2((g-1) ai + ceil(log2 N) an) + 2 n / min(Bi, Bn
 * sh_tree) (every node sends and receives ~2n: n/2 up and down as an
 * inner node of one tree, plus its leaf role in the other). */
static double ar_tree(const struct ctx *c, double n, double *w)
{
    *w = 2 * n;
    double B = c->N == 1 ? c->Bi : fmin(c->Bi, c->Bn * c->net->sh_tree);
    return c->a0 + 2 * ((double)(c->g - 1) * c->ai +
                        (double)clog2(c->N) * c->an) + 2 * n / B;
}

/* Allreduce, recursive halving-doubling (Rabenseifner) [T05]: reduce-
 * scatter by recursive halving, allgather by recursive doubling; the
 * hypercube dimensions run intra-node first, then nodes at distance
 * 1, 2, 4, ...; step j moves half of what is left.
 *   2 [log2 g ai + (g-1)/g n / Bi]
 *   + 2 sum_{j=1..log2 N} [an + (n/g) 2^-j / (Bg sh_xor(2^(j-1)))]
 * Non-power-of-two counts fold the excess first and unfold at the end
 * [T05]: + 2 (a + shard / B) at that level. */
static double ar_rhd(const struct ctx *c, double n, double *w)
{
    long g2 = (long)1 << ilog2(c->g), N2 = (long)1 << ilog2(c->N);
    double t = c->a0, P = (double)c->P;
    *w = 2 * (P - 1) / P * n;
    if (g2 != c->g)
        t += 2 * (c->ai + n / c->Bi);
    t += 2 * ((double)ilog2(g2) * c->ai + (double)(g2 - 1) / (double)g2 *
              n / c->Bi);
    double shard = n / (double)g2, Bg = c->Bn / (double)g2;
    if (N2 != c->N)
        t += 2 * (c->an + shard / (Bg * c->net->sh_shift[0]));
    for (int j = 1; j <= ilog2(N2); j++)
        t += 2 * (c->an + shard / (double)((long)1 << j) /
                  (Bg * c->net->sh_xor[j - 1]));
    return t;
}

/* Allreduce, hierarchical two-level [H18]: ring reduce-scatter inside the
 * node, ring allreduce of each GPU's n/g shard across the N nodes on its
 * own rail (g rails in parallel), ring allgather inside the node:
 *   a0 + 2(g-1) ai + 2(g-1)/g n/Bi + 2(N-1) an + 2(N-1)/N (n/g)/(Bg sh_ring).
 * Single node: not applicable (it is the ring). */
static double ar_hier(const struct ctx *c, double n, double *w)
{
    if (c->N == 1)
        return INFINITY;
    double g = (double)c->g, N = (double)c->N;
    *w = 2 * (g - 1) / g * n + 2 * (N - 1) / N * n / g;
    return c->a0 + 2 * (g - 1) * c->ai + 2 * (g - 1) / g * n / c->Bi +
           2 * (N - 1) * c->an +
           2 * (N - 1) / N * (n / g) / (c->Bg * c->net->sh_ring);
}

/* Allgather, ring [T05]: P-1 steps each forwarding one block of m:
 *   a0 + (P-1-h) ai + h an + (P-1) m / min(Bi, Bn sh_ring)  (N = 1:
 *   a0 + (g-1) ai + (g-1) m / Bi), h = N inter-node hops on a chain of
 *   P-1 consecutive ones when g >= 2, N-1 at g = 1 (as for ar_ring). */
static double ag_ring(const struct ctx *c, double m, double *w)
{
    *w = (double)(c->P - 1) * m;
    if (c->N == 1)
        return c->a0 + (double)(c->g - 1) * c->ai + *w / c->Bi;
    long inter = c->g >= 2 ? c->N : c->N - 1;
    return c->a0 + (double)(c->P - 1 - inter) * c->ai +
           (double)inter * c->an +
           *w / fmin(c->Bi, c->Bn * c->net->sh_ring);
}

/* Allgather, recursive doubling [T05] (P a power of two), nodes first so
 * that data from other nodes enters each node once per rail:
 *   a0 + log2 N an + sum_{j<log2 N} m 2^j / (Bg sh_xor(2^j))
 *      + log2 g ai + (g-1) N m / Bi. */
static double ag_rd(const struct ctx *c, double m, double *w)
{
    if (!is_pow2(c->P) || !is_pow2(c->g))
        return INFINITY;
    *w = (double)(c->P - 1) * m;
    double t = c->a0 + (double)ilog2(c->g) * c->ai +
               (double)(c->g - 1) * (double)c->N * m / c->Bi;
    for (int j = 0; j < ilog2(c->N); j++)
        t += c->an + m * (double)((long)1 << j) / (c->Bg * c->net->sh_xor[j]);
    return t;
}

/* One step of a shift-by-s pattern over all P ranks moving `bytes` per
 * rank (Bruck allgather/alltoall rounds, [B97]): intra-node when N = 1;
 * otherwise min(s, g) GPUs of each node send off-node, each at
 * min(Bgpu, Bn / min(s, g)) times the fat-tree share of node distance
 * max(1, s/g); the step takes as long as its slowest flow. */
static double shift_step(const struct ctx *c, long s, double bytes)
{
    if (c->N == 1)
        return c->ai + bytes / c->Bi;
    long k = s < c->g ? s : c->g;
    long dn = s / c->g;
    double sh = c->net->sh_shift[dn > 1 ? ilog2(dn) : 0];
    double B = fmin(c->Bgpu, c->Bn / (double)k) * sh;
    double intra = s < c->g ? bytes / c->Bi : 0;
    return c->an + fmax(bytes / B, intra);
}

/* Allgather, Bruck [B97][T05]: ceil(log2 P) rounds, round k sends
 * min(2^k, P-2^k) blocks to rank - 2^k; any P; plus a final local
 * rotation of P m bytes (read + write at device memory bandwidth). */
static double ag_bruck(const struct ctx *c, double m, double *w)
{
    double t = c->a0 + 2 * (double)c->P * m / c->mem;
    *w = (double)(c->P - 1) * m;
    for (int k = 0; k < clog2(c->P); k++) {
        long s = (long)1 << k, blocks = s < c->P - s ? s : c->P - s;
        t += shift_step(c, s, (double)blocks * m);
    }
    return t;
}

/* Alltoall, pairwise exchange [T05]: P-1 steps, block S/P each:
 *   a0 + (g-1) ai + (P-g) an
 *      + max((g-1)/P S / Bi, (P-g)/P S / (Bg sh_a2a)). */
static double a2a_pairwise(const struct ctx *c, double S, double *w)
{
    double P = (double)c->P, g = (double)c->g;
    *w = (P - 1) / P * S;
    double t = c->a0 + (g - 1) * c->ai + (P - g) * c->an;
    double intra = (g - 1) / P * S / c->Bi;
    double inter = c->N > 1 ? (P - g) / P * S / (c->Bg * c->net->sh_a2a) : 0;
    return t + fmax(intra, inter);
}

/* Alltoall, Bruck [B97][T05]: ceil(log2 P) rounds; round k sends the
 * blocks whose index has bit k set (about half of S) to rank + 2^k; two
 * local rotations of S (read + write each). */
static double a2a_bruck(const struct ctx *c, double S, double *w)
{
    double t = c->a0 + 4 * S / c->mem, blk = S / (double)c->P;
    *w = 0;
    for (int k = 0; k < clog2(c->P); k++) {
        long s = (long)1 << k, P = c->P;
        long rem = P % (2 * s);
        long cnt = (P >> (k + 1)) * s + (rem > s ? rem - s : 0);
        t += shift_step(c, s, (double)cnt * blk);
        *w += (double)cnt * blk;
    }
    return t;
}

/* Broadcast, pipelined chain (NCCL ring broadcast): fill latency of the
 * chain, then the whole message at the ring's rate:
 *   a0 + (P-N) ai + (N-1) an + n / min(Bi, Bn sh_ring). */
static double bc_pipeline(const struct ctx *c, double n, double *w)
{
    *w = n;
    if (c->N == 1)
        return c->a0 + (double)(c->g - 1) * c->ai + n / c->Bi;
    return c->a0 + (double)(c->P - c->N) * c->ai +
           (double)(c->N - 1) * c->an +
           n / fmin(c->Bi, c->Bn * c->net->sh_ring);
}

/* Broadcast, binomial tree [T05], nodes first: ceil(log2 N) inter rounds
 * (one GPU per node sends, at Bgpu x sh_xor) and ceil(log2 g) intra rounds,
 * each moving the whole message. */
static double bc_binomial(const struct ctx *c, double n, double *w)
{
    double t = c->a0;
    *w = n * (double)clog2(c->P);
    for (int j = 0; j < clog2(c->N); j++)
        t += c->an + n / (c->Bgpu * c->net->sh_xor[j]);
    t += (double)clog2(c->g) * (c->ai + n / c->Bi);
    return t;
}

/* Barrier, dissemination [T05]: ceil(log2 P) rounds of empty messages;
 * across nodes every round has an off-node partner for some rank. */
static double bar_dissem(const struct ctx *c, double n, double *w)
{
    (void)n;
    *w = 0;
    return c->a0 + (double)clog2(c->P) * (c->N > 1 ? c->an : c->ai);
}

/* Neighbour exchange, direct sends to every neighbour at once.  Graphs
 * (trace params): ring (ranks +-1), static exponential (rank + 2^t,
 * t < ceil(log2 P)), one-peer exponential (rank + 2^((step-1) mod
 * ceil(log2 P)))).  The busiest rank (the node's last GPU) sends every
 * message off-node when N > 1 (the ring: one of its two).  Time:
 *   a0 + hop + max(intra bytes / Bi, off-node bytes / Bgpu,
 *                  node's off-node bytes / (Bn sh))
 * where the node's off-node flows are sum_d min(d, g) (ring: 2). */
static double nb_direct(const struct ctx *c, double b, enum lbs_sim_topo topo,
                        long step, double *w)
{
    long d[LBS_SIM_LOGMAX];
    int nd = 0;
    long maxd = 1;
    switch (topo) {
    case LBS_SIM_TOPO_RING:
        d[nd++] = 1;
        d[nd++] = 1;
        break;
    case LBS_SIM_TOPO_EXP:
        for (int t = 0; t < clog2(c->P) && nd < LBS_SIM_LOGMAX; t++)
            d[nd++] = (long)1 << t;
        break;
    case LBS_SIM_TOPO_ONEPEER: {
        int L = clog2(c->P);
        d[nd++] = (long)1 << (int)((step > 0 ? step - 1 : 0) % (L ? L : 1));
        break;
    }
    default:
        return INFINITY;
    }
    *w = b * nd;
    if (c->N == 1)
        return c->a0 + c->ai + b * nd / c->Bi;
    double flows = 0;
    for (int i = 0; i < nd; i++) {
        flows += (double)(d[i] < c->g ? d[i] : c->g);
        if (d[i] > maxd)
            maxd = d[i];
    }
    int inter_msgs = topo == LBS_SIM_TOPO_RING ? 1 : nd;
    int intra_msgs = nd - inter_msgs;
    long dn = maxd / c->g;
    double sh = c->net->sh_shift[dn > 1 ? ilog2(dn) : 0];
    double t = fmax(b * intra_msgs / c->Bi, b * inter_msgs / c->Bgpu);
    t = fmax(t, b * flows / (c->Bn * sh));
    return c->a0 + c->an + t;
}

double lbs_sim_step_bytes(enum lbs_sim_coll c, long P, double bytes)
{
    switch (c) {
    case LBS_SIM_ALLREDUCE:
    case LBS_SIM_ALLTOALL: return bytes / (double)(P > 0 ? P : 1);
    case LBS_SIM_BARRIER: return 0;
    default: return bytes;
    }
}

double lbs_sim_algo_time(const struct lbs_sim_net *net, enum lbs_sim_algo a,
                         enum lbs_sim_proto p, double bytes,
                         enum lbs_sim_topo topo, long step, double *wire)
{
    const struct lbs_sim_platform *pl = net->pl;
    double w = 0;
    if ((unsigned)a >= LBS_SIM_NALGO || (unsigned)p >= LBS_SIM_NPROTO ||
        !pl->proto[p].enabled || !(pl->algos >> a & 1))
        return INFINITY;
    if (wire)
        *wire = 0;
    if (net->P == 1)
        return 0;
    if (pl->nccl_model) {
        double t = lbs_sim_nccl_time(net, a, p, bytes, topo, step, &w);
        if (wire)
            *wire = w;
        return t;
    }
    const struct lbs_sim_proto_params *pp = &pl->proto[p];
    if (pp->max_bytes > 0 &&
        lbs_sim_step_bytes(algo_colls[a], net->P, bytes) > pp->max_bytes)
        return INFINITY;
    double f = pp->bw_factor * pl->coll_bw[algo_colls[a]];
    struct ctx c = {net, net->P, net->g, net->N, pp->base_lat, pp->intra_hop,
                    pp->inter_hop + pl->net_lat, f * net->Bi, f * net->Bn,
                    f * net->Bg, f * net->gpu_nic, pl->mem_bw};
    double t;
    switch (a) {
    case LBS_SIM_AR_RING: t = ar_ring(&c, bytes, &w); break;
    case LBS_SIM_AR_TREE: t = ar_tree(&c, bytes, &w); break;
    case LBS_SIM_AR_RHD: t = ar_rhd(&c, bytes, &w); break;
    case LBS_SIM_AR_HIER: t = ar_hier(&c, bytes, &w); break;
    case LBS_SIM_AG_RING: t = ag_ring(&c, bytes, &w); break;
    case LBS_SIM_AG_RD: t = ag_rd(&c, bytes, &w); break;
    case LBS_SIM_AG_BRUCK: t = ag_bruck(&c, bytes, &w); break;
    case LBS_SIM_A2A_PAIRWISE: t = a2a_pairwise(&c, bytes, &w); break;
    case LBS_SIM_A2A_BRUCK: t = a2a_bruck(&c, bytes, &w); break;
    case LBS_SIM_BC_PIPELINE: t = bc_pipeline(&c, bytes, &w); break;
    case LBS_SIM_BC_BINOMIAL: t = bc_binomial(&c, bytes, &w); break;
    case LBS_SIM_BAR_DISSEM: t = bar_dissem(&c, bytes, &w); break;
    case LBS_SIM_NB_DIRECT: t = nb_direct(&c, bytes, topo, step, &w); break;
    default: t = INFINITY;
    }
    if (algo_colls[a] == LBS_SIM_ALLREDUCE && pl->reduce_bw > 0)
        t += (double)(net->P - 1) / (double)net->P * bytes / pl->reduce_bw;
    if (wire)
        *wire = w;
    return t;
}

struct lbs_sim_cost lbs_sim_coll_cost(const struct lbs_sim_net *net,
                                      enum lbs_sim_coll coll, double bytes,
                                      enum lbs_sim_topo topo, long step)
{
    struct lbs_sim_cost best = {INFINITY, LBS_SIM_NALGO, LBS_SIM_SIMPLE, 0};
    enum lbs_sim_coll k = coll;
    if (k == LBS_SIM_ALLGATHERV ||
        (k == LBS_SIM_NEIGHBOR && topo == LBS_SIM_TOPO_FULL))
        k = LBS_SIM_ALLGATHER;   /* balanced parts; full graph = allgather */
    for (int a = 0; a < LBS_SIM_NALGO; a++) {
        if (algo_colls[a] != k)
            continue;
        for (int p = 0; p < LBS_SIM_NPROTO; p++) {
            double w;
            double t = lbs_sim_algo_time(net, a, p, bytes, topo, step, &w);
            if (t < best.t)
                best = (struct lbs_sim_cost){t, a, p, w};
        }
    }
    return best;
}
