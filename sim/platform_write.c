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
static json_t *calib_proto(double base, double hop, double max_bytes)
{
    json_t *o = json_pack("{s:f,s:f,s:f,s:f}", "base_lat_us", base * 1e6,
                          "intra_hop_us", hop * 1e6, "inter_hop_us",
                          hop * 1e6, "bw_factor", 1.0);
    if (o && max_bytes > 0)
        json_object_set_new(o, "max_bytes", json_real(max_bytes));
    return o;
}

/* The platform document `sim calibrate` writes: one flat node of c->ranks
 * ranks whose algorithms are the ring forms the fit used.  With an eager
 * limit, LL stands for MPI's eager protocol (up to eager_max bytes per
 * step) and Simple for rendezvous (hop + rndv). */
static json_t *calib_platform(const struct lbs_sim_calibrated *c,
                              json_t *files)
{
    const struct lbs_sim_fit *fit = c->fit;
    double peak = c->peak_tflops, mem = c->mem_bw_gbs;
    int mem_measured = c->mem_measured;
    json_t *cal = json_pack(
        "{s:o,s:I,s:I,s:o,s:o,s:s,s:f,s:f,s:f,s:f,s:f,s:f}", "from", files,
        "samples", (json_int_t)fit->used, "skipped", (json_int_t)c->skipped,
        "held_out_sizes", heldout_json(&fit->sizes),
        "held_out_ranks", heldout_json(&fit->ranks),
        "model", "t = base + steps(P) (hop + [step > eager_max] rndv) + "
        "volume(P, bytes) / bw(coll) + [allreduce] (P-1)/P bytes / reduce_bw "
        "(ring forms), weighted least squares on relative error",
        "base_lat_us", fit->base_lat * 1e6, "hop_lat_us", fit->hop_lat * 1e6,
        "rndv_lat_us", fit->rndv_lat * 1e6, "eager_max_bytes",
        fit->eager_max, "bw_gbs", fit->bw / 1e9, "reduce_gbs",
        fit->reduce_bw / 1e9);
    json_t *protos = json_object();
    if (fit->eager_max > 0) {
        json_object_set_new(protos, "LL", calib_proto(fit->base_lat,
                                                      fit->hop_lat,
                                                      fit->eager_max));
        json_object_set_new(protos, "Simple",
                            calib_proto(fit->base_lat,
                                        fit->hop_lat + fit->rndv_lat, 0));
    } else {
        json_object_set_new(protos, "Simple", calib_proto(fit->base_lat,
                                                          fit->hop_lat, 0));
    }
    /* each fitted collective's bandwidth as a factor on the fastest's */
    json_t *cbw = json_object();
    for (int k = 0; k < LBS_COLL_COUNT; k++)
        if (k != LBS_COLL_ALLGATHERV && fit->coll_bw[k] > 0)
            json_object_set_new(cbw, lbs_coll_name(k),
                                json_real(fit->coll_bw[k] / fit->bw));
    return json_pack(
        "{s:s,s:i,s:s,s:s,s:{s:s,s:f,s:f,s:s},s:{s:I,s:s,s:f,s:i,s:f,s:f},"
        "s:{s:s,s:f},s:I,s:o,s:[s,s,s,s,s,s],s:o,s:o}",
        "format", "lbscale-platform", "version", 1, "name", c->name,
        "description", "this machine, fitted by lbscale sim calibrate "
        "(one node; ring forms)",
        "gpu", "name", "local rank", "peak_tflops", peak > 0 ? peak : 1.0,
        "mem_bw_gbs", mem, "note", peak > 0 ? "given"
            : mem_measured ? "peak assumed (1 TFLOP/s); memory "
              "bandwidth = STREAM triad" : "peak assumed (1 TFLOP/s)",
        "node", "gpus", (json_int_t)c->ranks, "intra", "measured",
        "intra_bw_gbs", fit->bw / 1e9, "nics", 1, "nic_gbps",
        fit->bw * 8 / 1e9, "reduce_gbs", fit->reduce_bw / 1e9,
        "fabric", "kind", "flat", "lat_us", 0.0,
        "max_gpus", (json_int_t)c->ranks, "protocols", protos,
        "algorithms", "ring", "allgather-ring", "alltoall-pairwise",
        "bcast-pipeline", "barrier-dissemination", "neighbor-direct",
        "coll_bw_factor", cbw, "calibration", cal);
}


int lbs_sim_platform_calibrated(const struct lbs_sim_calibrated *c,
                                const char *file, char **text, size_t *len,
                                struct lbs_err *err)
{
    json_t *files = json_array();
    for (size_t i = 0; files && i < c->nfiles; i++)
        json_array_append_new(files, json_string(c->files[i]));
    json_t *doc = files ? calib_platform(c, files) : NULL;
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
    /* the file must read back (catches any writer bug) */
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
