/* sweep.c - `lbscale sim sweep`: iteration time, exposed communication
 * and scaling efficiency over a range of GPU counts, per optimizer; also
 * the rows of `sim step` (run_entries). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../cli.h"
#include "sim_cli.h"

/* ---- the model, compression costs ------------------------------------ */

static int compress_rates(const char *run, const char *spec, double *c,
                          double *d, char *src, size_t srclen,
                          struct lbs_err *e);

/* How compression is priced for plan (says so in src): measured rates
 * (--compress-gbps, --compress-run), else the trace's bytes model at the
 * platform's memory bandwidth; nothing when the plan is not compressed. */
static int compress_cost(const struct simargs *a,
                         const struct lbs_sim_plan *plan,
                         const struct lbs_sim_platform *pl,
                         struct lbs_sim_opts *o, char *src, size_t srclen,
                         struct lbs_err *e)
{
    o->compress_gbps = a->comp_gbps;
    o->decompress_gbps = a->decomp_gbps;
    if (!plan->compress[0]) {
        double x = 0;
        for (size_t i = 0; i < plan->nsteps; i++)
            x = fmax(x, plan->step[i].extra_bpe);     /* at large P */
        if (x > 0)
            snprintf(src, srclen, "inside the optimizer: core's traffic "
                     "model, %.4g B/elem more in its compressing phase, at "
                     "%g GB/s", x, pl->mem_bw / 1e9);
        else
            snprintf(src, srclen, "none (not compressed)");
        return 0;
    }
    if (a->comp_gbps > 0) {
        snprintf(src, srclen, "measured: --compress-gbps %g,%g",
                 a->comp_gbps, a->decomp_gbps);
        return 0;
    }
    if (a->compress_run)
        return compress_rates(a->compress_run, plan->compress,
                              &o->compress_gbps, &o->decompress_gbps, src,
                              srclen, e);
    if (plan->comp_bpe > 0 || plan->decomp_bpe > 0)
        snprintf(src, srclen, "bytes model of %s (compress %g, decompress "
                 "%g + %g%s B/elem) at %g GB/s", plan->compress,
                 plan->comp_bpe, plan->decomp_once_bpe, plan->decomp_bpe,
                 plan->decomp_per_rank ? " x P" : "", pl->mem_bw / 1e9);
    else
        snprintf(src, srclen, "not modelled: the trace has no "
                 "compress_traffic (re-record it, or --compress-gbps)");
    return 0;
}

/* --compress-run RUN: the median compress/decompress rates of RUN's
 * compress.jsonl rows for the trace's compressor, GPU rows preferred;
 * src says what was used. */
static int compress_rates(const char *run, const char *spec, double *c,
                          double *d, char *src, size_t srclen,
                          struct lbs_err *e)
{
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)strcspn(spec, ":"), spec);
    json_t *rows = lbs_run_rows(run, "compress", e);
    if (!rows)
        return -EINVAL;
    double cs[256], ds[256];
    size_t n = 0;
    for (int gpu = 1; gpu >= 0 && !n; gpu--) {
        size_t i;
        json_t *r;
        json_array_foreach(rows, i, r) {
            const char *nm = json_string_value(json_object_get(r,
                                                               "compressor"));
            int is_gpu = json_object_get(r, "gpu") != NULL;
            if (nm && !strcmp(nm, name) && is_gpu == gpu && n < 256) {
                cs[n] = json_number_value(json_object_get(r, "gbps"));
                ds[n++] = json_number_value(json_object_get(r,
                                                    "decompress_gbps"));
            }
        }
        if (n)
            snprintf(src, srclen, "measured: %s/compress.jsonl, %zu %s row%s",
                     run, n, gpu ? "GPU" : "CPU", n == 1 ? "" : "s");
    }
    json_decref(rows);
    if (!n)
        return lbs_err_set(e, -EINVAL, "--compress-run %s: no compress.jsonl "
                           "row for compressor '%s'", run, name);
    *c = cli_stats(cs, n).median;
    *d = cli_stats(ds, n).median;
    if (!(*c > 0 && *d > 0))
        return lbs_err_set(e, -EINVAL, "--compress-run %s: rows for '%s' "
                           "without positive gbps/decompress_gbps", run, name);
    return 0;
}

