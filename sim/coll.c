/* coll.c - alpha-beta cost models of the collectives, one function per
 * algorithm, the table of algorithms (algos[] at the end, made from the
 * rows of sim/algos.h: name, collective, cost functions, constraints) and
 * the per-call choice of the fastest (algorithm, protocol).  Adding an
 * algorithm is one row in sim/algos.h and its cost function here.
 *
 * Notation (per call): P GPUs = N nodes x g GPUs (g = min(P, GPUs per
 * node)); n the payload in the trace-v1 convention; for protocol p
 * (NCCL's LL, LL128, Simple):
 *   a0 = base latency (once per call), ai = intra-node step latency,
 *   an = inter-node step latency + fabric.lat_us for a step that stays
 *   under one leaf switch, as = inter-node step latency +
 *   fabric.lat_spine_us for one that crosses the spine (a fat-tree step
 *   pays as when any of its flows leaves its leaf: the step lasts as long
 *   as its slowest flow; see "Latency per fabric level" below),
 *   f = bandwidth factor;
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
 * Latency per fabric level.  On a fat-tree a path under one leaf crosses
 * two links and one switch, a path across the spine four links and three
 * switches: fabric.lat_us and fabric.lat_spine_us.  Which steps cross the
 * spine is counted per pattern with the same leaf layout as the sharing:
 * XOR partners at node distance 2^k (recursive halving/doubling, binomial
 * trees) only when some pair lies in two leaves (2^k >= L for a power-of-
 * two L), shifts (rings, Bruck, dissemination, pairwise, neighbours) at
 * every distance once N > L, NCCL's double binary tree per level
 * (src/graph/trees.cc, ncclGetBtree/ncclGetDtree), and a ring over N
 * nodes leaves its leaf ceil(N/L) times per round (as sim/nccl.c counts).
 *
 * The ring allreduce and allgather are priced by the critical path of the
 * pipelined ring (ring_crit below), not by the alpha-beta sum: where the
 * hops differ (NVLink and NIC hops, in-leaf and leaf-crossing ones) the
 * fast hops' latencies overlap the slow hop's transfers, as SimGrid's
 * block-by-block ring shows (sim/README.md, the cross-check section).
 *
 * Cost is O(1) per call for ring/tree/hier/pairwise and O(log P) for the
 * step-wise algorithms: never worse than O(P log P) per collective.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "sim_internal.h"

static const char *const proto_names[LBS_SIM_NPROTO] = {"LL", "LL128",
                                                        "Simple"};

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

/* Worst leaf's share for a pattern partner(i) over N nodes, leaves of L;
 * *cross = 1 when some flow of the pattern leaves its leaf (the step pays
 * the spine's latency). */
static double leaf_share(long N, long L, double r, long d, int xor,
                         unsigned char *cross)
{
    *cross = 0;
    if (N <= L)
        return 1.0;
    if (N > 65536) {            /* closed form: keeps init O(log N) */
        long c = xor ? (d >= L ? L : 0) : (d < L ? d : L);
        *cross = c > 0;
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
        if (c) {
            worst = fmin(worst, ((double)L / r) / (double)c);
            *cross = 1;
        }
    }
    return worst;
}

/* NCCL's binary tree over n ranks (src/graph/trees.cc, ncclGetBtree): the
 * parent of rank r > 0, whose lowest set bit is its level. */
static long btree_up(long n, long r)
{
    long bit = r & -r;
    long up = (r ^ bit) | (bit << 1);
    return up >= n ? r ^ bit : up;
}

/* Levels (of ceil(log2 N)) of NCCL's double binary tree over N nodes with
 * an edge between two leaves.  The second tree is the first mirrored
 * (N even) or shifted by one (N odd) (ncclGetDtree).  Above 65536 nodes
 * the power-of-two answer: level k's edges join blocks of 2^(k+1) nodes,
 * so they leave a leaf when 2^(k+1) >= L. */
static int tree_spine_levels(long N, long L)
{
    if (N <= L)
        return 0;
    int levels = clog2(N), n = 0;
    if (N > 65536) {
        for (int k = 0; k < levels; k++)
            n += ((long)2 << k) >= L;
        return n;
    }
    unsigned long long cross = 0;   /* bit k: level k crosses */
    for (long r = 1; r < N; r++) {
        long up = btree_up(N, r);
        long r2 = N % 2 ? (r + 1) % N : N - 1 - r;
        long up2 = N % 2 ? (up + 1) % N : N - 1 - up;
        if (r / L != up / L || r2 / L != up2 / L)
            cross |= 1ull << ilog2(r & -r);
    }
    for (int k = 0; k < levels; k++)
        n += (int)(cross >> k & 1);
    return n;
}

