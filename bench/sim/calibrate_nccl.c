/* calibrate_nccl.c - `lbscale sim calibrate --nccl-model BASE`: a GPU
 * cluster's NCCL-model platform fitted to its measured collectives (the
 * fit is sim/calib_nccl.c's, the document sim/platform_write.c's). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../cli.h"
#include "lbscale/file.h"
#include "lbscale_sim.h"
#include "calibrate_nccl.h"

static void print_held(const char *what, const struct lbs_sim_heldout *h)
{
    if (h->n)
        printf("  %s: median %.1f%%, worst %.1f%% (%zu samples)\n", what,
               100 * h->med, 100 * h->max, h->n);
    else
        printf("  %s: n/a (fewer than 4 samples)\n", what);
}

static void print_nccl_fit(const struct lbs_sim_platform *b,
                           const struct lbs_sim_nccl_fit *f)
{
    printf("NCCL model over %s (NCCL 2.21.5's latencies and protocols "
           "kept):\n", b->name);
    if (f->n_intra)
        printf("  node links x%.4g: intra graph %d channels x %.2f GB/s "
               "(base %.2f), %zu one-node rows\n", f->x, b->nccl.intra.channels,
               b->nccl.intra.bw * f->x / 1e9, b->nccl.intra.bw / 1e9,
               f->n_intra);
    else
        printf("  node links: not measured (no one-node rows), the base's\n");
    if (f->n_inter)
        printf("  network x%.4g: inter graph %d channels x %.2f GB/s (base "
               "%.2f), NIC %.1f Gb/s, %zu rows of several nodes\n", f->y,
               b->nccl.inter.channels, b->nccl.inter.bw * f->y / 1e9,
               b->nccl.inter.bw / 1e9, b->nic_bw * f->y * 8 / 1e9,
               f->n_inter);
    else
        printf("  network: not measured (no rows of several nodes), the "
               "base's\n");
    print_held("held-out sizes, one node", &f->held_intra);
    print_held("held-out sizes, several nodes", &f->held_inter);
    print_held("the base preset on every row", &f->base_err);
    print_held("the fitted platform on every row", &f->fit_err);
}

/* GPUs per node of the written platform: given, else measured across
 * nodes, else the base's when one node's rows fit in it. */
static int nccl_gpn(const struct calib_nccl_in *in,
                    const struct lbs_sim_platform *b,
                    struct lbs_sim_nccl_fit *f)
{
    long g = in->gpn ? in->gpn : f->n_inter ? f->g
             : (b->gpus_per_node > f->g ? b->gpus_per_node : f->g);
    if (f->n_inter && g != f->g) {
        cli_error("--gpus-per-node", "%ld, but the rows of several nodes "
                  "ran %ld per node", g, f->g);
        return -EINVAL;
    }
    if (g < f->g) {
        cli_error("--gpus-per-node", "%ld is fewer than the %ld GPUs one "
                  "node ran", g, f->g);
        return -EINVAL;
    }
    f->g = g;
    return 0;
}

static long most_nodes(const struct lbs_sim_samples *set)
{
    long n = 1;
    for (size_t i = 0; i < set->n; i++)
        n = set->s[i].nodes > n ? set->s[i].nodes : n;
    return n;
}

static int base_text(const char *base, char **text, struct lbs_err *e)
{
    char path[1024];
    size_t len;
    int rc = lbs_sim_preset_path("platform", base, path, sizeof path, e);
    return rc ? rc : lbs_read_file(path, LBS_SIM_PLATFORM_MAX_BYTES, text,
                                   &len, e);
}

int calib_write_nccl(const struct calib_nccl_in *in,
                     const struct lbs_sim_samples *set,
                     const struct lbs_sim_calibrated *doc,
                     int (*path_of)(void *ctx, char *path, size_t len),
                     void *ctx)
{
    struct lbs_err e;
    struct lbs_sim_platform *b = NULL;
    struct lbs_sim_nccl_fit f;
    struct lbs_sim_calibrated d = *doc;
    char *btext = NULL, *text = NULL, path[1024], note[200];
    size_t len = 0;
    int rc = lbs_sim_platform_find(in->base, &b, &e);
    if (!rc) rc = base_text(in->base, &btext, &e);
    if (!rc) rc = lbs_sim_fit_nccl(set->s, set->n, b, &f, &e);
    if (rc)
        cli_error("sim calibrate", "%s", e.msg);
    if (!rc) rc = nccl_gpn(in, b, &f);
    d.nodes = in->nodes ? in->nodes : most_nodes(set);
    snprintf(note, sizeof note, "%ld node(s) x %ld GPU(s) per node (nodes "
             "%s)", d.nodes, f.g, in->nodes ? "given" : "as measured");
    d.cluster_note = note;
    if (!rc && (rc = lbs_sim_platform_nccl_calibrated(btext, b->name, &f, &d,
                                                      "platform", &text,
                                                      &len, &e)))
        cli_error("sim calibrate", "%s", e.msg);
    if (!rc) rc = path_of(ctx, path, sizeof path);
    if (!rc && (rc = lbs_write_atomic(path, text, len, &e)))
        cli_error("sim calibrate", "%s", e.msg);
    if (!rc) {
        print_nccl_fit(b, &f);
        printf("calibrated %s from %zu samples (%zu skipped)\ncluster: %s\n"
               "wrote %s\n", doc->name, f.n_intra + f.n_inter, set->skipped,
               note, path);
    }
    lbs_sim_platform_free(b);
    free(btext);
    free(text);
    return rc;
}
