/* platform.c - the platform reader (format "lbscale-platform", version 1).
 * Every object and field it reads; "note" (and "source", "sources",
 * "size_note") are free text wherever they appear; unknown fields are
 * errors (typos must not fall back to defaults).  Ranges: sim/README.md,
 * "Ranges".
 *
 *   {"format": "lbscale-platform", "version": 1, "name": "dgx-a100",
 *    "description": "...", "sources": [...], "notes": ...,
 *    "gpu":   {"name": "A100-SXM4-80GB", "peak_tflops": 312,
 *              "mem_bw_gbs": 2039},
 *    "node":  {"gpus": 8, "intra": "NVLink3 + NVSwitch",
 *              "intra_bw_gbs": 300, "nics": 8, "nic_gbps": 200,
 *              "reduce_gbs": 0},
 *    "fabric": {"kind": "fat-tree", "nodes_per_leaf": 20,
 *               "oversubscription": 1, "lat_us": 0, "lat_spine_us": 0,
 *               "tiers": 2, "switch_radix": 40, "rail_optimized": true,
 *               "nodes_per_pod": 400, "lat_core_us": 0},
 *    "max_gpus": 16384,
 *    "overlap": {"compute_slowdown": 0.189, "source": "..."},
 *    "job":     {"compute_cv": 0.012, "overhead_ms": 0, "source": "..."},
 *    then either NCCL's tuner model (every preset in sim/data):
 *    "nccl": {"version": "2.21.5", "gpu_arch": "ampere",
 *             "cpu_vendor": "amd", "intra_link": "nvlink",
 *             "nic_path": "pxb", "compute_capability": 80,
 *             "intra_graph": GRAPH, "inter_graph": GRAPH,
 *             "nvls_graph": GRAPH, "p2p_gbs": 24,
 *             "algorithms": ["ring", "tree"],
 *             "protocols": ["LL", "LL128", "Simple"]},
 *      GRAPH = {"channels": 8, "bw_gbs": 24, "tree_bw_intra_gbs": 24,
 *               "tree_pattern": "balanced"}
 *    or the MPI model (`sim calibrate`'s output, sim/xcheck's files):
 *    "protocols": {"LL": {"base_lat_us": 3.6, "intra_hop_us": 0.47,
 *                         "inter_hop_us": 2.7, "bw_factor": 0.25,
 *                         "max_bytes": 0, "enabled": true}, ...},
 *    "algorithms": ["ring", "tree", ...],
 *    "coll_bw_factor": {"allgather": 0.6, ...},
 *    "calibration": {...}}   (written by `sim calibrate`, not read)
 *
 * gpu: peak_tflops and mem_bw_gbs price compute and the optimizer's
 * memory passes.  node.intra_bw_gbs: GB/s one GPU can send (and receive)
 * inside the node at once (required with more than one GPU); intra: the
 * link's name, text only; nic_gbps: the NIC's line rate in Gb/s (divided
 * by 8 here).
 * fabric.kind "flat" (one non-blocking switch) or "fat-tree" (two levels:
 * nodes_per_leaf nodes under a leaf whose uplinks carry 1/oversubscription
 * of what its nodes can inject; full bisection above the leaves); lat_us
 * per step under a leaf, lat_spine_us across the spine (default lat_us);
 * the fabric's size (read_tiers): tiers (fat-tree 2 or 3), switch_radix,
 * rail_optimized (a NIC per GPU, one plane per rail), and for three tiers
 * nodes_per_pod and lat_core_us.  max_gpus (optional): the largest job,
 * never more than the fabric holds (read_max_gpus).
 * reduce_gbs (optional, 0 = free): the rate a rank adds received data
 * into its buffer; every allreduce algorithm pays (P-1)/P n of it (the
 * reduce-scatter minimum, [C07] in coll.c).  GPUs fuse the reduction
 * into the copy, so the GPU presets leave it out; CPUs under MPI do not
 * (`sim calibrate` fits it).
 * overlap (optional): compute runs (1 + compute_slowdown) times slower
 * while a collective overlaps it (read_overlap).  job (optional): the
 * spread of per-rank compute and a per-step overhead (read_job).
 * nccl: present = collectives priced by NCCL 2.21's tuner model
 * (sim/nccl.c; read_nccl): the hardware that decides its tables' row and
 * LL128 (gpu_arch volta/ampere/hopper, cpu_vendor amd/intel/other,
 * intra_link nvlink/pci, nic_path pix/pxb/pxn/phb/sys, compute_capability
 * 70/80/90 by default), the graphs NCCL's topology search would find
 * inside one node, across nodes and for NVLS (read_graph: channels,
 * GB/s per channel, a tree's intra-node rate and pattern
 * balanced/split/tree), the point-to-point rate p2p_gbs, and the
 * algorithms (sim/algos.h's nccl_as names; the point-to-point ones are
 * always enabled; ring required, nvls only on Hopper with an nvls_graph)
 * and protocols (Simple required) NCCL may pick.  With nccl, the MPI
 * model's protocols and algorithms are errors.
 * protocols (MPI model): when given, exactly the protocols listed are
 * enabled (unless "enabled": false); when absent, NCCL's three with the latencies of its ring model
 * (NCCL 2.8 src/graph/tuning.cc: baseLat, hwLat NVLink/NET, LL 1/4 and
 * LL128 0.92 of the bandwidth).  A protocol's max_bytes (optional, 0 =
 * any) is the largest step message it may carry (lbs_sim_step_bytes):
 * MPI's eager limit, above which the rendezvous protocol's extra
 * handshake per step applies.  algorithms (MPI model): when given,
 * exactly those are enabled (names as lbs_sim_algo_name prints); every
 * collective needs one.
 * coll_bw_factor (optional): a factor in (0, 1] on every link bandwidth
 * for the algorithms of that collective (default 1; allgatherv uses
 * allgather's), as NCCL's tuner scales bandwidth per collective: MPI's
 * shared-memory collectives copy at different rates (`sim calibrate`
 * fits one per collective).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"

/* Plausible ranges of the physical quantities (sim/README.md, "Ranges"):
 * from a small CPU (1 GFLOP/s, 1 MB/s, 1 Mb/s) to far beyond any machine
 * built, and never so small that a time becomes infinite (a denormal
 * peak_tflops once made every compute time inf). */
