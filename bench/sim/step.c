/* step.c - `lbscale sim step`: one point, with its timeline. */
#include <stdlib.h>

#include "../cli.h"
#include "sim_cli.h"

struct tl_ctx {
    const struct lbs_sim_model *m;
    int json;
    long bwd_events;
};

static void on_event(void *ctx, const struct lbs_sim_event *ev)
{
    struct tl_ctx *t = ctx;
    static const char *const kinds[] = {"forward", "backward", "comm",
                                        "optimizer"};
    if (ev->kind == LBS_SIM_EV_BWD) {
        t->bwd_events++;
        return;
    }
    if (t->json) {
        json_t *o = json_pack("{s:s,s:f,s:f,s:f}", "event", kinds[ev->kind],
                              "ready_ms", ev->ready * 1e3, "start_ms",
                              ev->start * 1e3, "end_ms", ev->end * 1e3);
        if (o && ev->kind == LBS_SIM_EV_COMM) {
            json_object_set_new(o, "coll", json_string(
                                    lbs_coll_name(ev->coll)));
            json_object_set_new(o, "bytes", json_real(ev->bytes));
            json_object_set_new(o, "algo", json_string(
                                    lbs_sim_algo_name(ev->cost.algo)));
            json_object_set_new(o, "proto", json_string(
                                    lbs_sim_proto_name(ev->cost.proto)));
            json_object_set_new(o, "layers", json_pack("[i,i]", ev->layer,
                                                       ev->layer_last));
            json_object_set_new(o, "calls", json_integer(ev->calls));
            /* waits for another call or the whole backward pass, not
             * just its layer's gradient (engine.c) */
            json_object_set_new(o, "dependent", json_boolean(ev->post));
        }
        if (o)
            print_json(o);
        json_decref(o);
        return;
    }
    if (ev->kind != LBS_SIM_EV_COMM) {
        printf("  %-9s %10s %10.3f %10.3f\n", kinds[ev->kind], "",
               ev->start * 1e3, ev->end * 1e3);
        return;
    }
    printf("  %-9s %10.3f %10.3f %10.3f %10.2f  %-9s %-17s %-6s layers "
           "%d..%d (%d call%s)%s\n", kinds[ev->kind], ev->ready * 1e3,
           ev->start * 1e3, ev->end * 1e3, ev->bytes / 1e6,
           lbs_coll_name(ev->coll), lbs_sim_algo_name(ev->cost.algo),
           lbs_sim_proto_name(ev->cost.proto), ev->layer, ev->layer_last,
           ev->calls, ev->calls == 1 ? "" : "s",
           ev->post ? (ev->layer < 0 ? " whole-model" : " needs an earlier call")
                    : "");
}

static int sim_step_timeline(const struct simargs *a)
{
    struct lbs_err e;
    struct point_in in = {0};
    int rc = point_load(a, &in, &e);
    if (!rc)
        rc = lbs_sim_parse_gpus(a->gpus ? a->gpus : "1024", &in.P, &in.np,
                                &e);
    if (rc) {
        cli_error("sim step", "%s", e.msg);
        goto out;
    }
    const struct lbs_sim_plan *plan = lbs_sim_entry_plan(&in.ent[0],
                                                         in.P[0]);
    struct tl_ctx t = {in.m, a->com.json, 0};
    struct lbs_sim_opts o = sim_opts(a);
    char jsrc[LBS_SIM_FILE_MAX + 800];
    job_source(a, in.m, in.pl, &o, jsrc, sizeof jsrc);
    o.optim_bytes_per_elem = in.ent[0].bpe;
    struct lbs_sim_opts quiet = o;
    o.on_event = on_event;
    o.ctx = &t;
    struct lbs_sim_result r;
    /* once without events first: a point that fails prints nothing */
    if ((rc = lbs_sim_run(in.pl, in.m, plan, in.P[0], &quiet, &r, &e))) {
        cli_error("sim step", "%s", e.msg);
        goto out;
    }
    if (!a->com.json)
        printf("# timeline of the first distinct step: %s, %s, %s, %ld GPUs\n"
               "  %-9s %10s %10s %10s %10s  %-9s %-17s %-6s\n",
               in.ent[0].name, in.m->name, in.pl->name, in.P[0], "event",
               "ready(ms)", "start", "end", "MB", "coll", "algorithm",
               "proto");
    rc = lbs_sim_run(in.pl, in.m, plan, in.P[0], &o, &r, &e);
    if (rc)
        cli_error("sim step", "%s", e.msg);
    else if (!a->com.json)
        printf("# %ld backward events (one per layer) not shown; iteration "
               "%.3f ms = compute %.3f + optimizer %.3f + exposed %.3f + "
               "slowest rank %.3f + overhead %.3f (%s)\n",
               t.bwd_events, r.iter * 1e3, r.compute * 1e3, r.optim * 1e3,
               r.exposed * 1e3, r.straggle * 1e3, r.overhead * 1e3, jsrc);
out:
    point_in_free(&in);
    return cli_exit_code(rc);
}

int cmd_step(int argc, char **argv, struct simargs *a)
{
    const struct cli_opt opts[] = {
        {.name = "timeline", .type = CLI_FLAG, .dst = &a->timeline,
         .help = "print every collective of the first distinct step with\n"
                 "its algorithm, start and end"},
        SIM_SWEEP_ROWS(a), CLI_COMMON_OPTS(&a->com), {0}};
    const struct cli_verb v = {
        .name = "sim step",
        .usage = "usage: lbscale sim step --model M --platform P --optim NAME "
                 "[--gpus 1024]\n"
                 "                        [--timeline] [--json]",
        .about = "One simulated training step of one optimizer at one GPU "
                 "count (default\n1024): one row of `lbscale sim sweep`, "
                 "with the same options.",
        .opts = opts, .epilog = FILES_NOTE};
    int rc = cli_parse(&v, argc - 1, argv + 1, NULL, NULL);
    if (rc)
        return rc < 0 ? EXIT_BAD_INPUT : 0;
    if (!a->timeline)
        return run_entries(a, argc, argv, 1);
    if (need_point_args(a, "sim step"))
        return EXIT_BAD_INPUT;
    return sim_step_timeline(a);
}
