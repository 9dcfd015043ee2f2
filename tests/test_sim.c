/* test_sim.c - the simulator: cost formulas against hand-computed cases,
 * the NCCL-style choice, link sharing on the fat-tree, the engine's overlap
 * on tiny models (hand-computed timelines), trace scaling and phases,
 * bytes that depend on P (the trace's bytes_rule), the calibration fit,
 * and bad input naming the file and the field. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lbscale_sim.h"

#define US 1e-6
#define MS 1e-3

/* Test platform: 4 GPUs/node, 100 GB/s NVLink, 2 x 80 Gb/s NICs (Bn = 20
 * GB/s, Bg = 5 GB/s per rail, 10 GB/s per NIC), fat-tree of 2 nodes per
 * leaf at 2:1, 1 us fabric latency; Simple only: base 10 us, intra step
 * 1 us, inter step 4 us (+1 fabric = 5 us), full bandwidth. */
static const char *plat_text(const char *algos, double oversub)
{
    static char buf[2048];
    snprintf(buf, sizeof buf,
        "{\"format\": \"lbscale-platform\", \"version\": 1, \"name\": \"t\","
        " \"gpu\": {\"peak_tflops\": 100, \"mem_bw_gbs\": 1000},"
        " \"node\": {\"gpus\": 4, \"intra_bw_gbs\": 100, \"nics\": 2,"
        "            \"nic_gbps\": 80},"
        " \"fabric\": {\"kind\": \"fat-tree\", \"nodes_per_leaf\": 2,"
        "              \"oversubscription\": %g, \"lat_us\": 1},"
        " \"protocols\": {\"Simple\": {\"base_lat_us\": 10, \"intra_hop_us\": 1,"
        "                 \"inter_hop_us\": 4, \"bw_factor\": 1}}%s%s}",
        oversub, algos ? ", \"algorithms\": " : "", algos ? algos : "");
    return buf;
}

static struct lbs_sim_platform *plat(const char *algos, double oversub)
{
    struct lbs_sim_platform *p;
    struct lbs_err e = {{0}};
    cr_assert_eq(lbs_sim_platform_parse(plat_text(algos, oversub), "t.json",
                                        &p, &e), 0, "%s", e.msg);
    return p;
}

static double t_of(const struct lbs_sim_platform *p, long P,
                   enum lbs_sim_algo a, double bytes)
{
    struct lbs_sim_net net;
    cr_assert_eq(lbs_sim_net_init(&net, p, P, NULL), 0);
    return lbs_sim_algo_time(&net, a, LBS_SIM_SIMPLE, bytes,
                             LBS_TOPO_RING, 1, NULL);
}

#define near(x, y) cr_assert(fabs((double)(x) - (double)(y)) <= \
                           1e-9 * fabs((double)(y)) + 1e-15, \
                             "%s = %.12g, expected %.12g", #x, (double)(x), \
                             (double)(y))

Test(sim_coll, allreduce_formulas_by_hand)
{
    struct lbs_sim_platform *p = plat(NULL, 2);
    /* one node, ring: 10 + 2*3*1 us + 2*3/4 * 1e8 B / 100 GB/s */
    near(t_of(p, 4, LBS_SIM_AR_RING, 1e8), 16 * US + 1.5 * MS);
    /* two nodes, ring, the pipelined ring's critical path: per step a GPU
     * moves 1e8/8 B; a NIC hop takes 1.25e7 / 20 GB/s = 625 us (+5 us
     * latency), an NVLink hop 3/4 * 1.25e7 / 100 GB/s = 93.75 us (+1 us).
     * The slowest chain is 14 transfers on the NIC hop and its latency
     * once: 10 + 14*625 + 5 us (the alpha-beta sum, every one of the 14
     * hops' latencies plus 14 x 625 us, would be 25 us more) */
    near(t_of(p, 8, LBS_SIM_AR_RING, 1e8), 10 * US + 14 * 625 * US + 5 * US);
    /* with no bytes it is the latency of the slowest chain of 2(P-1) = 14
     * consecutive hops, which crosses both node edges twice: 10 + 10*1 +
     * 4*5 us */
    near(t_of(p, 8, LBS_SIM_AR_RING, 0), 40 * US);
    /* tree: 10 + 2*(3*1 + 1*5) us + 2*1e8 / 20 GB/s */
    near(t_of(p, 8, LBS_SIM_AR_TREE, 1e8), 26 * US + 10 * MS);
    /* rhd: 10 + 2*(2*1 us + 3/4*1e8/100e9) + 2*(5 us + 1e8/4/2 / 5e9) */
    near(t_of(p, 8, LBS_SIM_AR_RHD, 1e8), 10 * US + 2 * (2 * US + 0.75 * MS) +
                                          2 * (5 * US + 2.5 * MS));
    /* hier: 10 + 2*3*1 + 1500 + 2*1*5 + 2*(1/2)*(1e8/4)/5e9 (us) */
    near(t_of(p, 8, LBS_SIM_AR_HIER, 1e8), 26 * US + 1.5 * MS + 5 * MS);
    /* hier does not apply inside one node */
    cr_assert(isinf(t_of(p, 4, LBS_SIM_AR_HIER, 1e8)));
    lbs_sim_platform_free(p);
}

Test(sim_coll, other_collectives_by_hand)
{
    struct lbs_sim_platform *p = plat(NULL, 2);
    struct lbs_sim_net net;
    /* allgather ring, 2 nodes: the NIC hop (1e6 / 20 GB/s = 50 us per
     * block, 5 us latency) is the slowest: 10 + 7*50 + 5 us; no bytes:
     * P-1 = 7 consecutive hops cross both node edges: 10 + 5*1 + 2*5 us */
    near(t_of(p, 8, LBS_SIM_AG_RING, 1e6), 10 * US + 350 * US + 5 * US);
    near(t_of(p, 8, LBS_SIM_AG_RING, 0), 25 * US);
    /* alltoall pairwise, S = 8e6: 10 + 3*1 + 4*5 us
     * + max(3/8 S / 100 GB/s, 4/8 S / 5 GB/s) */
    near(t_of(p, 8, LBS_SIM_A2A_PAIRWISE, 8e6), 33 * US + 800 * US);
    /* Bruck allgather, one node of 4, m = 1e6: rotation 2*4e6/1 TB/s = 8 us;
     * rounds (1 + 10) + (1 + 20) us */
    near(t_of(p, 4, LBS_SIM_AG_BRUCK, 1e6), 10 * US + 8 * US + 11 * US + 21 * US);
    /* recursive doubling needs a power of two */
    cr_assert(isinf(t_of(p, 12, LBS_SIM_AG_RD, 1e6)));
    /* neighbour ring, 2 nodes, 1e6 to each: the node's edge GPU sends one
     * message off-node at max(Bg, NIC) = 10 GB/s; the node sends 2 at
     * 20 GB/s: 10 + 5 + 100 us */
    cr_assert_eq(lbs_sim_net_init(&net, p, 8, NULL), 0);
    near(lbs_sim_algo_time(&net, LBS_SIM_NB_DIRECT, LBS_SIM_SIMPLE, 1e6,
                           LBS_TOPO_RING, 1, NULL), 115 * US);
    /* barrier: 10 + ceil(log2 8) * 5 us */
    near(t_of(p, 8, LBS_SIM_BAR_DISSEM, 0), 25 * US);
    /* one GPU: free */
    near(t_of(p, 1, LBS_SIM_AR_RING, 1e8), 0);
    lbs_sim_platform_free(p);
}

Test(sim_coll, link_sharing_on_the_fat_tree)
{
    struct lbs_sim_platform *p = plat(NULL, 2), *flat = plat(NULL, 1);
    struct lbs_sim_net net;
    /* 8 nodes, 2 per leaf, 2:1: XOR partners at distance >= 2 all leave
     * their leaf: 2 flows share 2*Bn/2 -> half; rings and XOR-1 stay */
    cr_assert_eq(lbs_sim_net_init(&net, p, 32, NULL), 0);
    near(net.sh_ring, 1.0);
    near(net.sh_xor[0], 1.0);
    near(net.sh_xor[1], 0.5);
    near(net.sh_xor[2], 0.5);
    near(net.sh_tree, 0.5);
    near(net.sh_a2a, 7.0 / 12.0);
    /* the tree's bandwidth term doubles under 2:1, latency unchanged */
    double big = 1e9;
    double t2 = t_of(p, 32, LBS_SIM_AR_TREE, big);
    double t1 = t_of(flat, 32, LBS_SIM_AR_TREE, big);
    near(t1, 46 * US + 2 * big / 20e9);
    near(t2, 46 * US + 2 * big / 10e9);
    /* RHD by hand at P=32: intra 2(2 us + 7.5 ms); inter steps of 25, 25,
     * 12.5 ms (shares 1, .5, .5) + 3 x 5 us, twice */
    near(t_of(p, 32, LBS_SIM_AR_RHD, big),
         10 * US + 2 * (2 * US + 7.5 * MS) + 2 * (15 * US + 62.5 * MS));
    /* NIC sharing: one NIC per node halves the node's bandwidth */
    lbs_sim_platform_free(p);
    lbs_sim_platform_free(flat);
}

Test(sim_coll, nccl_like_choice)
{
    struct lbs_sim_platform *p = plat(NULL, 2);
    struct lbs_sim_platform *q = plat("[\"ring\", \"tree\", \"hier\", "
        "\"allgather-ring\", \"alltoall-pairwise\", \"bcast-pipeline\", "
        "\"barrier-dissemination\", \"neighbor-direct\"]", 2);
    struct lbs_sim_net net, nq;
    cr_assert_eq(lbs_sim_net_init(&net, p, 32, NULL), 0);
    cr_assert_eq(lbs_sim_net_init(&nq, q, 32, NULL), 0);
    /* 8 bytes at P=32: ring 136, tree 46, rhd 44, hier 86 us (+ ~0) */
    struct lbs_sim_cost c = lbs_sim_coll_cost(&net, LBS_COLL_ALLREDUCE, 8,
                                              LBS_TOPO_RING, 1);
    cr_assert_eq(c.algo, LBS_SIM_AR_RHD, "%s", lbs_sim_algo_name(c.algo));
    near(round(c.t / US), 44);
    c = lbs_sim_coll_cost(&nq, LBS_COLL_ALLREDUCE, 8, LBS_TOPO_RING, 1);
    cr_assert_eq(c.algo, LBS_SIM_AR_TREE, "%s", lbs_sim_algo_name(c.algo));
    /* 1 GB: ring 96.9 ms beats hier 102.6, rhd 140.0, tree 200.0; the
     * ring: 62 transfers of 1e9/32 B on the NIC hop at 20 GB/s + its 5 us
     * latency + 10 us */
    c = lbs_sim_coll_cost(&net, LBS_COLL_ALLREDUCE, 1e9, LBS_TOPO_RING, 1);
    cr_assert_eq(c.algo, LBS_SIM_AR_RING, "%s", lbs_sim_algo_name(c.algo));
    near(c.t, 15 * US + 62 * 1e9 / 32 / 20e9);
    near(c.wire, 2 * 31.0 / 32 * 1e9);
    near(t_of(p, 32, LBS_SIM_AR_HIER, 1e9), 86 * US + 15 * MS + 87.5 * MS);
    lbs_sim_platform_free(p);
    lbs_sim_platform_free(q);
}