#define RATE_MIN 1e-3     /* TFLOP/s, GB/s, Gb/s */
#define RATE_MAX 1e6
#define FACTOR_MIN 1e-3   /* bw_factor, coll_bw_factor */
#define LAT_MAX_US 1e6    /* one second per hop or call */

/* NCCL 2.8 ring model defaults (us): base, NVLink hop, NET hop, bw factor */
static const double nccl_def[LBS_SIM_NPROTO][4] = {
    {3.6, 0.47, 2.7, 0.25},     /* LL */
    {10.0, 1.9, 4.0, 0.92},     /* LL128 */
    {8.4, 3.4, 9.6, 1.0},       /* Simple */
};

static int read_proto(const struct sj *c, const json_t *o, const char *path,
                      struct lbs_sim_proto_params *p)
{
    static const char *const keys[] = {"base_lat_us", "intra_hop_us",
        "inter_hop_us", "bw_factor", "max_bytes", "enabled", "note", NULL};
    double v[5];
    int rc = sj_known(c, o, path, keys);
    if (!rc) rc = sj_num(c, o, path, "base_lat_us", SJ_REQ, 0, 0, LAT_MAX_US,
                         &v[0]);
    if (!rc) rc = sj_num(c, o, path, "intra_hop_us", SJ_REQ, 0, 0, LAT_MAX_US,
                         &v[1]);
    if (!rc) rc = sj_num(c, o, path, "inter_hop_us", SJ_REQ, 0, 0, LAT_MAX_US,
                         &v[2]);
    if (!rc) rc = sj_num(c, o, path, "bw_factor", SJ_REQ, 0, FACTOR_MIN, 1,
                         &v[3]);
    if (!rc) rc = sj_num(c, o, path, "max_bytes", 0, 0, 0, 1e18, &v[4]);
    if (rc)
        return rc;
    const json_t *en = json_object_get(o, "enabled");
    if (en && !json_is_boolean(en))
        return sj_fail(c, path, "enabled", "must be true or false");
    p->enabled = !en || json_is_true(en);
    p->base_lat = v[0] * 1e-6;
    p->intra_hop = v[1] * 1e-6;
    p->inter_hop = v[2] * 1e-6;
    p->bw_factor = v[3];
    p->max_bytes = v[4];
    return 0;
}

/* coll_bw_factor: {"<collective>": factor in (0, 1], ...} */
static int read_coll_bw(const struct sj *c, const json_t *root,
                        struct lbs_sim_platform *p)
{
    json_t *o;
    const char *k;
    json_t *v;
    for (int i = 0; i < LBS_COLL_COUNT; i++)
        p->coll_bw[i] = 1;
    int rc = sj_obj(c, root, "", "coll_bw_factor", 0, &o);
    if (rc || !o)
        return rc;
    json_object_foreach(o, k, v) {
        int i = lbs_coll_from_name(k);
        if (i < 0 || i == LBS_COLL_ALLGATHERV || i == LBS_COLL_BARRIER)
            return sj_fail(c, "coll_bw_factor.", k, "not a collective with "
                           "a bandwidth (allreduce, allgather, alltoall, "
                           "bcast, neighbor)");
        if ((rc = sj_num(c, o, "coll_bw_factor.", k, SJ_REQ, 1, FACTOR_MIN,
                         1, &p->coll_bw[i])))
            return rc;
    }
    p->coll_bw[LBS_COLL_ALLGATHERV] = p->coll_bw[LBS_COLL_ALLGATHER];
    return 0;
}

