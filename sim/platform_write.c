/* platform_write.c - the platform document `lbscale sim calibrate`
 * writes: the format platform.c reads, built from a fit (calib.c), and
 * read back before it is handed out so a writer bug never reaches a
 * file. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"

static json_t *heldout_json(const struct lbs_sim_heldout *h)
{
    return json_pack("{s:I,s:o,s:o}", "samples", (json_int_t)h->n,
                     "median_rel_err", h->med >= 0 ? json_real(h->med)
                                                   : json_null(),
                     "worst_rel_err", h->max >= 0 ? json_real(h->max)
                                                  : json_null());
}

/* One protocol of the calibrated platform (latencies in s). */
static json_t *calib_proto(double base, double intra_hop, double inter_hop,
                           double max_bytes)
{
    json_t *o = json_pack("{s:f,s:f,s:f,s:f}", "base_lat_us", base * 1e6,
                          "intra_hop_us", intra_hop * 1e6, "inter_hop_us",
                          inter_hop * 1e6, "bw_factor", 1.0);
    if (o && max_bytes > 0)
        json_object_set_new(o, "max_bytes", json_real(max_bytes));
    return o;
}

static const char calib_model[] =
    "t = base + steps(P) (hop + [step > eager_max] rndv) + "
    "volume(P, bytes) / bw(coll) + [allreduce] (P-1)/P bytes / reduce_bw "
    "(ring forms), weighted least squares on relative error";

/* A fit's constants as the calibration object states them. */
static json_t *fit_json(const struct lbs_sim_fit *fit)
{
    return json_pack("{s:I,s:o,s:o,s:f,s:f,s:f,s:f,s:f,s:f}",
                     "samples", (json_int_t)fit->used,
                     "held_out_sizes", heldout_json(&fit->sizes),
                     "held_out_ranks", heldout_json(&fit->ranks),
                     "base_lat_us", fit->base_lat * 1e6,
                     "hop_lat_us", fit->hop_lat * 1e6,
                     "rndv_lat_us", fit->rndv_lat * 1e6,
                     "eager_max_bytes", fit->eager_max,
                     "bw_gbs", fit->bw / 1e9,
                     "reduce_gbs", fit->reduce_bw / 1e9);
}

/* Each input file: path, format, checksum, size, samples. */
static json_t *inputs_json(const struct lbs_sim_calibrated *c)
{
    json_t *a = json_array();
    for (size_t i = 0; a && c->src && i < c->nfiles; i++) {
        const struct lbs_sim_calib_file *f = &c->src[i];
        json_array_append_new(a, json_pack(
            "{s:s,s:s,s:s,s:I,s:I}", "file", f->path, "format", f->format,
            "checksum", f->checksum, "bytes", (json_int_t)f->bytes,
            "samples", (json_int_t)f->rows));
    }
    return a;
}

/* The calibration object: the primary fit's constants (one node's rows,
 * as before), the network's fit from multi-node rows, the inputs. */
static json_t *calib_json(const struct lbs_sim_calibrated *c, json_t *files)
{
    json_t *cal = fit_json(c->fit);
    if (!cal)
        return NULL;
    json_object_set_new(cal, "from", files);
    json_object_set_new(cal, "skipped", json_integer((json_int_t)c->skipped));
    json_object_set_new(cal, "model", json_string(calib_model));
    if (c->src)
        json_object_set_new(cal, "inputs", inputs_json(c));
    if (c->inter && c->inter != c->fit)
        json_object_set_new(cal, "inter_node", fit_json(c->inter));
    if (c->cluster_note)
        json_object_set_new(cal, "cluster", json_string(c->cluster_note));
    return cal;
}

/* The protocols: the network fit's eager limit decides LL (eager, up to
 * eager_max bytes per step) and Simple (rendezvous); intra-node steps
 * take the one-node fit's latency, inter-node steps the network's. */
static json_t *calib_protos(const struct lbs_sim_fit *in,
                            const struct lbs_sim_fit *net)
{
    json_t *protos = json_object();
    double rin = in == net ? net->rndv_lat : in->rndv_lat;
    if (net->eager_max > 0) {
        json_object_set_new(protos, "LL", calib_proto(
            net->base_lat, in->hop_lat, net->hop_lat, net->eager_max));
        json_object_set_new(protos, "Simple", calib_proto(
            net->base_lat, in->hop_lat + rin, net->hop_lat + net->rndv_lat,
            0));
    } else {
        json_object_set_new(protos, "Simple", calib_proto(
            net->base_lat, in->hop_lat, net->hop_lat, 0));
    }
    return protos;
}