/* ---- latency per fabric level, the pipelined ring's critical path ------ */

/* A fat-tree platform of g GPUs per node (100 GB/s NVLink), `nics` x 80
 * Gb/s NICs, L nodes per leaf at oversubscription r, lat_us 1 and
 * lat_spine_us `spine`; Simple: base 10 us, intra step 1 us, inter step
 * 4 us.  kind "flat" ignores L and r. */
static struct lbs_sim_platform *lplat(const char *kind, int g, int nics,
                                      int L, double r, double spine)
{
    char buf[2048];
    struct lbs_sim_platform *p;
    struct lbs_err e = {{0}};
    snprintf(buf, sizeof buf,
        "{\"format\": \"lbscale-platform\", \"version\": 1, \"name\": \"l\","
        " \"gpu\": {\"peak_tflops\": 100, \"mem_bw_gbs\": 1000},"
        " \"node\": {\"gpus\": %d, \"intra_bw_gbs\": 100, \"nics\": %d,"
        "            \"nic_gbps\": 80},"
        " \"fabric\": {\"kind\": \"%s\", \"nodes_per_leaf\": %d,"
        "   \"oversubscription\": %g, \"lat_us\": 1, \"lat_spine_us\": %g},"
        " \"protocols\": {\"Simple\": {\"base_lat_us\": 10, \"intra_hop_us\": 1,"
        "                 \"inter_hop_us\": 4, \"bw_factor\": 1}}}",
        g, nics, kind, L, r, spine);
    cr_assert_eq(lbs_sim_platform_parse(buf, "l.json", &p, &e), 0, "%s",
                 e.msg);
    return p;
}

Test(sim_coll, latency_per_fabric_level)
{
    /* 4 nodes of 4 GPUs, 2 nodes per leaf, non-blocking: a step under a
     * leaf costs 4 + 1 us, one across the spine 4 + 3 us */
    struct lbs_sim_platform *p = lplat("fat-tree", 4, 2, 2, 1, 3);
    struct lbs_sim_platform *same = lplat("fat-tree", 4, 2, 2, 1, 1);
    struct lbs_sim_platform *flat = lplat("flat", 4, 2, 2, 1, 3);
    struct lbs_sim_net net;
    cr_assert_eq(lbs_sim_net_init(&net, p, 16, NULL), 0);
    /* the ring leaves each of the 2 leaves once per round */
    cr_assert_eq(net.spine_ring, 2);
    /* XOR partners at distance 1 share a leaf, at 2 they do not */
    cr_assert_eq(net.spine_xor[0], 0);
    cr_assert_eq(net.spine_xor[1], 1);
    /* NCCL's trees over 4 nodes: edges 1-2 (level 0) and 2-0 (level 1)
     * both leave a leaf */
    cr_assert_eq(net.spine_tree, 2);
    /* ring allreduce, no bytes: the slowest chain of 2(P-1) = 30
     * consecutive hops holds all 8 node exits of two rounds, 4 of them
     * across the spine: 10 + 22*1 + 4*5 + 4*7 us; 8 us less when the
     * spine costs what a leaf does, and on a flat fabric */
    near(t_of(p, 16, LBS_SIM_AR_RING, 0), 80 * US);
    near(t_of(same, 16, LBS_SIM_AR_RING, 0), 72 * US);
    near(t_of(flat, 16, LBS_SIM_AR_RING, 0), 72 * US);
    /* allgather: 15 consecutive hops, 4 exits, 2 across the spine */
    near(t_of(p, 16, LBS_SIM_AG_RING, 0), 10 * US + 11 * US + 10 * US +
                                          14 * US);
    /* tree: 10 + 2 (3*1 + 2*7) us (2*5 with no spine latency); RHD: 10 + 2 (2*1) + 2 (5 + 7) us;
     * bcast chain: 10 + 12*1 + 3 node hops of which 2 leave a leaf */
    near(t_of(p, 16, LBS_SIM_AR_TREE, 0), 44 * US);
    near(t_of(same, 16, LBS_SIM_AR_TREE, 0), 36 * US);
    near(t_of(p, 16, LBS_SIM_AR_RHD, 0), 38 * US);
    near(t_of(p, 16, LBS_SIM_BC_PIPELINE, 0), 10 * US + 12 * US + 5 * US +
                                              14 * US);
    /* within one leaf nothing crosses the spine */
    cr_assert_eq(lbs_sim_net_init(&net, p, 8, NULL), 0);
    cr_assert_eq(net.spine_ring, 0);
    cr_assert_eq(net.spine_tree, 0);
    near(t_of(p, 8, LBS_SIM_AR_RING, 0), 10 * US + 10 * US + 4 * 5 * US);
    lbs_sim_platform_free(p);
    lbs_sim_platform_free(same);
    lbs_sim_platform_free(flat);
}

/* Deterministic pseudo-random numbers for the cases below. */
static double rnd(unsigned long long *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(*s >> 11) / 9007199254740992.0;
}

/* The pipelined ring evaluated step by step (sim/coll.c states it): X[r]
 * is when block s has left ring position r; t[r], l[r] the block time and
 * latency of the hop r -> r+1. */
static double ring_recursion(long P, long S, const double *t, const double *l)
{
    double X[64], Y[64];
    for (long r = 0; r < P; r++)
        X[r] = t[r];
    for (long s = 1; s < S; s++) {
        for (long r = 0; r < P; r++) {
            long left = (r + P - 1) % P;
            Y[r] = fmax(X[r], X[left] + l[left]) + t[r];
        }
        memcpy(X, Y, sizeof(double) * (size_t)P);
    }
    double T = 0;
    for (long r = 0; r < P; r++)
        T = fmax(T, X[r] + l[r]);
    return T;
}

Test(sim_coll, ring_critical_path_matches_the_recursion)
{
    unsigned long long seed = 19;
    static const int gs[] = {1, 2, 3, 4, 8};
    static const double sizes[] = {0, 1, 1e3, 1e5, 1e6, 1e8};
    int cases = 0;
    /* wide ranges on purpose: every hop kind is the slowest, or the
     * longest, in some of the cases */
    for (int it = 0; it < 1500; it++) {
        int g = gs[(int)(rnd(&seed) * 5)];
        long N = 2 + (long)(rnd(&seed) * (double)(64 / g - 1));
        long P = N * g;
        int L = 1 + (int)(rnd(&seed) * (rnd(&seed) < 0.5 ? 4 : (double)N));
        int fat = rnd(&seed) < 0.8;
        double r = fat ? 1 + (rnd(&seed) < 0.5 ? 3 : 30) * rnd(&seed) : 1;
        double bi = 1 + 400 * rnd(&seed), nic = 10 + 800 * rnd(&seed);
        int nics = 1 + (int)(rnd(&seed) * 4);
        double lat = 3 * rnd(&seed), spine = lat + 30 * rnd(&seed) *
                                             (rnd(&seed) < 0.8);
        double ai = (rnd(&seed) < 0.5 ? 2 : 50) * rnd(&seed),
               an = (rnd(&seed) < 0.5 ? 2 : 50) * rnd(&seed);
        char buf[2048];
        struct lbs_sim_platform *p;
        struct lbs_err e = {{0}};
        snprintf(buf, sizeof buf,
            "{\"format\": \"lbscale-platform\", \"version\": 1, \"name\": "
            "\"r\", \"gpu\": {\"peak_tflops\": 1, \"mem_bw_gbs\": 1},"
            " \"node\": {\"gpus\": %d, \"intra_bw_gbs\": %.17g, \"nics\": %d,"
            " \"nic_gbps\": %.17g}, \"fabric\": {\"kind\": \"%s\","
            " \"nodes_per_leaf\": %d, \"oversubscription\": %.17g,"
            " \"lat_us\": %.17g, \"lat_spine_us\": %.17g},"
            " \"protocols\": {\"Simple\": {\"base_lat_us\": 7,"
            " \"intra_hop_us\": %.17g, \"inter_hop_us\": %.17g,"
            " \"bw_factor\": 1}}}", g, bi, nics, nic,
            fat ? "fat-tree" : "flat", L, r, lat, spine, ai, an);
        cr_assert_eq(lbs_sim_platform_parse(buf, "r.json", &p, &e), 0, "%s",
                     e.msg);
        struct lbs_sim_net net;
        cr_assert_eq(lbs_sim_net_init(&net, p, P, NULL), 0);
        /* hop kinds as coll.c states them: an NVLink hop shared by the
         * g-1 channels leaving that GPU, the node's exit at the NICs'
         * aggregate rate, a leaf's exit at its uplinks' share L/r */
        double Bi = bi * 1e9, Bn = nics * nic * 1e9 / 8;
        double sh = fat && N > L ? fmin(1, L / r) : 1;
        for (int k = 0; k < 6; k++) {
            for (int ar = 0; ar < 2; ar++) {
                double n = sizes[k] * (1 + rnd(&seed));
                double step = ar ? n / (double)P : n;
                long S = ar ? 2 * (P - 1) : P - 1;
                double t[64], l[64];
                for (long q = 0; q < N; q++) {
                    for (long j = 0; j < g - 1; j++) {
                        t[q * g + j] = (g - 1.0) / g * step / Bi;
                        l[q * g + j] = ai * US;
                    }
                    int sp = fat && N > L && (q % L == L - 1 || q == N - 1);
                    t[q * g + g - 1] = step / (Bn * (sp ? sh : 1));
                    l[q * g + g - 1] = (an + (sp ? spine : lat)) * US;
                }
                double want = 7 * US + ring_recursion(P, S, t, l);
                double got = lbs_sim_algo_time(&net, ar ? LBS_SIM_AR_RING
                                               : LBS_SIM_AG_RING,
                                               LBS_SIM_SIMPLE, n,
                                               LBS_TOPO_RING, 1, NULL);
                cr_assert(fabs(got - want) <= 1e-9 * want,
                          "%s g=%d N=%ld L=%d r=%g fat=%d n=%g: critical "
                          "path %.12g, recursion %.12g",
                          ar ? "allreduce" : "allgather", g, N, L, r, fat, n,
                          got, want);
                cases++;
            }
        }
        lbs_sim_platform_free(p);
    }
    cr_assert_eq(cases, 1500 * 12);
}