/* "overlap": {"compute_slowdown": s}: compute runs (1 + s) times slower
 * while a collective overlaps it (NCCL kernels hold SMs and HBM
 * bandwidth).  Absent: 0, not modelled. */
static int read_overlap(const struct sj *c, const json_t *root,
                        struct lbs_sim_platform *p)
{
    static const char *const keys[] = {"compute_slowdown", "source", "note",
                                       NULL};
    json_t *o;
    p->overlap_slowdown = 0;
    int rc = sj_obj(c, root, "", "overlap", 0, &o);
    if (rc || !o)
        return rc;
    if ((rc = sj_known(c, o, "overlap.", keys)))
        return rc;
    return sj_num(c, o, "overlap.", "compute_slowdown", SJ_REQ, 0, 0, 10,
                  &p->overlap_slowdown);
}

/* "job": {"compute_cv": cv, "overhead_ms": t, "source": "..."}: the
 * spread of per-rank compute (a synchronous step waits for the slowest of
 * P) and a fixed per-step overhead.  Absent: 0 and 0, "not modelled". */
static int read_job(const struct sj *c, const json_t *root,
                    struct lbs_sim_platform *p)
{
    static const char *const keys[] = {"compute_cv", "overhead_ms", "source",
                                       "note", NULL};
    json_t *o;
    double v = 0;
    p->compute_cv = 0;
    p->overhead = 0;
    snprintf(p->job_source, sizeof p->job_source, "not modelled (no \"job\" "
             "in the platform)");
    int rc = sj_obj(c, root, "", "job", 0, &o);
    if (rc || !o)
        return rc;
    if ((rc = sj_known(c, o, "job.", keys)) ||
        (rc = sj_num(c, o, "job.", "compute_cv", SJ_REQ, 0, 0, 1,
                     &p->compute_cv)) ||
        (rc = sj_num(c, o, "job.", "overhead_ms", 0, 0, 0, 1e7, &v)))
        return rc;
    p->overhead = v * 1e-3;
    return sj_str(c, o, "job.", "source", SJ_REQ, NULL, p->job_source,
                  sizeof p->job_source);
}

static int read_graph(const struct sj *c, const json_t *o, const char *key,
                      int required, struct lbs_sim_nccl_graph *g)
{
    static const char *const keys[] = {"channels", "bw_gbs",
        "tree_bw_intra_gbs", "tree_pattern", "note", NULL};
    char path[48], pat[16];
    json_t *go;
    double ch = 0, bw = 0, ti = 0;
    snprintf(path, sizeof path, "nccl.%s.", key);
    int rc = sj_obj(c, o, "nccl.", key, required ? SJ_REQ : 0, &go);
    if (rc || !go)
        return rc;
    if (!rc) rc = sj_known(c, go, path, keys);
    /* NCCL's MAXCHANNELS is 32; a channel's speed comes from its search
     * lists (0.12 .. 60 GB/s) */
    if (!rc) rc = sj_num(c, go, path, "channels", SJ_REQ | SJ_INT, 0, 1, 32,
                         &ch);
    if (!rc) rc = sj_num(c, go, path, "bw_gbs", SJ_REQ, 0, 0.1, 100, &bw);
    /* search.cc, pass 2: a tree's bwIntra rises while below 2 bwInter */
    if (!rc) rc = sj_num(c, go, path, "tree_bw_intra_gbs", 0, bw, bw,
                         2 * bw, &ti);
    if (!rc) rc = sj_str(c, go, path, "tree_pattern", 0, "balanced", pat,
                         sizeof pat);
    if (!rc && strcmp(pat, "balanced") && strcmp(pat, "split") &&
        strcmp(pat, "tree"))
        rc = sj_fail(c, path, "tree_pattern", "\"%s\": balanced, split or "
                     "tree (NCCL's tree graph patterns)", pat);
    g->channels = (int)ch;
    g->bw = bw * 1e9;
    g->tree_bw_intra = ti * 1e9;
    g->tree_simple = !strcmp(pat, "tree");
    return rc;
}

/* nccl.KEY, a string (def when absent; NULL: required) that must be one
 * of names: *out its index, or a message listing them ("a, b or c"),
 * then why (may be ""). */
