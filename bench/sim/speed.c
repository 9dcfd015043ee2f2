/* speed.c - `lbscale sim speed`: how fast the simulator itself is. */
#include <math.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "../cli.h"
#include "sim_cli.h"

/* ---- speed ------------------------------------------------------------- */

/* The peak resident set of this process (getrusage: KiB on Linux). */
static double peak_rss_mib(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) ? NAN : (double)ru.ru_maxrss / 1024;
}

static json_t *speed_row(const struct lbs_sim_speed *sp,
                         const struct cli_stats *st,
                         const struct cli_stats *sws)
{
    json_t *row = json_pack("{s:s,s:s,s:s,s:i,s:f,s:f,s:b,s:i,s:i,s:f,s:f,"
                            "s:b}", "bench", "sim_speed", "model", sp->model,
                            "platform", sp->platform, "step_gpus", 1024,
                            "step_ms_median", st->median * 1e3, "step_ms_max",
                            st->max * 1e3, "step_ok_1ms", st->median <= 1e-3,
                            "sweep_optims", (int)sp->nent, "sweep_scales",
                            (int)sp->ncost, "sweep_s_median", sws->median,
                            "sweep_s_max", sws->max, "sweep_ok_2s",
                            sws->median <= 2.0);
    json_t *growth = json_array();
    for (size_t i = 0; i < sp->ncost; i++) {
        const struct lbs_sim_speed_cost *c = &sp->cost[i];
        json_array_append_new(growth, json_pack("{s:I,s:f,s:f,s:f,s:f,s:f}",
            "gpus", (json_int_t)c->gpus, "net_init_ns", c->net_init * 1e9,
            "allreduce_ns", c->coll[0] * 1e9, "allgather_ns", c->coll[1] * 1e9,
            "alltoall_ns", c->coll[2] * 1e9, "neighbor_ns", c->coll[3] * 1e9));
    }
    json_object_set_new(row, "cost_vs_gpus", growth);
    json_object_set_new(row, "sweep_max_gpus", json_integer(sp->top_gpus));
    json_object_set_new(row, "peak_rss_mib", json_real(peak_rss_mib()));
    return row;
}

static void print_speed(const struct lbs_sim_speed *sp,
                        const struct cli_stats *st,
                        const struct cli_stats *sws)
{
    int ok_step = st->median <= 1e-3, ok_sweep = sws->median <= 2.0;
    printf("# simulator speed (%s, %s)\n"
           "  one %s step at 1,024 GPUs: %.3f ms median (max %.3f) %s\n"
           "  sweep %zu optimizers x %zu scales (8..%ld, loading "
           "included): %.3f s median (max %.3f) %s\n"
           "  peak resident memory of this process: %.1f MiB %s\n"
           "# cost of one collective vs P (ns per call; closed forms, "
           "O(log P) at most)\n  %6s %10s %10s %10s %10s %10s\n",
           sp->model, sp->platform, sp->step_optim, st->median * 1e3,
           st->max * 1e3, ok_step ? "(<= 1 ms: ok)" : "(> 1 ms: SLOW)",
           sp->nent, sp->ncost, sp->top_gpus, sws->median, sws->max,
           ok_sweep ? "(<= 2 s: ok)" : "(> 2 s: SLOW)", peak_rss_mib(),
           peak_rss_mib() <= 100 ? "(<= 100 MiB: ok)" : "(> 100 MiB: BIG)",
           "gpus", "net_init",
           "allreduce", "allgather", "alltoall", "neighbor");
    for (size_t i = 0; i < sp->ncost; i++) {
        const struct lbs_sim_speed_cost *c = &sp->cost[i];
        printf("  %6ld %10.0f %10.0f %10.0f %10.0f %10.0f\n", c->gpus,
               c->net_init * 1e9, c->coll[0] * 1e9, c->coll[1] * 1e9,
               c->coll[2] * 1e9, c->coll[3] * 1e9);
    }
}

static int sim_speed(const struct simargs *a, int argc, char **argv)
{
    struct lbs_err e;
    struct lbs_run *run = NULL;
    struct lbs_sim_speed sp;
    /* every optimizer lbscale implements: data-parallel ones by their
     * contract, the others by their recorded traces */
    const struct lbs_sim_speed_in in = {
        .model = a->model ? a->model : "bert-large",
        .platform = a->platform ? a->platform : "dgx-h100",
        .optims = a->optim ? a->optim
            : "sgd,lars,lamb,adamw,slamb,onebit_lamb,jointspar,"
              "jointspar_lars,dmsgd,decentlam"};
    int rc = lbs_sim_speed(&in, &sp, &e);
    if (rc) {
        cli_error("sim speed", "%s", e.msg);
        return cli_exit_code(rc);
    }
    if (!(rc = cli_open_run(&a->com, "sim_speed", argc, argv, &run))) {
        struct cli_stats st = cli_stats(sp.step_s, LBS_SIM_SPEED_STEPS);
        struct cli_stats sws = cli_stats(sp.sweep_s, LBS_SIM_SPEED_SWEEPS);
        json_t *row = speed_row(&sp, &st, &sws);
        if (a->com.json)
            print_json(row);
        else
            print_speed(&sp, &st, &sws);
        if (run && (rc = lbs_run_append(run, "sim_speed", row, &e)))
            cli_error("sim speed", "%s", e.msg);
        else if (!run)
            json_decref(row);
    }
    lbs_run_close(run);
    lbs_sim_speed_free(&sp);
    return cli_exit_code(rc);
}

int cmd_speed(int argc, char **argv, struct simargs *a)
{
    const struct cli_opt opts[] = {
        SIM_MODEL_ROW(a), SIM_PLATFORM_ROW(a),
        SIM_OPTIM_ROW(a, "optimizers (default: every one lbscale\n"
                         "implements)"),
        CLI_COMMON_OPTS(&a->com), {0}};
    const struct cli_verb v = {
        .name = "sim speed",
        .usage = "usage: lbscale sim speed [--model M] [--platform P] "
                 "[--optim LIST] [--json]",
        .about = "Times one step at 1,024 GPUs, a sweep over 12 scales, and "
                 "the cost of\none collective as P grows.",
        .opts = opts};
    int rc = cli_parse(&v, argc - 1, argv + 1, NULL, NULL);
    if (rc)
        return rc < 0 ? EXIT_BAD_INPUT : 0;
    return sim_speed(a, argc, argv);
}