/* One sweep row: the point's result and how it was obtained. */
static json_t *sweep_row(const struct simargs *a, const struct lbs_sim_entry *en,
                         const struct lbs_sim_plan *plan,
                         const struct lbs_sim_model *m,
                         const struct lbs_sim_platform *pl,
                         const struct lbs_sim_opts *o,
                         const struct lbs_sim_result *r, double eff)
{
    json_t *row = json_pack(
        "{s:s,s:I,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:s,s:s,s:s,s:I,"
        "s:f,s:I,s:f,s:f,s:f,s:b}",
        "optim", en->name, "gpus", (json_int_t)r->P, "iter_ms",
        r->iter * 1e3, "compute_ms", r->compute * 1e3, "optimizer_ms",
        r->optim * 1e3, "exposed_comm_ms", r->exposed * 1e3, "comm_ms",
        r->comm * 1e3, "bytes_per_gpu", r->bytes, "wire_bytes_per_gpu",
        r->wire, "scaling_efficiency", eff, "model", m->name,
        "platform", pl->name, "plan", en->source, "trace_ranks",
        (json_int_t)plan->ranks, "final_phase_iter_ms",
        r->final_iter * 1e3, "final_phase_from_step",
        (json_int_t)r->final_from, "collectives_per_step", r->calls,
        "bucket_mb",
        (o->bucket_bytes > 0 ? o->bucket_bytes : m->bucket_bytes) /
            1048576.0,
        "optim_bytes_per_elem", en->bpe, "optim_bytes_assumed",
        en->bpe_assumed);
    /* E is defined from one node up: below it T(node)/T(P) compares a
     * run with more GPUs against one with fewer */
    if (row && r->P < (pl->gpus_per_node < pl->max_gpus ? pl->gpus_per_node
                                                       : pl->max_gpus))
        json_object_set_new(row, "scaling_efficiency", json_null());
    if (row) {
        int dp = !strcmp(en->source, "data-parallel");
        json_object_set_new(row, "slowdown_ms", json_real(r->slowdown * 1e3));
        json_object_set_new(row, "straggle_ms", json_real(r->straggle * 1e3));
        json_object_set_new(row, "overhead_ms", json_real(r->overhead * 1e3));
        json_object_set_new(row, "compute_cv", json_real(
            o->cv_set ? o->compute_cv : pl->compute_cv));
        json_object_set_new(row, "compute_slowdown", json_real(
            o->no_slowdown ? 0 : pl->overlap_slowdown));
        json_object_set_new(row, "overlap", json_boolean(!o->no_overlap));
        json_object_set_new(row, "accum", json_integer(o->accum > 1
                                                        ? o->accum : 1));
        json_object_set_new(row, "batch_per_gpu",
                            json_real(m->batch_per_gpu));
        json_object_set_new(row, "grad_dtype", dp ? json_string(a->grad_dtype)
                                                  : json_string("trace"));
        json_object_set_new(row, "collectives", json_string(
            pl->nccl_model ? "nccl-2.21-tuner" : "mpi-alpha-beta"));
        if (plan->compress[0])   /* the trace's compressor ("none" too) */
            json_object_set_new(row, "compress", json_string(plan->compress));
    }
    return row;
}

/* ---- sweep / step ---------------------------------------------------- */

static const char sweep_usage[] =
    "usage: lbscale sim sweep --model M --platform P --optim LIST\n"
    "                         [--gpus 8..16384] [--bucket-mb MB] [--json]";
static const char sweep_about[] =
    "Simulates one training step per (optimizer, GPU count) and prints the\n"
    "iteration time split into compute (forward + backward), optimizer step\n"
    "and exposed communication (iteration - compute - optimizer), the payload\n"
    "bytes each GPU hands to collectives per step, and the scaling efficiency\n"
    "  E(P) = T(one node, gpus_per_node GPUs) / T(P)\n"
    "at the same per-GPU batch (weak scaling).  Trace plans are averaged over\n"
    "their steps (SLAMB's periodic averaging and 1-bit LAMB's warm-up weigh as\n"
    "often as they occur); 'final' is the average over the trace's last phase\n"
    "(1-bit LAMB: the compressed phase).";

/* Every (entry, P) point simulated into rows before anything is printed
 * or written: an input that fails at some point must leave no table
 * header, no partial table and no run directory behind. */