static int read_choice(const struct sj *c, const json_t *o, const char *key,
                       const char *def, const char *const *names,
                       const char *why, int *out)
{
    char s[32], list[128] = "";
    size_t l = 0;
    int rc = sj_str(c, o, "nccl.", key, def ? 0 : SJ_REQ, def, s, sizeof s);
    if (rc)
        return rc;
    for (*out = 0; names[*out]; ++*out)
        if (!strcmp(names[*out], s))
            return 0;
    for (int i = 0; names[i] && l < sizeof list; i++)
        l += (size_t)snprintf(list + l, sizeof list - l, "%s%s",
                              !i ? "" : names[i + 1] ? ", " : " or ",
                              names[i]);
    return sj_fail(c, "nccl.", key, "\"%s\": %s%s", s, list, why);
}

/* The nccl object's hardware: version, GPU architecture, CPU vendor, the
 * link inside the node, the NIC's path and the compute capability, which
 * decide where NCCL enables LL128. */
static int read_nccl_hw(const struct sj *c, const json_t *o,
                        struct lbs_sim_nccl *n)
{
    static const char *const archs[] = {"volta", "ampere", "hopper", NULL};
    static const char *const cpus[] = {"amd", "intel", "other", NULL};
    static const char *const links[] = {"nvlink", "pci", NULL};
    static const char *const paths[] = {"pix", "pxb", "pxn", "phb", "sys",
                                        NULL};
    static const double def_cc[] = {70, 80, 90};
    char s[32];
    int a, cpu, link, path;
    double v;
    int rc = sj_str(c, o, "nccl.", "version", 0, "2.21.5", s, sizeof s);
    if (!rc && strncmp(s, "2.21", 4))
        return sj_fail(c, "nccl.", "version", "\"%s\": this build carries "
                       "NCCL 2.21's tuning tables only", s);
    if (rc || (rc = read_choice(c, o, "gpu_arch", NULL, archs, " (the rows "
                                "of NCCL's tables)", &a)) ||
        (rc = read_choice(c, o, "cpu_vendor", "intel", cpus, "", &cpu)) ||
        (rc = read_choice(c, o, "intra_link", "nvlink", links, "", &link)) ||
        (rc = read_choice(c, o, "nic_path", "pxb", paths, " (NCCL's path "
                          "type from a GPU to its NIC)", &path)) ||
        (rc = sj_num(c, o, "nccl.", "compute_capability", 0, def_cc[a], 30,
                     200, &v)))
        return rc;
    n->arch = (enum lbs_sim_gpu_arch)a;
    n->cpu_amd = cpu == 0;
    n->intra_pci = link == 1;
    if ((v < 90) != (a < 2) || (v >= 80) != (a >= 1))
        return sj_fail(c, "nccl.", "compute_capability", "%g does not belong "
                       "to gpu_arch %s (NCCL's rows: < 80 volta, 80-89 "
                       "ampere, >= 90 hopper)", v, archs[a]);
    /* tuning.cc, "Enable LL128 by default only on Volta/Ampere/Hopper+
     * NVLink": typeIntra NVLink, typeInter <= PATH_PXB (PXN on sm90),
     * one compute capability of 7.0, 8.0 or 9.0 */
    n->ll128_intra = (v == 70 || v == 80 || v == 90) && !n->intra_pci;
    n->ll128_inter = n->ll128_intra &&
                     (path <= 1 || (v >= 90 && path <= 2));
    return 0;
}

/* nccl.algorithms: NCCL's names (sim/algos.h's nccl_as column), each
 * enabling its rows; the point-to-point ones are always there. */
static int read_nccl_algos(const struct sj *c, const json_t *o,
                           struct lbs_sim_platform *p)
{
    char names[64];
    lbs_sim_nccl_algo_names(names, sizeof names);
    p->algos = lbs_sim_nccl_algos(NULL);
    const json_t *l = json_object_get(o, "algorithms");
    if (!json_is_array(l) || !json_array_size(l))
        return sj_fail(c, "nccl.", "algorithms", "required: a list of %s",
                       names);
    for (size_t i = 0; i < json_array_size(l); i++) {
        const char *nm = json_string_value(json_array_get(l, i));
        unsigned bits = nm ? lbs_sim_nccl_algos(nm) : 0;
        if (!bits)
            return sj_fail(c, "nccl.", "algorithms", "item %zu \"%.40s\": "
                           "one of %s", i, nm ? nm : "?", names);
        p->algos |= bits;
    }
    if (!(p->algos >> LBS_SIM_AR_RING & 1))
        return sj_fail(c, "nccl.", "algorithms", "ring is required (NCCL "
                       "falls back to it; allgather and bcast use it)");
    if ((p->algos >> LBS_SIM_AR_NVLS & 1) &&
        (!p->nccl.nvls.channels || p->nccl.arch != LBS_SIM_HOPPER))
        return sj_fail(c, "nccl.", "algorithms", "nvls needs a Hopper GPU and "
                       "nccl.nvls_graph");
    return 0;
}

