/* fuzz_sim_json.c - libFuzzer harness for the simulator's three JSON
 * readers (platform, model, trace-v1) and what runs on what they accept.
 *
 * Input: first byte selects the reader ('P' platform, 'M' model, anything
 * else trace; seeds carry the right byte), the rest is the document.  An
 * accepted platform is exercised with every collective at several P; an
 * accepted model with the data-parallel plan on a fixed platform; an
 * accepted trace is bound to a model built from its own layer list and run
 * through the engine.  Every rejection must leave a message naming the
 * file.  Built on demand only: tests/fuzz/build.sh (clang -fsanitize=fuzzer).
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
        for (int c = 0; c < LBS_SIM_NCOLL; c++)
            for (int t = 0; t <= LBS_SIM_TOPO_FULL; t++) {
                struct lbs_sim_cost k = lbs_sim_coll_cost(&net, c, 1e6, t, 3);
                if (isnan(k.t) || k.t < 0)
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
        struct lbs_sim_opts o = {0, 20, NULL, NULL};
        if (!lbs_sim_run(fixed_platform(), m, plan, 8, &o, &r, &e) &&
            (isnan(r.iter) || r.iter < 0))
            abort();
        lbs_sim_plan_free(plan);
    }
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
        struct lbs_sim_opts o = {0, 20, NULL, NULL};
        for (long P = 1; P <= 4096; P *= 8)
            if (!lbs_sim_run(fixed_platform(), &m, b, P, &o, &r, &e) &&
                (isnan(r.iter) || r.iter < 0 || r.final_iter < 0))
                abort();
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
    else
        run_trace(text, size - 1);
    free(text);
    return 0;
}