Test(sim_coll, protocol_factor_and_latency)
{
    const char *txt =
        "{\"format\": \"lbscale-platform\", \"version\": 1, \"name\": \"p\","
        " \"gpu\": {\"peak_tflops\": 1, \"mem_bw_gbs\": 1},"
        " \"node\": {\"gpus\": 2, \"intra_bw_gbs\": 10, \"nics\": 1,"
        "  \"nic_gbps\": 8},"
        " \"fabric\": {\"kind\": \"flat\"},"
        " \"protocols\": {\"LL\": {\"base_lat_us\": 1, \"intra_hop_us\": 0,"
        "   \"inter_hop_us\": 0, \"bw_factor\": 0.5},"
        "  \"Simple\": {\"base_lat_us\": 20, \"intra_hop_us\": 0,"
        "   \"inter_hop_us\": 0, \"bw_factor\": 1}}}";
    struct lbs_sim_platform *p;
    struct lbs_err e;
    cr_assert_eq(lbs_sim_platform_parse(txt, "p.json", &p, &e), 0, "%s", e.msg);
    struct lbs_sim_net net;
    cr_assert_eq(lbs_sim_net_init(&net, p, 2, NULL), 0);
    /* ring on 2: 2*(1/2)*n / (f*10 GB/s): LL 1 us + n/5e9, Simple 20 + n/1e10 */
    near(lbs_sim_algo_time(&net, LBS_SIM_AR_RING, LBS_SIM_LL, 1e5,
                           LBS_TOPO_RING, 1, NULL), 1 * US + 20 * US);
    near(lbs_sim_algo_time(&net, LBS_SIM_AR_RING, LBS_SIM_SIMPLE, 1e5,
                           LBS_TOPO_RING, 1, NULL), 20 * US + 10 * US);
    cr_assert(isinf(lbs_sim_algo_time(&net, LBS_SIM_AR_RING, LBS_SIM_LL128,
                                      1e5, LBS_TOPO_RING, 1, NULL)));
    /* small -> LL, large -> Simple (crossover at n = 1.9e5) */
    struct lbs_sim_cost c = lbs_sim_coll_cost(&net, LBS_COLL_ALLREDUCE, 1e5,
                                              LBS_TOPO_RING, 1);
    cr_assert_eq(c.proto, LBS_SIM_LL);
    c = lbs_sim_coll_cost(&net, LBS_COLL_ALLREDUCE, 1e6, LBS_TOPO_RING, 1);
    cr_assert_eq(c.proto, LBS_SIM_SIMPLE);
    lbs_sim_platform_free(p);
}

/* ---- engine ---------------------------------------------------------- */

/* One node of 4 GPUs, ring-only family, no latency: a 4 MB ring allreduce
 * on 4 GPUs moves 1.5 x 4 MB at intra_bw: 6 GB/s -> 1 ms, 2 -> 3 ms.
 * Memory 30 GB/s: 3e6 params x 10 B/elem = 1 ms of optimizer. */
static struct lbs_sim_platform *eplat(double bw)
{
    char buf[1024];
    struct lbs_sim_platform *p;
    struct lbs_err e;
    snprintf(buf, sizeof buf,
        "{\"format\": \"lbscale-platform\", \"version\": 1, \"name\": \"e\","
        " \"gpu\": {\"peak_tflops\": 1, \"mem_bw_gbs\": 30},"
        " \"node\": {\"gpus\": 4, \"intra_bw_gbs\": %g, \"nics\": 1,"
        "  \"nic_gbps\": 8}, \"fabric\": {\"kind\": \"flat\"},"
        " \"protocols\": {\"Simple\": {\"base_lat_us\": 0, \"intra_hop_us\": 0,"
        "   \"inter_hop_us\": 0, \"bw_factor\": 1}},"
        " \"algorithms\": [\"ring\", \"allgather-ring\", \"alltoall-pairwise\","
        "  \"bcast-pipeline\", \"barrier-dissemination\", \"neighbor-direct\"]}",
        bw);
    cr_assert_eq(lbs_sim_platform_parse(buf, "e.json", &p, &e), 0, "%s", e.msg);
    return p;
}

/* 3 layers of 1e6 parameters, 1 ms forward and 2 ms backward each. */
static struct lbs_sim_model *emodel(double bucket_mb)
{
    char buf[1024];
    struct lbs_sim_model *m;
    struct lbs_err e;
    snprintf(buf, sizeof buf,
        "{\"format\": \"lbscale-model\", \"version\": 1, \"name\": \"tiny\","
        " \"efficiency\": 1, \"bucket_mb\": %g, \"layers\": ["
        " {\"name\": \"a\", \"n\": 1000000, \"fwd_ms\": 1, \"bwd_ms\": 2},"
        " {\"name\": \"b\", \"n\": 1000000, \"fwd_ms\": 1},"
        " {\"name\": \"c\", \"n\": 1000000, \"fwd_ms\": 1, \"bwd_ms\": 2}]}",
        bucket_mb);
    cr_assert_eq(lbs_sim_model_parse(buf, "tiny.json", &m, &e), 0, "%s",
                 e.msg);
    return m;
}

struct tl { int n; struct lbs_sim_event ev[32]; };
static void rec(void *ctx, const struct lbs_sim_event *e)
{
    struct tl *t = ctx;
    if (e->kind == LBS_SIM_EV_COMM && t->n < 32)
        t->ev[t->n++] = *e;
}

static void run_plan(const struct lbs_sim_platform *p,
                     const struct lbs_sim_model *m,
                     const struct lbs_sim_plan *plan, double bucket_bytes,
                     struct lbs_sim_result *r, struct tl *t)
{
    struct lbs_err e;
    struct lbs_sim_opts o = {.bucket_bytes = bucket_bytes,
                             .optim_bytes_per_elem = 10, .on_event = rec,
                             .ctx = t};
    t->n = 0;
    cr_assert_eq(lbs_sim_run(p, m, plan, 4, &o, r, &e), 0, "%s", e.msg);
}

Test(sim_engine, overlap_hidden_comm)
{
    /* F = 3 ms; layer 2 ready at 5, layer 1 at 7, layer 0 at 9; each
     * 4 MB bucket (3 MiB cap) takes 1 ms: 5-6, 7-8, 9-10; optimizer 1 ms;
     * iteration 11 = compute 9 + optimizer 1 + exposed 1 */
    struct lbs_sim_platform *p = eplat(6);
    struct lbs_sim_model *m = emodel(3);
    struct lbs_sim_plan *plan;
    struct lbs_sim_result r;
    struct tl t;
    cr_assert_eq(lbs_sim_plan_dp(m, "sgd", &plan, NULL), 0);
    run_plan(p, m, plan, 0, &r, &t);
    cr_assert_eq(t.n, 3);
    double want[3][2] = {{5, 6}, {7, 8}, {9, 10}};
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(t.ev[i].layer, 2 - i);
        near(t.ev[i].start, want[i][0] * MS);
        near(t.ev[i].end, want[i][1] * MS);
    }
    near(r.iter, 11 * MS);
    near(r.compute, 9 * MS);
    near(r.optim, 1 * MS);
    near(r.exposed, 1 * MS);
    near(r.bytes, 12e6);
    lbs_sim_plan_free(plan);
    lbs_sim_model_free(m);
    lbs_sim_platform_free(p);
}

Test(sim_engine, slowdown_accumulation_and_no_overlap)
{
    /* overlap_emodel: as overlap_hidden_comm, compute at 1/1.5 while a
     * collective runs: layer 1 does 2/3 ms in 5-6 and ends at 7.333, its
     * bucket 7.333-8.333; layer 0 ends at 9.667, its bucket at 10.667;
     * iteration 11.667, exposed 1.667 of which 0.667 is the slowdown */
    struct lbs_sim_platform *p = eplat(6);
    struct lbs_sim_model *m = emodel(3);
    struct lbs_sim_plan *plan;
    struct lbs_sim_result r;
    struct lbs_err e;
    cr_assert_eq(lbs_sim_plan_dp(m, "sgd", &plan, NULL), 0);
    p->overlap_slowdown = 0.5;
    struct lbs_sim_opts o = {.optim_bytes_per_elem = 10};
    cr_assert_eq(lbs_sim_run(p, m, plan, 4, &o, &r, &e), 0, "%s", e.msg);
    near(r.iter, 35.0 / 3 * MS);
    near(r.compute, 9 * MS);
    near(r.slowdown, 2.0 / 3 * MS);
    near(r.exposed, 5.0 / 3 * MS);
    /* off: the 11 ms of overlap_hidden_comm */
    o.no_slowdown = 1;
    cr_assert_eq(lbs_sim_run(p, m, plan, 4, &o, &r, &e), 0, "%s", e.msg);
    near(r.iter, 11 * MS);
    /* 3 micro-batches: 2 x 9 ms of compute first, then the same step */
    o.accum = 3;
    cr_assert_eq(lbs_sim_run(p, m, plan, 4, &o, &r, &e), 0, "%s", e.msg);
    near(r.compute, 27 * MS);
    near(r.iter, 29 * MS);
    /* no overlap: the three buckets run 9-12, optimizer to 13 */
    o.accum = 1;
    o.no_overlap = 1;
    cr_assert_eq(lbs_sim_run(p, m, plan, 4, &o, &r, &e), 0, "%s", e.msg);
    near(r.iter, 13 * MS);
    near(r.exposed, 3 * MS);
    lbs_sim_plan_free(plan);
    lbs_sim_model_free(m);
    lbs_sim_platform_free(p);
}

Test(sim_engine, serialised_stream_and_buckets)
{
    /* 3 ms per layer: 5-8, then 8-11 (ready at 7, stream busy), 11-14;
     * iteration 14 + 1 = 15, exposed 5 */
    struct lbs_sim_platform *p = eplat(2), *q = eplat(6);
    struct lbs_sim_model *m = emodel(3);
    struct lbs_sim_plan *plan;
    struct lbs_sim_result r;
    struct tl t;
    cr_assert_eq(lbs_sim_plan_dp(m, "sgd", &plan, NULL), 0);
    run_plan(p, m, plan, 0, &r, &t);
    near(t.ev[1].start, 8 * MS);
    near(t.ev[2].end, 14 * MS);
    near(r.iter, 15 * MS);
    near(r.exposed, 5 * MS);
    /* a 7 MiB bucket fuses layers 2 and 1 (8 MB >= 7.34 MB): launched when
     * layer 1 is ready (7), 2 ms -> 7-9; layer 0 alone 9-10 */
    run_plan(q, m, plan, 7 * 1048576.0, &r, &t);
    cr_assert_eq(t.n, 2);
    cr_assert_eq(t.ev[0].calls, 2);
    near(t.ev[0].start, 7 * MS);
    near(t.ev[0].end, 9 * MS);
    near(t.ev[1].end, 10 * MS);
    near(r.iter, 11 * MS);
    near(r.calls, 2);
    lbs_sim_plan_free(plan);
    lbs_sim_model_free(m);
    lbs_sim_platform_free(p);
    lbs_sim_platform_free(q);
}