/* nccl.protocols: the ones NCCL may use, at full bandwidth (its own
 * tables, nccl.c, price them). */
static int read_nccl_protos(const struct sj *c, const json_t *o,
                            struct lbs_sim_platform *p)
{
    const json_t *l = json_object_get(o, "protocols");
    if (!json_is_array(l) || !json_array_size(l))
        return sj_fail(c, "nccl.", "protocols", "required: a list of LL, "
                       "LL128, Simple");
    for (int i = 0; i < LBS_SIM_NPROTO; i++)
        p->proto[i] = (struct lbs_sim_proto_params){0};
    for (size_t i = 0; i < json_array_size(l); i++) {
        const char *nm = json_string_value(json_array_get(l, i));
        int k = 0;
        while (nm && k < LBS_SIM_NPROTO && strcmp(lbs_sim_proto_name(k), nm))
            k++;
        if (!nm || k == LBS_SIM_NPROTO)
            return sj_fail(c, "nccl.", "protocols", "item %zu \"%.40s\": LL, "
                           "LL128 or Simple", i, nm ? nm : "?");
        p->proto[k].enabled = 1;
        p->proto[k].bw_factor = 1;
    }
    if (!p->proto[LBS_SIM_SIMPLE].enabled)
        return sj_fail(c, "nccl.", "protocols", "Simple is required (NCCL's "
                       "point-to-point and NVLS use it)");
    return 0;
}

/* "nccl": what NCCL's topology search finds on this platform; present =
 * collectives priced by NCCL's tuner model (sim/nccl.c). */
static int read_nccl(const struct sj *c, const json_t *root,
                     struct lbs_sim_platform *p)
{
    static const char *const keys[] = {"version", "gpu_arch", "cpu_vendor",
        "intra_link", "intra_graph", "inter_graph", "nvls_graph", "p2p_gbs",
        "algorithms", "protocols", "nic_path", "compute_capability", "note",
        "sources", NULL};
    struct lbs_sim_nccl *n = &p->nccl;
    json_t *o;
    double v;
    int rc = sj_obj(c, root, "", "nccl", 0, &o);
    if (rc || !o)
        return rc;
    p->nccl_model = 1;
    if ((rc = sj_known(c, o, "nccl.", keys)) ||
        (rc = read_nccl_hw(c, o, n)) ||
        (rc = read_graph(c, o, "intra_graph", p->gpus_per_node > 1,
                         &n->intra)) ||
        (rc = read_graph(c, o, "inter_graph", 1, &n->inter)) ||
        (rc = read_graph(c, o, "nvls_graph", 0, &n->nvls)))
        return rc;
    if (p->gpus_per_node == 1)
        n->intra = n->inter;
    if ((rc = sj_num(c, o, "nccl.", "p2p_gbs", SJ_REQ, 0, RATE_MIN, RATE_MAX,
                     &v)))
        return rc;
    n->p2p_bw = v * 1e9;
    if ((rc = read_nccl_algos(c, o, p)))
        return rc;
    return read_nccl_protos(c, o, p);
}

/* "gpu": its name, peak and memory bandwidth. */
static int read_gpu(const struct sj *c, const json_t *root,
                    struct lbs_sim_platform *p)
{
    static const char *const gk[] = {"name", "peak_tflops", "mem_bw_gbs",
                                     "note", NULL};
    json_t *gpu;
    double v = 0;
    int rc = sj_obj(c, root, "", "gpu", SJ_REQ, &gpu);
    if (!rc) rc = sj_known(c, gpu, "gpu.", gk);
    if (!rc) rc = sj_str(c, gpu, "gpu.", "name", 0, "gpu", p->gpu,
                         sizeof p->gpu);
    if (!rc) rc = sj_num(c, gpu, "gpu.", "peak_tflops", SJ_REQ, 0, RATE_MIN,
                         RATE_MAX, &v);
    p->peak_flops = v * 1e12;
    if (!rc) rc = sj_num(c, gpu, "gpu.", "mem_bw_gbs", SJ_REQ, 0, RATE_MIN,
                         RATE_MAX, &v);
    p->mem_bw = v * 1e9;
    return rc;
}

