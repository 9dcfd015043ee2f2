/* train.c - `lbscale train`: data-parallel (or decentralized) training of
 * an MLP classifier with any registered optimizer, under mpirun or on one
 * process, with per-step traces for the simulator.
 *
 * One step (iteration i, 1-based) on every rank:
 *   lr factor from the schedule -> lbs_optim_set_lr_scale
 *   keep[] = lbs_optim_next_keep (JointSpar drops layers; others keep all)
 *   local batch = global / ranks samples from this rank's shard, in
 *   micro-batches (gradient accumulation): forward, softmax CE, backward
 *   without the weight-gradient GEMMs of dropped layers
 *   lbs_optim_step over a record comm wrapping the real comm
 *   (lbs_comm_record_wrap: every collective logged: kind, bytes, layer,
 *   duration)
 * At every epoch boundary (and after the last step) the test set is
 * evaluated on the ranks' average model (identical to every rank's model
 * for data-parallel optimizers; the consensus for decentralized ones),
 * each rank scoring its slice of the test set.
 *
 * Robustness: options are hashed and compared across ranks before
 * anything else (a mismatch is refused, exit 2); every collective error
 * path agrees across ranks; a watchdog (SIGALRM, --stall-timeout) ends a
 * rank that made no progress for that long, so a dead or hung peer can
 * never hang the job; a NaN gradient on some rank makes every rank skip
 * that step (the optimizer driver), counted and reported.
 */
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cblas.h>

#include "cli.h"
#include "data.h"
#include "lbs_config.h"
#include "lbscale/optim.h"
#include "lbscale/param.h"
#include "cnn.h"
#include "mlp.h"

/* ---- per-optimizer defaults -------------------------------------------
 *
 * lr(B) = min(lr_max, lr_ref * (B / 1024)^alpha), B = the global batch,
 * unless the spec sets lr itself: the square-root rule (alpha 0.5;
 * Krizhevsky 2014, the LAMB paper) except for JointSpar and JointSpar-LARS
 * (below).  lr_ref, alpha and the caps come from
 * sweeps on Fashion-MNIST with mlp:784-512-256-10, 10 epochs, cosine
 * decay, 10% warm-up (1 process; test accuracy):
 *   B=1024: sgd 0.05/0.1/0.2 -> 88.4/89.1/88.9%; lamb 0.005/0.01/0.02 ->
 *     89.5/89.9/88.9%; adamw 0.001/0.002/0.004 -> 88.6/89.1/89.6%;
 *     lars 2/5/10/20 -> 88.8/89.8/86.2/88.6%
 *   B=8192: sgd 0.1/0.2/0.4/0.8 -> 83.1/82.0/10/10% (linear scaling
 *     diverges, hence the low cap); lamb 0.02/0.04/0.08 -> 86.2/86.7/80.9%;
 *     adamw 0.008/0.016/0.032 -> 84.4/84.5/83.7%; lars 10/20/40 ->
 *     82.4/81.7/67.5%
 * LARS at 5 was unstable on 4 ranks with seed 1 (86.5%; seeds 2, 3:
 * 89.6%), hence 3 (1 process: 89.2%).  SLAMB, 1-bit LAMB take LAMB's
 * rates, DmSGD and DecentLaM (momentum SGD underneath) SGD's.  JointSpar
 * (4 ranks): B=1024 lr 0.05/0.1 -> 87.6/88.4%, B=8192 lr 0.05/0.1/0.15 ->
 * 78.1/70.7/diverged: its 1/p-rescaled gradients make the best rate FALL
 * with the batch when a large batch leaves few steps, hence alpha = -1/3
 * (capped at 0.1: smaller batches keep 0.1; 0.15 failed a 2-rank tiny run).
 * JointSpar-LARS (4 ranks): B=1024 lr 3/5 -> 87.2/83.4%, B=8192 lr
 * 3/5/8.5 -> 77.2/77.9/66.4%, hence a constant 3. */
struct optim_default {
    const char *name;
    double lr_ref, alpha, lr_max;
};
static const struct optim_default defaults[] = {
    {"sgd", 0.1, 0.5, 0.15},
    {"lars", 3.0, 0.5, 20.0},
    {"lamb", 0.01, 0.5, 0.04},
    {"adamw", 0.004, 0.5, 0.03},
    {"slamb", 0.01, 0.5, 0.04},
    {"onebit_lamb", 0.01, 0.5, 0.04},
    {"jointspar", 0.1, -1.0 / 3, 0.1},
    {"jointspar_lars", 3.0, 0.0, 3.0},
    {"dmsgd", 0.1, 0.5, 0.15},
    {"decentlam", 0.1, 0.5, 0.15},
    {NULL, 0, 0, 0},
};
#define REF_BATCH 1024.0

static const struct optim_default *find_default(const char *name)
{
    for (const struct optim_default *d = defaults; d->name; d++)
        if (!strcmp(d->name, name))
            return d;
    return NULL;
}

/* ---- options ---------------------------------------------------------- */

/* --stall-timeout auto (the default): a harness should notice a hung
 * peer in seconds, not minutes, yet never kill a slow but healthy run.  The
 * limit for the next unit of work (a step, an evaluation) is
 * STALL_FACTOR x the longest such unit measured so far, at least
 * STALL_FLOOR_S; before the first one has been timed, STALL_FIRST_S
 * (start-up, first touch of the data). */
#define STALL_AUTO (-1)
#define STALL_FLOOR_S 30.0
#define STALL_FIRST_S 60.0
#define STALL_FACTOR 10.0

enum fault_kind { FAULT_NONE, FAULT_NAN, FAULT_KILL, FAULT_HANG };

struct train_opts {
    const char *spec, *model, *topology, *dataset, *data_dir, *decay;
    const char *backend;
    const char *compress;   /* --compress SPEC or NULL */
    long global_batch, micro_batch, max_steps, subset, test_subset, seed;
    long threads, stall;
    long val;               /* --val: held-out training samples */
    double lr_base;         /* --lr-base (0: the tuned table) */
    long lr_ref_batch;      /* --lr-ref-batch */
    const char *lr_scaling; /* --lr-scaling auto|linear|sqrt|none */
    const char *export_layers;
    int no_augment;         /* --no-augment (CNN) */
    double epochs, warmup;
    int trace, trace_all;
    enum fault_kind fault;
    long fault_rank, fault_step;
    const char *fault_str;
};