/* ---- the pipelined ring's critical path -------------------------------- */

/* How one channel of the ring moves its blocks (NCCL's ring, and what
 * sim/xcheck runs in SimGrid): rank r sends block s when its block s-1 has
 * left and block s-1 has arrived from the left.  With t_r the time a block
 * takes on r's outgoing hop (at its steady share of the links) and l_r that
 * hop's latency, the time X[r][s] block s has left r is
 *   X[r][0] = t_r,  X[r][s] = max(X[r][s-1], X[r-1][s-1] + l_{r-1}) + t_r,
 * and the collective ends at max_r X[r][S-1] + l_r (S steps; the recursion
 * SimGrid's times follow, sim/README.md).  Unrolled, that is the longest
 * path through a grid in which a path stays at a rank (+ t) or moves on
 * (+ l + t):
 *   T = max over windows of k+1 <= S consecutive hops of
 *       sum (t + l) over the window + (S-1-k) max t in the window
 * (the extra steps wait on the window's slowest hop).  The alpha-beta sum
 * (the latencies of the slowest chain of S hops + S times the slowest
 * hop's t) bounds it from above; where every hop is alike the two agree.
 *
 * Evaluation.  With u = t + l - t_h for a hop kind h in the window,
 * T = max over kinds h of [S t_h + max over windows holding h of sum u].
 * The ring of one channel is, node by node, g-1 intra-node hops (kind i)
 * and the hop out of the node (kind n, or s when it leaves its leaf: after
 * the last node of every leaf of L nodes and after node N-1).  A window's
 * sum only depends on how many hops of each kind it holds: E node exits,
 * c_s of them spine hops, c_i intra-node hops, where any c_i in
 * [(E-1)(g-1), (E+1)(g-1)] (E = 0: [1, g-1]) and any c_s up to smax(E),
 * the most spine hops among E consecutive exits, is a window.  The sum is
 * linear in c_i and grows with c_s (u_s >= u_n: a spine hop is neither
 * faster nor shorter than an in-leaf one), so c_i sits at an end of its
 * range and c_s = smax(E).  Over E that leaves a piecewise-linear function
 * (two pieces, from c_i's range and the length cap S) plus a staircase
 * (smax) that steps every L exits, with one irregular step per round when
 * L does not divide N.  On each stretch where both are regular the maximum
 * is at a stretch end or at the first or last step, so a fixed handful of
 * E decides it (ring_cands, at most RING_CANDS):
 * O(hop kinds x candidates) per call instead of O(S P) for the recursion,
 * which tests/test_sim.c checks it against. */

struct hop {
    double t, l;        /* s per block at the steady share; latency, s */
};

struct ring_shape {
    long g, N, L, S;    /* GPUs per node, nodes, nodes per leaf, steps */
    long q, rho, ns;    /* N = q L + rho; spine hops per round (0: none) */
};

#define RING_CANDS LBS_SIM_RING_CANDS  /* ring_cands adds at most
                                         4+1+3+6+2x5 = 24 */

/* floor(a / b), b > 0 */
static long floor_div(long a, long b)
{
    return a >= 0 ? a / b : -((-a + b - 1) / b);
}

/* The most spine hops among E consecutive node exits.  Round by round the
 * spine hops follow each other at distances L (q times) and rho (once,
 * when rho > 0); a window that starts at the spine hop before the short
 * gap meets them soonest: offsets 0, rho, rho + L, ..., then N later. */
static long ring_smax(const struct ring_shape *r, long E)
{
    if (E <= 0 || !r->ns)
        return 0;
    long m = (E - 1) / r->N, e = (E - 1) % r->N, k;
    if (!r->rho)
        k = 1 + e / r->L;
    else
        k = e >= r->rho ? 2 + (e - r->rho) / r->L : 1;
    return m * r->ns + k;
}

/* Add E = e to the candidates with its range of intra-node hops and its
 * most spine hops, unless no window has that shape. */