/* "node": GPUs, the links between them, the NICs, the reduction rate. */
static int read_node(const struct sj *c, const json_t *root,
                     struct lbs_sim_platform *p)
{
    static const char *const nk[] = {"gpus", "intra", "intra_bw_gbs", "nics",
                                     "nic_gbps", "reduce_gbs", "note", NULL};
    json_t *node;
    double v = 0;
    int rc = sj_obj(c, root, "", "node", SJ_REQ, &node);
    if (!rc) rc = sj_known(c, node, "node.", nk);
    if (!rc) rc = sj_num(c, node, "node.", "gpus", SJ_REQ | SJ_INT, 0, 1,
                         1 << 16, &v);
    p->gpus_per_node = (int)v;
    if (!rc && json_object_get(node, "intra") &&
        !json_is_string(json_object_get(node, "intra")))
        rc = sj_fail(c, "node.", "intra", "must be a string");
    if (!rc) rc = sj_num(c, node, "node.", "intra_bw_gbs",
                         p->gpus_per_node > 1 ? SJ_REQ : 0, RATE_MAX,
                         RATE_MIN, RATE_MAX, &v);
    p->intra_bw = v * 1e9;
    if (!rc) rc = sj_num(c, node, "node.", "nics", SJ_REQ | SJ_INT, 0, 1,
                         1024, &v);
    p->nics_per_node = (int)v;
    if (!rc) rc = sj_num(c, node, "node.", "nic_gbps", SJ_REQ, 0, RATE_MIN,
                         RATE_MAX, &v);
    p->nic_bw = v * 1e9 / 8;
    if (!rc) rc = sj_num(c, node, "node.", "reduce_gbs", 0, 0, 0, RATE_MAX,
                         &v);
    if (!rc && v > 0 && v < RATE_MIN)
        rc = sj_fail(c, "node.", "reduce_gbs", "must be 0 (free) or >= %g "
                     "(got %g)", RATE_MIN, v);
    p->reduce_bw = v * 1e9;
    return rc;
}

/* The fabric's size: tiers (fat-tree 2 or 3), switch_radix, rails, and
 * for three tiers the pod (nodes under one set of spines) and the latency
 * of a step across the core. */
static int read_tiers(const struct sj *c, const json_t *fab,
                      struct lbs_sim_platform *p, int ft)
{
    double v = 0;
    int rc = sj_num(c, fab, "fabric.", "tiers", SJ_INT, ft ? 2 : 1,
                    ft ? 2 : 1, ft ? 3 : 1, &v);
    p->tiers = (int)v;
    if (!rc) rc = sj_num(c, fab, "fabric.", "switch_radix", SJ_INT, 0, 4,
                         4096, &v);
    p->switch_radix = (int)v;
    const json_t *r = json_object_get(fab, "rail_optimized");
    if (!rc && r && !json_is_boolean(r))
        rc = sj_fail(c, "fabric.", "rail_optimized", "must be true or false");
    p->rails = r && json_is_true(r);
    if (!rc && p->rails && p->nics_per_node < p->gpus_per_node)
        rc = sj_fail(c, "fabric.", "rail_optimized", "needs a NIC per GPU "
                     "(node.nics %d < node.gpus %d)", p->nics_per_node,
                     p->gpus_per_node);
    int t3 = p->tiers == 3;
    if (!rc) rc = sj_num(c, fab, "fabric.", "nodes_per_pod",
                         (t3 ? SJ_REQ : 0) | SJ_INT, 1e9, 1, 1e9, &v);
    p->nodes_per_pod = v > 1e8 ? 100000000 : (int)v;
    if (!rc && t3 && p->nodes_per_pod < p->nodes_per_leaf)
        rc = sj_fail(c, "fabric.", "nodes_per_pod", "must be >= "
                     "nodes_per_leaf (%d)", p->nodes_per_leaf);
    if (!rc) rc = sj_num(c, fab, "fabric.", "lat_core_us", 0,
                         p->spine_lat * 1e6, 0, LAT_MAX_US, &v);
    p->core_lat = v * 1e-6;
    if (!rc && !t3 && json_object_get(fab, "nodes_per_pod"))
        rc = sj_fail(c, "fabric.", "nodes_per_pod", "only for tiers 3");
    return rc;
}

double lbs_sim_fabric_max_nodes(const struct lbs_sim_platform *p)
{
    if (p->switch_radix <= 0)
        return 0;
    double k = p->switch_radix, ports;
    if (p->fabric == LBS_SIM_FLAT) {
        ports = k;
    } else {
        ports = 2 * pow(k / 2, p->tiers);
        ports *= 2 * p->oversub / (p->oversub + 1);
    }
    return floor(ports / (p->rails ? 1 : p->nics_per_node));
}

