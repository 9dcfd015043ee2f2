/* netsweep.c - `lbscale sim netsweep`: scaling efficiency against the
 * network per node. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../cli.h"
#include "sim_cli.h"

/* ---- netsweep: efficiency against the network a node is sold with ------ */

static const char netsweep_about[] =
    "Scaling efficiency E = T(one node)/T(P) at one GPU count as the network\n"
    "bandwidth per node varies: every NIC of the platform runs at node_gbps /\n"
    "nics; NCCL's multi-node channels and point-to-point rate scale with it\n"
    "(the preset's ratio to the line rate kept, e.g. 24 of 25 GB/s on HDR);\n"
    "latencies, NVLink and the fat-tree stay.  Ends with, per optimizer, the\n"
    "lowest bandwidth at which E reaches 0.90 (log-linear interpolation).\n"
    "Reference points: 100 Gb/s (one 100 GbE NIC), 200 (one HDR NIC or two\n"
    "100 GbE), 400 (one NDR NIC), 1,600 (DGX A100: 8 x HDR), 3,200 (DGX\n"
    "H100: 8 x NDR).  Also takes sweep's --batch-per-gpu, --accum,\n"
    "--no-overlap, --no-slowdown, --grad-dtype, --bucket-mb.";

/* Every (entry, bandwidth) point into rows before anything is printed. */
static int netsweep_rows(const struct simargs *a, const struct point_in *in,
                         const long *B, size_t nb,
                         long P, long base_p, struct lbs_sim_opts *o,
                         json_t *rows, struct lbs_err *e)
{
    struct lbs_sim_result *res = calloc(nb, sizeof *res);
    double *eff = calloc(nb, sizeof *eff);
    int rc = res && eff ? 0 : lbs_err_set(e, -ENOMEM, "out of memory");
    char jsrc[LBS_SIM_FILE_MAX + 800];
    job_source(a, in->m, in->pl, o, jsrc, sizeof jsrc);
    for (size_t k = 0; k < in->nent && !rc; k++) {
        const struct lbs_sim_entry *en = &in->ent[k];
        o->optim_bytes_per_elem = en->bpe;
        rc = lbs_sim_netsweep(in->pl, in->m, en, P, base_p, B, nb, o, res,
                              eff, e);
        for (size_t i = 0; i < nb && !rc; i++) {
            const struct lbs_sim_result *r = &res[i];
            json_t *row = json_pack("{s:s,s:s,s:s,s:I,s:I,s:f,s:f,s:f,s:f,"
                                    "s:f,s:s}", "optim", en->name, "model",
                in->m->name, "platform", in->pl->name, "gpus", (json_int_t)P,
                "node_gbps", (json_int_t)B[i], "iter_ms", r->iter * 1e3,
                "exposed_comm_ms", r->exposed * 1e3, "compute_ms",
                r->compute * 1e3, "scaling_efficiency", eff[i],
                "bytes_per_gpu", r->bytes, "plan", en->source);
            if (row)
                json_object_set_new(row, "job_source", json_string(jsrc));
            if (!row || json_array_append_new(rows, row))
                rc = lbs_err_set(e, -ENOMEM, "out of memory");
        }
    }
    free(res);
    free(eff);
    return rc;
}

static void print_netsweep_row(const json_t *row)
{
    printf("  %-12s %10.0f %9.2f %9.2f %6.3f\n",
           json_string_value(json_object_get(row, "optim")),
           NUM(row, "node_gbps"), NUM(row, "iter_ms"),
           NUM(row, "exposed_comm_ms"), NUM(row, "scaling_efficiency"));
}

/* Per optimizer: the bandwidth where E first reaches 0.90. */
static void print_reaches(const struct point_in *in, json_t *rows)
{
    size_t n = json_array_size(rows);
    double *b = calloc(n ? n : 1, sizeof *b), *ef = calloc(n ? n : 1,
                                                           sizeof *ef);
    for (size_t k = 0; b && ef && k < in->nent; k++) {
        size_t i, m = 0;
        json_t *row;
        json_array_foreach(rows, i, row) {
            if (strcmp(json_string_value(json_object_get(row, "optim")),
                       in->ent[k].name))
                continue;
            b[m] = NUM(row, "node_gbps");
            ef[m++] = NUM(row, "scaling_efficiency");
        }
        double at = lbs_sim_eff_reaches(b, ef, m, 0.90);
        if (isnan(at))
            printf("# %-12s E < 0.90 over the whole range\n",
                   in->ent[k].name);
        else
            printf("# %-12s E reaches 0.90 at %.0f Gb/s per node\n",
                   in->ent[k].name, at);
    }
    free(b);
    free(ef);
}