static struct lbs_sim_plan *trace(const char *text)
{
    struct lbs_sim_plan *p;
    struct lbs_err e = {{0}};
    cr_assert_eq(lbs_sim_trace_parse(text, strlen(text), "t.jsonl", &p, &e),
                 0, "%s", e.msg);
    return p;
}

#define HDR(optim, steps, ranks) \
    "{\"format\": \"lbscale-trace\", \"version\": 1, \"optim\": \"" optim \
    "\", \"params\": \"\", \"compress\": null, \"ranks\": " #ranks \
    ", \"steps\": " #steps ", \"layers\": [{\"name\": \"a\", \"n\": 10}, " \
    "{\"name\": \"b\", \"n\": 20, \"ndim\": 1}, {\"name\": \"c\", \"n\": 40}]}\n"

/* When calls may start (engine.c): the step's first call on a layer at its
 * gradient, a later call on the same layer when the earlier one ends, a
 * layer -1 call at the end of the backward pass; never "after the first
 * layer -1 call in the trace", which once kept SLAMB from overlapping. */
static void dependency_case(const char *flag_first, const char *flag_last,
                            struct lbs_sim_result *r, struct tl *t)
{
    struct lbs_sim_platform *p = eplat(6);
    struct lbs_sim_model *m = emodel(3);
    char text[2048];
    snprintf(text, sizeof text, HDR("slamb", 1, 8) "%s"
        "{\"step\": 1, \"layer\": 1, \"coll\": \"allreduce\", \"bytes\": 80}\n"
        "{\"step\": 1, \"layer\": 2, \"coll\": \"allreduce\", \"bytes\": 8}\n"
        "{\"step\": 1, \"layer\": 1, \"coll\": \"allreduce\", \"bytes\": 80}\n"
        "%s", flag_first, flag_last);
    struct lbs_sim_plan *raw = trace(text), *b;
    struct lbs_err e;
    cr_assert_eq(lbs_sim_plan_bind(raw, m, &b, &e), 0, "%s", e.msg);
    near(b->step[0].calls[flag_first[0] ? 1 : 0].bytes, 4e6);
    run_plan(p, m, b, 0, r, t);
    lbs_sim_plan_free(raw);
    lbs_sim_plan_free(b);
    lbs_sim_model_free(m);
    lbs_sim_platform_free(p);
}

Test(sim_engine, calls_start_when_their_data_exists)
{
    /* layers 2 and 1 (2e5 + 4e6 B, first calls) fuse into one bucket
     * ready with layer 1 at 7 ms: 1.05 ms -> 8.05; layer 1's second call
     * (4e6 B) waits for it: 8.05-9.05; the flag (layer -1) is ready at the
     * end of the backward pass (9) and runs when the stream frees */
    const char *flag =
        "{\"step\": 1, \"layer\": -1, \"coll\": \"allreduce\", \"bytes\": 4}\n";
    struct lbs_sim_result r, r2;
    struct tl t;
    dependency_case(flag, "", &r, &t);
    cr_assert_eq(t.n, 3, "%d ops", t.n);
    cr_assert(!t.ev[0].post);
    cr_assert_eq(t.ev[0].calls, 2);
    near(t.ev[0].start, 7 * MS);
    near(t.ev[0].end, 8.05 * MS);
    cr_assert(t.ev[1].post);
    cr_assert_eq(t.ev[1].layer, 1);
    near(t.ev[1].start, 8.05 * MS);
    near(t.ev[1].end, 9.05 * MS);
    cr_assert_eq(t.ev[2].layer, -1);
    near(t.ev[2].start, 9.05 * MS);
    near(r.iter, t.ev[2].end + 1 * MS);
    /* moving the flag to the end of the trace changes nothing */
    dependency_case("", flag, &r2, &t);
    cr_assert(fabs(r2.iter - r.iter) <= 0.01 * r.iter, "%g vs %g", r2.iter,
              r.iter);
    near(r2.iter, r.iter);
}

Test(sim_engine, compression_costs_compute)
{
    /* compress_traffic 30 B/elem at 30 GB/s: 1 ms per 1e6-element layer
     * after its backward (layers end at 6, 9, 12), each 4 MB call 1 ms
     * (6-7, 9-10, 12-13), decompression 1 ms each after the backward pass
     * (12-13, 13-14, 14-15), optimizer to 16 */
    struct lbs_sim_platform *p = eplat(6);
    struct lbs_sim_model *m = emodel(3);
    const char *text =
        "{\"format\": \"lbscale-trace\", \"version\": 1, \"optim\": \"sgd\", "
        "\"compress\": \"randk:k=0.1\", \"compress_traffic\": "
        "{\"compress_bytes_per_elem\": 30, \"decompress_bytes_per_elem\": 30, "
        "\"decompress_parts\": \"one\"}, \"ranks\": 4, \"steps\": 1, "
        "\"layers\": [{\"name\": \"a\", \"n\": 10}, {\"name\": \"b\", "
        "\"n\": 20}, {\"name\": \"c\", \"n\": 40}]}\n"
        "{\"step\": 1, \"layer\": 2, \"coll\": \"allreduce\", \"bytes\": 160}\n"
        "{\"step\": 1, \"layer\": 1, \"coll\": \"allreduce\", \"bytes\": 80}\n"
        "{\"step\": 1, \"layer\": 0, \"coll\": \"allreduce\", \"bytes\": 40}\n";
    struct lbs_sim_plan *raw = trace(text), *b;
    struct lbs_err e;
    cr_assert_eq(lbs_sim_plan_bind(raw, m, &b, &e), 0, "%s", e.msg);
    struct lbs_sim_result r;
    struct tl t;
    run_plan(p, m, b, 0, &r, &t);
    cr_assert_eq(t.n, 3);
    near(t.ev[0].start, 6 * MS);
    near(t.ev[2].end, 13 * MS);
    near(r.compress, 6 * MS);
    near(r.iter, 16 * MS);
    near(r.compute, 15 * MS);
    /* a measured rate instead: 4 B/elem at 4 GB/s -> the same 1 ms */
    struct lbs_sim_opts o = {.optim_bytes_per_elem = 10,
                             .compress_gbps = 4, .decompress_gbps = 4};
    cr_assert_eq(lbs_sim_run(p, m, b, 4, &o, &r, &e), 0, "%s", e.msg);
    near(r.iter, 16 * MS);
    lbs_sim_plan_free(raw);
    lbs_sim_plan_free(b);
    lbs_sim_model_free(m);
    lbs_sim_platform_free(p);
}

/* Gathered payloads: decompressing moves decompress_once once and
 * decompress_bytes_per_elem per rank's payload: at P = 4 GPUs, 6 + 4 x 6
 * = 30 B/elem, the same 1 ms per layer as above. */
Test(sim_engine, gathered_decompression_once_plus_per_rank)
{
    struct lbs_sim_platform *p = eplat(6);
    struct lbs_sim_model *m = emodel(3);
    const char *text =
        "{\"format\": \"lbscale-trace\", \"version\": 1, \"optim\": \"sgd\", "
        "\"compress\": \"topk:k=0.1\", \"compress_traffic\": "
        "{\"compress_bytes_per_elem\": 30, \"decompress_bytes_per_elem\": 6, "
        "\"decompress_once_bytes_per_elem\": 6, "
        "\"decompress_parts\": \"ranks\"}, \"ranks\": 4, \"steps\": 1, "
        "\"layers\": [{\"name\": \"a\", \"n\": 10}, {\"name\": \"b\", "
        "\"n\": 20}, {\"name\": \"c\", \"n\": 40}]}\n"
        "{\"step\": 1, \"layer\": 2, \"coll\": \"allreduce\", \"bytes\": 160}\n"
        "{\"step\": 1, \"layer\": 1, \"coll\": \"allreduce\", \"bytes\": 80}\n"
        "{\"step\": 1, \"layer\": 0, \"coll\": \"allreduce\", \"bytes\": 40}\n";
    struct lbs_sim_plan *raw = trace(text), *b;
    struct lbs_err e;
    cr_assert_eq(lbs_sim_plan_bind(raw, m, &b, &e), 0, "%s", e.msg);
    struct lbs_sim_result r;
    struct tl t;
    run_plan(p, m, b, 0, &r, &t);
    near(r.compress, 6 * MS);
    near(r.iter, 16 * MS);
    lbs_sim_plan_free(raw);
    lbs_sim_plan_free(b);
    lbs_sim_model_free(m);
    lbs_sim_platform_free(p);
}

Test(sim_engine, jointspar_skips_wgrad_of_dropped_layers)
{
    /* only layer 1 kept: layers 0 and 2 backward 1 ms (wgrad half
     * skipped): ready 2 at 4, 1 at 6, 0 at 7; its 1 ms call 6-7 */
    struct lbs_sim_platform *p = eplat(6);
    struct lbs_sim_model *m = emodel(3);
    struct lbs_sim_plan *raw = trace(HDR("jointspar", 1, 4)
        "{\"step\": 1, \"layer\": 1, \"coll\": \"allreduce\", \"bytes\": 80}\n");
    struct lbs_sim_plan *b;
    cr_assert_eq(lbs_sim_plan_bind(raw, m, &b, NULL), 0);
    struct lbs_sim_result r;
    struct tl t;
    run_plan(p, m, b, 0, &r, &t);
    near(r.compute, 7 * MS);
    near(t.ev[0].start, 6 * MS);
    near(r.iter, 8 * MS);
    lbs_sim_plan_free(raw);
    lbs_sim_plan_free(b);
    lbs_sim_model_free(m);
    lbs_sim_platform_free(p);
}