static void add_cand(const struct ring_shape *r, struct lbs_sim_ring_cand *c,
                     int *n, long e, long emax)
{
    long lo, hi;
    if (e < 0 || e > emax || *n >= RING_CANDS)
        return;
    if (e == 0) {               /* inside one node's run of NVLink hops */
        lo = 1;
        hi = r->g - 1 < r->S ? r->g - 1 : r->S;
    } else {
        lo = (e - 1) * (r->g - 1);
        hi = (e + 1) * (r->g - 1);
        if (hi > r->S - e)
            hi = r->S - e;
    }
    if (lo <= hi)
        c[(*n)++] = (struct lbs_sim_ring_cand){e, lo, hi, ring_smax(r, e)};
}

/* The E (node exits in the window) that can hold the maximum: 0..3 (where
 * a kind's constraint bends the formulas), the largest E, both sides of
 * c_i's kink Ec, both sides of every round start 1 + mN (smax's irregular
 * step), and on each stretch between those the first and last regular
 * step of smax (at 1 + mN + rho + kL, k < q).  Why these suffice: on a
 * stretch the function is a + b E + delta smax(E) with delta >= 0.  If
 * b >= 0 it grows along each flat of the staircase and from one flat's
 * end to the next, so the stretch's last E wins; if b < 0 each flat's
 * first E beats the rest of the flat, and those first E (the steps) form
 * an arithmetic sequence of values, whose maximum is at its first or last
 * step, or the stretch's first E. */
static int ring_cands(const struct ring_shape *r,
                      struct lbs_sim_ring_cand *E)
{
    long g = r->g, N = r->N, L = r->L;
    long emax = (r->S + g - 1) / g;     /* (E-1)(g-1) + E <= S */
    long ec = (r->S - g + 1) / g;       /* last E with (E+1)(g-1) <= S-E */
    long bp[8];
    int n = 0, nb = 0;
    for (long e = 0; e <= 3; e++)
        add_cand(r, E, &n, e, emax);
    add_cand(r, E, &n, emax, emax);
    for (long e = ec - 1; e <= ec + 1; e++)
        add_cand(r, E, &n, e, emax);
    bp[nb++] = 3;
    bp[nb++] = ec + 1;
    for (long m = 0; m < 3 && 1 + m * N <= emax + 1; m++) {
        add_cand(r, E, &n, m * N, emax);
        add_cand(r, E, &n, 1 + m * N, emax);
        bp[nb++] = 1 + m * N;
    }
    bp[nb++] = emax + 1;
    if (!r->ns)
        return n;
    for (int i = 1; i < nb; i++)        /* insertion sort, nb <= 6 */
        for (int j = i; j > 0 && bp[j - 1] > bp[j]; j--) {
            long t = bp[j];
            bp[j] = bp[j - 1];
            bp[j - 1] = t;
        }
    for (int i = 0; i + 1 < nb; i++) {
        long lo = bp[i], hi = bp[i + 1] - 1;
        if (lo < 3 || hi < lo || hi > emax)
            continue;
        long base = 1 + ((lo - 1) / N) * N + r->rho;
        long kf = -floor_div(base - lo, L);          /* ceil */
        long kl = floor_div(hi - base, L);
        if (kf < 0)
            kf = 0;
        if (kl > r->q - 1)
            kl = r->q - 1;
        if (kf > kl)
            continue;
        add_cand(r, E, &n, base + kf * L, emax);
        add_cand(r, E, &n, base + kl * L, emax);
    }
    return n;
}

/* The critical path T (s, without the call's base latency) of one
 * channel's ring (net's candidates `which`: 0 allreduce, 1 allgather)
 * with hop kinds i (intra-node), n (out of the node, under one leaf) and
 * s (out of the leaf). */
static double ring_crit(const struct lbs_sim_net *net, int which,
                        struct hop i, struct hop n, struct hop s)
{
    const struct lbs_sim_ring_cand *c = net->ring_c[which];
    const struct hop *k[3] = {&i, &n, &s};
    int has[3] = {net->g >= 2, net->N > net->spine_ring, net->spine_ring > 0};
    double S = (double)(which ? net->P - 1 : 2 * (net->P - 1)), best = 0;
    for (int h = 0; h < 3; h++) {
        if (!has[h])
            continue;
        double th = k[h]->t;
        double ui = i.t + i.l - th, un = n.t + n.l - th, us = s.t + s.l - th;
        for (int j = 0; j < net->ring_nc[which]; j++) {
            long e = c[j].E, lo = c[j].lo, cs = c[j].smax;
            if (h == 0 && lo < 1)
                lo = 1;             /* an NVLink hop in the window */
            if (lo > c[j].hi)
                continue;
            if (h == 1) {           /* an in-leaf exit in the window */
                if (e < 1)
                    continue;
                if (cs > e - 1)
                    cs = e - 1;
            }
            if (h == 2 && cs < 1)   /* a spine hop in the window */
                continue;
            double ci = (double)(ui >= 0 ? c[j].hi : lo);
            double v = S * th + ci * ui + (double)(e - cs) * un +
                       (double)cs * us;
            if (v > best)
                best = v;
        }
    }
    return best;
}