static void usage(FILE *f)
{
    fprintf(f,
"usage: [mpirun -np N] lbscale train --optim SPEC [--model mlp:784-512-256-10]\n"
"           [--topology ring|exponential|onepeer|full] [--global-batch B]\n"
"           [--epochs E] [--json] [options]\n"
"\n"
"Trains an MLP classifier (ReLU, softmax cross-entropy, OpenBLAS sgemm) on\n"
"Fashion-MNIST from Debian's dataset-fashion-mnist package, every rank on its\n"
"own shard, and reports test-set accuracy after every epoch (the last line is\n"
"the final result).  Without the package a generated teacher-network task is\n"
"used instead, and the output and results say so.  Same seed, same ranks,\n"
"same --threads: bit-identical results.\n"
"\n"
"  --optim SPEC      optimizer spec (lbscale optim --list); an lr=... in it\n"
"                    overrides the default rule below\n"
"  --compress SPEC   compress the gradients before the optimizer (e.g.\n"
"                    topk:k=0.01,ef=1; lbscale compress --list); only for\n"
"                    data-parallel optimizers; applies on one rank too\n"
"  --model M         mlp:IN-H1-...-CLASSES (default " MLP_DEFAULT "), or\n"
"                    mlp8 = " MLP8_SPEC "\n"
"                    (8 weight layers, for JointSpar's layer sampling), or\n"
"                    cnn = conv3x3(16)-ReLU-maxpool-conv3x3(32)-ReLU-maxpool-\n"
"                    FC(128)-FC(10) (im2col + sgemm; Fashion-MNIST 28x28),\n"
"                    trained with random crops (pad 2) and horizontal flips\n"
"  --no-augment      the CNN without crops and flips\n"
"  --export-layers F write the model's layer list (name, shape) as JSON to F\n"
"                    (the format of optim --layers and sim --layers) and\n"
"                    exit without training\n"
"  --topology T      gossip graph for decentralized optimizers (ring,\n"
"                    symexp, exponential, onepeer, full); passed as\n"
"                    topology=T.  Default ring.  ring, symexp (offsets\n"
"                    +-2^k, the symmetric exponential graph) and full have\n"
"                    symmetric doubly stochastic mixing matrices, which\n"
"                    DecentLaM's analysis assumes; exponential and onepeer\n"
"                    are directed (W not symmetric): DecentLaM's momentum\n"
"                    recursion then has complex eigenvalues and reached\n"
"                    10%% test accuracy (4 ranks, batch 1024, 2 epochs).\n"
"                    WARNING printed (and recorded in the result row as\n"
"                    \"warning\") for decentlam on a directed graph\n"
"  --global-batch B  samples per step over all ranks (default 1024); must\n"
"                    be a multiple of the rank count\n"
"  --micro-batch M   rows per forward/backward pass; local batches above it\n"
"                    are accumulated (default min(local batch, 512))\n"
"  --epochs E        passes over the training set (default 10)\n"
"  --max-steps N     stop after N steps (tests)\n"
"  --warmup F        linear lr warm-up over fraction F of the steps\n"
"                    (default 0.1)\n"
"  --lr-base LR      the learning rate at the reference batch\n"
"                    (--lr-ref-batch, default 128), scaled to the global\n"
"                    batch B by --lr-scaling; replaces the tuned table\n"
"                    below (an lr= in the spec still wins)\n"
"  --lr-scaling S    auto (default), linear (lr = base x B/ref), sqrt\n"
"                    (base x sqrt(B/ref)), none.  auto: linear for sgd,\n"
"                    lars, dmsgd, decentlam, jointspar, jointspar_lars\n"
"                    (Goyal et al. 2017; You et al. 2017); sqrt for lamb,\n"
"                    adamw, slamb, onebit_lamb (Krizhevsky 2014; the LAMB\n"
"                    paper).  The result row states lr, lr_base,\n"
"                    lr_scaling and lr_rule\n"
"  --lr-ref-batch B  the batch --lr-base refers to (default 128)\n"
"  --val N           hold out the last N training samples (same split for\n"
"                    every seed) as a validation set, for choosing learning\n"
"                    rates; val_accuracy/val_loss are reported next to the\n"
"                    test set's (default 0: none)\n"
"  --decay D         cosine (default), linear, step (x0.1 at 50%% and 75%%),\n"
"                    none\n"
"  --seed S          initialisation, shards, batches (default 1)\n"
"  --dataset D       auto (default: fashion-mnist if installed, else\n"
"                    teacher), fashion-mnist, teacher\n"
"  --data DIR        IDX directory (default $LBSCALE_DATA or\n"
"                    " DATA_FASHION_DIR ")\n"
"  --subset N        use only the first N training samples\n"
"  --test-subset N   use only the first N test samples\n"
"  --threads T       OpenBLAS and OpenMP threads per rank (default 1; the\n"
"                    sgemm results depend on it, so it is part of the\n"
"                    reproducibility key)\n"
"  --comm B          self or mpi (default: mpi under mpirun, else self)\n"
"  --no-trace        do not write the trace\n"
"  --trace-all-ranks every rank writes train-trace-OPTIM.rankR.jsonl\n"
"                    (default: rank 0 writes train-trace-OPTIM.jsonl; with\n"
"                    --compress train-trace-OPTIM-COMPRESSOR.jsonl).  A later\n"
"                    run of the same into the same --out directory adds -2,\n"
"                    -3, ...; the train.jsonl row names its file (\"trace\")\n"
"  --stall-timeout S exit 1 when a rank makes no progress for S seconds, e.g.\n"
"                    because a peer died or hangs; 0 = never.  Default auto:\n"
"                    60 s until the first step (and evaluation) is timed,\n"
"                    then 10 x the longest step (evaluation) so far, at\n"
"                    least 30 s\n"
"  --fault K:R:S     testing: at step S rank R injects a NaN gradient (K =\n"
"                    nan), kills itself with SIGKILL (kill) or hangs (hang)\n"
CLI_COMMON_HELP
"\n"
"Default learning rates (used unless the spec sets lr): lr = lr_ref x\n"
"(B/1024)^alpha, at most lr_max (tuned on Fashion-MNIST, see train.c);\n"
"linear warm-up, then the decay:\n");
    fprintf(f, "  %-15s %8s %6s %8s\n", "optimizer", "lr_ref", "alpha",
            "lr_max");
    for (const struct optim_default *d = defaults; d->name; d++)
        fprintf(f, "  %-15s %8g %6.3g %8g\n", d->name, d->lr_ref, d->alpha,
                d->lr_max);
    fprintf(f,
"Others: the optimizer's own lr, unscaled.  onebit_lamb: freeze_step =\n"
"20%% of the steps unless given (DeepSpeed's 15-25%% of training).\n"
"Optimizers with a seed key get --seed.\n"
"\n"
"Results: train.jsonl (one row per run: final test_accuracy, steps, wall\n"
"time, bytes per rank, the per-epoch curve) and train-trace-OPTIM.jsonl (per\n"
"step: forward/backward time per layer, optimizer time, every communication\n"
"call; results/schema/train-trace-v1.md).\n");
}

/* MPI rank from the launcher's environment, before MPI is initialised:
 * only rank 0 prints command-line errors (every rank sees the same ones). */
static int env_rank(void)
{
    const char *v = getenv("OMPI_COMM_WORLD_RANK");
    if (!v)
        v = getenv("PMI_RANK");
    return v ? atoi(v) : 0;
}

static int under_mpirun(void)
{
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE");
}

static int quiet_rank;   /* non-zero: suppress cli errors on this rank */

#define FAIL(...)                                                           \
    do {                                                                    \
        if (!quiet_rank)                                                    \
            cli_error(__VA_ARGS__);                                         \
        return EXIT_BAD_INPUT;                                              \
    } while (0)

static int need(const char *o, const char *v)
{
    if (!v) {
        if (!quiet_rank)
            cli_error(o, "missing value");
        return -1;
    }
    return 0;
}

static int parse_fault(struct train_opts *t, const char *s)
{
    char kind[16];
    long r, st;
    char tail;
    if (sscanf(s, "%15[a-z]:%ld:%ld%c", kind, &r, &st, &tail) != 3 || r < 0 ||
        st < 1)
        return -1;
    if (!strcmp(kind, "nan"))
        t->fault = FAULT_NAN;
    else if (!strcmp(kind, "kill"))
        t->fault = FAULT_KILL;
    else if (!strcmp(kind, "hang"))
        t->fault = FAULT_HANG;
    else
        return -1;
    t->fault_rank = r;
    t->fault_step = st;
    t->fault_str = s;
    return 0;
}

/* Quiet variants of the cli_* value parsers (they print on failure). */
static int q_int(const char *o, const char *v, long lo, long hi, long *out)
{
    if (quiet_rank) {
        double d;
        if (!v || lbs_parse_double(v, &d) || d < lo || d > hi ||
            d != floor(d))
            return -EINVAL;
        *out = (long)d;
        return 0;
    }
    return cli_int(o, v, lo, hi, out);
}

static int q_double(const char *o, const char *v, double lo, double hi,
                    double *out)
{
    if (quiet_rank) {
        if (!v || lbs_parse_double(v, out) || *out < lo || *out > hi)
            return -EINVAL;
        return 0;
    }
    return cli_double(o, v, lo, hi, out);
}