static int sweep_rows(const struct simargs *a,
                      const struct lbs_sim_platform *pl,
                      const struct lbs_sim_model *m,
                      const struct lbs_sim_entry *ent, size_t nent,
                      const long *P, size_t np, long base_p,
                      struct lbs_sim_opts *o, json_t **rows,
                      struct lbs_err *e)
{
    struct lbs_sim_result *res = calloc(np, sizeof *res);
    double *eff = calloc(np, sizeof *eff);
    int rc = 0;
    *rows = json_array();
    if (!*rows || !res || !eff)
        rc = lbs_err_set(e, -ENOMEM, "out of memory");
    char jsrc[LBS_SIM_FILE_MAX + 800];
    job_source(a, m, pl, o, jsrc, sizeof jsrc);
    for (size_t k = 0; k < nent && !rc; k++) {
        char csrc[LBS_SIM_FILE_MAX + 64];
        o->optim_bytes_per_elem = ent[k].bpe;
        if ((rc = compress_cost(a, ent[k].plans[0], pl, o, csrc,
                                sizeof csrc, e)) ||
            (rc = lbs_sim_entry_sweep(pl, m, &ent[k], P, np, base_p, o, res,
                                      eff, e)))
            break;
        for (size_t i = 0; i < np && !rc; i++) {
            json_t *row = sweep_row(a, &ent[k], lbs_sim_entry_plan(&ent[k],
                                    P[i]), m, pl, o, &res[i], eff[i]);
            if (row) {
                json_object_set_new(row, "compress_ms",
                                    json_real(res[i].compress * 1e3));
                json_object_set_new(row, "compress_cost", json_string(csrc));
                json_object_set_new(row, "job_source", json_string(jsrc));
            }
            if (!row || json_array_append_new(*rows, row))
                rc = lbs_err_set(e, -ENOMEM, "out of memory");
        }
    }
    free(res);
    free(eff);
    if (rc) {
        json_decref(*rows);
        *rows = NULL;
    }
    return rc;
}

static void print_sweep_head(const struct simargs *a,
                             const struct lbs_sim_model *m,
                             const struct lbs_sim_platform *pl,
                             const struct lbs_sim_opts *o, long base_p)
{
    printf("# %s on %s (%s, %d GPUs/node), per-GPU batch %g x %g, "
           "bucket %g MiB; E = T(%ld GPUs)/T(P)\n"
           "# collectives: %s; dense baselines send %s gradients; %ld "
           "micro-batch%s per step; comm %s the backward pass; compute "
           "slowdown while overlapped %.1f%%\n"
           "# %-18s %6s %9s %9s %8s %9s %9s %8s %8s %6s %9s\n",
           m->name, pl->name, pl->gpu, pl->gpus_per_node, m->batch_per_gpu,
           m->seq_len,
           (o->bucket_bytes > 0 ? o->bucket_bytes : m->bucket_bytes) /
               1048576.0,
           base_p, pl->nccl_model ? "NCCL 2.21 tuner model"
                                  : "MPI alpha-beta model",
           a->grad_dtype, o->accum > 1 ? o->accum : 1L,
           o->accum > 1 ? "es" : "", o->no_overlap ? "after" : "overlaps",
           o->no_slowdown ? 0 : 100 * pl->overlap_slowdown, "optim", "gpus",
           "iter(ms)", "compute", "optim", "exposed", "comm", "slowdn",
           "MB/GPU", "eff", "final(ms)");
}

static void print_sweep_row(const json_t *r)
{
    char eff[16] = "     -";   /* below one node E is not defined */
    if (json_is_number(json_object_get(r, "scaling_efficiency")))
        snprintf(eff, sizeof eff, "%6.3f", NUM(r, "scaling_efficiency"));
    printf("  %-18s %6.0f %9.2f %9.2f %8.2f %9.2f %9.2f %8.2f %8.1f %s "
           "%9.2f\n",
           json_string_value(json_object_get(r, "optim")), NUM(r, "gpus"),
           NUM(r, "iter_ms"), NUM(r, "compute_ms"), NUM(r, "optimizer_ms"),
           NUM(r, "exposed_comm_ms"), NUM(r, "comm_ms"), NUM(r, "slowdown_ms"),
           NUM(r, "bytes_per_gpu") / 1e6, eff,
           NUM(r, "final_phase_iter_ms"));
}

/* Print rows (one JSON object each, or fmt's line) and append them to
 * the run's KIND.jsonl. */