Test(sim_trace, distinct_steps_weights_and_final_phase)
{
    /* 1-bit-LAMB-like: 2 warm-up steps of allreduce, then 3 compressed
     * steps of alltoall + allgather on the fused buffer */
    struct lbs_sim_plan *p = trace(HDR("onebit_lamb", 5, 8)
        "{\"step\": 1, \"layer\": 0, \"coll\": \"allreduce\", \"bytes\": 40}\n"
        "{\"step\": 2, \"layer\": 0, \"coll\": \"allreduce\", \"bytes\": 40}\n"
        "\n"
        "{\"step\": 3, \"layer\": -1, \"coll\": \"alltoall\", \"bytes\": 9}\n"
        "{\"step\": 3, \"layer\": -1, \"coll\": \"allgather\", \"bytes\": 2}\n"
        "{\"step\": 4, \"layer\": -1, \"coll\": \"alltoall\", \"bytes\": 9}\n"
        "{\"step\": 4, \"layer\": -1, \"coll\": \"allgather\", \"bytes\": 2}\n"
        "{\"step\": 5, \"layer\": -1, \"coll\": \"alltoall\", \"bytes\": 9}\n"
        "{\"step\": 5, \"layer\": -1, \"coll\": \"allgather\", \"bytes\": 2, "
        "\"extra\": \"ignored\"}\n");
    cr_assert_eq(p->nsteps, 2);
    cr_assert_eq(p->final_from, 3);
    near(p->step[0].weight, 2);
    near(p->step[0].final_weight, 0);
    near(p->step[1].weight, 3);
    near(p->step[1].final_weight, 3);
    cr_assert_eq(p->ranks, 8);
    lbs_sim_plan_free(p);
    /* empty steps count, with the neighbour graph from params */
    p = trace("{\"format\": \"lbscale-trace\", \"version\": 1, \"optim\": "
              "\"decentlam\", \"params\": \"lr=0.1,topology=onepeer\", "
              "\"ranks\": 4, \"steps\": 3, \"layers\": [{\"name\": \"a\", "
              "\"n\": 4}]}\n"
              "{\"step\": 2, \"layer\": 0, \"coll\": \"neighbor\", "
              "\"bytes\": 16}\n");
    cr_assert_eq(p->topo, LBS_TOPO_ONEPEER);
    cr_assert_eq(p->nsteps, 2);
    near(p->step[0].weight + p->step[1].weight, 3);
    cr_assert_eq(p->final_from, 3);
    lbs_sim_plan_free(p);
}

/* ---- bytes that depend on P (trace-v1's bytes_rule) -------------------- */

#define RHDR(steps, ranks, other) \
    "{\"format\": \"lbscale-trace\", \"version\": 1, \"optim\": " \
    "\"onebit_lamb\", \"params\": \"\", \"compress\": null, \"ranks\": " \
    #ranks ", \"steps\": " #steps ", \"bytes_rule\": {\"form\": " \
    "\"a+ceil(b/P)\", \"from_ranks\": [" #ranks ", " #other "]}, " \
    "\"layers\": [{\"name\": \"a\", \"n\": 10}, " \
    "{\"name\": \"b\", \"n\": 20, \"ndim\": 1}, {\"name\": \"c\", \"n\": 40}]}\n"

/* One compressed step of a 1-bit-LAMB-like optimizer on 8 ranks: a
 * 1,001-byte buffer split over the ranks (each rank's share ceil(1001/P),
 * the alltoall's P blocks of it; recorded on 8 and 64 ranks the writer
 * states b = 1008), a 4-byte scale, and on layer 2 a share of 333 bytes
 * (b = 336).  EIGHT is that recording; AT32 the same step recorded on 32
 * ranks, without a rule. */
#define EIGHT RHDR(1, 8, 64) \
    "{\"step\": 1, \"layer\": 1, \"coll\": \"allreduce\", \"bytes\": 80}\n" \
    "{\"step\": 1, \"layer\": 2, \"coll\": \"allgather\", \"bytes\": 42, " \
    "\"bytes_split\": 336}\n" \
    "{\"step\": 1, \"layer\": -1, \"coll\": \"alltoall\", \"bytes\": 1008, " \
    "\"bytes_split\": 1008}\n" \
    "{\"step\": 1, \"layer\": -1, \"coll\": \"allgather\", \"bytes\": 4}\n" \
    "{\"step\": 1, \"layer\": -1, \"coll\": \"allgather\", \"bytes\": 126, " \
    "\"bytes_split\": 1008}\n"
#define AT32 HDR("onebit_lamb", 1, 32) \
    "{\"step\": 1, \"layer\": 1, \"coll\": \"allreduce\", \"bytes\": 80}\n" \
    "{\"step\": 1, \"layer\": 2, \"coll\": \"allgather\", \"bytes\": 11}\n" \
    "{\"step\": 1, \"layer\": -1, \"coll\": \"alltoall\", \"bytes\": 1024}\n" \
    "{\"step\": 1, \"layer\": -1, \"coll\": \"allgather\", \"bytes\": 4}\n" \
    "{\"step\": 1, \"layer\": -1, \"coll\": \"allgather\", \"bytes\": 32}\n"

/* A buffer fused over every layer (layer -2, 1-bit LAMB's momentum) grows
 * with the whole model when a trace recorded on a small copy is bound to
 * the full model; layer -1 stays as recorded; a rule's change with P is
 * scaled alike; no other negative layer is accepted. */
Test(sim_trace, whole_model_buffer_scales_with_params)
{
    struct lbs_sim_plan *raw = trace(RHDR(1, 8, 64)
        "{\"step\": 1, \"layer\": 0, \"coll\": \"allreduce\", \"bytes\": 40}\n"
        "{\"step\": 1, \"layer\": -1, \"coll\": \"allreduce\", \"bytes\": 4}\n"
        "{\"step\": 1, \"layer\": -2, \"coll\": \"allgather\", \"bytes\": 700}\n"
        "{\"step\": 1, \"layer\": -2, \"coll\": \"alltoall\", \"bytes\": 8960, "
        "\"bytes_split\": 8960}\n"), *b;
    struct lbs_sim_model *m = emodel(3);       /* 3 layers of 1e6: 3e6 */
    struct lbs_err e = {{0}};
    cr_assert_eq(lbs_sim_plan_bind(raw, m, &b, &e), 0, "%s", e.msg);
    const struct lbs_sim_call *c = b->step[0].calls;
    cr_assert_float_eq(c[0].bytes, 40.0 * 1e6 / 10, 1e-6);
    cr_assert_eq(c[1].bytes, 4);
    cr_assert_float_eq(c[2].bytes, 700.0 * 3e6 / 70, 1e-3);
    /* the alltoall recorded at 8 ranks: block 1120 = a + ceil(8960/8),
     * a = 0; at 64 GPUs 64 blocks of ceil(8960/64) = 140, times the scale */
    cr_assert_float_eq(c[3].bytes, 8960.0 * 3e6 / 70, 1e-3);
    cr_assert_float_eq(lbs_sim_call_bytes(b, &c[3], 64),
                       64 * 140.0 * 3e6 / 70, 1e-3);
    lbs_sim_plan_free(b);
    lbs_sim_plan_free(raw);
    lbs_sim_model_free(m);
    struct lbs_sim_plan *bad;
    const char *t3 = HDR("x", 1, 8)
        "{\"step\": 1, \"layer\": -3, \"coll\": \"allreduce\", \"bytes\": 4}\n";
    cr_assert_eq(lbs_sim_trace_parse(t3, strlen(t3), "t.jsonl", &bad, &e),
                 -EINVAL);
    cr_assert(strstr(e.msg, "layer"), "%s", e.msg);
}

Test(sim_trace, bytes_rule_evaluated_at_p)
{
    struct lbs_sim_plan *p = trace(EIGHT);
    cr_assert(p->bytes_rule);
    const struct lbs_sim_call *c = p->step[0].calls;
    near(c[2].split, 1008);
    near(c[3].split, 0);
    /* at the recorded P: the recorded bytes; elsewhere a + ceil(b/P),
     * times P for the alltoall's blocks */
    static const long Ps[] = {8, 16, 64, 1024, 4096};
    static const double gather[] = {126, 63, 16, 1, 1};
    for (size_t i = 0; i < 5; i++) {
        near(lbs_sim_call_bytes(p, &c[4], Ps[i]), gather[i]);
        near(lbs_sim_call_bytes(p, &c[2], Ps[i]), gather[i] * Ps[i]);
        near(lbs_sim_call_bytes(p, &c[3], Ps[i]), 4);
        near(lbs_sim_call_bytes(p, &c[0], Ps[i]), 80);
    }
    near(lbs_sim_call_bytes(p, &c[1], 32), 11);
    struct lbs_sim_call buf[5];
    cr_assert_eq(lbs_sim_step_calls(p, &p->step[0], 8, buf), c);
    cr_assert_eq(lbs_sim_step_calls(p, &p->step[0], 64, buf), buf);
    near(buf[4].bytes, 16);
    near(buf[2].bytes, 1024);
    /* bound to a model 5e4x larger on layer 2: the scaling multiplies
     * what the recording sends at each P */
    struct lbs_sim_model *m = emodel(3);
    struct lbs_sim_plan *b;
    cr_assert_eq(lbs_sim_plan_bind(p, m, &b, NULL), 0);
    cr_assert(b->bytes_rule);
    const struct lbs_sim_call *d = b->step[0].calls;
    near(lbs_sim_call_bytes(b, &d[1], 8), 42 * 25000.0);
    near(lbs_sim_call_bytes(b, &d[1], 32), 11 * 25000.0);
    near(lbs_sim_call_bytes(b, &d[1], 4096), 1 * 25000.0);
    near(lbs_sim_call_bytes(b, &d[2], 32), 1024);   /* layer -1: as is */
    lbs_sim_plan_free(b);
    lbs_sim_plan_free(p);
    /* a plan without the rule is used in place */
    p = trace(AT32);
    cr_assert(!p->bytes_rule);
    cr_assert_eq(lbs_sim_step_calls(p, &p->step[0], 64, buf),
                 p->step[0].calls);
    lbs_sim_plan_free(p);
    lbs_sim_model_free(m);
}

/* The simulator prices the 8-rank trace with its rule at 32 GPUs exactly
 * as it prices the recording made at 32, and not as the 8-rank bytes. */
Test(sim_engine, bytes_rule_prices_the_recording_at_p)
{
    struct lbs_sim_platform *pl = plat(NULL, 2);
    struct lbs_sim_model *m = emodel(3);
    struct lbs_sim_plan *r8 = trace(EIGHT), *r32 = trace(AT32), *b8, *b32;
    struct lbs_err e = {{0}};
    cr_assert_eq(lbs_sim_plan_bind(r8, m, &b8, &e), 0, "%s", e.msg);
    cr_assert_eq(lbs_sim_plan_bind(r32, m, &b32, &e), 0, "%s", e.msg);
    struct lbs_sim_opts o = {.optim_bytes_per_elem = 10};
    struct lbs_sim_result x, y;
    cr_assert_eq(lbs_sim_run(pl, m, b8, 32, &o, &x, &e), 0, "%s", e.msg);
    cr_assert_eq(lbs_sim_run(pl, m, b32, 32, &o, &y, &e), 0, "%s", e.msg);
    cr_assert_eq(x.iter, y.iter, "%.17g vs %.17g", x.iter, y.iter);
    cr_assert_eq(x.comm, y.comm);
    cr_assert_eq(x.exposed, y.exposed);
    cr_assert_eq(x.bytes, y.bytes);
    cr_assert_eq(x.wire, y.wire);
    cr_assert_eq(x.calls, y.calls);
    cr_assert_eq(x.final_iter, y.final_iter);
    /* without the rule the 8-rank bytes would be priced at 32 */
    b8->bytes_rule = 0;
    cr_assert_eq(lbs_sim_run(pl, m, b8, 32, &o, &x, &e), 0, "%s", e.msg);
    cr_assert_neq(x.bytes, y.bytes);
    lbs_sim_plan_free(r8);
    lbs_sim_plan_free(r32);
    lbs_sim_plan_free(b8);
    lbs_sim_plan_free(b32);
    lbs_sim_model_free(m);
    lbs_sim_platform_free(pl);
}