/* 0 ok, 1 handled (help printed: exit 0), EXIT_BAD_INPUT. */
static int parse_args(int argc, char **argv, struct train_opts *t,
                      struct cli_common *com)
{
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int c = cli_common_opt(com, argc, argv, &i);
        if (c < 0)
            return EXIT_BAD_INPUT;
        if (c)
            continue;
        if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
            if (!quiet_rank)
                usage(stdout);
            return 1;
        } else if (!strcmp(o, "--optim")) {
            if (need(o, v)) return EXIT_BAD_INPUT;
            t->spec = v, i++;
        } else if (!strcmp(o, "--compress")) {
            if (need(o, v)) return EXIT_BAD_INPUT;
            t->compress = v, i++;
        } else if (!strcmp(o, "--model")) {
            if (need(o, v)) return EXIT_BAD_INPUT;
            t->model = v, i++;
        } else if (!strcmp(o, "--topology")) {
            if (need(o, v)) return EXIT_BAD_INPUT;
            if (strcmp(v, "ring") && strcmp(v, "exponential") &&
                strcmp(v, "symexp") &&
                strcmp(v, "onepeer") && strcmp(v, "full"))
                FAIL(o, "'%s' is not one of ring, symexp, exponential, "
                     "onepeer, full", v);
            t->topology = v, i++;
        } else if (!strcmp(o, "--global-batch")) {
            if (q_int(o, v, 1, 1L << 24, &t->global_batch))
                return EXIT_BAD_INPUT;
            i++;
        } else if (!strcmp(o, "--micro-batch")) {
            if (q_int(o, v, 1, 1L << 20, &t->micro_batch))
                return EXIT_BAD_INPUT;
            i++;
        } else if (!strcmp(o, "--epochs")) {
            if (q_double(o, v, 1e-3, 1e5, &t->epochs)) return EXIT_BAD_INPUT;
            i++;
        } else if (!strcmp(o, "--max-steps")) {
            if (q_int(o, v, 1, 1L << 40, &t->max_steps))
                return EXIT_BAD_INPUT;
            i++;
        } else if (!strcmp(o, "--warmup")) {
            if (q_double(o, v, 0, 1, &t->warmup)) return EXIT_BAD_INPUT;
            i++;
        } else if (!strcmp(o, "--decay")) {
            if (need(o, v)) return EXIT_BAD_INPUT;
            if (strcmp(v, "cosine") && strcmp(v, "linear") &&
                strcmp(v, "step") && strcmp(v, "none"))
                FAIL(o, "'%s' is not one of cosine, linear, step, none", v);
            t->decay = v, i++;
        } else if (!strcmp(o, "--val")) {
            if (q_int(o, v, 0, 1L << 40, &t->val)) return EXIT_BAD_INPUT;
            i++;
        } else if (!strcmp(o, "--lr-base")) {
            if (q_double(o, v, 1e-9, 1e4, &t->lr_base))
                return EXIT_BAD_INPUT;
            i++;
        } else if (!strcmp(o, "--lr-ref-batch")) {
            if (q_int(o, v, 1, 1L << 24, &t->lr_ref_batch))
                return EXIT_BAD_INPUT;
            i++;
        } else if (!strcmp(o, "--lr-scaling")) {
            if (need(o, v)) return EXIT_BAD_INPUT;
            if (strcmp(v, "auto") && strcmp(v, "linear") &&
                strcmp(v, "sqrt") && strcmp(v, "none"))
                FAIL(o, "'%s' is not one of auto, linear, sqrt, none", v);
            t->lr_scaling = v, i++;
        } else if (!strcmp(o, "--no-augment")) {
            t->no_augment = 1;
        } else if (!strcmp(o, "--export-layers")) {
            if (need(o, v)) return EXIT_BAD_INPUT;
            t->export_layers = v, i++;
        } else if (!strcmp(o, "--seed")) {
            if (q_int(o, v, 0, 1L << 52, &t->seed)) return EXIT_BAD_INPUT;
            i++;
        } else if (!strcmp(o, "--dataset")) {
            if (need(o, v)) return EXIT_BAD_INPUT;
            if (strcmp(v, "auto") && strcmp(v, "fashion-mnist") &&
                strcmp(v, "teacher"))
                FAIL(o, "'%s' is not one of auto, fashion-mnist, teacher", v);
            t->dataset = v, i++;
        } else if (!strcmp(o, "--data")) {
            if (need(o, v)) return EXIT_BAD_INPUT;
            t->data_dir = v, i++;
        } else if (!strcmp(o, "--subset")) {
            if (q_int(o, v, 1, 1L << 40, &t->subset)) return EXIT_BAD_INPUT;
            i++;
        } else if (!strcmp(o, "--test-subset")) {
            if (q_int(o, v, 1, 1L << 40, &t->test_subset))
                return EXIT_BAD_INPUT;
            i++;
        } else if (!strcmp(o, "--threads")) {
            if (q_int(o, v, 1, 4096, &t->threads)) return EXIT_BAD_INPUT;
            i++;
        } else if (!strcmp(o, "--comm")) {
            if (need(o, v)) return EXIT_BAD_INPUT;
            if (strcmp(v, "self") && strcmp(v, "mpi"))
                FAIL(o, "'%s' is not one of self, mpi", v);
            t->backend = v, i++;
        } else if (!strcmp(o, "--no-trace")) {
            t->trace = 0;
        } else if (!strcmp(o, "--trace-all-ranks")) {
            t->trace_all = 1;
        } else if (!strcmp(o, "--stall-timeout")) {
            if (v && !strcmp(v, "auto"))
                t->stall = STALL_AUTO;
            else if (q_int(o, v, 0, 86400 * 30, &t->stall))
                return EXIT_BAD_INPUT;
            i++;
        } else if (!strcmp(o, "--fault")) {
            if (need(o, v)) return EXIT_BAD_INPUT;
            if (parse_fault(t, v))
                FAIL(o, "'%s': expected nan|kill|hang:RANK:STEP", v);
            i++;
        } else {
            FAIL("train", "unknown option '%s' (see --help)", o);
        }
    }
    if (!t->spec)
        FAIL("train", "--optim SPEC is required (see lbscale optim --list)");
    return 0;
}

/* ---- agreement across ranks -------------------------------------------- */

/* Every rank passes its own rc; all get the code of the lowest failing
 * rank (0 if none).  *who: that rank (or -1).  The caller prints its own
 * message only when who == its rank, so one line reaches stderr. */
static int agree(struct lbs_comm *c, int rc, int *who)
{
    *who = rc ? c->rank : -1;
    if (c->size == 1)
        return rc;
    int32_t v[2] = {rc ? c->rank : INT32_MAX, 0};
    if (lbs_allreduce(c, v, 1, LBS_INT32, LBS_MIN, -1))
        return rc ? rc : -EIO;
    if (v[0] == INT32_MAX) {
        *who = -1;
        return 0;
    }
    *who = v[0];
    v[1] = rc;
    if (lbs_bcast(c, &v[1], 1, LBS_INT32, v[0], -1))
        return rc ? rc : -EIO;
    return v[1];
}

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; s && *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return s ? h : 0x5bd1e995u;
}

/* Hash every option that must be equal on all ranks and compare with MIN
 * and MAX allreduces.  Returns the index of the first differing option or
 * -1; <-1 on a communication failure. */
static int options_differ(struct lbs_comm *c, const struct train_opts *t,
                          const char *const **names_out)
{
    static const char *const names[] = {
        "--optim", "--model", "--topology", "--dataset", "--data",
        "--global-batch", "--micro-batch", "--epochs", "--max-steps",
        "--warmup", "--decay", "--seed", "--subset", "--test-subset",
        "--threads", "--fault", "--compress", "--val", "--lr-base",
        "--lr-ref-batch", "--lr-scaling",
    };
    enum { K = sizeof names / sizeof names[0] };
    char buf[K][64];
    snprintf(buf[0], 64, "%ld", t->global_batch);
    snprintf(buf[1], 64, "%ld", t->micro_batch);
    snprintf(buf[2], 64, "%.17g", t->epochs);
    snprintf(buf[3], 64, "%ld", t->max_steps);
    snprintf(buf[4], 64, "%.17g", t->warmup);
    snprintf(buf[5], 64, "%ld", t->seed);
    snprintf(buf[6], 64, "%ld", t->subset);
    snprintf(buf[7], 64, "%ld", t->test_subset);
    snprintf(buf[8], 64, "%ld", t->threads);
    snprintf(buf[9], 64, "%ld", t->val);
    snprintf(buf[10], 64, "%.17g", t->lr_base);
    snprintf(buf[11], 64, "%ld", t->lr_ref_batch);
    const char *val[K] = {
        t->spec, t->model, t->topology, t->dataset, t->data_dir, buf[0],
        buf[1], buf[2], buf[3], buf[4], t->decay, buf[5], buf[6], buf[7],
        buf[8], t->fault_str, t->compress, buf[9], buf[10], buf[11],
        t->lr_scaling,
    };
    int64_t mn[K], mx[K];
    for (int k = 0; k < K; k++)
        mn[k] = mx[k] = (int64_t)(fnv1a(val[k]) >> 1);
    *names_out = names;
    if (c->size == 1)
        return -1;
    if (lbs_allreduce(c, mn, K, LBS_INT64, LBS_MIN, -1) ||
        lbs_allreduce(c, mx, K, LBS_INT64, LBS_MAX, -1))
        return -2;
    for (int k = 0; k < K; k++)
        if (mn[k] != mx[k])
            return k;
    return -1;
}

/* ---- the effective optimizer spec ------------------------------------- */

static int spec_has_key(const char *spec, const char *key)
{
    const char *a = strchr(spec, ':');
    size_t kl = strlen(key);
    while (a && *a) {
        a++;
        while (*a == ' ')
            a++;
        if (!strncmp(a, key, kl) && (a[kl] == '=' || a[kl] == ' '))
            return 1;
        a = strchr(a, ',');
    }
    return 0;
}

/* The value of key in spec into out ("" when absent). */
static void spec_value(const char *spec, const char *key, char *out,
                       size_t len)
{
    out[0] = '\0';
    const char *a = strchr(spec, ':');
    size_t kl = strlen(key);
    while (a && *a) {
        a++;
        if (!strncmp(a, key, kl) && a[kl] == '=') {
            size_t n = strcspn(a + kl + 1, ",");
            snprintf(out, len, "%.*s", (int)(n < len ? n : len - 1),
                     a + kl + 1);
            return;
        }
        a = strchr(a, ',');
    }
}

/* Does optimizer `name` accept `key`? (probe on a one-element layer) */
static int optim_has_key(const char *name, const char *key, const char *val)
{
    char s[256];
    snprintf(s, sizeof s, "%s:%s=%s", name, key, val);
    float w = 0, g = 0;
    struct lbs_layer probe = {.name = "probe", .w = &w, .g = &g, .n = 1,
                              .ndim = 1, .shape = {1}};
    struct lbs_optim *o;
    struct lbs_err e;
    int rc = lbs_optim_new(s, &probe, 1, NULL, &o, &e);
    if (!rc)
        lbs_optim_free(o);
    return rc != -ENOENT;
}

static void append_kv(char *spec, size_t len, const char *kv)
{
    size_t l = strlen(spec);
    snprintf(spec + l, len - l, "%s%s", strchr(spec, ':') ? "," : ":", kv);
}

/* --lr-scaling auto: linear for momentum-SGD-like methods (Goyal et al.;
 * LARS), square root for the Adam family (Krizhevsky; the LAMB paper). */
static const char *auto_scaling(const char *name)
{
    static const char *const sq[] = {"lamb", "adamw", "slamb",
                                     "onebit_lamb", NULL};
    for (const char *const *p = sq; *p; p++)
        if (!strcmp(*p, name))
            return "sqrt";
    return "linear";
}

/* The scaling actually applied under --lr-base ("linear", "sqrt",
 * "none"); NULL without --lr-base. */