/* NCCL 2.21.5 has no algorithm with a logarithmic step count for
 * allgather or alltoall: say so where a plan uses them at a scale where
 * their P - 1 steps of latency matter, rather than inventing one. */
static void note_linear_steps(const struct point_in *in)
{
    long maxp = 0;
    unsigned lin = 1u << LBS_COLL_ALLGATHER | 1u << LBS_COLL_ALLGATHERV |
                   1u << LBS_COLL_ALLTOALL;
    for (size_t i = 0; i < in->np; i++)
        maxp = in->P[i] > maxp ? in->P[i] : maxp;
    if (!in->pl->nccl_model || maxp < 1024)
        return;
    for (size_t k = 0; k < in->nent; k++)
        for (size_t j = 0; j < in->ent[k].nplans; j++) {
            const struct lbs_sim_plan *pl = in->ent[k].plans[j];
            for (size_t i = 0; i < pl->nsteps; i++)
                if (pl->step[i].kinds & lin) {
                    printf("# note: NCCL 2.21.5 runs allgather and alltoall "
                           "in P - 1 steps (ring, point-to-point; no "
                           "logarithmic algorithm), so at %ld GPUs their "
                           "latency is %ld steps; priced as NCCL would run "
                           "them\n", maxp, maxp - 1);
                    return;
                }
        }
}

int run_entries(const struct simargs *a, int argc, char **argv,
                int step_mode)
{
    struct lbs_err e;
    struct point_in in = {0};
    struct lbs_run *run = NULL;
    json_t *rows = NULL;
    const char *what = step_mode ? "sim step" : "sim sweep";
    if (need_point_args(a, what))
        return EXIT_BAD_INPUT;
    /* default: one node, then powers of two up to max_gpus (sweep);
     * 1,024 or max_gpus (step) */
    char def[64];
    int rc = point_load(a, &in, &e);
    if (!rc) {
        long top = in.pl->max_gpus;
        if (step_mode)
            snprintf(def, sizeof def, "%ld", top < 1024 ? top : 1024L);
        else
            snprintf(def, sizeof def, "%ld..%ld", (long)in.pl->gpus_per_node <
                     top ? (long)in.pl->gpus_per_node : top, top);
        rc = lbs_sim_parse_gpus(a->gpus ? a->gpus : def, &in.P, &in.np, &e);
    }
    if (rc) {
        cli_error(what, "%s", e.msg);
        goto out;
    }
    if (step_mode && (in.np != 1 || in.nent != 1)) {
        cli_error(what, "one --optim and one --gpus value (use sim sweep for "
                  "lists)");
        rc = -EINVAL;
        goto out;
    }
    struct lbs_sim_opts o = sim_opts(a);
    long base_p = in.pl->gpus_per_node < in.pl->max_gpus
                      ? in.pl->gpus_per_node : in.pl->max_gpus;
    if ((rc = point_check(a, &in, &o, &e)) ||
        (rc = sweep_rows(a, in.pl, in.m, in.ent, in.nent, in.P, in.np,
                         base_p, &o, &rows, &e))) {
        cli_error(what, "%s", e.msg);
        goto out;
    }
    /* sweep and step rows go to sim.jsonl (what `lbscale report` reads) */
    if ((rc = cli_open_run(&a->com, "sim", argc, argv, &run)))
        goto out;
    if (!a->com.json)
        print_sweep_head(a, in.m, in.pl, &o, base_p);
    rc = emit_rows(a, run, "sim", what, rows, print_sweep_row);
    if (!rc && !a->com.json)
        note_linear_steps(&in);
    if (!rc && run && !a->com.json)
        fprintf(stderr, "results: %s/sim.jsonl\n", lbs_run_dir(run));
out:
    json_decref(rows);
    lbs_run_close(run);
    point_in_free(&in);
    return cli_exit_code(rc);
}

int cmd_sweep(int argc, char **argv, struct simargs *a)
{
    const struct cli_opt opts[] = {SIM_SWEEP_ROWS(a), CLI_COMMON_OPTS(&a->com),
                                   {0}};
    const struct cli_verb v = {.name = "sim sweep", .usage = sweep_usage,
                               .about = sweep_about, .opts = opts,
                               .epilog = FILES_NOTE};
    int rc = cli_parse(&v, argc - 1, argv + 1, NULL, NULL);
    if (rc)
        return rc < 0 ? EXIT_BAD_INPUT : 0;
    return run_entries(a, argc, argv, 0);
}
