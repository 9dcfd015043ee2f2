/* fuzz_sim_json.c - libFuzzer harness for the simulator's three JSON
 * readers (platform, model, trace-v1) and what runs on what they accept.
 *
 * Input: first byte selects ('P' platform, 'M' model, 'C' a model and a
 * platform together, anything else a trace; seeds carry the right byte),
 * the rest is the document ('C': model, a NUL byte, platform).  An
 * accepted platform is exercised with every collective at several P; an
 * accepted model with the data-parallel plan on a fixed platform; with
 * 'C' the fuzzed model runs on the fuzzed platform (where peak_tflops =
 * 1e-320 once gave infinite times); an accepted trace is bound to a model
 * built from its own layer list and run through the engine.  Every
 * rejection must leave a message naming the file; every accepted input
 * must simulate to finite, non-negative times (lbs_sim_run's -EDOM, a
 * non-finite result, is a finding).  Built by tests/fuzz/build.sh.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lbscale_sim.h"

static struct lbs_sim_platform *fixed_platform(void)
{
    static struct lbs_sim_platform *p;
    if (!p) {
        const char *t =
            "{\"format\": \"lbscale-platform\", \"version\": 1, \"name\": \"f\","
            " \"gpu\": {\"peak_tflops\": 100, \"mem_bw_gbs\": 1000},"
            " \"node\": {\"gpus\": 4, \"intra_bw_gbs\": 100, \"nics\": 2,"
            " \"nic_gbps\": 80}, \"fabric\": {\"kind\": \"fat-tree\","
            " \"nodes_per_leaf\": 2, \"oversubscription\": 2}}";
        if (lbs_sim_platform_parse(t, "fixed.json", &p, NULL))
            abort();
    }
    return p;
}

static void check_msg(const struct lbs_err *e, const char *file)
{
    if (!strstr(e->msg, file)) {
        fprintf(stderr, "error message does not name the file: %s\n", e->msg);
        abort();
    }
}

/* A run's outcome: a failure must not be a non-finite time (-EDOM); a
 * success must give finite, non-negative times. */
static void check_run(int rc, const struct lbs_sim_result *r)
{
    if (rc == -EDOM)
        abort();
    if (!rc && (!isfinite(r->iter) || r->iter < 0 || !isfinite(r->comm) ||
                r->comm < 0 || !isfinite(r->final_iter) ||
                r->final_iter < 0 || !isfinite(r->bytes) || r->bytes < 0 ||
                !isfinite(r->exposed) || r->exposed < 0))
        abort();
}

static void run_platform(const char *text)
{
    struct lbs_sim_platform *p;
    struct lbs_err e = {{0}};
    if (lbs_sim_platform_parse(text, "fz.json", &p, &e)) {
        check_msg(&e, "fz.json");
        return;
    }
    static const long Ps[] = {1, 2, 8, 24, 64, 1000, 16384};
    for (size_t i = 0; i < sizeof Ps / sizeof Ps[0]; i++) {
        struct lbs_sim_net net;
        if (lbs_sim_net_init(&net, p, Ps[i], &e))
            continue;
        for (int c = 0; c < LBS_COLL_COUNT; c++)
            for (int t = 0; t <= LBS_TOPO_FULL; t++) {
                struct lbs_sim_cost k = lbs_sim_coll_cost(&net, c, 1e6, t, 3);
                if (isnan(k.t) || k.t < 0)   /* inf: no protocol fits */
                    abort();
            }
    }
    lbs_sim_platform_free(p);
}

static void run_model(const char *text)
{
    struct lbs_sim_model *m;
    struct lbs_sim_plan *plan;
    struct lbs_sim_result r;
    struct lbs_err e = {{0}};
    if (lbs_sim_model_parse(text, "fz.json", &m, &e)) {
        check_msg(&e, "fz.json");
        return;
    }
    if (!lbs_sim_plan_dp(m, "sgd", &plan, &e)) {
        struct lbs_sim_opts o = {.optim_bytes_per_elem = 20};
        check_run(lbs_sim_run(fixed_platform(), m, plan, 8, &o, &r, &e), &r);
        lbs_sim_plan_free(plan);
    }
    lbs_sim_model_free(m);
}

/* A fuzzed model on a fuzzed platform: one node, two nodes, the largest
 * P the platform allows. */
static void run_combo(const char *model, const char *platform)
{
    struct lbs_sim_model *m;
    struct lbs_sim_platform *p;
    struct lbs_sim_plan *plan;
    struct lbs_sim_result r;
    struct lbs_err e = {{0}};
    if (lbs_sim_model_parse(model, "fm.json", &m, &e)) {
        check_msg(&e, "fm.json");
        return;
    }
    if (lbs_sim_platform_parse(platform, "fp.json", &p, &e)) {
        check_msg(&e, "fp.json");
        lbs_sim_model_free(m);
        return;
    }
    if (!lbs_sim_plan_dp(m, "lamb", &plan, &e)) {
        long g = p->gpus_per_node, Ps[] = {1, g, 2 * g, p->max_gpus};
        struct lbs_sim_opts o = {.optim_bytes_per_elem = 44};
        for (size_t i = 0; i < sizeof Ps / sizeof Ps[0]; i++)
            if (Ps[i] >= 1 && Ps[i] <= p->max_gpus)
                check_run(lbs_sim_run(p, m, plan, Ps[i], &o, &r, &e), &r);
        lbs_sim_plan_free(plan);
    }
    lbs_sim_platform_free(p);
    lbs_sim_model_free(m);
}

static void run_trace(const char *text, size_t len)
{
    struct lbs_sim_plan *raw, *b;
    struct lbs_err e = {{0}};
    if (lbs_sim_trace_parse(text, len, "fz.jsonl", &raw, &e)) {
        check_msg(&e, "fz.jsonl");
        return;
    }
    /* a model with the trace's own layer list, 100x larger */
    struct lbs_sim_model m = {.nlayers = raw->nlayers, .efficiency = 0.5,
                              .bucket_bytes = 1, .wgrad_frac = 0.5};
    snprintf(m.name, sizeof m.name, "fz");
    m.l = calloc(raw->nlayers, sizeof *m.l);
    if (!m.l)
        abort();
    for (size_t i = 0; i < raw->nlayers; i++) {
        m.l[i].n = 100 * raw->layer_n[i];
        m.l[i].fwd_flops = 1e9;
        m.l[i].bwd_flops = 2e9;
        m.l[i].fwd_s = m.l[i].bwd_s = -1;
        m.params += m.l[i].n;
    }
    if (!lbs_sim_plan_bind(raw, &m, &b, &e)) {
        struct lbs_sim_result r;
        struct lbs_sim_opts o = {.optim_bytes_per_elem = 20};
        for (long P = 1; P <= 4096; P *= 8)
            check_run(lbs_sim_run(fixed_platform(), &m, b, P, &o, &r, &e),
                      &r);
        lbs_sim_plan_free(b);
    }
    free(m.l);
    lbs_sim_plan_free(raw);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 1 << 20)
        return 0;
    char *text = malloc(size);
    if (!text)
        return 0;
    memcpy(text, data + 1, size - 1);
    text[size - 1] = '\0';
    if (data[0] == 'P')
        run_platform(text);
    else if (data[0] == 'M')
        run_model(text);
    else if (data[0] == 'C')   /* model, NUL, platform */
        run_combo(text, text + strlen(text) + (strlen(text) < size - 1));
    else
        run_trace(text, size - 1);
    free(text);
    return 0;
}