static const char *scaling_used(const struct train_opts *t, const char *name)
{
    if (!(t->lr_base > 0))
        return NULL;
    if (!t->lr_scaling || !strcmp(t->lr_scaling, "auto"))
        return auto_scaling(name);
    return t->lr_scaling;
}

/* Build the spec actually used: the user's keys win; lr from the default
 * table, topology from --topology, freeze_step and seed as documented. */
static int effective_spec(const struct train_opts *t, long total_steps,
                          char *spec, size_t len, char *rule, size_t rlen,
                          double *lr_used, struct lbs_err *err)
{
    char name[64];
    const char *args;
    int rc = lbs_spec_split(t->spec, name, sizeof name, &args, err);
    if (rc)
        return rc;
    snprintf(spec, len, "%s", t->spec);
    if (spec[strlen(spec) - 1] == ':')
        spec[strlen(spec) - 1] = '\0';
    *lr_used = NAN;
    const struct optim_default *d = find_default(name);
    char kv[96];
    const char *sc = scaling_used(t, name);
    if (spec_has_key(spec, "lr")) {
        snprintf(rule, rlen, "given in the spec");
    } else if (sc) {
        double r = (double)t->global_batch / (double)t->lr_ref_batch;
        double lr = t->lr_base * (!strcmp(sc, "linear") ? r
                                  : !strcmp(sc, "sqrt") ? sqrt(r) : 1.0);
        *lr_used = lr;
        snprintf(kv, sizeof kv, "lr=%.6g", lr);
        append_kv(spec, len, kv);
        if (!strcmp(sc, "none"))
            snprintf(rule, rlen, "none: %g at every batch", t->lr_base);
        else
            snprintf(rule, rlen, "%s: %g x %s(%ld/%ld)", sc, t->lr_base,
                     !strcmp(sc, "sqrt") ? "sqrt" : "", t->global_batch,
                     t->lr_ref_batch);
    } else if (d) {
        double lr = d->lr_ref * pow((double)t->global_batch / REF_BATCH,
                                    d->alpha);
        if (lr > d->lr_max)
            lr = d->lr_max;
        *lr_used = lr;
        snprintf(kv, sizeof kv, "lr=%.6g", lr);
        append_kv(spec, len, kv);
        snprintf(rule, rlen, "%g x (%ld/1024)^%g, max %g", d->lr_ref,
                 t->global_batch, d->alpha, d->lr_max);
    } else {
        snprintf(rule, rlen, "the optimizer's default (no tuned entry)");
    }
    if (t->topology && !spec_has_key(spec, "topology") &&
        !optim_has_key(name, "topology", t->topology))
        return lbs_err_set(err, -EINVAL, "--topology: optimizer '%s' has no "
                           "topology (only decentralized ones do)", name);
    if (!spec_has_key(spec, "topology") &&
        optim_has_key(name, "topology", "ring")) {
        /* ring unless told: symmetric W for both gossip methods (see
         * --help: DecentLaM diverges on the directed exponential graph) */
        snprintf(kv, sizeof kv, "topology=%s",
                 t->topology ? t->topology : "ring");
        append_kv(spec, len, kv);
    }
    if (!strcmp(name, "onebit_lamb") && !spec_has_key(spec, "freeze_step")) {
        /* DeepSpeed: 15-25% of training (issue 17: not a fixed step
         * count that a short run never leaves).  Earlier short runs at
         * B=8192 (73 steps) diverged at 20% and needed 50%: the study
         * reports such runs as diverged rather than hiding them. */
        long f = lround(0.2 * (double)total_steps);
        snprintf(kv, sizeof kv, "freeze_step=%ld", f < 1 ? 1 : f);
        append_kv(spec, len, kv);
    }
    if (!spec_has_key(spec, "seed") && optim_has_key(name, "seed", "1")) {
        snprintf(kv, sizeof kv, "seed=%ld", t->seed);
        append_kv(spec, len, kv);
    }
    return 0;
}

/* ---- watchdog ------------------------------------------------------------ */

enum stall_unit { UNIT_STEP, UNIT_EVAL, NUNITS };

static char stall_msg[200];
static size_t stall_len;
static long stall_fixed;             /* seconds; 0 = never; STALL_AUTO */
static int stall_rank;
static double stall_longest[NUNITS];  /* auto: longest unit so far (s) */
static unsigned stall_armed;

static void on_alarm(int sig)
{
    (void)sig;
    ssize_t w = write(STDERR_FILENO, stall_msg, stall_len);
    (void)w;
    _exit(EXIT_RUNTIME);
}

/* Arm the alarm for s seconds; the message is formatted here, outside the
 * signal handler, which may only write it. */
static void watchdog_arm(unsigned s)
{
    if (s != stall_armed) {
        int n = snprintf(stall_msg, sizeof stall_msg, "lbscale: train: rank "
                         "%d made no progress for %u s (a peer died or "
                         "hung?); exiting\n", stall_rank, s);
        stall_len = n > 0 ? (size_t)n : 0;
        stall_armed = s;
    }
    alarm(s);
}

static void watchdog_init(int rank, long s)
{
    stall_fixed = s;
    stall_rank = rank;
    if (!s)
        return;
    struct sigaction sa = {0};
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    watchdog_arm(s > 0 ? (unsigned)s : (unsigned)STALL_FIRST_S);
}

/* Progress: re-arm for the next unit of kind u. */
static void watchdog_pet(enum stall_unit u)
{
    if (stall_fixed > 0)
        watchdog_arm((unsigned)stall_fixed);
    else if (stall_fixed == STALL_AUTO) {
        double l = stall_longest[u] > 0 ? STALL_FACTOR * stall_longest[u]
                                        : STALL_FIRST_S;
        watchdog_arm((unsigned)ceil(l > STALL_FLOOR_S ? l : STALL_FLOOR_S));
    }
}

/* A unit of kind u took secs: what the auto limit scales with. */
static void watchdog_took(enum stall_unit u, double secs)
{
    if (secs > stall_longest[u])
        stall_longest[u] = secs;
}

static void watchdog_off(void)
{
    if (stall_fixed)
        alarm(0);
}

/* ---- string buffer for the trace ----------------------------------------- */

struct sbuf {
    char *s;
    size_t len, cap;
    int oom;
};

static void sb_printf(struct sbuf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void sb_printf(struct sbuf *b, const char *fmt, ...)
{
    if (b->oom)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = b->cap - b->len;
        int n = vsnprintf(b->s ? b->s + b->len : NULL, room, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->oom = 1;
            return;
        }
        if ((size_t)n < room) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = b->cap ? b->cap : 1 << 16;
        while (cap - b->len <= (size_t)n)
            cap *= 2;
        char *s = realloc(b->s, cap);
        if (!s) {
            b->oom = 1;
            return;
        }
        b->s = s;
        b->cap = cap;
    }
}

static void sb_ms_array(struct sbuf *b, const char *key, const double *x,
                        size_t n)
{
    sb_printf(b, ",\"%s\":[", key);
    for (size_t i = 0; i < n; i++)
        sb_printf(b, "%s%.4f", i ? "," : "", x[i] * 1e3);
    sb_printf(b, "]");
}

/* ---- the run --------------------------------------------------------------- */

struct run_state {
    const struct train_opts *t;
    struct lbs_comm *comm;      /* the real comm (mpi or self) */
    struct lbs_comm *tcomm;     /* the timing record comm wrapping it */
    struct dataset data;
    struct mlp *m;
    struct lbs_optim *o;
    size_t *shard, nshard, cursor;
    long pass;
    size_t local, micro;
    long total_steps, warmup_steps;
    float *xb, *wavg;
    uint8_t *yb, *keep;
    size_t *bidx;
    /* totals */
    double t_fwd, t_bwd, t_wgrad, t_optim, t_comm, t_data, t_eval;
    double kept_w, all_w;       /* weight layers computed / possible */
    size_t bytes[LBS_COLL_COUNT], calls[LBS_COLL_COUNT], sent;
    double ep_loss;
    long ep_correct, ep_samples;
    struct sbuf tr;
    int tracing;                /* this rank collects a trace */
};

static double lr_factor(const struct run_state *s, long it)
{
    const char *d = s->t->decay;
    long w = s->warmup_steps, T = s->total_steps;
    if (it <= w)
        return (double)it / (double)(w + 1);
    double p = T > w ? (double)(it - w - 1) / (double)(T - w) : 0;
    if (!strcmp(d, "cosine"))
        return 0.5 * (1 + cos(M_PI * p));
    if (!strcmp(d, "linear"))
        return 1 - p;
    if (!strcmp(d, "step"))
        return p < 0.5 ? 1 : p < 0.75 ? 0.1 : 0.01;
    return 1;
}

/* Next local batch indices (reshuffling the shard at each pass). */
static void next_batch(struct run_state *s)
{
    for (size_t i = 0; i < s->local; i++) {
        if (s->cursor == s->nshard) {
            s->pass++;
            data_shuffle(s->shard, s->nshard, (uint64_t)s->t->seed, s->pass,
                         s->comm->rank);
            s->cursor = 0;
        }
        s->bidx[i] = s->shard[s->cursor++];
    }
}

/* Test accuracy of the ranks' average model; also the RMS distance of the
 * ranks' models from it.  Collectives on the real comm (not traced). */