/* Fill net's ring candidates for S steps into slot `which`. */
static void ring_init(struct lbs_sim_net *net, long L, int which, long S)
{
    struct ring_shape r = {net->g, net->N, L, S, 0, 0, net->spine_ring};
    if (r.ns) {
        r.q = r.N / L;
        r.rho = r.N % L;
    }
    net->ring_nc[which] = ring_cands(&r, net->ring_c[which]);
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
                           "describes at most %ld (max_gpus%s)", pl->name, P,
                           pl->max_gpus, lbs_sim_fabric_max_nodes(pl) > 0
                           ? ", what its fabric's switches hold" : "");
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
    unsigned char cross;
    net->sh_ring = leaf_share(N, L, r, 1, 0, &cross);
    net->sh_tree = N <= L ? 1.0 : fmin(1.0, ((double)L / r) / 2.0);
    net->sh_a2a = N <= L ? 1.0
                         : fmin(1.0, (double)(N - 1) / (r * (double)(N - L)));
    for (int k = 0; k < LBS_SIM_LOGMAX; k++) {
        long d = (long)1 << k;
        net->sh_xor[k] = d < N ? leaf_share(N, L, r, d, 1,
                                            &net->spine_xor[k]) : 1.0;
        net->sh_shift[k] = d < N ? leaf_share(N, L, r, d, 0,
                                              &net->spine_shift[k]) : 1.0;
    }
    net->spine_tree = tree_spine_levels(N, L);
    net->spine_ring = N > L ? (N + L - 1) / L : 0;
    if (N > 1) {
        ring_init(net, L, 0, 2 * (P - 1));
        ring_init(net, L, 1, P - 1);
    }
    return 0;
}

/* ---- the algorithms ---------------------------------------------------- */

struct ctx {
    const struct lbs_sim_net *net;
    long P, g, N;
    double a0, ai, an, as, Bi, Bn, Bg, Bgpu, mem;
    enum lbs_topo topo;     /* the neighbour graph and the step that picks */
    long step;              /* its phase (neighbour exchanges only) */
};

/* Latency of an inter-node step that crosses the spine (spine != 0) or
 * stays under a leaf. */
static double lvl(const struct ctx *c, int spine)
{
    return spine ? c->as : c->an;
}

/* Inter-node latency of a chain of `hops` consecutive hops of a ring over
 * the nodes that goes round `rounds` times: ceil(N/L) of each round's
 * hops leave a leaf (sim/nccl.c's ring_spine_hops counts the same). */
static double ring_lat(const struct ctx *c, long hops, long rounds)
{
    long s = rounds * c->net->spine_ring;
    if (s > hops)
        s = hops;
    return (double)(hops - s) * c->an + (double)s * c->as;
}

/* Ring over N > 1 nodes, C = g channels, each GPU moving `step` bytes per
 * step (the channels' blocks of step/g together), 2(P-1) steps (which =
 * 0, allreduce) or P-1 (1, allgather).  Steady shares
 * (NCCL's channel layout, sim/xcheck): an NVLink hop is shared by the g-1
 * channels that leave that GPU inside the node, t_i = (g-1)/g step / Bi;
 * the node's exit hops share the node's NICs, t_n = step / Bn, and where
 * they leave the leaf its uplinks, t_s = step / (Bn sh_ring).  Its large-
 * message limit is S step / min(Bi g/(g-1), Bn sh_ring): the alpha-beta
 * sum's bandwidth term, but with the NVLink shared by g-1 channels, not g. */
static double ring_time(const struct ctx *c, int which, double step)
{
    double g = (double)c->g;
    struct hop i = {(g - 1) / g * step / c->Bi, c->ai};
    struct hop n = {step / c->Bn, c->an};
    struct hop s = {step / (c->Bn * c->net->sh_ring), c->as};
    return ring_crit(c->net, which, i, n, s);
}