/* "fabric": flat or fat-tree, and its latencies. */
static int read_fabric(const struct sj *c, const json_t *root,
                       struct lbs_sim_platform *p)
{
    static const char *const fk[] = {"kind", "nodes_per_leaf",
        "oversubscription", "lat_us", "lat_spine_us", "tiers",
        "switch_radix", "rail_optimized", "nodes_per_pod", "lat_core_us",
        "size_note",
        "note", NULL};
    json_t *fab;
    double v = 0;
    char kind[32];
    int rc = sj_obj(c, root, "", "fabric", SJ_REQ, &fab);
    if (!rc) rc = sj_known(c, fab, "fabric.", fk);
    if (!rc) rc = sj_str(c, fab, "fabric.", "kind", SJ_REQ, NULL, kind,
                         sizeof kind);
    if (!rc) {
        if (!strcmp(kind, "flat"))
            p->fabric = LBS_SIM_FLAT;
        else if (!strcmp(kind, "fat-tree"))
            p->fabric = LBS_SIM_FAT_TREE;
        else
            rc = sj_fail(c, "fabric.", "kind", "unknown kind \"%s\" (flat, "
                         "fat-tree)", kind);
    }
    int ft = p->fabric == LBS_SIM_FAT_TREE;
    if (!rc) rc = sj_num(c, fab, "fabric.", "nodes_per_leaf",
                         (ft ? SJ_REQ : 0) | SJ_INT, 1e9, 1, 1e9, &v);
    p->nodes_per_leaf = v > 1e8 ? 100000000 : (int)v;
    if (!rc) rc = sj_num(c, fab, "fabric.", "oversubscription", ft ? SJ_REQ : 0,
                         1, 1, 1e3, &p->oversub);
    if (!rc) rc = sj_num(c, fab, "fabric.", "lat_us", 0, 0, 0, LAT_MAX_US,
                         &v);
    p->net_lat = v * 1e-6;
    /* a step across the spine crosses two more links and switches than
     * one under a leaf: its own latency (default: the same) */
    if (!rc) rc = sj_num(c, fab, "fabric.", "lat_spine_us", 0, v, 0,
                         LAT_MAX_US, &v);
    p->spine_lat = v * 1e-6;
    if (!rc) rc = read_tiers(c, fab, p, ft);
    if (!rc && p->spine_lat < p->net_lat)
        rc = sj_fail(c, "fabric.", "lat_spine_us", "must be >= lat_us (a "
                     "path across the spine contains one under a leaf)");
    return rc;
}

/* The MPI model's "protocols" (default: NCCL-like values for all three). */
static int read_protocols(const struct sj *c, const json_t *root,
                          struct lbs_sim_platform *p)
{
    json_t *protos;
    int rc = sj_obj(c, root, "", "protocols", 0, &protos);
    if (rc)
        return rc;
    if (!protos) {
        for (int i = 0; i < LBS_SIM_NPROTO; i++)
            p->proto[i] = (struct lbs_sim_proto_params){
                1, nccl_def[i][0] * 1e-6, nccl_def[i][1] * 1e-6,
                nccl_def[i][2] * 1e-6, nccl_def[i][3], 0};
        return 0;
    }
    const char *k;
    json_t *o;
    int any = 0;
    json_object_foreach(protos, k, o) {
        int i;
        char path[48];
        for (i = 0; i < LBS_SIM_NPROTO; i++)
            if (!strcmp(k, lbs_sim_proto_name(i)))
                break;
        if (i == LBS_SIM_NPROTO)
            return sj_fail(c, "protocols.", k, "unknown protocol (LL, "
                           "LL128, Simple)");
        snprintf(path, sizeof path, "protocols.%s.", k);
        if (!json_is_object(o))
            return sj_fail(c, "protocols.", k, "must be an object");
        if ((rc = read_proto(c, o, path, &p->proto[i])))
            return rc;
        any |= p->proto[i].enabled;
    }
    if (!any)
        return sj_fail(c, "", "protocols", "no protocol enabled");
    return 0;
}

/* The MPI model's "algorithms" (default: all), at least one per
 * collective. */
static int read_algorithms(const struct sj *c, const json_t *root,
                           struct lbs_sim_platform *p)
{
    const json_t *al = json_object_get(root, "algorithms");
    if (!al) {
        p->algos = (1u << LBS_SIM_NALGO) - 1;
        return 0;
    }
    if (!json_is_array(al))
        return sj_fail(c, "", "algorithms", "must be an array of names");
    p->algos = 0;
    for (size_t i = 0; i < json_array_size(al); i++) {
        const char *s = json_string_value(json_array_get(al, i));
        int a = s ? lbs_sim_algo_from_name(s) : -1;
        char key[48];
        snprintf(key, sizeof key, "algorithms[%zu]", i);
        if (!s)
            return sj_fail(c, "", key, "must be a string");
        if (a < 0)
            return sj_fail(c, "", key, "unknown algorithm \"%.40s\"", s);
        p->algos |= 1u << a;
    }
    for (int k = 0; k < LBS_COLL_COUNT; k++) {
        int have = 0;
        if (k == LBS_COLL_NEIGHBOR)
            continue;   /* falls back to allgather for dense graphs */
        for (int a = 0; a < LBS_SIM_NALGO; a++) {
            enum lbs_coll ak = lbs_sim_algo_coll(a);
            if ((p->algos >> a & 1) &&
                (ak == (enum lbs_coll)k ||
                 (k == LBS_COLL_ALLGATHERV && ak == LBS_COLL_ALLGATHER)))
                have = 1;
        }
        if (!have)
            return sj_fail(c, "", "algorithms", "no algorithm enabled "
                           "for %s", lbs_coll_name(k));
    }
    if (!(p->algos >> LBS_SIM_NB_DIRECT & 1))
        return sj_fail(c, "", "algorithms", "no algorithm enabled for "
                       "neighbor (neighbor-direct)");
    return 0;
}