struct eval_result {
    double test_loss, test_acc, consensus, train_loss, train_acc;
    double val_loss, val_acc;   /* NaN without --val */
};

static int evaluate(struct run_state *s, struct eval_result *r,
                    struct lbs_err *err)
{
    struct mlp *m = s->m;
    size_t np = m->nparams;
    int P = s->comm->size;
    memcpy(s->wavg, m->w, np * sizeof(float));
    s->comm->err = err;
    if (P > 1) {
        int rc = lbs_allreduce(s->comm, s->wavg, np, LBS_FLOAT32, LBS_SUM, -1);
        if (rc)
            return rc;
        const float inv = 1.0f / (float)P;
        for (size_t i = 0; i < np; i++)
            s->wavg[i] *= inv;
    }
    double dist = 0;
    for (size_t i = 0; i < np; i++) {
        double d = (double)m->w[i] - (double)s->wavg[i];
        dist += d * d;
    }
    size_t nt = s->data.n_test;
    size_t lo = nt * (size_t)s->comm->rank / (size_t)P,
           hi = nt * (size_t)(s->comm->rank + 1) / (size_t)P;
    double loss = 0;
    long correct = 0;
    for (size_t a = lo; a < hi; a += s->micro) {
        size_t b = hi - a < s->micro ? hi - a : s->micro;
        data_gather_test(&s->data, a, b, s->xb, s->yb);
        mlp_forward(m, s->wavg, s->xb, b);
        loss += mlp_loss(m, s->yb, b, 0, 0, &correct);
    }
    double vloss = 0;
    long vcorrect = 0;
    size_t nv = s->data.n_val;
    size_t vlo = nv * (size_t)s->comm->rank / (size_t)P,
           vhi = nv * (size_t)(s->comm->rank + 1) / (size_t)P;
    for (size_t a = vlo; a < vhi; a += s->micro) {
        size_t b = vhi - a < s->micro ? vhi - a : s->micro;
        data_gather_val(&s->data, a, b, s->xb, s->yb);
        mlp_forward(m, s->wavg, s->xb, b);
        vloss += mlp_loss(m, s->yb, b, 0, 0, &vcorrect);
    }
    double v[8] = {loss, (double)correct, dist, s->ep_loss,
                   (double)s->ep_correct, (double)s->ep_samples, vloss,
                   (double)vcorrect};
    if (P > 1) {
        int rc = lbs_allreduce(s->comm, v, 8, LBS_FLOAT64, LBS_SUM, -1);
        if (rc)
            return rc;
    }
    r->val_loss = nv ? v[6] / (double)nv : NAN;
    r->val_acc = nv ? v[7] / (double)nv : NAN;
    r->test_loss = v[0] / (double)nt;
    r->test_acc = v[1] / (double)nt;
    r->consensus = sqrt(v[2] / P);
    r->train_loss = v[5] > 0 ? v[3] / v[5] : NAN;
    r->train_acc = v[5] > 0 ? v[4] / v[5] : NAN;
    s->ep_loss = 0;
    s->ep_correct = s->ep_samples = 0;
    return 0;
}

/* One training step.  Returns lbs_optim_step's code (0, 1 skipped, <0). */
static int train_step(struct run_state *s, long it, double *loss_out,
                      struct lbs_err *err)
{
    struct mlp *m = s->m;
    const struct train_opts *t = s->t;
    double t0 = cli_now();
    lbs_comm_record_clear(s->tcomm);
    double f = lr_factor(s, it);
    lbs_optim_set_lr_scale(s->o, f);
    lbs_optim_next_keep(s->o, s->keep);
    mlp_reset_times(m);
    next_batch(s);
    double t_data = 0, loss = 0;
    long correct = 0;
    const float scale = 1.0f / (float)s->local;
    for (size_t a = 0; a < s->local; a += s->micro) {
        size_t b = s->local - a < s->micro ? s->local - a : s->micro;
        double d0 = cli_now();
        data_gather(&s->data, s->bidx + a, b, s->xb, s->yb);
        if (m->cnn && !t->no_augment)
            cnn_augment(s->xb, b, 2, s->data.lut[0], (uint64_t)t->seed,
                        (uint64_t)it, (uint64_t)s->comm->rank * s->local + a);
        t_data += cli_now() - d0;
        mlp_forward(m, m->w, s->xb, b);
        loss += mlp_loss(m, s->yb, b, 1, scale, &correct);
        mlp_backward(m, s->xb, b, s->keep, a > 0);
    }
    if (t->fault == FAULT_NAN && it == t->fault_step &&
        s->comm->rank == t->fault_rank)
        m->g[0] = NAN;
    double t1 = cli_now();
    int rc = lbs_optim_step(s->o, err);
    double t2 = cli_now();
    if (rc < 0)
        return rc;
    s->ep_loss += loss;
    s->ep_correct += correct;
    s->ep_samples += (long)s->local;
    *loss_out = loss / (double)s->local;

    /* totals and the trace */
    size_t ne;
    const struct lbs_comm_record_entry *e =
        lbs_comm_record_entries(s->tcomm, &ne);
    double comm = 0;
    for (size_t i = 0; i < ne; i++) {
        comm += e[i].seconds;
        s->bytes[e[i].kind] += e[i].bytes;
        s->calls[e[i].kind]++;
        /* what this rank injects: a neighbour buffer goes to each peer */
        s->sent += e[i].kind == LBS_COLL_NEIGHBOR
                       ? e[i].bytes * (size_t)e[i].peers : e[i].bytes;
    }
    double fw = 0, bw = 0, wg = 0;
    for (size_t l = 0; l < m->nlayers; l++) {
        fw += m->t_fwd[l];
        bw += m->t_bwd[l];
        wg += m->t_wgrad[l];
        if (m->layers[l].ndim >= 2) {
            s->all_w += 1;
            s->kept_w += s->keep[l] != 0;
        }
    }
    s->t_fwd += fw;
    s->t_bwd += bw;
    s->t_wgrad += wg;
    s->t_optim += t2 - t1;
    s->t_comm += comm;
    s->t_data += t_data;
    if (s->tracing) {
        struct sbuf *b = &s->tr;
        for (size_t i = 0; i < ne; i++) {
            struct lbs_comm_record_entry x = e[i];
            char line[LBS_TRACE_LINE_MAX];
            x.step = it;        /* the trainer's iteration */
            lbs_trace_call_line(line, sizeof line, &x, 0, LBS_TRACE_TIMED);
            sb_printf(b, "%s\n", line);
        }
        sb_printf(b, "{\"type\":\"step\",\"step\":%ld,\"skipped\":%d,"
                  "\"lr_scale\":%.6g,\"loss\":%.6g,\"keep\":[", it, rc == 1,
                  f, *loss_out);
        for (size_t l = 0; l < m->nlayers; l++)
            sb_printf(b, "%s%d", l ? "," : "", s->keep[l]);
        sb_printf(b, "]");
        sb_ms_array(b, "fwd_ms", m->t_fwd, m->nlayers);
        sb_ms_array(b, "bwd_ms", m->t_bwd, m->nlayers);
        sb_ms_array(b, "wgrad_ms", m->t_wgrad, m->nlayers);
        sb_printf(b, ",\"data_ms\":%.4f,\"optim_ms\":%.4f,\"comm_ms\":%.4f,"
                  "\"comm_calls\":%zu,\"step_ms\":%.4f}\n", t_data * 1e3,
                  (t2 - t1) * 1e3, comm * 1e3, ne, (cli_now() - t0) * 1e3);
    }
    return rc;
}

static json_t *layers_json(const struct mlp *m)
{
    json_t *a = json_array();
    for (size_t l = 0; l < m->nlayers; l++) {
        const struct lbs_layer *L = &m->layers[l];
        json_t *sh = json_array();
        for (int d = 0; d < L->ndim; d++)
            json_array_append_new(sh, json_integer((json_int_t)L->shape[d]));
        json_array_append_new(a, json_pack("{s:s,s:I,s:i,s:o}", "name",
                                           L->name, "n", (json_int_t)L->n,
                                           "ndim", L->ndim, "shape", sh));
    }
    return a;
}

/* A number, or null when it is not finite (jansson refuses NaN). */
static void jset(json_t *o, const char *k, double x)
{
    json_object_set_new(o, k, isfinite(x) ? json_real(x) : json_null());
}