/* Allreduce, ring [T05][NCCL]: reduce-scatter + allgather around one ring
 * of all P GPUs, 2(P-1) steps of n/P per GPU.  N = 1 (every hop alike):
 * a0 + 2(g-1) ai + 2(g-1)/g n / Bi.  N > 1: a0 + the pipelined ring's
 * critical path (ring_time; the ring's channels spread over the node's
 * NICs, so the inter-node edge moves at the node's aggregate rate).  At
 * one byte it is the latency of the slowest chain of 2(P-1) consecutive
 * hops, which holds 2N inter-node hops when g >= 3, 2N-1 at g = 2, 2(N-1)
 * at g = 1 (NCCL 2.8's tuner counts 2(N-1)); with large messages the
 * slowest hop's 2(P-1) transfers and its latency; in between the fast
 * hops' latencies hide under the slow hop's transfers,
 * which the alpha-beta sum (every latency + every byte at the slowest
 * rate) misses: SimGrid's ring, sim/xcheck, was up to 56% below it. */
static double ar_ring(const struct ctx *c, double n, double *w)
{
    double P = (double)c->P;
    *w = 2 * (P - 1) / P * n;
    if (c->N == 1)
        return c->a0 + 2 * (double)(c->g - 1) * c->ai + *w / c->Bi;
    return c->a0 + ring_time(c, 0, n / P);
}

/* Allreduce, double binary tree [S09][NCCL]: a chain inside each node and
 * two complementary binary trees over the nodes, each carrying n/2,
 * pipelined: a0 + 2((g-1) ai + ceil(log2 N) an) + 2 n / min(Bi, Bn
 * sh_tree) (every node sends and receives ~2n: n/2 up and down as an
 * inner node of one tree, plus its leaf role in the other); the levels
 * whose edges leave a leaf (spine_tree) pay as instead of an. */
static double ar_tree(const struct ctx *c, double n, double *w)
{
    *w = 2 * n;
    double B = c->N == 1 ? c->Bi : fmin(c->Bi, c->Bn * c->net->sh_tree);
    long levels = clog2(c->N), spine = c->net->spine_tree;
    return c->a0 + 2 * ((double)(c->g - 1) * c->ai +
                        (double)(levels - spine) * c->an +
                        (double)spine * c->as) + 2 * n / B;
}

/* Allreduce, recursive halving-doubling (Rabenseifner) [T05]: reduce-
 * scatter by recursive halving, allgather by recursive doubling; the
 * hypercube dimensions run intra-node first, then nodes at distance
 * 1, 2, 4, ...; step j moves half of what is left.
 *   2 [log2 g ai + (g-1)/g n / Bi]
 *   + 2 sum_{j=1..log2 N} [an + (n/g) 2^-j / (Bg sh_xor(2^(j-1)))]
 * (as instead of an at the distances whose pairs span two leaves)
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
        t += 2 * (lvl(c, c->net->spine_shift[0]) +
                  shard / (Bg * c->net->sh_shift[0]));
    for (int j = 1; j <= ilog2(N2); j++)
        t += 2 * (lvl(c, c->net->spine_xor[j - 1]) +
                  shard / (double)((long)1 << j) /
                  (Bg * c->net->sh_xor[j - 1]));
    return t;
}

/* Allreduce, hierarchical two-level [H18]: ring reduce-scatter inside the
 * node, ring allreduce of each GPU's n/g shard across the N nodes on its
 * own rail (g rails in parallel), ring allgather inside the node:
 *   a0 + 2(g-1) ai + 2(g-1)/g n/Bi + 2(N-1) an + 2(N-1)/N (n/g)/(Bg sh_ring)
 * (the ring's hops out of a leaf pay as: ring_lat).
 * Single node: not applicable (it is the ring; NEED_NODES). */
static double ar_hier(const struct ctx *c, double n, double *w)
{
    double g = (double)c->g, N = (double)c->N;
    *w = 2 * (g - 1) / g * n + 2 * (N - 1) / N * n / g;
    return c->a0 + 2 * (g - 1) * c->ai + 2 * (g - 1) / g * n / c->Bi +
           ring_lat(c, 2 * (c->N - 1), 2) +
           2 * (N - 1) / N * (n / g) / (c->Bg * c->net->sh_ring);
}

