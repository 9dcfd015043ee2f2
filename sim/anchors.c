/* anchors.c - published figures beside lbscale's predictions: the table
 * `lbscale sim anchors` prints and `--check` gates (sim/README.md,
 * "Anchors").  Each row says where the figure comes from and how the
 * prediction is computed from the presets; nothing here is tuned to the
 * published numbers. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"

/* nccl-tests' figures of one collective on pl: busbw (GB/s) or time (us). */
static double coll_fig(const struct lbs_sim_platform *pl, int k, long P,
                       double n, int want_time)
{
    struct lbs_sim_net net;
    if (lbs_sim_net_init(&net, pl, P, NULL))
        return NAN;
    struct lbs_sim_cost c = lbs_sim_coll_cost(&net, k, n, LBS_TOPO_RING,
                                              1);
    if (want_time)
        return c.t * 1e6;
    double Pd = (double)P;
    /* nccl-tests: allgather's algbw counts the whole output (P n) */
    double algbw = (k == LBS_COLL_ALLGATHER ? Pd * n : n) / c.t / 1e9;
    double f = k == LBS_COLL_ALLREDUCE ? 2 * (Pd - 1) / Pd : (Pd - 1) / Pd;
    return algbw * f;
}

/* E = T(one node) / T(P) of optim on model/platform presets; on failure
 * msg holds why. */
static int efficiency(const char *model, const char *platform,
                      const char *optim, long P, double *eff,
                      struct lbs_err *e)
{
    struct lbs_sim_model *m = NULL;
    struct lbs_sim_platform *pl = NULL;
    struct lbs_sim_entry *ent = NULL;
    size_t n = 0;
    int rc = lbs_sim_model_find(model, &m, e);
    if (!rc) rc = lbs_sim_platform_find(platform, &pl, e);
    if (!rc) rc = lbs_sim_entries_load(optim, m, 4, &ent, &n, e);
    if (!rc) {
        struct lbs_sim_opts o = {.optim_bytes_per_elem = ent[0].bpe};
        struct lbs_sim_result b, r;
        long bp = pl->gpus_per_node;
        rc = lbs_sim_run(pl, m, lbs_sim_entry_plan(&ent[0], bp), bp, &o, &b,
                         e);
        if (!rc)
            rc = lbs_sim_run(pl, m, lbs_sim_entry_plan(&ent[0], P), P, &o,
                             &r, e);
        if (!rc)
            *eff = b.iter / r.iter;
    }
    lbs_sim_entries_free(ent, n);
    lbs_sim_model_free(m);
    lbs_sim_platform_free(pl);
    return rc;
}

/* NVIDIA's BERT-Large phase-1 recipe on DGX-A100 (DeepLearningExamples
 * PyTorch BERT README, multi-node table): seq 128, 256 sequences per GPU
 * per micro-batch, AMP, global batch 65,536 held fixed (gradient
 * accumulation 32 on one node, 1 on 32 nodes), fp16 gradients allreduced
 * once after the accumulation (allreduce_post_accumulation_fp16: not
 * overlapped), LAMB.  Per-GPU sequences/s on 1 and 32 nodes. */
static int bert_phase1(double *thr1, double *thr32, struct lbs_err *e)
{
    struct lbs_sim_model *m = NULL;
    struct lbs_sim_platform *pl = NULL;
    struct lbs_sim_entry *ent = NULL;
    size_t n = 0;
    int rc = lbs_sim_model_find("bert-large", &m, e);
    if (!rc) rc = lbs_sim_model_set_batch(m, 256, e);
    if (!rc) rc = lbs_sim_platform_find("dgx-a100", &pl, e);
    if (!rc) rc = lbs_sim_entries_load("lamb", m, 2, &ent, &n, e);
    static const long nodes[2] = {1, 32};
    for (int i = 0; i < 2 && !rc; i++) {
        long P = 8 * nodes[i];
        struct lbs_sim_opts o = {.optim_bytes_per_elem = ent[0].bpe,
                                 .accum = 65536 / (256 * P), .no_overlap = 1};
        struct lbs_sim_result r;
        rc = lbs_sim_run(pl, m, ent[0].plans[0], P, &o, &r, e);
        if (!rc)
            *(i ? thr32 : thr1) = (double)o.accum * 256 / r.iter;
    }
    lbs_sim_entries_free(ent, n);
    lbs_sim_model_free(m);
    lbs_sim_platform_free(pl);
    return rc;
}

