/* test_sim_bounds.c - physical bounds as invariants (docs/design.md,
 * "Physical bounds"): no simulated collective may beat the bytes that must
 * leave a node divided by that node's NIC capacity, nor the bytes that
 * must cross a GPU's own link inside the node divided by that link's
 * capacity.  Walks every algorithm x protocol the preset enables x preset
 * x size x GPU count, whatever the tuner would choose.
 *
 * The bounds assume no reduction inside the network (no preset describes
 * SHARP/CollNet; NVLS reduces inside the NVSwitch, so a node's own NVLink
 * bound halves where the preset has an NVLS graph):
 *   allreduce of S bytes over N nodes: every node sends 2 (N-1)/N S
 *     (Patarasuk & Yuan 2009, bandwidth-optimal all-reduce); on one node
 *     every GPU sends 2 (g-1)/g S over its link ((g-1)/g S with NVLS);
 *   allgather of m bytes per rank: every node receives (P-g) m, every GPU
 *     (g-1) m from its node's peers;
 *   alltoall of S bytes per rank: every node sends g (P-g)/P S, every GPU
 *     (g-1)/P S to its node's peers;
 *   bcast of S: every node but the root's receives S, every GPU but the
 *     root's S;
 *   neighbour exchange of b bytes per destination: the node's GPUs whose
 *     destination lies on another node, summed over the graph's offsets.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"     /* lbs_sim_nb_offsets: the graphs the engine prices */

/* Off-node bytes of one node (send side) in a neighbour exchange of b
 * bytes per destination, and the most one GPU sends to its node's peers. */
static void nb_bytes(const struct lbs_sim_net *net, enum lbs_topo topo,
                     long step, double b, double *node_off, double *gpu_on)
{
    long d[LBS_SIM_LOGMAX];
    int nd = lbs_sim_nb_offsets(topo, net->P, step, d);
    *node_off = 0;
    *gpu_on = 0;
    for (long i = 0; i < net->g; i++) {
        double on = 0;
        for (int k = 0; k < nd; k++) {
            long dst = ((i + d[k]) % net->P + net->P) % net->P;
            if (dst / net->g != 0)
                *node_off += b;
            else if (dst != i)
                on += b;
        }
        *gpu_on = fmax(*gpu_on, on);
    }
}

/* The least time (s) the bounds allow for one call. */
static double bound(const struct lbs_sim_net *net, enum lbs_coll c,
                    double bytes, enum lbs_topo topo, long step)
{
    const struct lbs_sim_platform *pl = net->pl;
    double P = (double)net->P, g = (double)net->g, N = (double)net->N;
    double Bn = pl->nics_per_node * pl->nic_bw, Bi = pl->intra_bw;
    double off = 0, on = 0;
    switch (c) {
    case LBS_COLL_ALLREDUCE:
        off = N > 1 ? 2 * (N - 1) / N * bytes : 0;
        on = N == 1 ? (pl->nccl.nvls.channels ? 1 : 2) * (g - 1) / g * bytes
                    : 0;
        break;
    case LBS_COLL_ALLGATHER:
    case LBS_COLL_ALLGATHERV:
        off = (P - g) * bytes;
        on = (g - 1) * bytes;
        break;
    case LBS_COLL_ALLTOALL:
        off = g * (P - g) / P * bytes;
        on = (g - 1) / P * bytes;
        break;
    case LBS_COLL_BCAST:
        off = N > 1 ? bytes : 0;
        on = g > 1 ? bytes : 0;
        break;
    case LBS_COLL_NEIGHBOR:
        if (topo == LBS_TOPO_FULL)
            return bound(net, LBS_COLL_ALLGATHER, bytes, topo, step);
        nb_bytes(net, topo, step, bytes, &off, &on);
        break;
    default:
        return 0;
    }
    return fmax(off / Bn, g > 1 ? on / Bi : 0);
}

static const enum lbs_coll colls[] = {
    LBS_COLL_ALLREDUCE, LBS_COLL_ALLGATHER, LBS_COLL_ALLTOALL,
    LBS_COLL_BCAST, LBS_COLL_NEIGHBOR};
static const enum lbs_topo topos[] = {LBS_TOPO_RING, LBS_TOPO_EXPONENTIAL,
                                      LBS_TOPO_ONEPEER};