static void print_row(const json_t *row, int json)
{
    if (json) {
        char *s = json_dumps(row, JSON_COMPACT | JSON_PRESERVE_ORDER);
        puts(s);
        free(s);
        fflush(stdout);
        return;
    }
    const char *ev = json_string_value(json_object_get(row, "event"));
    if (!strcmp(ev, "epoch")) {
        printf("  %6.2f %7lld %9.3g %9.4f %8.2f%% %9.4f %8.2f%% %7lld "
               "%9.1f\n",
               json_real_value(json_object_get(row, "epoch")),
               (long long)json_integer_value(json_object_get(row, "step")),
               json_real_value(json_object_get(row, "lr")),
               json_number_value(json_object_get(row, "train_loss")),
               100 * json_number_value(json_object_get(row, "train_accuracy")),
               json_real_value(json_object_get(row, "test_loss")),
               100 * json_real_value(json_object_get(row, "test_accuracy")),
               (long long)json_integer_value(
                   json_object_get(row, "skipped_steps")),
               json_real_value(json_object_get(row, "wall_s")));
    } else {
        printf("final: test_accuracy %.2f%% after %lld steps (%lld skipped), "
               "%.1f s; %.3g MB sent per rank; fwd %.2f s, bwd %.2f s "
               "(weight-grad %.2f s), optimizer %.2f s (comm %.2f s)\n",
               100 * json_real_value(json_object_get(row, "test_accuracy")),
               (long long)json_integer_value(json_object_get(row, "steps")),
               (long long)json_integer_value(
                   json_object_get(row, "skipped_steps")),
               json_real_value(json_object_get(row, "wall_s")),
               json_integer_value(json_object_get(row, "sent_bytes_per_rank"))
                   / 1e6,
               json_real_value(json_object_get(row, "fwd_s")),
               json_real_value(json_object_get(row, "bwd_s")),
               json_real_value(json_object_get(row, "wgrad_s")),
               json_real_value(json_object_get(row, "optim_s")),
               json_real_value(json_object_get(row, "comm_s")));
    }
    fflush(stdout);
}

/* Data set per --dataset/--data.  *note gets a sentence when the teacher
 * fallback was taken without being asked for. */
static int load_data(const struct train_opts *t, const size_t *dims,
                     int nd, struct dataset *d, char *note, size_t nlen,
                     struct lbs_err *err)
{
    note[0] = '\0';
    const char *dir = t->data_dir ? t->data_dir : getenv("LBSCALE_DATA");
    if (!dir || !*dir)
        dir = DATA_FASHION_DIR;
    int want_teacher = !strcmp(t->dataset, "teacher");
    if (!strcmp(t->dataset, "auto") && !t->data_dir &&
        !data_idx_dir_present(dir)) {
        want_teacher = 1;
        snprintf(note, nlen, "Fashion-MNIST not found in %s (install "
                 "dataset-fashion-mnist); trained on the generated teacher "
                 "task instead", dir);
    }
    int rc;
    if (want_teacher) {
        /* the task is fixed (data seed 1); --seed varies init and order */
        rc = data_make_teacher(1, (t->subset ? (size_t)t->subset : 60000) +
                               (size_t)t->val, t->test_subset
                               ? (size_t)t->test_subset : 10000, dims[0],
                               dims[nd], d, err);
        if (!rc && t->val && (rc = data_hold_out(d, (size_t)t->val, err)))
            data_free(d);
    } else {
        rc = data_load_idx_dir(dir, d, err);
        /* the validation samples come off the end before --subset */
        if (!rc && t->val && (rc = data_hold_out(d, (size_t)t->val, err)))
            data_free(d);
        if (!rc)
            data_truncate(d, (size_t)t->subset, (size_t)t->test_subset);
    }
    if (rc)
        return rc;
    if (d->dim != dims[0] || d->classes > dims[nd]) {
        rc = lbs_err_set(err, -EINVAL, "--model: input width %zu / %zu "
                         "classes do not fit the %s data (%zu features, %zu "
                         "classes)", dims[0], dims[nd], d->name, d->dim,
                         d->classes);
        data_free(d);
    }
    return rc;
}

/* The trace file name for this run, by what it holds:
 * train-trace-OPTIM[-COMPRESSOR] (the optimizer's and the compressor's
 * names, without parameters), then -2, -3, ... when an earlier run in the
 * same directory (a suite) has taken that name. */
static void pick_trace_base(const char *dir, const char *spec,
                            const char *compress, char *base, size_t len)
{
    char tag[40];
    size_t o = 0;
    for (int part = 0; part < 2; part++) {
        const char *p = part ? compress : spec;
        if (!p || !*p)
            continue;
        if (o && o + 1 < sizeof tag)
            tag[o++] = '-';
        for (; *p && *p != ':' && o + 1 < sizeof tag; p++)
            tag[o++] = (char)((*p >= 'a' && *p <= 'z') ||
                              (*p >= '0' && *p <= '9') || *p == '_'
                                  ? *p : *p >= 'A' && *p <= 'Z' ? *p + 32
                                                                : '_');
    }
    tag[o] = '\0';
    for (int i = 1; i < 100000; i++) {
        char a[4200], b[4200];
        if (i == 1)
            snprintf(base, len, "train-trace-%s", tag);
        else
            snprintf(base, len, "train-trace-%s-%d", tag, i);
        snprintf(a, sizeof a, "%s/%s.jsonl", dir, base);
        snprintf(b, sizeof b, "%s/%s.rank0.jsonl", dir, base);
        if (access(a, F_OK) && access(b, F_OK))
            return;
    }
}