static json_t *calib_fabric(const struct lbs_sim_calibrated *c)
{
    if (!c->fabric || strcmp(c->fabric, "fat-tree"))
        return json_pack("{s:s,s:f}", "kind", "flat", "lat_us", 0.0);
    json_t *f = json_pack("{s:s,s:I,s:f,s:f}", "kind", "fat-tree",
                          "nodes_per_leaf", (json_int_t)c->nodes_per_leaf,
                          "oversubscription", c->oversub > 0 ? c->oversub
                                                             : 1.0,
                          "lat_us", 0.0);
    if (f && c->lat_spine_us > 0)
        json_object_set_new(f, "lat_spine_us", json_real(c->lat_spine_us));
    return f;
}

/* The platform document `sim calibrate` writes: nodes x gpus_per_node
 * ranks (default one flat node of c->ranks) whose algorithms are the ring
 * forms the fit used.  One node's rows give the link inside a node, rows
 * of several nodes the NIC (the node's exit hop of the ring, which the
 * fit's per-step bandwidth then is); without multi-node rows the NIC is
 * taken as fast as the node's link, and without one-node rows the node's
 * link as fast as the NIC. */
static json_t *calib_platform(const struct lbs_sim_calibrated *c,
                              json_t *files)
{
    const struct lbs_sim_fit *fit = c->fit;
    const struct lbs_sim_fit *net = c->inter ? c->inter : fit;
    double peak = c->peak_tflops, mem = c->mem_bw_gbs;
    int mem_measured = c->mem_measured;
    long gpn = c->gpus_per_node > 0 ? c->gpus_per_node : c->ranks;
    long nodes = c->nodes > 0 ? c->nodes : 1;
    /* each fitted collective's bandwidth as a factor on the fastest's */
    json_t *cbw = json_object();
    for (int k = 0; k < LBS_COLL_COUNT; k++)
        if (k != LBS_COLL_ALLGATHERV && net->coll_bw[k] > 0)
            json_object_set_new(cbw, lbs_coll_name(k),
                                json_real(net->coll_bw[k] / net->bw));
    char desc[256];
    snprintf(desc, sizeof desc, "fitted by lbscale sim calibrate: %ld "
             "node(s) x %ld rank(s); ring forms; %s", nodes, gpn,
             c->inter ? (c->inter == fit ? "network from multi-node rows, "
                         "the node's link taken as fast"
                         : "node link and network fitted apart")
                      : "one node's rows only: the network taken as fast "
                        "as the node's link");
    return json_pack(
        "{s:s,s:i,s:s,s:s,s:{s:s,s:f,s:f,s:s},s:{s:I,s:s,s:f,s:i,s:f,s:f},"
        "s:o,s:I,s:o,s:[s,s,s,s,s,s],s:o,s:o}",
        "format", "lbscale-platform", "version", 1, "name", c->name,
        "description", desc,
        "gpu", "name", "local rank", "peak_tflops", peak > 0 ? peak : 1.0,
        "mem_bw_gbs", mem, "note", peak > 0 ? "given"
            : mem_measured ? "peak assumed (1 TFLOP/s); memory "
              "bandwidth = STREAM triad" : "peak assumed (1 TFLOP/s)",
        "node", "gpus", (json_int_t)gpn, "intra", c->inter == fit
            ? "not measured (taken as the network's)" : "measured",
        "intra_bw_gbs", fit->bw / 1e9, "nics", 1, "nic_gbps",
        net->bw * 8 / 1e9, "reduce_gbs", fit->reduce_bw / 1e9,
        "fabric", calib_fabric(c),
        "max_gpus", (json_int_t)(gpn * nodes),
        "protocols", calib_protos(fit, net),
        "algorithms", "ring", "allgather-ring", "alltoall-pairwise",
        "bcast-pipeline", "barrier-dissemination", "neighbor-direct",
        "coll_bw_factor", cbw, "calibration", calib_json(c, files));
}


/* doc as the text of a platform file (a trailing newline), read back
 * first so a writer bug never reaches a file; doc is consumed. */