/* A training trace (train-trace-v1) gives the plan its call lines hold:
 * the measured "ms" is ignored, step lines (with "type") are skipped. */
Test(sim_trace, training_trace_is_a_plan)
{
    struct lbs_sim_plan *p = trace(
        "{\"format\": \"lbscale-train-trace\", \"version\": 1, \"extends\": "
        "\"lbscale-trace/1\", \"optim\": \"lamb\", \"params\": \"lr=0.01\", "
        "\"ranks\": 2, \"rank\": 0, \"steps\": 2, \"layers\": [{\"name\": "
        "\"w\", \"n\": 8}, {\"name\": \"b\", \"n\": 2}], \"time_unit\": "
        "\"ms\"}\n"
        "{\"step\": 1, \"layer\": 1, \"coll\": \"allreduce\", \"bytes\": 8, "
        "\"ms\": 0.1}\n"
        "{\"step\": 1, \"layer\": 0, \"coll\": \"allreduce\", \"bytes\": 32, "
        "\"ms\": 0.2}\n"
        "{\"type\": \"step\", \"step\": 1, \"loss\": 2.3, \"fwd_ms\": [1, 1]}\n"
        "{\"step\": 2, \"layer\": 1, \"coll\": \"allreduce\", \"bytes\": 8, "
        "\"ms\": 0.1}\n"
        "{\"step\": 2, \"layer\": 0, \"coll\": \"allreduce\", \"bytes\": 32, "
        "\"ms\": 0.3}\n"
        "{\"type\": \"step\", \"step\": 2, \"loss\": 2.2, \"fwd_ms\": [1, 1]}\n");
    cr_assert_eq(p->nsteps, 1);
    near(p->step[0].weight, 2);
    cr_assert_eq(p->step[0].ncalls, 2);
    near(p->step[0].calls[1].bytes, 32);
    cr_assert_eq(p->nlayers, 2);
    lbs_sim_plan_free(p);
}

/* ---- bad input: the message names the file and the field -------------- */

static void bad_platform(const char *from, const char *to, const char *field)
{
    char buf[2048];
    const char *base = plat_text(NULL, 2);
    const char *at = strstr(base, from);
    cr_assert(at, "test bug: '%s' not in the platform text", from);
    snprintf(buf, sizeof buf, "%.*s%s%s", (int)(at - base), base, to,
             at + strlen(from));
    struct lbs_sim_platform *p = NULL;
    struct lbs_err e = {{0}};
    int rc = lbs_sim_platform_parse(buf, "bad.json", &p, &e);
    cr_assert_eq(rc, -EINVAL, "'%s' accepted", to);
    cr_assert(strstr(e.msg, "bad.json") && strstr(e.msg, field),
              "'%s' -> '%s' lacks '%s'", to, e.msg, field);
    cr_assert_null(p);
}

Test(sim_bad, platform_fields)
{
    bad_platform("\"nic_gbps\": 80", "\"nic_gbps\": -200", "node.nic_gbps");
    bad_platform("\"gpus\": 4", "\"gpus\": 0", "node.gpus");
    bad_platform("\"gpus\": 4", "\"gpus\": 2.5", "node.gpus");
    bad_platform("\"gpus\": 4", "\"gpus\": \"4\"", "node.gpus");
    bad_platform("\"intra_bw_gbs\": 100", "\"intra_bw_gbs\": 0",
                 "node.intra_bw_gbs");
    bad_platform("\"nic_gbps\": 80", "\"nic_gpbs\": 80", "node.nic_gpbs");
    bad_platform("\"fat-tree\"", "\"torus\"", "fabric.kind");
    bad_platform("\"oversubscription\": 2", "\"oversubscription\": 0.5",
                 "fabric.oversubscription");
    /* a path across the spine contains one under a leaf */
    bad_platform("\"lat_us\": 1", "\"lat_us\": 1, \"lat_spine_us\": 0.5",
                 "fabric.lat_spine_us");
    bad_platform("\"lat_us\": 1", "\"lat_us\": 1, \"lat_spine_us\": -1",
                 "fabric.lat_spine_us");
    bad_platform("\"bw_factor\": 1", "\"bw_factor\": 1.5",
                 "protocols.Simple.bw_factor");
    bad_platform("\"Simple\"", "\"Fast\"", "protocols.Fast");
    bad_platform("\"bw_factor\": 1", "\"bw_factor\": 1, \"max_bytes\": -1",
                 "protocols.Simple.max_bytes");
    bad_platform("\"nic_gbps\": 80", "\"nic_gbps\": 80, \"reduce_gbs\": -4",
                 "node.reduce_gbs");
    bad_platform("}}}", "}}, \"coll_bw_factor\": {\"alltoall\": 1.5}}",
                 "coll_bw_factor.alltoall");
    bad_platform("}}}", "}}, \"coll_bw_factor\": {\"barrier\": 0.5}}",
                 "coll_bw_factor.barrier");
    bad_platform("\"version\": 1", "\"version\": 2", "version");
    bad_platform("\"lbscale-platform\"", "\"lbscale-model\"", "format");
    bad_platform("}}}", "}}, \"algorithms\": [\"ring\", \"warp\"]}",
                 "algorithms[1]");
    bad_platform("}}}", "}}, \"algorithms\": [\"ring\"]}", "algorithms");
    bad_platform("\"gpu\": {\"peak_tflops\": 100, \"mem_bw_gbs\": 1000}",
                 "\"gpu\": 3", "gpu");
    bad_platform("{\"format\"", "[{\"format\"", "bad.json");
    /* the fabric's size and the job (issue 29) */
    bad_platform("\"lat_us\": 1", "\"lat_us\": 1, \"tiers\": 4",
                 "fabric.tiers");
    bad_platform("\"lat_us\": 1", "\"lat_us\": 1, \"tiers\": 3",
                 "fabric.nodes_per_pod");
    bad_platform("\"lat_us\": 1", "\"lat_us\": 1, \"tiers\": 3, "
                 "\"nodes_per_pod\": 1", "fabric.nodes_per_pod");
    bad_platform("\"lat_us\": 1", "\"lat_us\": 1, \"nodes_per_pod\": 8",
                 "fabric.nodes_per_pod");
    bad_platform("\"lat_us\": 1", "\"lat_us\": 1, \"switch_radix\": 2",
                 "fabric.switch_radix");
    bad_platform("\"lat_us\": 1", "\"lat_us\": 1, \"switch_radix\": 64.5",
                 "fabric.switch_radix");
    bad_platform("\"lat_us\": 1", "\"lat_us\": 1, \"rail_optimized\": 1",
                 "fabric.rail_optimized");
    /* 4 GPUs on 2 NICs cannot be one rail each */
    bad_platform("\"lat_us\": 1", "\"lat_us\": 1, \"rail_optimized\": "
                 "true", "fabric.rail_optimized");
    bad_platform("\"lat_us\": 1", "\"lat_us\": 1, \"lat_core_us\": -3",
                 "fabric.lat_core_us");
    /* a 16-port two-tier 2:1 fat-tree holds 2 x 8^2 x 4/3 = 170 host
     * ports: 85 nodes of 2 NICs, 340 GPUs */
    bad_platform("\"lat_us\": 1}", "\"lat_us\": 1, \"switch_radix\": 16}, "
                 "\"max_gpus\": 400", "max_gpus");
    bad_platform("}}}", "}}, \"job\": {\"compute_cv\": 2, \"source\": "
                 "\"s\"}}", "job.compute_cv");
    bad_platform("}}}", "}}, \"job\": {\"compute_cv\": 0.01}}",
                 "job.source");
    bad_platform("}}}", "}}, \"job\": {\"compute_cv\": 0.01, \"source\": "
                 "\"s\", \"overhead_ms\": -1}}", "job.overhead_ms");
    bad_platform("}}}", "}}, \"job\": {\"cv\": 0.01}}", "job.cv");
}

/* The GPU limit comes from the fabric a platform describes. */
Test(sim_bad, gpu_limit_from_the_fabric)
{
    struct lbs_sim_platform *p;
    struct lbs_err e = {{0}};
    char buf[2048];
    snprintf(buf, sizeof buf, "%s", plat_text(NULL, 2));
    char *at = strstr(buf, "\"lat_us\": 1");
    cr_assert(at);
    char rest[2048];
    snprintf(rest, sizeof rest, "%s", at + strlen("\"lat_us\": 1"));
    snprintf(at, sizeof buf - (size_t)(at - buf), "\"lat_us\": 1, "
             "\"switch_radix\": 16%s", rest);
    cr_assert_eq(lbs_sim_platform_parse(buf, "t.json", &p, &e), 0, "%s",
                 e.msg);
    /* 2 (16/2)^2 host ports, 4/3 of them down at 2:1: 170; 2 NICs per
     * node: 85 nodes of 4 GPUs */
    cr_assert_eq(p->max_gpus, 340);
    cr_assert_float_eq(lbs_sim_fabric_max_nodes(p), 85, 1e-9);
    struct lbs_sim_net net;
    cr_assert_eq(lbs_sim_net_init(&net, p, 344, &e), -EINVAL);
    cr_assert(strstr(e.msg, "fabric"), "%s", e.msg);
    lbs_sim_platform_free(p);
}

/* E[max of P standard normals], against tabulated values (Tippett 1925;
 * Harter 1961). */
Test(sim_engine, expected_maximum_of_normals)
{
    cr_assert_float_eq(lbs_sim_expected_max_normal(1), 0, 1e-12);
    cr_assert_float_eq(lbs_sim_expected_max_normal(2), 0.564190, 1e-5);
    cr_assert_float_eq(lbs_sim_expected_max_normal(10), 1.538753, 1e-5);
    cr_assert_float_eq(lbs_sim_expected_max_normal(100), 2.507594, 1e-5);
    cr_assert_float_eq(lbs_sim_expected_max_normal(1000), 3.241436, 1e-5);
}