/* max_gpus: as the file says, else what the fabric holds (a stated
 * switch radix), else 16,384 as before the fabric had a size; never more
 * than the fabric holds. */
static int read_max_gpus(const struct sj *c, const json_t *root,
                         struct lbs_sim_platform *p)
{
    double nodes = lbs_sim_fabric_max_nodes(p), v;
    double cap = nodes > 0 ? fmin(1e8, nodes * p->gpus_per_node) : 1e8;
    int rc = sj_num(c, root, "", "max_gpus", SJ_INT, nodes > 0 ? cap : 16384,
                    1, 1e8, &v);
    if (!rc && v > cap)
        rc = sj_fail(c, "", "max_gpus", "%.0f is more than the fabric holds "
                     "(%.0f nodes x %d GPUs: fabric.switch_radix, tiers)",
                     v, nodes, p->gpus_per_node);
    p->max_gpus = (long)v;
    return rc;
}

static int parse_root(const struct sj *c, const json_t *root,
                      struct lbs_sim_platform *p)
{
    static const char *const top[] = {"format", "version", "name",
        "description", "sources", "notes", "gpu", "node", "fabric",
        "max_gpus", "protocols", "algorithms", "coll_bw_factor",
        "calibration", "nccl", "overlap", "job", NULL};
    int rc = sj_header(c, root, "lbscale-platform", 1);
    if (!rc) rc = sj_known(c, root, "", top);
    if (!rc) rc = sj_str(c, root, "", "name", SJ_REQ, NULL, p->name,
                         sizeof p->name);
    if (!rc && !p->name[0])
        rc = sj_fail(c, "", "name", "must not be empty");
    if (!rc) rc = read_gpu(c, root, p);
    if (!rc) rc = read_node(c, root, p);
    if (!rc) rc = read_fabric(c, root, p);
    if (!rc) rc = read_overlap(c, root, p);
    if (!rc) rc = read_job(c, root, p);
    if (!rc) rc = read_max_gpus(c, root, p);

    if (!rc) rc = read_coll_bw(c, root, p);
    if (!rc) rc = read_nccl(c, root, p);
    if (!rc && p->nccl_model && (json_object_get(root, "protocols") ||
                                 json_object_get(root, "algorithms")))
        rc = sj_fail(c, "", "nccl", "NCCL's tuner has its own protocols and "
                     "algorithms (nccl.protocols, nccl.algorithms): the MPI "
                     "model's \"protocols\"/\"algorithms\" do not apply");
    if (rc || p->nccl_model)
        return rc;
    if ((rc = read_protocols(c, root, p)))
        return rc;
    return read_algorithms(c, root, p);
}

int lbs_sim_platform_parse(const char *text, const char *file,
                           struct lbs_sim_platform **out, struct lbs_err *err)
{
    struct sj c = {file, err};
    json_t *root;
    *out = NULL;
    int rc = sj_load(&c, text, strlen(text), &root);
    if (rc)
        return rc;
    struct lbs_sim_platform *p = calloc(1, sizeof *p);
    if (!p) {
        json_decref(root);
        return lbs_err_set(err, -ENOMEM, "out of memory");
    }
    sj_copy_path(p->file, sizeof p->file, file);
    rc = parse_root(&c, root, p);
    json_decref(root);
    if (rc) {
        free(p);
        return rc;
    }
    *out = p;
    return 0;
}

static int parse_file(const char *text, size_t len, const char *file,
                      void *out, struct lbs_err *err)
{
    (void)len;   /* a C string: sj_read_file refused NUL bytes */
    return lbs_sim_platform_parse(text, file, out, err);
}

int lbs_sim_platform_load(const char *path, struct lbs_sim_platform **out,
                          struct lbs_err *err)
{
    *out = NULL;
    return sj_load_file(path, LBS_SIM_PLATFORM_MAX_BYTES, 0, parse_file, out,
                        err);
}

void lbs_sim_platform_free(struct lbs_sim_platform *p)
{
    free(p);
}