/* Allgather, ring [T05]: P-1 steps each forwarding one block of m.
 * N = 1: a0 + (g-1) ai + (g-1) m / Bi; N > 1: a0 + the pipelined ring's
 * critical path (ring_time; as for ar_ring: at one byte the latency of N
 * inter-node hops on a chain of P-1 consecutive ones when g >= 2, N-1 at
 * g = 1). */
static double ag_ring(const struct ctx *c, double m, double *w)
{
    *w = (double)(c->P - 1) * m;
    if (c->N == 1)
        return c->a0 + (double)(c->g - 1) * c->ai + *w / c->Bi;
    return c->a0 + ring_time(c, 1, m);
}

/* Allgather, recursive doubling [T05] (P and g powers of two: NEED_POW2),
 * nodes first so that data from other nodes enters each node once per
 * rail:
 *   a0 + log2 N an + sum_{j<log2 N} m 2^j / (Bg sh_xor(2^j))
 *      + log2 g ai + (g-1) N m / Bi. */
static double ag_rd(const struct ctx *c, double m, double *w)
{
    *w = (double)(c->P - 1) * m;
    double t = c->a0 + (double)ilog2(c->g) * c->ai +
               (double)(c->g - 1) * (double)c->N * m / c->Bi;
    for (int j = 0; j < ilog2(c->N); j++)
        t += lvl(c, c->net->spine_xor[j]) +
             m * (double)((long)1 << j) / (c->Bg * c->net->sh_xor[j]);
    return t;
}

/* One step of a shift-by-s pattern over all P ranks moving `bytes` per
 * rank (Bruck allgather/alltoall rounds, [B97]): intra-node when N = 1;
 * otherwise min(s, g) GPUs of each node send off-node, each at
 * min(Bgpu, Bn / min(s, g)) times the fat-tree share of node distance
 * max(1, s/g); the step takes as long as its slowest flow (and pays as
 * when a flow leaves its leaf). */