/* One row; where `lbscale plot` marks it is set apart (place). */
static struct lbs_sim_anchor anchor(const char *what, const char *source,
                                    double published, double predicted,
                                    const char *unit, char kind, double band,
                                    const char *note)
{
    return (struct lbs_sim_anchor){.what = what, .source = source,
                                   .published = published,
                                   .predicted = predicted, .unit = unit,
                                   .kind = kind, .band = band, .note = note};
}

static void place(struct lbs_sim_anchor *a, const char *model,
                  const char *platform, const char *optim, long gpus,
                  const char *setup)
{
    a->model = model;
    a->platform = platform;
    a->optim = optim;
    a->gpus = gpus;
    a->setup = setup;
}

static const char ndmv4[] = "microsoft/mscclpp docs/performance-ndmv4.md "
                            "(Azure NDmv4, 8 x A100-80GB, 8 x HDR, NCCL "
                            "2.17.1)";
static const char ndv5[] = "Azure/msccl docs/performance-nd-h100-v5.md (8 x "
                           "H100, NCCL 2.18.3)";

/* The collective anchors: nccl-tests figures on one and two nodes. */
static int coll_anchors(const struct lbs_sim_platform *a100,
                        const struct lbs_sim_platform *h100,
                        struct lbs_sim_anchor *an)
{
    const double GiB = 1073741824.0;
    int na = 0;
    an[na++] = anchor("8xA100 NVLink allreduce busbw, 1 GiB",
        "S. Jeaugey, NVIDIA/nccl-tests#149 (~230 GB/s)", 230,
        coll_fig(a100, LBS_COLL_ALLREDUCE, 8, GiB, 0), "GB/s", 'r', 0.05,
        "NCCL's model: 12 ch x 20 GB/s = 240 before latency");
    an[na++] = anchor(
        "8xH100 NVLink allreduce busbw (ring), 1 GiB",
        "S. Jeaugey, NVIDIA/nccl-tests#212 (~370 GB/s ring)", 370,
        coll_fig(h100, LBS_COLL_ALLREDUCE, 8, GiB, 0), "GB/s", 'r', 0.05,
        "graph 12 x 30 GB/s derived from NCCL's search (not logged)");
    an[na++] = anchor(
        "2 x DGX-A100 allreduce busbw / HDR NIC, 1 GiB",
        "AddyLaddy, NVIDIA/nccl#812 (192 GB/s over 8 NICs)", 24,
        coll_fig(a100, LBS_COLL_ALLREDUCE, 16, GiB, 0) / a100->nics_per_node,
        "GB/s", 'r', 0.05, "8 channels x 24 GB/s");
    an[na++] = anchor(
        "2 x DGX-H100 allreduce busbw / NDR NIC, 1 GiB",
        "AddyLaddy, NVIDIA/nccl-tests#267 (48-49 GB/s per CX-7)", 48,
        coll_fig(h100, LBS_COLL_ALLREDUCE, 16, GiB, 0) / h100->nics_per_node,
        "GB/s", 'r', 0.05, "8 channels x 48 GB/s");
    an[na++] = anchor("8xA100 allreduce time, 1 KB", ndmv4,
        16.96, coll_fig(a100, LBS_COLL_ALLREDUCE, 8, 1024, 1), "us", 'f', 2,
        "");
    an[na++] = anchor("2 x 8 A100 (HDR) allreduce time, 1 KB",
        ndmv4, 35.85, coll_fig(a100, LBS_COLL_ALLREDUCE, 16, 1024, 1), "us",
        'f', 2, "");
    an[na++] = anchor("8xH100 allreduce time, 1 KB", ndv5,
        13.12, coll_fig(h100, LBS_COLL_ALLREDUCE, 8, 1024, 1), "us", 'f', 2,
        "");
    an[na++] = anchor("8xH100 allreduce time, 1 MiB", ndv5,
        31.94, coll_fig(h100, LBS_COLL_ALLREDUCE, 8, 1048576, 1), "us", 'f', 2,
        "");
    an[na++] = anchor("8xA100 allgather busbw, 1 GiB", ndmv4,
        253.59, coll_fig(a100, LBS_COLL_ALLGATHER, 8, GiB / 8, 0), "GB/s", 'r',
        0.10, "no reduction: above NCCL's 240 model");
    an[na++] = anchor("2 x 8 A100 alltoall busbw, 1 GiB",
        ndmv4, 37.80, coll_fig(a100, LBS_COLL_ALLTOALL, 16, GiB, 0), "GB/s",
        'r', 0.25, "p2p model (NCCL's tuner has none): one NIC per GPU");
    return na;
}