static void bad_model(const char *text, const char *field)
{
    struct lbs_sim_model *m = NULL;
    struct lbs_err e = {{0}};
    cr_assert_eq(lbs_sim_model_parse(text, "m.json", &m, &e), -EINVAL,
                 "accepted: %s", text);
    cr_assert(strstr(e.msg, "m.json") && strstr(e.msg, field),
              "'%s' lacks '%s'", e.msg, field);
    cr_assert_null(m);
}

#define MHDR "{\"format\": \"lbscale-model\", \"version\": 1, \"name\": \"m\", "

Test(sim_bad, model_fields)
{
    bad_model(MHDR "\"efficiency\": 0.5, \"layers\": [{\"name\": \"a\", "
              "\"shape\": [1000]}], \"bucket_mb\": 25}", "bucket_mb");
    bad_model(MHDR "\"efficiency\": 0, \"layers\": [{\"name\": \"a\", "
              "\"shape\": [1000]}]}", "efficiency");
    bad_model(MHDR "\"efficiency\": 0.5, \"layers\": []}", "layers");
    bad_model(MHDR "\"efficiency\": 0.5, \"layers\": [{\"name\": \"a\", "
              "\"shape\": [1000, 0]}]}", "layers[0].shape");
    bad_model(MHDR "\"efficiency\": 0.5, \"layers\": [{\"name\": \"a\", "
              "\"n\": 9000000}, {\"shape\": [3]}]}", "layers[1].name");
    bad_model(MHDR "\"efficiency\": 0.5, \"layers\": [{\"name\": \"a\", "
              "\"n\": 9000000, \"fwd_gflops\": -1}]}", "layers[0].fwd_gflops");
    bad_model(MHDR "\"efficiency\": 0.5, \"layers\": [{\"name\": \"a\", "
              "\"n\": 9000000, \"bwd_ms\": 1}]}", "layers[0].bwd_ms");
    bad_model("{\"format\": \"lbscale-model\", \"version\": 7}", "version");
}

static void bad_trace(const char *text, const char *field)
{
    struct lbs_sim_plan *p = NULL;
    struct lbs_err e = {{0}};
    cr_assert_eq(lbs_sim_trace_parse(text, strlen(text), "tr.jsonl", &p, &e),
                 -EINVAL, "accepted: %s", text);
    cr_assert(strstr(e.msg, "tr.jsonl") && strstr(e.msg, field),
              "'%s' lacks '%s'", e.msg, field);
    cr_assert_null(p);
}

Test(sim_bad, trace_fields)
{
    bad_trace("{\"format\": \"lbscale-trace\", \"version\": 2}\n", "version");
    bad_trace("{\"format\": \"nccl-trace\", \"version\": 1}\n", "format");
    bad_trace(HDR("x", 2, 0), "ranks");
    /* found by the fuzzer: a missing count must not be cast from garbage
     * (UBSan in CI's sanitizer build checks that) */
    bad_trace("{\"format\": \"lbscale-trace\", \"version\": 1, \"optim\": "
              "\"x\", \"steps\": 4, \"layers\": [{\"name\": \"a\", "
              "\"n\": 1}]}\n", "'ranks'");
    bad_trace(HDR("x", 2, 4) "{\"step\": 3, \"layer\": 0, \"coll\": "
              "\"allreduce\", \"bytes\": 4}\n", "tr.jsonl:2: field 'step'");
    bad_trace(HDR("x", 2, 4) "{\"step\": 1, \"layer\": 3, \"coll\": "
              "\"allreduce\", \"bytes\": 4}\n", "'layer'");
    bad_trace(HDR("x", 2, 4) "{\"step\": 1, \"layer\": 0, \"coll\": "
              "\"reduce\", \"bytes\": 4}\n", "'coll'");
    bad_trace(HDR("x", 2, 4) "{\"step\": 1, \"layer\": 0, \"coll\": "
              "\"allreduce\", \"bytes\": -4}\n", "'bytes'");
    bad_trace(HDR("x", 2, 4) "{\"step\": 2, \"layer\": 0, \"coll\": "
              "\"allreduce\", \"bytes\": 4}\n{\"step\": 1, \"layer\": 0, "
              "\"coll\": \"allreduce\", \"bytes\": 4}\n", "step order");
    bad_trace(HDR("x", 2, 4) "{\"step\": 1, \"layer\": -1, \"coll\": "
              "\"barrier\", \"bytes\": 4}\n", "'bytes'");
    bad_trace(HDR("x", 2, 4) "not json\n", "tr.jsonl:2");
    bad_trace("", "empty");
    /* issue 14: a header without calls simulated as no communication */
    bad_trace(HDR("x", 2, 4), "no calls");
    bad_trace(HDR("x", 2, 4) "\n  \n", "no calls");
    /* bytes_rule: the header's form and rank counts, each call's split */
#define RULE(r) "{\"format\": \"lbscale-trace\", \"version\": 1, \"optim\": " \
    "\"x\", \"ranks\": 8, \"steps\": 1, \"bytes_rule\": " r ", \"layers\": " \
    "[{\"name\": \"a\", \"n\": 10}]}\n{\"step\": 1, \"layer\": -1, " \
    "\"coll\": \"allgather\", \"bytes\": 4}\n"
    bad_trace(RULE("\"a+b/P\""), "'bytes_rule'");
    bad_trace(RULE("{\"form\": \"a+b/P\", \"from_ranks\": [8, 64]}"),
              "'bytes_rule.form'");
    bad_trace(RULE("{\"form\": 7, \"from_ranks\": [8, 64]}"),
              "'bytes_rule.form'");
    bad_trace(RULE("{\"from_ranks\": [8, 64]}"), "'bytes_rule.form'");
    bad_trace(RULE("{\"form\": \"a+ceil(b/P)\"}"), "'bytes_rule.from_ranks'");
    bad_trace(RULE("{\"form\": \"a+ceil(b/P)\", \"from_ranks\": [8]}"),
              "'bytes_rule.from_ranks'");
    bad_trace(RULE("{\"form\": \"a+ceil(b/P)\", \"from_ranks\": [8, 8]}"),
              "'bytes_rule.from_ranks'");
    bad_trace(RULE("{\"form\": \"a+ceil(b/P)\", \"from_ranks\": [16, 64]}"),
              "'bytes_rule.from_ranks'");
    bad_trace(RULE("{\"form\": \"a+ceil(b/P)\", \"from_ranks\": [8, 0]}"),
              "'bytes_rule.from_ranks'");
    bad_trace(RULE("{\"form\": \"a+ceil(b/P)\", \"from_ranks\": [8, 6.5]}"),
              "'bytes_rule.from_ranks'");
    bad_trace(RULE("{\"form\": \"a+ceil(b/P)\", \"from_ranks\": [8, 1e9]}"),
              "'bytes_rule.from_ranks'");
    bad_trace(RULE("{\"form\": \"a+ceil(b/P)\", \"from_ranks\": [8, 64], "
                   "\"frm\": 1}"), "'bytes_rule.frm'");
#define SPLIT(coll, bytes, split) RHDR(1, 8, 64) "{\"step\": 1, \"layer\": " \
    "-1, \"coll\": \"" coll "\", \"bytes\": " #bytes ", \"bytes_split\": " \
    split "}\n"
    bad_trace(SPLIT("allgather", 126, "0"), "tr.jsonl:2: field 'bytes_split'");
    bad_trace(SPLIT("allgather", 126, "-1008"), "'bytes_split'");
    bad_trace(SPLIT("allgather", 126, "1008.5"), "'bytes_split'");
    bad_trace(SPLIT("allgather", 126, "\"1008\""), "'bytes_split'");
    bad_trace(SPLIT("allgather", 126, "1e16"), "'bytes_split'");
    bad_trace(SPLIT("allgather", 125, "1008"), "'bytes_split'");  /* a < 0 */
    bad_trace(SPLIT("alltoall", 1007, "1008"), "'bytes'");   /* not 8 blocks */
    bad_trace(SPLIT("alltoall", 1000, "1008"), "'bytes_split'");
    bad_trace(SPLIT("barrier", 0, "8"), "'bytes_split'");
    bad_trace(HDR("x", 1, 8) "{\"step\": 1, \"layer\": -1, \"coll\": "
              "\"allgather\", \"bytes\": 126, \"bytes_split\": 1008}\n",
              "tr.jsonl:2: field 'bytes_split': needs the header's "
              "bytes_rule");
    /* layer counts must match the model */
    struct lbs_sim_model *m = emodel(3);
    struct lbs_sim_plan *p = trace("{\"format\": \"lbscale-trace\", "
        "\"version\": 1, \"optim\": \"x\", \"ranks\": 4, \"steps\": 1, "
        "\"layers\": [{\"name\": \"a\", \"n\": 4}]}\n{\"step\": 1, "
        "\"layer\": 0, \"coll\": \"allreduce\", \"bytes\": 16}\n"), *b = NULL;
    struct lbs_err e = {{0}};
    cr_assert_eq(lbs_sim_plan_bind(p, m, &b, &e), -EINVAL);
    cr_assert(strstr(e.msg, "t.jsonl") && strstr(e.msg, "tiny") &&
              strstr(e.msg, "layers"), "%s", e.msg);
    lbs_sim_plan_free(p);
    lbs_sim_model_free(m);
}

Test(sim_bad, runtime_checks)
{
    struct lbs_sim_platform *p = plat(NULL, 2);
    struct lbs_sim_net net;
    struct lbs_err e = {{0}};
    cr_assert_eq(lbs_sim_net_init(&net, p, 0, &e), -EINVAL);
    cr_assert_eq(lbs_sim_net_init(&net, p, 6, &e), -EINVAL);
    cr_assert(strstr(e.msg, "multiple"), "%s", e.msg);
    cr_assert_eq(lbs_sim_net_init(&net, p, 32768, &e), -EINVAL);
    /* a bucket larger than the model */
    struct lbs_sim_model *m = emodel(3);
    struct lbs_sim_plan *plan;
    struct lbs_sim_result r;
    cr_assert_eq(lbs_sim_plan_dp(m, "sgd", &plan, NULL), 0);
    struct lbs_sim_opts o = {.bucket_bytes = 100 * 1048576.0,
                             .optim_bytes_per_elem = 10};
    cr_assert_eq(lbs_sim_run(p, m, plan, 4, &o, &r, &e), -EINVAL);
    cr_assert(strstr(e.msg, "bucket"), "%s", e.msg);
    lbs_sim_plan_free(plan);
    lbs_sim_model_free(m);
    lbs_sim_platform_free(p);
}

/* ---- presets, scale lists, calibration ---------------------------------- */

/* Every platform preset x every model preset, from their one home (the
 * data directory `sim list` reads), so a new preset is covered here with
 * no edit. */