/* Every algorithm x protocol of collective c at P GPUs of pl; returns the
 * number of points checked, reports the first violation. */
static long walk(const struct lbs_sim_platform *pl, long P, enum lbs_coll c,
                 long *bad, char *why, size_t len)
{
    struct lbs_sim_net net;
    struct lbs_err e = {{0}};
    long n = 0;
    cr_assert_eq(lbs_sim_net_init(&net, pl, P, &e), 0, "%s", e.msg);
    for (double bytes = 1024; bytes <= 17.2e9; bytes *= 8) {
        int ntopo = c == LBS_COLL_NEIGHBOR ? 3 : 1;
        for (int ti = 0; ti < ntopo; ti++)
            for (long step = 1; step <= (c == LBS_COLL_NEIGHBOR ? 3 : 1);
                 step++) {
                double lb = bound(&net, c, bytes, topos[ti], step);
                for (int a = 0; a < LBS_SIM_NALGO; a++) {
                    if (lbs_sim_algo_coll(a) != c)
                        continue;
                    for (int p = 0; p < LBS_SIM_NPROTO; p++) {
                        double t = lbs_sim_algo_time(&net, a, p, bytes,
                                                     topos[ti], step, NULL);
                        if (!isfinite(t))
                            continue;
                        n++;
                        if (t < lb * (1 - 1e-9)) {
                            if (!(*bad)++)
                                snprintf(why, len, "%s: %s %s/%s of %.4g "
                                         "bytes on %ld GPUs (%s): %.4g s < "
                                         "bound %.4g s", pl->name,
                                         lbs_coll_name(c),
                                         lbs_sim_algo_name(a),
                                         lbs_sim_proto_name(p), bytes, P,
                                         lbs_topo_names[topos[ti]], t, lb);
                        }
                    }
                }
            }
    }
    return n;
}

/* Every preset, and every platform of the validation rows (the files of
 * <data>/validation that read as platforms). */
Test(sim_bounds, no_collective_beats_the_nics_or_the_links)
{
    char **names = lbs_sim_preset_names("platforms", ".json");
    char **vnames = lbs_sim_preset_names("validation", ".json");
    cr_assert(names && names[0], "no platform presets found");
    cr_assert(vnames, "out of memory");
    long checked = 0, bad = 0, nplat = 0;
    char why[512] = "";
    size_t np = 0, nv = 0;
    while (names[np])
        np++;
    while (vnames[nv])
        nv++;
    for (size_t i = 0; i < np + nv; i++) {
        struct lbs_sim_platform *pl;
        struct lbs_err e = {{0}};
        char path[1024];
        const char *s = i < np ? names[i] : vnames[i - np];
        if (!strcmp(s, "local"))
            continue;       /* calibrated on this machine, not committed */
        if (i >= np) {      /* validation/: platforms only */
            snprintf(path, sizeof path, "%s/validation/%s.json",
                     lbs_sim_data_dir(), s);
            if (lbs_sim_platform_load(path, &pl, &e)) {
                cr_assert(strstr(e.msg, "format"), "%s", e.msg);
                continue;   /* a model or the manifest */
            }
            lbs_sim_platform_free(pl);
            s = path;
        }
        cr_assert_eq(lbs_sim_platform_find(s, &pl, &e), 0, "%s", e.msg);
        nplat++;
        for (long P = 2; P <= pl->max_gpus && P <= 131072; P *= 2) {
            if (P > pl->gpus_per_node && P % pl->gpus_per_node)
                continue;
            for (size_t k = 0; k < sizeof colls / sizeof *colls; k++)
                checked += walk(pl, P, colls[k], &bad, why, sizeof why);
        }
        lbs_sim_platform_free(pl);
    }
    lbs_sim_names_free(names);
    lbs_sim_names_free(vnames);
    cr_log_info("%ld points on %ld presets, %ld below a bound", checked,
                nplat, bad);
    cr_assert(checked > 1000 && nplat >= 10, "only %ld points on %ld "
              "platforms checked", checked, nplat);
    cr_assert_eq(bad, 0, "%ld points beat a physical bound; first: %s", bad,
                 why);
}