/* The training anchors: BERT-Large throughput and strong scaling, SLAMB's
 * and LAMB's efficiency on BERT-XL at 1,024 GPUs. */
static int train_anchors(const char *slamb, struct lbs_sim_anchor *an,
                         struct lbs_err *e)
{
    double thr1 = NAN, thr32 = NAN;
    int na = 0, rc = bert_phase1(&thr1, &thr32, e);
    if (rc)
        return rc;
    an[na++] = anchor(
        "BERT-Large ph.1 seq/s per A100, 1 node (8 GPUs)",
        "NVIDIA DeepLearningExamples BERT README: 4553/8", 569.1, thr1,
        "seq/s", 'r', 0.10, "efficiency calibrated on the 1-GPU row (580)");
    an[na++] = anchor(
        "BERT-Large ph.1 strong scaling, 32 DGX-A100",
        "NVIDIA DeepLearningExamples BERT README: 30.37x on 32 nodes", 0.949,
        thr32 / thr1, "", 'a', 0.03,
        "fixed global batch 65,536; fp16 grads after accumulation");
    place(&an[na - 1], "bert-large", "dgx-a100", "lamb", 256,
          "strong scaling, B = 65,536");
    double eff = NAN;
    struct lbs_err ee;
    /* slamb: the SLAMB trace to use (default: the preset lookup) */
    int erc = efficiency("bert-xl", "dgx-a100", slamb ? slamb : "slamb", 1024,
                         &eff, &ee);
    if (erc && slamb)   /* a trace the user named must work */
        return lbs_err_set(e, erc, "%s", ee.msg);
    int have = !erc;
    an[na++] = anchor(
        "SLAMB scaling efficiency, BERT-XL, 1,024 A100",
        "Xu et al., ICML 2023 (abstract; network not stated)", 0.90,
        have ? eff : NAN, "", 'a', 0, have ? "on dgx-a100 (8 x HDR per "
        "node); sim netsweep varies the network" : "no SLAMB trace for "
        "bert-xl (--optim FILE, or record one into sim/data/traces/)");
    place(&an[na - 1], "bert-xl", "dgx-a100", "slamb", 1024, "");
    double effl = NAN;
    int havel = !efficiency("bert-xl", "dgx-a100", "lamb", 1024, &effl, &ee);
    an[na++] = anchor(
        "LAMB scaling efficiency, BERT-XL, 1,024 A100",
        "(the paper's baseline; no number quoted here)", NAN,
        havel ? effl : NAN, "", 'a', 0, "data-parallel contract, same "
        "platform");
    return na;
}

int lbs_sim_anchors(const char *slamb, struct lbs_sim_anchor *an, int *n,
                    struct lbs_err *err)
{
    struct lbs_sim_platform *a100 = NULL, *h100 = NULL;
    int rc, na = 0;
    *n = 0;
    if (!(rc = lbs_sim_platform_find("dgx-a100", &a100, err)) &&
        !(rc = lbs_sim_platform_find("dgx-h100", &h100, err))) {
        na = coll_anchors(a100, h100, an);
        rc = train_anchors(slamb, an + na, err);
    }
    lbs_sim_platform_free(a100);
    lbs_sim_platform_free(h100);
    if (rc < 0)
        return rc;
    *n = na + rc;
    return 0;
}

int lbs_sim_anchor_in_band(const struct lbs_sim_anchor *a)
{
    double p = a->published, x = a->predicted;
    if (!(a->band > 0))
        return 1;
    if (!isfinite(x))
        return 0;
    return a->kind == 'a' ? fabs(x - p) <= a->band
         : a->kind == 'f' ? x <= p * a->band && x >= p / a->band
                          : fabs(x / p - 1) <= a->band;
}