Test(sim_presets, load_and_sweep)
{
    const char *td = getenv("LBS_TEST_DATA");
    char dir[1024];
    struct lbs_err e = {{0}};
    cr_assert(td, "LBS_TEST_DATA unset");
    snprintf(dir, sizeof dir, "%s/../sim/data", td);
    setenv("LBSCALE_SIM_DATA", dir, 1);
    char **plats = lbs_sim_preset_names("platforms", ".json");
    char **models = lbs_sim_preset_names("models", ".json");
    size_t npl = 0, nm = 0;
    while (plats[npl])
        npl++;
    while (models[nm])
        nm++;
    cr_assert(npl > 0 && nm > 0, "%zu platform and %zu model presets in "
              "%s", npl, nm, dir);
    struct lbs_sim_platform **pl = calloc(npl, sizeof *pl);
    for (size_t i = 0; i < npl; i++)
        cr_assert_eq(lbs_sim_platform_find(plats[i], &pl[i], &e), 0, "%s",
                     e.msg);
    long *P;
    size_t np;
    cr_assert_eq(lbs_sim_parse_gpus("8..16384", &P, &np, &e), 0);
    cr_assert_eq(np, 12);
    for (size_t j = 0; j < nm; j++) {
        struct lbs_sim_model *m;
        struct lbs_sim_plan *plan;
        cr_assert_eq(lbs_sim_model_find(models[j], &m, &e), 0, "%s", e.msg);
        cr_assert_eq(lbs_sim_plan_dp(m, "lamb", &plan, &e), 0);
        for (size_t i = 0; i < npl; i++) {
            struct lbs_sim_result res[12];
            double eff[12];
            struct lbs_sim_opts o = {.optim_bytes_per_elem = 44};
            cr_assert_eq(lbs_sim_sweep(pl[i], m, plan, P, np, &o, res, eff,
                                       &e), 0, "%s", e.msg);
            for (size_t k = 0; k < np; k++) {
                cr_assert(res[k].iter >= res[k].compute + res[k].optim - 1e-12);
                cr_assert(eff[k] > 0 && eff[k] <= 1.0 + 1e-9,
                          "%s/%s P=%ld eff %g", models[j], plats[i], P[k],
                          eff[k]);
                near(res[k].bytes, 4 * m->params);
            }
        }
        if (!strcmp(models[j], "bert-large"))
            cr_assert_eq(m->nlayers, 396);   /* bench/layers.c's list */
        lbs_sim_plan_free(plan);
        lbs_sim_model_free(m);
    }
    free(P);
    for (size_t i = 0; i < npl; i++)
        lbs_sim_platform_free(pl[i]);
    free(pl);
    lbs_sim_names_free(plats);
    lbs_sim_names_free(models);
}

Test(sim_presets, gpus_lists)
{
    long *P;
    size_t n;
    struct lbs_err e = {{0}};
    cr_assert_eq(lbs_sim_parse_gpus("8..100,3", &P, &n, &e), 0);
    long want[] = {8, 16, 32, 64, 100, 3};
    cr_assert_eq(n, 6);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(P[i], want[i]);
    free(P);
    cr_assert_eq(lbs_sim_parse_gpus("8..4", &P, &n, &e), -EINVAL);
    cr_assert_eq(lbs_sim_parse_gpus("0", &P, &n, &e), -EINVAL);
    cr_assert_eq(lbs_sim_parse_gpus("1e", &P, &n, &e), -EINVAL);
    cr_assert_eq(lbs_sim_parse_gpus("", &P, &n, &e), -EINVAL);
}

/* The calibrated cost model: base 5 us, 1 us per step, +3 us per step
 * whose message exceeds 8 KiB (rendezvous); links at 10 GB/s for
 * allgather, 8 GB/s for allreduce, 5 GB/s for alltoall. */
static double calib_t(enum lbs_coll c, double P, double b)
{
    double steps = c == LBS_COLL_ALLREDUCE ? 2 * (P - 1) : P - 1;
    double vol = c == LBS_COLL_ALLREDUCE ? 2 * (P - 1) / P * b / 8e9
               : c == LBS_COLL_ALLGATHER ? (P - 1) * b / 1e10
                                        : (P - 1) / P * b / 5e9;
    double m = lbs_sim_step_bytes(c, (long)P, b);
    return 5e-6 + steps * (1e-6 + (m > 8192 ? 3e-6 : 0)) + vol;
}

Test(sim_calib, recovers_the_model)
{
    static const enum lbs_coll cs[] = {LBS_COLL_ALLREDUCE,
        LBS_COLL_ALLGATHER, LBS_COLL_ALLTOALL};
    struct lbs_sim_sample s[300];
    size_t n = 0;
    long Ps[] = {2, 3, 4, 8};
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < 3; k++)
            for (double b = 1024; b <= 64e6; b *= 4)
                s[n++] = (struct lbs_sim_sample){cs[k], Ps[i], b,
                    calib_t(cs[k], (double)Ps[i], b), 1, Ps[i]};
    struct lbs_sim_fit f;
    struct lbs_err e = {{0}};
    cr_assert_eq(lbs_sim_fit(s, n, &f, &e), 0, "%s", e.msg);
    cr_assert(fabs(f.base_lat - 5e-6) < 1e-9, "base %g", f.base_lat);
    cr_assert(fabs(f.hop_lat - 1e-6) < 1e-9, "hop %g", f.hop_lat);
    cr_assert(fabs(f.rndv_lat - 3e-6) < 1e-9, "rndv %g", f.rndv_lat);
    cr_assert(fabs(f.bw - 1e10) < 1e4, "bw %g", f.bw);
    cr_assert(fabs(f.coll_bw[LBS_COLL_ALLREDUCE] - 8e9) < 1e4);
    cr_assert(fabs(f.coll_bw[LBS_COLL_ALLTOALL] - 5e9) < 1e4);
    cr_assert(f.coll_bw[LBS_COLL_BCAST] == 0, "no bcast samples");
    /* a reduction rate cannot be told from allreduce's own bandwidth in
     * ring-form data: the simpler fit is kept */
    cr_assert(f.reduce_bw == 0, "reduce %g", f.reduce_bw);
    /* any limit that splits the samples as 8 KiB does is the same fit */
    for (size_t i = 0; i < n; i++) {
        double m = lbs_sim_step_bytes(s[i].coll, s[i].ranks, s[i].bytes);
        cr_assert_eq(m > f.eager_max, m > 8192, "eager_max %g", f.eager_max);
    }
    cr_assert(f.sizes.n == n / 2 && f.sizes.max < 1e-6);
    cr_assert(f.ranks.n == n && f.ranks.max < 1e-6, "%zu %g", f.ranks.n,
              f.ranks.max);
    /* one P only: hop is pinned to 0 and base absorbs it; no rank
     * hold-out is possible */
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (s[i].ranks == 4 && s[i].coll == LBS_COLL_ALLGATHER)
            s[m++] = s[i];
    cr_assert_eq(lbs_sim_fit(s, m, &f, &e), 0, "%s", e.msg);
    cr_assert(fabs(f.base_lat + f.hop_lat * 3 - 8e-6) < 1e-9);
    cr_assert(fabs(f.bw - 1e10) < 1e4);
    cr_assert(f.ranks.n == 0 && f.ranks.med < 0);
    /* nothing to fit */
    cr_assert_eq(lbs_sim_fit(s, 1, &f, &e), -EINVAL);
}

/* The platform fields the calibration writes, priced by hand: 4 ranks on
 * one node, 10 GB/s (alltoall at 0.5 of it), reduction 4 GB/s, LL (eager)
 * up to 8 KiB per step with 1 us steps, Simple (rendezvous) with 4 us
 * steps; base 5 us. */
Test(sim_coll, eager_limit_and_reduction)
{
    const char *txt =
        "{\"format\": \"lbscale-platform\", \"version\": 1, \"name\": \"c\","
        " \"gpu\": {\"peak_tflops\": 1, \"mem_bw_gbs\": 10},"
        " \"node\": {\"gpus\": 4, \"intra_bw_gbs\": 10, \"nics\": 1,"
        "  \"nic_gbps\": 80, \"reduce_gbs\": 4},"
        " \"fabric\": {\"kind\": \"flat\"}, \"max_gpus\": 4,"
        " \"coll_bw_factor\": {\"alltoall\": 0.5},"
        " \"protocols\": {\"LL\": {\"base_lat_us\": 5, \"intra_hop_us\": 1,"
        "   \"inter_hop_us\": 1, \"bw_factor\": 1, \"max_bytes\": 8192},"
        "  \"Simple\": {\"base_lat_us\": 5, \"intra_hop_us\": 4,"
        "   \"inter_hop_us\": 4, \"bw_factor\": 1}},"
        " \"algorithms\": [\"ring\", \"allgather-ring\", \"alltoall-pairwise\","
        "  \"bcast-pipeline\", \"barrier-dissemination\", \"neighbor-direct\"]}";
    struct lbs_sim_platform *p;
    struct lbs_err e;
    cr_assert_eq(lbs_sim_platform_parse(txt, "c.json", &p, &e), 0, "%s",
                 e.msg);
    struct lbs_sim_net net;
    cr_assert_eq(lbs_sim_net_init(&net, p, 4, NULL), 0);
    /* 32 KiB allreduce: 8 KiB steps -> LL: 5 + 6 x 1 us + 1.5 x 32768 B /
     * 10 GB/s + 0.75 x 32768 B / 4 GB/s */
    struct lbs_sim_cost c = lbs_sim_coll_cost(&net, LBS_COLL_ALLREDUCE, 32768,
                                              LBS_TOPO_RING, 1);
    cr_assert_eq(c.proto, LBS_SIM_LL);
    near(c.t, 11e-6 + 1.5 * 32768 / 1e10 + 0.75 * 32768 / 4e9);
    /* one byte more per step: LL may not carry it; Simple's 4 us steps */
    c = lbs_sim_coll_cost(&net, LBS_COLL_ALLREDUCE, 32772, LBS_TOPO_RING,
                          1);
    cr_assert_eq(c.proto, LBS_SIM_SIMPLE);
    near(c.t, 5e-6 + 6 * 4e-6 + 1.5 * 32772 / 1e10 + 0.75 * 32772 / 4e9);
    /* allgather of 1 MB per rank: no reduction; 3 steps of 1 MB */
    c = lbs_sim_coll_cost(&net, LBS_COLL_ALLGATHER, 1e6, LBS_TOPO_RING, 1);
    near(c.t, 5e-6 + 3 * 4e-6 + 3e6 / 1e10);
    /* alltoall of 4 MB: 3 steps of 1 MB at half the bandwidth */
    c = lbs_sim_coll_cost(&net, LBS_COLL_ALLTOALL, 4e6, LBS_TOPO_RING, 1);
    near(c.t, 5e-6 + 3 * 4e-6 + 3e6 / 5e9);
    lbs_sim_platform_free(p);
}