static int write_trace(struct run_state *s, const char *dir,
                       const char *base, const char *spec_eff, long steps,
                       struct lbs_err *err)
{
    const struct train_opts *t = s->t;
    char path[4200];
    if (t->trace_all)
        snprintf(path, sizeof path, "%s/%s.rank%d.jsonl", dir, base,
                 s->comm->rank);
    else
        snprintf(path, sizeof path, "%s/%s.jsonl", dir, base);
    json_t *h = json_pack(
        "{s:s,s:i,s:s,s:s,s:s,s:o,s:i,s:i,s:I,s:o,s:s,s:s,s:s,s:I,s:I,s:I,"
        "s:i,s:I,s:s}",
        "format", "lbscale-train-trace", "version", 1, "extends",
        "lbscale-trace/1", "optim", lbs_optim_name(s->o), "params",
        lbs_optim_params(s->o), "compress",
        t->compress ? json_string(t->compress) : json_null(), "ranks", s->comm->size, "rank",
        s->comm->rank, "steps", (json_int_t)steps, "layers",
        layers_json(s->m), "spec", spec_eff, "model", t->model, "dataset",
        s->data.name, "global_batch", (json_int_t)t->global_batch,
        "local_batch", (json_int_t)s->local, "micro_batch",
        (json_int_t)s->micro, "threads", (int)t->threads, "seed",
        (json_int_t)t->seed, "time_unit", "ms");
    /* under a suite: the attempt that wrote this file, so that a resumed
     * suite can remove the trace of an attempt that never committed */
    const char *att = getenv(LBS_ATTEMPT_ENV);
    if (att && *att)
        json_object_set_new(h, "attempt", json_string(att));
    char *hs = json_dumps(h, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(h);
    if (!hs || s->tr.oom) {
        free(hs);
        return lbs_err_set(err, -ENOMEM, "trace: out of memory");
    }
    size_t hl = strlen(hs);
    char *all = malloc(hl + 1 + s->tr.len);
    if (!all) {
        free(hs);
        return lbs_err_set(err, -ENOMEM, "trace: out of memory");
    }
    memcpy(all, hs, hl);
    all[hl] = '\n';
    if (s->tr.len)
        memcpy(all + hl + 1, s->tr.s, s->tr.len);
    int rc = lbs_write_atomic(path, all, hl + 1 + s->tr.len, err);
    free(all);
    free(hs);
    return rc;
}

/* --export-layers FILE: the model's tensors as {"model":..., "layers":
 * [{"name":..., "shape":[...]}]}, the format optim/sim --layers read. */
static int export_layers(const struct train_opts *t, const size_t *dims,
                         int nd)
{
    struct mlp *m;
    struct lbs_err e;
    if (!strcmp(t->model, CNN_SPEC) ? cnn_new(1, &m, &e)
                                    : mlp_new(dims, nd, 1, &m, &e)) {
        cli_error("train", "%s", e.msg);
        return EXIT_RUNTIME;
    }
    json_t *root = json_pack("{s:s,s:o,s:I}", "model", t->model, "layers",
                             layers_json(m), "parameters",
                             (json_int_t)m->nparams);
    mlp_free(m);
    char *txt = json_dumps(root, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
    json_decref(root);
    int rc = txt ? lbs_write_atomic(t->export_layers, txt, strlen(txt), &e)
                 : lbs_err_set(&e, -ENOMEM, "out of memory");
    free(txt);
    if (rc) {
        cli_error("--export-layers", "%s", e.msg);
        return cli_exit_code(rc);
    }
    return 0;
}

int verb_train(int argc, char **argv)
{
    struct cli_common com = {.save = 1};
    struct train_opts t = {
        .model = MLP_DEFAULT, .dataset = "auto", .decay = "cosine",
        .global_batch = 1024, .epochs = 10, .warmup = 0.1, .seed = 1,
        .threads = 1, .stall = STALL_AUTO, .trace = 1, .lr_ref_batch = 128,
        .lr_scaling = "auto",
    };
    quiet_rank = env_rank() != 0;
    int prc = parse_args(argc, argv, &t, &com);
    if (prc)
        return prc == 1 ? 0 : prc;
    struct lbs_err e;
    size_t dims[MLP_MAX_DENSE + 1];
    int nd;
    if (!strcmp(t.model, "mlp8"))
        t.model = MLP8_SPEC;
    int is_cnn = !strcmp(t.model, CNN_SPEC);
    if (is_cnn) {
        dims[0] = 784;
        dims[1] = 10;
        nd = 1;
    } else if (mlp_parse(t.model, dims, &nd, &e))
        FAIL("--model", "%s", e.msg);
    if (t.export_layers)
        return export_layers(&t, dims, nd);
    /* Reject a bad spec before MPI starts or anything is written. */
    {
        char name[64];
        const char *args;
        int rc = lbs_spec_split(t.spec, name, sizeof name, &args, &e);
        if (!rc) {
            float w = 0, g = 0;
            struct lbs_layer probe = {.name = "probe", .w = &w, .g = &g,
                                      .n = 1, .ndim = 1, .shape = {1}};
            struct lbs_optim *po;
            rc = lbs_optim_new(t.spec, &probe, 1, NULL, &po, &e);
            if (rc)
                FAIL("--optim", "%s", e.msg);
            if (t.compress)
                rc = lbs_optim_set_compressor(po, t.compress, &e);
            lbs_optim_free(po);
            if (rc)
                FAIL("--compress", "%s", e.msg);
        }
        if (rc)
            FAIL("--optim", "%s", e.msg);
    }
    cli_threads(t.threads);
    openblas_set_num_threads((int)t.threads);

    double wall0 = cli_now();
    const char *backend = t.backend ? t.backend
                          : (LBS_HAVE_MPI && under_mpirun()) ? "mpi" : "self";
    struct lbs_comm *comm = NULL;
    int rc = lbs_comm_new(backend, &comm, &e);
    if (rc) {
        if (!quiet_rank)
            cli_error("--comm", "%s", e.msg);
        return cli_exit_code(rc);
    }
    comm->err = &e;
    int rank = comm->rank, P = comm->size, who;
    quiet_rank = 0;
    watchdog_init(rank, t.stall);

    struct run_state s = {.t = &t, .comm = comm};
    struct lbs_run *run = NULL;
    json_t *curve = json_array();
    char spec_eff[512] = "", rule[128] = "", note[300] = "",
         warning[300] = "";
    double lr_used = NAN;

    /* 1. options agree across ranks */
    const char *const *names;
    int k = options_differ(comm, &t, &names);
    if (k < -1) {
        rc = -EIO;
        if (rank == 0)
            cli_error("train", "start-up option check failed: %s", e.msg);
        goto out;
    }
    if (k >= 0) {
        rc = -EINVAL;
        if (rank == 0)
            cli_error(names[k], "differs across ranks (every rank must get "
                      "the same options); refusing to start");
        goto out;
    }
    /* 2. shapes that depend on the rank count; data; model; optimizer */
    rc = 0;
    if (t.global_batch % P)
        rc = lbs_err_set(&e, -EINVAL, "%ld is not a multiple of the %d "
                         "ranks", t.global_batch, P);
    if ((rc = agree(comm, rc, &who))) {
        if (who == rank)
            cli_error("--global-batch", "%s", e.msg);
        goto out;
    }
    s.local = (size_t)(t.global_batch / P);
    s.micro = t.micro_batch ? (size_t)t.micro_batch
                            : s.local < 512 ? s.local : 512;
    if (s.micro > s.local)
        s.micro = s.local;
    rc = load_data(&t, dims, nd, &s.data, note, sizeof note, &e);
    if ((rc = agree(comm, rc, &who))) {
        if (who == rank)
            cli_error("train", "%s", e.msg);
        goto out;
    }
    if (note[0] && rank == 0)
        fprintf(stderr, "lbscale: train: note: %s\n", note);
    rc = data_shard(&s.data, (uint64_t)t.seed, rank, P, &s.shard, &s.nshard,
                    &e);
    if (!rc)
        data_shuffle(s.shard, s.nshard, (uint64_t)t.seed, 0, rank);
    double n_used = (double)s.nshard * P;
    long total = (long)llround(t.epochs * n_used / (double)t.global_batch);
    if (total < 1)
        total = 1;
    if (t.max_steps && total > t.max_steps)
        total = t.max_steps;
    s.total_steps = total;
    s.warmup_steps = (long)llround(t.warmup * (double)total);
    /* a fault that can never fire would pass as a clean run */
    if (!rc && t.fault != FAULT_NONE && t.fault_rank >= P)
        rc = lbs_err_set(&e, -EINVAL, "--fault %s: rank %ld is not one of "
                         "the %d ranks (0..%d)", t.fault_str, t.fault_rank,
                         P, P - 1);
    if (!rc && t.fault != FAULT_NONE && t.fault_step > total)
        rc = lbs_err_set(&e, -EINVAL, "--fault %s: step %ld is past the "
                         "run's last step (%ld)", t.fault_str, t.fault_step,
                         total);
    if (!rc)
        rc = is_cnn ? cnn_new(s.micro, &s.m, &e)
                    : mlp_new(dims, nd, s.micro, &s.m, &e);
    if (!rc) {
        mlp_init(s.m, (uint64_t)t.seed);
        rc = effective_spec(&t, total, spec_eff, sizeof spec_eff, rule,
                            sizeof rule, &lr_used, &e);
    }
    if (!rc) {
        /* DecentLaM's analysis assumes a symmetric doubly stochastic W */
        char topo_w[32];
        spec_value(spec_eff, "topology", topo_w, sizeof topo_w);
        if (!strncmp(spec_eff, "decentlam", 9) &&
            (!strcmp(topo_w, "exponential") || !strcmp(topo_w, "onepeer")))
            snprintf(warning, sizeof warning, "decentlam on the directed "
                     "'%s' graph: its mixing matrix is not symmetric, which "
                     "DecentLaM's analysis assumes (use ring, symexp or "
                     "full); such runs have diverged (10%% accuracy)",
                     topo_w);
        if (warning[0] && rank == 0)
            fprintf(stderr, "lbscale: train: WARNING: %s\n", warning);
    }
    if (!rc)
        rc = lbs_comm_record_wrap(comm, &s.tcomm, &e);
    if (!rc)
        rc = lbs_optim_new(spec_eff, s.m->layers, s.m->nlayers, s.tcomm,
                           &s.o, &e);
    if (!rc && t.compress)
        rc = lbs_optim_set_compressor(s.o, t.compress, &e);
    if (!rc) {
        s.xb = malloc(s.micro * dims[0] * sizeof(float));
        s.yb = malloc(s.micro);
        s.bidx = malloc(s.local * sizeof *s.bidx);
        s.keep = malloc(s.m->nlayers);
        s.wavg = malloc(s.m->nparams * sizeof(float));
        if (!s.xb || !s.yb || !s.bidx || !s.keep || !s.wavg)
            rc = lbs_err_set(&e, -ENOMEM, "out of memory");
    }
    if ((rc = agree(comm, rc, &who))) {
        if (who == rank)
            cli_error("train", "%s", e.msg);
        goto out;
    }
    /* 3. the run directory (rank 0), only now that the input is good */
    if (rank == 0)
        rc = cli_open_run(&com, "train", argc, argv, &run);
    if ((rc = agree(comm, rc, &who)))
        goto out;
    /* where the trace goes: every rank needs it with --trace-all-ranks */
    char rundir[4096] = "", trbase[64] = "train-trace";
    if (run) {
        snprintf(rundir, sizeof rundir, "%s", lbs_run_dir(run));
        pick_trace_base(rundir, spec_eff, t.compress, trbase,
                        sizeof trbase);
    }
    if (P > 1 && t.trace_all && com.save &&
        ((rc = lbs_bcast(comm, rundir, sizeof rundir, LBS_UINT8, 0, -1)) ||
         (rc = lbs_bcast(comm, trbase, sizeof trbase, LBS_UINT8, 0, -1))))
        goto out;

    if (rank == 0 && !com.json) {
        printf("# train %s on %s (%s%s), %d rank%s, global batch %ld = %d x "
               "%zu (micro %zu), %ld steps, lr rule: %s\n", spec_eff,
               t.model, s.data.name, note[0] ? ", fallback" : "", P,
               P > 1 ? "s" : "", t.global_batch, P, s.local, s.micro, total,
               rule);
        printf("# %6s %7s %9s %9s %9s %9s %9s %7s %9s\n", "epoch", "step",
               "lr", "trn_loss", "trn_acc", "tst_loss", "tst_acc", "skipped",
               "wall(s)");
        fflush(stdout);
    }

    s.tracing = t.trace && com.save && (t.trace_all || rank == 0);

    /* 4. train */
    double train0 = cli_now(), last_loss = NAN, best = 0;
    long last_epoch = 0, it;
    struct eval_result ev = {0};
    for (it = 1; it <= total; it++) {
        watchdog_pet(UNIT_STEP);
        double s0 = cli_now();
        if (t.fault != FAULT_NONE && it == t.fault_step &&
            rank == t.fault_rank) {
            if (t.fault == FAULT_KILL)
                raise(SIGKILL);
            if (t.fault == FAULT_HANG)
                for (;;)
                    pause();
        }
        rc = train_step(&s, it, &last_loss, &e);
        if (rc < 0) {
            cli_error("train", "rank %d, step %ld: %s", rank, it, e.msg);
            goto out;
        }
        if (rc == 1 && rank == 0)
            fprintf(stderr, "lbscale: train: %s\n", e.msg);
        watchdog_took(UNIT_STEP, cli_now() - s0);
        long ep = (long)floor((double)it * (double)t.global_batch / n_used);
        if (ep > last_epoch || it == total) {
            double e0 = cli_now();
            watchdog_pet(UNIT_EVAL);
            if ((rc = evaluate(&s, &ev, &e))) {
                cli_error("train", "rank %d, evaluation: %s", rank, e.msg);
                goto out;
            }
            s.t_eval += cli_now() - e0;
            watchdog_took(UNIT_EVAL, cli_now() - e0);
            last_epoch = ep;
            best = ev.test_acc > best ? ev.test_acc : best;
            json_t *row = json_pack("{s:s,s:s,s:o}", "bench", "train",
                                    "event", "epoch", "compress",
                                    t.compress ? json_string(t.compress)
                                               : json_null());
            jset(row, "epoch", (double)it * (double)t.global_batch / n_used);
            json_object_set_new(row, "step", json_integer((json_int_t)it));
            jset(row, "lr", isnan(lr_used) ? lr_factor(&s, it)
                                           : lr_used * lr_factor(&s, it));
            jset(row, "train_loss", ev.train_loss);
            jset(row, "train_accuracy", ev.train_acc);
            jset(row, "test_loss", ev.test_loss);
            jset(row, "test_accuracy", ev.test_acc);
            jset(row, "val_loss", ev.val_loss);
            jset(row, "val_accuracy", ev.val_acc);
            jset(row, "consensus_rms", ev.consensus);
            json_object_set_new(row, "skipped_steps",
                                json_integer(lbs_optim_skipped(s.o)));
            jset(row, "wall_s", cli_now() - wall0);
            if (rank == 0)
                print_row(row, com.json);
            json_array_append_new(curve, row);
        }
    }
    watchdog_pet(UNIT_EVAL);   /* the closing reductions and writes */
    double train_s = cli_now() - train0;

    /* 5. totals over ranks: times averaged, bytes the maximum */
    double tm[7] = {s.t_fwd, s.t_bwd, s.t_wgrad, s.t_optim, s.t_comm,
                    s.t_data, s.kept_w};
    int64_t by[2 * LBS_COLL_COUNT + 1];
    for (int q = 0; q < LBS_COLL_COUNT; q++) {
        by[q] = (int64_t)s.bytes[q];
        by[LBS_COLL_COUNT + q] = (int64_t)s.calls[q];
    }
    by[2 * LBS_COLL_COUNT] = (int64_t)s.sent;
    comm->err = &e;
    if (P > 1 && ((rc = lbs_allreduce(comm, tm, 7, LBS_FLOAT64, LBS_SUM, -1)) ||
                  (rc = lbs_allreduce(comm, by, 2 * LBS_COLL_COUNT + 1,
                                      LBS_INT64, LBS_MAX, -1)))) {
        cli_error("train", "rank %d: %s", rank, e.msg);
        goto out;
    }
    for (int q = 0; q < 7; q++)
        tm[q] /= P;
    json_t *bk = json_object();
    int64_t bsum = 0, calls = 0;
    for (int q = 0; q < LBS_COLL_COUNT; q++) {
        bsum += by[q];
        calls += by[LBS_COLL_COUNT + q];
        if (by[LBS_COLL_COUNT + q])
            json_object_set_new(bk, lbs_coll_name((enum lbs_coll)q),
                                json_pack("{s:I,s:I}", "bytes",
                                          (json_int_t)by[q], "calls",
                                          (json_int_t)by[LBS_COLL_COUNT + q]));
    }
    long steps = it - 1;
    char topo[32];
    spec_value(spec_eff, "topology", topo, sizeof topo);
    json_t *row = json_pack(
        "{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:i,s:s?,s:I,s:I,s:I,s:I,s:f,s:I,"
        "s:I,s:I,s:I,s:i,s:s,s:s}",
        "bench", "train", "event", "final", "optim", lbs_optim_name(s.o),
        "params", lbs_optim_params(s.o), "spec", t.spec, "model", t.model,
        "dataset", s.data.name, "dataset_source", s.data.source, "ranks", P,
        "topology", topo[0] ? topo : NULL, "global_batch", (json_int_t)t.global_batch,
        "local_batch", (json_int_t)s.local, "micro_batch",
        (json_int_t)s.micro, "accum_steps",
        (json_int_t)((s.local + s.micro - 1) / s.micro), "epochs", t.epochs,
        "steps", (json_int_t)steps, "skipped_steps",
        (json_int_t)lbs_optim_skipped(s.o), "warmup_steps",
        (json_int_t)s.warmup_steps, "seed", (json_int_t)t.seed, "threads",
        (int)t.threads, "decay", t.decay, "lr_rule", rule);
    json_object_set_new(row, "lr", isnan(lr_used) ? json_null()
                                                   : json_real(lr_used));
    json_object_set_new(row, "compress", t.compress ? json_string(t.compress)
                                                    : json_null());
    if (note[0])
        json_object_set_new(row, "dataset_note", json_string(note));
    json_object_set_new(row, "n_train", json_integer((json_int_t)n_used));
    json_object_set_new(row, "n_test",
                        json_integer((json_int_t)s.data.n_test));
    jset(row, "test_accuracy", ev.test_acc);
    jset(row, "test_loss", ev.test_loss);
    jset(row, "best_test_accuracy", best);
    jset(row, "val_accuracy", ev.val_acc);
    jset(row, "val_loss", ev.val_loss);
    json_object_set_new(row, "n_val",
                        json_integer((json_int_t)s.data.n_val));
    /* diverged: a NaN/Inf loss, or a final training loss above ten times
     * chance's (10 ln classes) */
    double chance = log((double)dims[nd]);
    json_object_set_new(row, "diverged", json_boolean(
        !isfinite(last_loss) || !isfinite(ev.test_loss) ||
        !(ev.train_loss <= 10 * chance)));
    {
        char nm[64];
        const char *args;
        struct lbs_err e2;
        const char *sc = NULL;
        if (!lbs_spec_split(t.spec, nm, sizeof nm, &args, &e2))
            sc = scaling_used(&t, nm);
        json_object_set_new(row, "lr_scaling", sc ? json_string(sc)
                                                  : json_null());
        json_object_set_new(row, "lr_base", sc ? json_real(t.lr_base)
                                               : json_null());
        json_object_set_new(row, "lr_ref_batch", sc
                            ? json_integer(t.lr_ref_batch) : json_null());
        json_object_set_new(row, "warmup", json_real(t.warmup));
        json_object_set_new(row, "warning", warning[0] ? json_string(warning)
                                                       : json_null());
    }
    jset(row, "train_loss", ev.train_loss);
    jset(row, "train_accuracy", ev.train_acc);
    jset(row, "consensus_rms", ev.consensus);
    jset(row, "wall_s", cli_now() - wall0);
    jset(row, "train_s", train_s);
    jset(row, "eval_s", s.t_eval);
    jset(row, "fwd_s", tm[0]);
    jset(row, "bwd_s", tm[1]);
    jset(row, "wgrad_s", tm[2]);
    jset(row, "optim_s", tm[3]);
    jset(row, "comm_s", tm[4]);
    jset(row, "data_s", tm[5]);
    json_object_set_new(row, "wgrad_kept_frac",
                        json_real(s.all_w > 0 ? tm[6] / s.all_w : 1));
    json_object_set_new(row, "comm_bytes_per_rank", json_integer(bsum));
    json_object_set_new(row, "sent_bytes_per_rank",
                        json_integer(by[2 * LBS_COLL_COUNT]));
    json_object_set_new(row, "dense_bytes_per_step",
                        json_integer((json_int_t)(4 * s.m->nparams)));
    json_object_set_new(row, "comm_calls_per_rank", json_integer(calls));
    json_object_set_new(row, "comm_by_kind", bk);
    json_t *av = json_array();
    for (int q = 0; q < argc; q++)
        json_array_append_new(av, json_string(argv[q]));
    json_object_set_new(row, "argv", av);
    json_object_set_new(row, "parameters",
                        json_integer((json_int_t)s.m->nparams));
    json_object_set_new(row, "trace", t.trace && com.save
                        ? json_sprintf(t.trace_all ? "%s.rank*.jsonl"
                                                   : "%s.jsonl", trbase)
                        : json_null());

    /* 6. traces and results */
    rc = 0;
    if (t.trace && com.save && (t.trace_all || rank == 0))
        rc = write_trace(&s, rundir, trbase, spec_eff,
                         steps, &e);
    if (rc)
        cli_error("train", "rank %d: %s", rank, e.msg);
    if (rank == 0) {
        print_row(row, com.json);
        if (run) {
            json_t *res = json_deep_copy(row);
            json_object_set(res, "curve", curve);
            if (rc)
                json_decref(res);
            else if ((rc = lbs_run_append(run, "train", res, &e)))
                cli_error("train", "%s", e.msg);
            else if (!com.json)
                fprintf(stderr, "results: %s/train.jsonl\n",
                        lbs_run_dir(run));
        }
    }
    json_decref(row);
    rc = agree(comm, rc, &who);
out:
    watchdog_off();
    json_decref(curve);
    lbs_run_close(run);
    lbs_optim_free(s.o);
    lbs_comm_free(s.tcomm);
    mlp_free(s.m);
    data_free(&s.data);
    free(s.shard);
    free(s.xb);
    free(s.yb);
    free(s.bidx);
    free(s.keep);
    free(s.wavg);
    free(s.tr.s);
    lbs_comm_free(comm);
    return cli_exit_code(rc);
}