static double shift_step(const struct ctx *c, long s, double bytes)
{
    if (c->N == 1)
        return c->ai + bytes / c->Bi;
    long k = s < c->g ? s : c->g;
    long dn = s / c->g;
    int lv = dn > 1 ? ilog2(dn) : 0;
    double sh = c->net->sh_shift[lv];
    double B = fmin(c->Bgpu, c->Bn / (double)k) * sh;
    double intra = s < c->g ? bytes / c->Bi : 0;
    return lvl(c, c->net->spine_shift[lv]) + fmax(bytes / B, intra);
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
 *   a0 + (g-1) ai + (P-g) an   (as once N > L: every shift has a flow
 *                               out of some leaf)
 *      + max((g-1)/P S / Bi, (P-g)/P S / (Bg sh_a2a)). */
static double a2a_pairwise(const struct ctx *c, double S, double *w)
{
    double P = (double)c->P, g = (double)c->g;
    *w = (P - 1) / P * S;
    double t = c->a0 + (g - 1) * c->ai +
               (P - g) * lvl(c, c->net->spine_shift[0]);
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
 *   a0 + (P-N) ai + (N-1) an + n / min(Bi, Bn sh_ring), the chain's hops
 *   out of a leaf at as (ring_lat: the root may sit anywhere). */
static double bc_pipeline(const struct ctx *c, double n, double *w)
{
    *w = n;
    if (c->N == 1)
        return c->a0 + (double)(c->g - 1) * c->ai + n / c->Bi;
    return c->a0 + (double)(c->P - c->N) * c->ai +
           ring_lat(c, c->N - 1, 1) +
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
        t += lvl(c, c->net->spine_xor[j]) +
             n / (c->Bgpu * c->net->sh_xor[j]);
    t += (double)clog2(c->g) * (c->ai + n / c->Bi);
    return t;
}

/* Barrier, dissemination [T05]: ceil(log2 P) rounds of empty messages;
 * across nodes every round has an off-node partner for some rank (and,
 * once N > L, one in another leaf). */
static double bar_dissem(const struct ctx *c, double n, double *w)
{
    (void)n;
    *w = 0;
    return c->a0 + (double)clog2(c->P) *
                   (c->N > 1 ? lvl(c, c->net->spine_shift[0]) : c->ai);
}

/* Neighbour exchange, direct sends to every neighbour at once.  Graphs
 * (trace params): ring (ranks +-1), static exponential (rank + 2^t,
 * t < ceil(log2 P)), one-peer exponential (rank + 2^((step-1) mod
 * ceil(log2 P)))).  The busiest rank (the node's last GPU) sends every
 * message off-node when N > 1 (the ring: one of its two).  Time:
 *   a0 + hop + max(intra bytes / Bi, off-node bytes / Bgpu,
 *                  node's off-node bytes / (Bn sh))
 * where the node's off-node flows are sum_d min(d, g) (ring: 2). */
static double nb_direct(const struct ctx *c, double b, double *w)
{
    long d[LBS_SIM_LOGMAX];
    int nd = lbs_sim_nb_offsets(c->topo, c->P, c->step, d);
    long maxd = 1;
    if (!nd)
        return INFINITY;
    for (int i = 0; i < nd; i++)
        d[i] = d[i] < 0 ? -d[i] : d[i];     /* the ring's -1: distance 1 */
    *w = b * nd;
    if (c->N == 1)
        return c->a0 + c->ai + b * nd / c->Bi;
    double flows = 0;
    for (int i = 0; i < nd; i++) {
        flows += (double)(d[i] < c->g ? d[i] : c->g);
        if (d[i] > maxd)
            maxd = d[i];
    }
    int inter_msgs = c->topo == LBS_TOPO_RING ? 1 : nd;
    int intra_msgs = nd - inter_msgs;
    long dn = maxd / c->g;
    int lv = dn > 1 ? ilog2(dn) : 0;
    double sh = c->net->sh_shift[lv];
    double t = fmax(b * intra_msgs / c->Bi, b * inter_msgs / c->Bgpu);
    t = fmax(t, b * flows / (c->Bn * sh));
    return c->a0 + lvl(c, c->net->spine_shift[lv]) + t;
}

double lbs_sim_step_bytes(enum lbs_coll c, long P, double bytes)
{
    switch (c) {
    case LBS_COLL_ALLREDUCE:
    case LBS_COLL_ALLTOALL: return bytes / (double)(P > 0 ? P : 1);
    case LBS_COLL_BARRIER: return 0;
    default: return bytes;
    }
}

/* ---- the table of algorithms ------------------------------------------ */

/* Constraints of an algorithm's alpha-beta formula: where one fails the
 * algorithm does not apply (INFINITY).  NCCL's model states its own. */
#define NEED_NODES 1u       /* two or more nodes */
#define NEED_POW2 2u        /* P and GPUs per node powers of two */

/* The rows of sim/algos.h, indexed by their enum value.  nccl: the
 * cost under NCCL's tuner model (nccl.c; NULL: NCCL does not run it);
 * nccl_as: the nccl.algorithms name that enables it (NULL: always). */
static const struct algo {
    const char *name;
    enum lbs_coll coll;
    double (*cost)(const struct ctx *c, double bytes, double *wire);
    lbs_sim_nccl_fn *nccl;
    const char *nccl_as;
    unsigned needs;
} algos[LBS_SIM_NALGO] = {
#define ALGO_ROW(id, name, coll, cost, nccl, nccl_as, needs)                 \
    [LBS_SIM_##id] = {name, coll, cost, nccl, nccl_as, needs},
    LBS_SIM_ALGOS(ALGO_ROW)
#undef ALGO_ROW
};

const char *lbs_sim_algo_name(enum lbs_sim_algo a)
{
    return (unsigned)a < LBS_SIM_NALGO ? algos[a].name : "?";
}

int lbs_sim_algo_from_name(const char *s)
{
    for (int i = 0; i < LBS_SIM_NALGO; i++)
        if (!strcmp(s, algos[i].name))
            return i;
    return -1;
}

enum lbs_coll lbs_sim_algo_coll(enum lbs_sim_algo a)
{
    return (unsigned)a < LBS_SIM_NALGO ? algos[a].coll : LBS_COLL_COUNT;
}

/* sim_internal.h */
unsigned lbs_sim_nccl_algos(const char *nccl_name)
{
    unsigned bits = 0;
    for (int i = 0; i < LBS_SIM_NALGO; i++) {
        const char *as = algos[i].nccl_as;
        if (algos[i].nccl && (nccl_name ? as && !strcmp(as, nccl_name)
                                        : !as))
            bits |= 1u << i;
    }
    return bits;
}

/* sim_internal.h */
void lbs_sim_nccl_algo_names(char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = '\0';
    for (int i = 0; i < LBS_SIM_NALGO; i++) {
        const char *as = algos[i].nccl_as;
        int seen = !as || !algos[i].nccl;
        for (int j = 0; j < i && !seen; j++)
            seen = algos[j].nccl && algos[j].nccl_as &&
                   !strcmp(algos[j].nccl_as, as);
        if (!seen && o < len)
            o += (size_t)snprintf(buf + o, len - o, "%s%s", o ? ", " : "",
                                  as);
    }
}

int lbs_sim_nb_offsets(enum lbs_topo topo, long P, long step,
                       long d[LBS_SIM_LOGMAX])
{
    if (topo != LBS_TOPO_RING && topo != LBS_TOPO_EXPONENTIAL &&
        topo != LBS_TOPO_ONEPEER)
        return 0;
    int n = lbs_topo_offsets(topo, P, step > 0 ? step : 1, d,
                             LBS_SIM_LOGMAX);
    return n < LBS_SIM_LOGMAX ? n : LBS_SIM_LOGMAX;
}

static int meets(const struct ctx *c, unsigned needs)
{
    if ((needs & NEED_NODES) && c->N == 1)
        return 0;
    if ((needs & NEED_POW2) && (!is_pow2(c->P) || !is_pow2(c->g)))
        return 0;
    return 1;
}

/* The alpha-beta path of lbs_sim_algo_time (a platform without "nccl"). */
static double alpha_beta(const struct lbs_sim_net *net, const struct algo *A,
                         enum lbs_sim_proto p, double bytes,
                         enum lbs_topo topo, long step, double *w)
{
    const struct lbs_sim_platform *pl = net->pl;
    const struct lbs_sim_proto_params *pp = &pl->proto[p];
    if (pp->max_bytes > 0 &&
        lbs_sim_step_bytes(A->coll, net->P, bytes) > pp->max_bytes)
        return INFINITY;
    double f = pp->bw_factor * pl->coll_bw[A->coll];
    struct ctx c = {
        .net = net, .P = net->P, .g = net->g, .N = net->N,
        .a0 = pp->base_lat, .ai = pp->intra_hop,
        .an = pp->inter_hop + pl->net_lat, .as = pp->inter_hop + pl->spine_lat,
        .Bi = f * net->Bi, .Bn = f * net->Bn, .Bg = f * net->Bg,
        .Bgpu = f * net->gpu_nic, .mem = pl->mem_bw,
        .topo = topo, .step = step};
    double t = A->cost && meets(&c, A->needs) ? A->cost(&c, bytes, w)
                                              : INFINITY;
    if (A->coll == LBS_COLL_ALLREDUCE && pl->reduce_bw > 0)
        t += (double)(net->P - 1) / (double)net->P * bytes / pl->reduce_bw;
    return t;
}

double lbs_sim_algo_time(const struct lbs_sim_net *net, enum lbs_sim_algo a,
                         enum lbs_sim_proto p, double bytes,
                         enum lbs_topo topo, long step, double *wire)
{
    const struct lbs_sim_platform *pl = net->pl;
    double w = 0, t;
    if ((unsigned)a >= LBS_SIM_NALGO || (unsigned)p >= LBS_SIM_NPROTO ||
        !pl->proto[p].enabled || !(pl->algos >> a & 1))
        return INFINITY;
    if (wire)
        *wire = 0;
    if (net->P == 1)
        return 0;
    if (pl->nccl_model)
        t = algos[a].nccl ? algos[a].nccl(net, a, p, bytes, topo, step, &w)
                          : INFINITY;
    else
        t = alpha_beta(net, &algos[a], p, bytes, topo, step, &w);
    if (wire)
        *wire = w;
    return t;
}

struct lbs_sim_cost lbs_sim_coll_cost(const struct lbs_sim_net *net,
                                      enum lbs_coll coll, double bytes,
                                      enum lbs_topo topo, long step)
{
    struct lbs_sim_cost best = {INFINITY, LBS_SIM_NALGO, LBS_SIM_SIMPLE, 0};
    enum lbs_coll k = coll;
    if (k == LBS_COLL_ALLGATHERV ||
        (k == LBS_COLL_NEIGHBOR && topo == LBS_TOPO_FULL))
        k = LBS_COLL_ALLGATHER;  /* balanced parts; full graph = allgather */
    for (int a = 0; a < LBS_SIM_NALGO; a++) {
        if (algos[a].coll != k)
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