static int platform_text(json_t *doc, const char *file, char **text,
                         size_t *len, struct lbs_err *err)
{
    char *s = doc ? json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER)
                  : NULL;
    json_decref(doc);
    *text = NULL;
    if (!s)
        return lbs_err_set(err, -ENOMEM, "out of memory");
    size_t n = strlen(s);
    char *t = realloc(s, n + 2);
    if (!t) {
        free(s);
        return lbs_err_set(err, -ENOMEM, "out of memory");
    }
    t[n] = '\n';
    t[n + 1] = '\0';
    struct lbs_sim_platform *chk;
    int rc = lbs_sim_platform_parse(t, file, &chk, err);
    lbs_sim_platform_free(chk);
    if (rc) {
        free(t);
        return rc;
    }
    *text = t;
    *len = n + 1;
    return 0;
}

int lbs_sim_platform_calibrated(const struct lbs_sim_calibrated *c,
                                const char *file, char **text, size_t *len,
                                struct lbs_err *err)
{
    json_t *files = json_array();
    for (size_t i = 0; files && i < c->nfiles; i++)
        json_array_append_new(files, json_string(c->files[i]));
    return platform_text(files ? calib_platform(c, files) : NULL, file, text,
                         len, err);
}

/* ---- an NCCL-model platform fitted over a GPU preset (calib_nccl.c) -- */

static void scale_num(json_t *o, const char *key, double f)
{
    json_t *v = json_object_get(o, key);
    if (json_is_number(v))
        json_object_set_new(o, key, json_real(json_number_value(v) * f));
}

static json_t *nccl_calib_json(const struct lbs_sim_nccl_fit *f,
                               const struct lbs_sim_calibrated *c,
                               const char *base)
{
    json_t *o = json_pack(
        "{s:s,s:s,s:f,s:f,s:I,s:I,s:o,s:o,s:o,s:o}", "model",
        "NCCL 2.21.5's tuner model (sim/nccl.c) over the base preset, its "
        "per-channel bandwidths scaled: intra_factor on the node's links "
        "from one-node rows, inter_factor on the network from rows of "
        "several nodes; least squares on log time (sim/calib_nccl.c)",
        "base", base, "intra_factor", f->x, "inter_factor", f->y,
        "rows_one_node", (json_int_t)f->n_intra,
        "rows_several_nodes", (json_int_t)f->n_inter,
        "held_out_sizes_one_node", heldout_json(&f->held_intra),
        "held_out_sizes_several_nodes", heldout_json(&f->held_inter),
        "error_of_base", heldout_json(&f->base_err),
        "error_fitted", heldout_json(&f->fit_err));
    if (o && c->src)
        json_object_set_new(o, "inputs", inputs_json(c));
    if (o && c->cluster_note)
        json_object_set_new(o, "cluster", json_string(c->cluster_note));
    return o;
}

/* base_text (the base preset's file) with the fit applied. */
int lbs_sim_platform_nccl_calibrated(const char *base_text, const char *base,
                                     const struct lbs_sim_nccl_fit *f,
                                     const struct lbs_sim_calibrated *c,
                                     const char *file, char **text,
                                     size_t *len, struct lbs_err *err)
{
    json_t *doc = json_loads(base_text, 0, NULL);
    json_t *node = json_object_get(doc, "node"),
           *nccl = json_object_get(doc, "nccl");
    if (!json_is_object(node) || !json_is_object(nccl)) {
        json_decref(doc);
        return lbs_err_set(err, -EINVAL, "%s: no node or nccl object", base);
    }
    scale_num(node, "intra_bw_gbs", f->x);
    scale_num(json_object_get(nccl, "intra_graph"), "bw_gbs", f->x);
    scale_num(json_object_get(nccl, "nvls_graph"), "bw_gbs", f->x);
    scale_num(node, "nic_gbps", f->y);
    scale_num(json_object_get(nccl, "inter_graph"), "bw_gbs", f->y);
    scale_num(json_object_get(nccl, "inter_graph"), "tree_bw_intra_gbs",
              f->y);
    scale_num(nccl, "p2p_gbs", f->y);
    if (f->g > 0)
        json_object_set_new(node, "gpus", json_integer(f->g));
    if (c->nodes > 0 && f->g > 0)
        json_object_set_new(doc, "max_gpus", json_integer(c->nodes * f->g));
    char desc[256];
    snprintf(desc, sizeof desc, "fitted by lbscale sim calibrate "
             "--nccl-model %s: node links x%.4g, network x%.4g", base, f->x,
             f->y);
    json_object_set_new(doc, "name", json_string(c->name));
    json_object_set_new(doc, "description", json_string(desc));
    json_object_set_new(doc, "calibration", nccl_calib_json(f, c, base));
    return platform_text(doc, file, text, len, err);
}