/* netsweep's inputs: the point's, then --gpus (one count) and
 * --node-gbps. */
static int netsweep_load(const struct simargs *a, struct point_in *in,
                         long **B, size_t *nb, struct lbs_err *e)
{
    int rc = point_load(a, in, e);
    if (!rc) rc = lbs_sim_parse_gpus(a->gpus ? a->gpus : "1024", &in->P,
                                     &in->np, e);
    if (!rc) rc = lbs_sim_parse_gpus(a->node_gbps ? a->node_gbps
                                                  : "25..3200", B, nb, e);
    if (rc) {
        /* the list parser speaks of --gpus; the bad list may be this one */
        int bw = !strncmp(e->msg, "--gpus", 6) && in->P && !*B;
        cli_error("sim netsweep", "%s%s", bw ? "--node-gbps" : "",
                  bw ? e->msg + 6 : e->msg);
        return rc;
    }
    if (in->np != 1) {
        cli_error("sim netsweep", "--gpus: one GPU count");
        return -EINVAL;
    }
    return 0;
}

static int sim_netsweep(const struct simargs *a, int argc, char **argv)
{
    struct lbs_err e;
    struct point_in in = {0};
    struct lbs_run *run = NULL;
    json_t *rows = json_array();
    size_t nb = 0;
    long *B = NULL;
    int rc;
    if (need_point_args(a, "sim netsweep")) {
        json_decref(rows);
        return EXIT_BAD_INPUT;
    }
    if ((rc = netsweep_load(a, &in, &B, &nb, &e)))
        goto out;
    long P = in.P[0], base_p = in.pl->gpus_per_node < in.pl->max_gpus
                                   ? in.pl->gpus_per_node : in.pl->max_gpus;
    struct lbs_sim_opts o = sim_opts(a);
    if ((rc = netsweep_rows(a, &in, B, nb, P, base_p, &o, rows, &e))) {
        cli_error("sim netsweep", "%s", e.msg);
        goto out;
    }
    if ((rc = cli_open_run(&a->com, "sim_netsweep", argc, argv, &run)))
        goto out;
    if (!a->com.json)
        printf("# %s on %s at %ld GPUs: scaling efficiency (T(%ld GPUs) / "
               "T(%ld)) against the network bandwidth per node\n"
               "# %-12s %10s %9s %9s %6s\n", in.m->name, in.pl->name, P,
               base_p, P, "optim", "Gb/s/node", "iter(ms)", "exposed", "eff");
    rc = emit_rows(a, run, "sim_netsweep", "sim netsweep", rows,
                   print_netsweep_row);
    if (!rc && !a->com.json)
        print_reaches(&in, rows);
out:
    json_decref(rows);
    lbs_run_close(run);
    free(B);
    point_in_free(&in);
    return cli_exit_code(rc);
}

int cmd_netsweep(int argc, char **argv, struct simargs *a)
{
    const struct cli_opt opts[] = {
        SIM_SWEEP_ROWS(a),
        {.name = "node-gbps", .type = CLI_STR, .dst = &a->node_gbps,
         .arg = "LIST",
         .help = "Gb/s per node: 100,400 or A..B (powers of two from A)"},
        CLI_COMMON_OPTS(&a->com), {0}};
    const struct cli_verb v = {
        .name = "sim netsweep",
        .usage = "usage: lbscale sim netsweep --model M --platform P --optim "
                 "LIST\n                            [--gpus 1024] "
                 "[--node-gbps 25..3200] [--json]",
        .about = netsweep_about, .opts = opts};
    int rc = cli_parse(&v, argc - 1, argv + 1, NULL, NULL);
    if (rc)
        return rc < 0 ? EXIT_BAD_INPUT : 0;
    return sim_netsweep(a, argc, argv);
}
