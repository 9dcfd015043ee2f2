/* train.c - `lbscale train`: the verb around train/'s training run
 * (train/train.h: data-parallel or decentralized training of an MLP or CNN
 * classifier with any registered optimizer): its options, the checks of
 * input, agreement across MPI ranks, the printed rows, the results row and
 * the per-step trace files.
 *
 * Every step's optimizer runs over a record comm wrapping the real comm
 * (lbs_comm_record_wrap: every collective logged: kind, bytes, layer,
 * duration); this verb meters it and writes the trace.
 *
 * Robustness: options are hashed and compared across ranks before
 * anything else (a mismatch is refused, exit 2); every collective error
 * path agrees across ranks; a watchdog (SIGALRM, --stall-timeout;
 * train/watchdog.h) ends a rank that made no progress for that long, so a
 * dead or hung peer can never hang the job; a NaN gradient on some rank
 * makes every rank skip that step (the optimizer driver), counted and
 * reported.
 */
#include <fcntl.h>
#include <signal.h>
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
#include "lr.h"
#include "mlp.h"
#include "shards.h"
#include "strbuf.h"
#include "train.h"
#include "watchdog.h"

/* ---- options ---------------------------------------------------------- */

/* The parsed command line: the run's configuration (train.h) and what only
 * the verb uses. */
struct train_opts {
    struct lbs_train_config c;
    const char *backend;
    const char *export_layers;
    long stall;             /* --stall-timeout: s, 0, LBS_STALL_AUTO */
    int trace, trace_all;
};

static const char train_usage[] =
"usage: [mpirun -np N] lbscale train --optim SPEC [--model mlp:784-512-256-10]\n"
"           [--topology ring|exponential|onepeer|full] [--global-batch B]\n"
"           [--epochs E] [--json] [options]";

static const char train_about[] =
"Trains an MLP classifier (ReLU, softmax cross-entropy, OpenBLAS sgemm) on\n"
"Fashion-MNIST from Debian's dataset-fashion-mnist package, every rank on its\n"
"own shard, and reports test-set accuracy after every epoch (the last line is\n"
"the final result).  Without the package a generated teacher-network task is\n"
"used instead, and the output and results say so.  Same seed, same ranks,\n"
"same --threads: bit-identical results.";

/* After the options: the tuned learning-rate table (printed from
 * defaults[]) between these two paragraphs. */
static const char train_lr_head[] =
"Default learning rates (used unless the spec sets lr): lr = lr_ref x\n"
"(B/1024)^alpha, at most lr_max (tuned on Fashion-MNIST, see train.c);\n"
"linear warm-up, then the decay:\n";

static const char train_lr_tail[] =
"Others: the optimizer's own lr, unscaled.  onebit_lamb: freeze_step =\n"
"20% of the steps unless given (DeepSpeed's 15-25% of training).  slamb:\n"
"kwarm (the authors' k warm-up, stages of kwarm steps) = 1/200 of the steps,\n"
"at least 1, unless given (their CIFAR script: one stage per epoch of 200);\n"
"kwarm=0 turns it off.\n"
"Optimizers with a seed key get --seed.\n"
"\n"
"Results: train.jsonl (one row per run: final test_accuracy, steps, wall\n"
"time, bytes per rank, the per-epoch curve) and train-trace-OPTIM.jsonl (per\n"
"step: forward/backward time per layer, optimizer time, every communication\n"
"call; results/schema/train-trace-v1.md).\n";

static void print_help(const struct cli_verb *v, FILE *f)
{
    cli_usage(v, f);
    fprintf(f, "\n%s", train_lr_head);
    fprintf(f, "  %-15s %8s %6s %8s\n", "optimizer", "lr_ref", "alpha",
            "lr_max");
    for (const struct lbs_train_lr_default *d = lbs_train_lr_defaults;
         d->name; d++)
        fprintf(f, "  %-15s %8g %6.3g %8g\n", d->name, d->lr_ref, d->alpha,
                d->lr_max);
    fputs(train_lr_tail, f);
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

static int parse_fault(struct lbs_train_config *t, const char *s)
{
    char kind[16];
    long r, st;
    char tail;
    if (sscanf(s, "%15[a-z]:%ld:%ld%c", kind, &r, &st, &tail) != 3 || r < 0 ||
        st < 1)
        return -1;
    if (!strcmp(kind, "nan"))
        t->fault = LBS_TRAIN_FAULT_NAN;
    else if (!strcmp(kind, "kill"))
        t->fault = LBS_TRAIN_FAULT_KILL;
    else if (!strcmp(kind, "hang"))
        t->fault = LBS_TRAIN_FAULT_HANG;
    else
        return -1;
    t->fault_rank = r;
    t->fault_step = st;
    t->fault_str = s;
    return 0;
}

/* A value from a fixed list, kept as the string (CLI_CALL's dst). */
struct one_of {
    const char **val;
    const char *const *list;   /* NULL-terminated, in the message's order */
};

static int one_of_opt(const char *opt, const char *v, void *dst)
{
    const struct one_of *c = dst;
    char list[128] = "";
    for (int i = 0; c->list[i]; i++) {
        if (!strcmp(v, c->list[i])) {
            *c->val = v;
            return 0;
        }
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s",
                 i ? ", " : "", c->list[i]);
    }
    cli_error(opt, "'%s' is not one of %s", v, list);
    return -EINVAL;
}

/* --shards iid|dirichlet:alpha=A (train/shards.h) */
static int shards_opt(const char *opt, const char *v, void *dst)
{
    struct lbs_train_config *c = dst;
    struct lbs_err e;
    if (shards_parse(v, &c->shard_alpha, &e)) {
        cli_error(opt, "%s", e.msg);
        return -EINVAL;
    }
    c->shards = v;
    return 0;
}

/* --stall-timeout auto|S */
static int stall_opt(const char *opt, const char *v, void *dst)
{
    long *stall = dst;
    if (!strcmp(v, "auto")) {
        *stall = LBS_STALL_AUTO;
        return 0;
    }
    return cli_int(opt, v, 0, 86400 * 30, stall);
}

static int fault_opt(const char *opt, const char *v, void *dst)
{
    if (parse_fault(dst, v)) {
        cli_error(opt, "'%s': expected nan|kill|hang:RANK:STEP", v);
        return -EINVAL;
    }
    return 0;
}

static const char *const topologies[] = {"ring", "symexp", "exponential",
                                         "onepeer", "full", NULL};
static const char *const decays[] = {"cosine", "linear", "step", "none",
                                     NULL};
static const char *const lr_scalings[] = {"auto", "linear", "sqrt", "none",
                                          NULL};
static const char *const dataset_names[] = {"auto", "fashion-mnist", "teacher",
                                       NULL};
static const char *const backends[] = {"self", "mpi", NULL};

/* cli_parse with stderr silenced on ranks other than 0: every rank sees
 * the same command line, so one error line reaches the terminal. */
static int parse_quietly(const struct cli_verb *v, int argc, char **argv)
{
    if (!quiet_rank)
        return cli_parse(v, argc, argv, NULL, NULL);
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (saved >= 0 && null >= 0)
        dup2(null, STDERR_FILENO);
    int rc = cli_parse(v, argc, argv, NULL, NULL);
    fflush(stderr);
    if (saved >= 0 && null >= 0)
        dup2(saved, STDERR_FILENO);
    if (null >= 0)
        close(null);
    if (saved >= 0)
        close(saved);
    return rc;
}

/* The parse target of train's option table (one verb per process):
 * parse_args copies the defaults in and the values out. */
static struct train_opts targ;
static struct cli_common tcom;
static int help_opt(const char *opt, const char *value, void *unused);

static const struct cli_opt train_opts[] = {
    {.name = "optim", .type = CLI_STR, .dst = &targ.c.spec, .arg = "SPEC",
     .help = "optimizer spec (lbscale optim --list); an lr=... in it\n"
             "overrides the default rule below"},
    {.name = "compress", .type = CLI_STR, .dst = &targ.c.compress,
     .arg = "SPEC",
     .help = "compress the gradients before the optimizer (e.g.\n"
             "topk:k=0.01,ef=1; lbscale compress --list); only for\n"
             "data-parallel optimizers; applies on one rank too"},
    {.name = "model", .type = CLI_STR, .dst = &targ.c.model, .arg = "M",
     .help = "mlp:IN-H1-...-CLASSES (default " MLP_DEFAULT "), or\n"
             "mlp8 = " MLP8_SPEC "\n"
             "(8 weight layers, for JointSpar's layer sampling), or\n"
             "cnn = conv3x3(16)-ReLU-maxpool-conv3x3(32)-ReLU-maxpool-\n"
             "FC(128)-FC(10) (im2col + sgemm; Fashion-MNIST 28x28),\n"
             "trained with random crops (pad 2) and horizontal flips"},
    {.name = "no-augment", .type = CLI_FLAG, .dst = &targ.c.no_augment,
     .help = "the CNN without crops and flips"},
    {.name = "export-layers", .type = CLI_CALL, .fn = cli_out_file,
     .dst = &targ.export_layers,
     .arg = "F",
     .help = "write the model's layer list (name, shape) as JSON to F\n"
             "(the format of optim --layers and sim --layers) and\n"
             "exit without training"},
    {.name = "topology", .type = CLI_CALL, .fn = one_of_opt,
     .dst = &(struct one_of){&targ.c.topology, topologies}, .arg = "T",
     .help = "gossip graph for decentralized optimizers (ring,\n"
             "symexp, exponential, onepeer, full); passed as\n"
             "topology=T.  Default ring.  ring, symexp (offsets\n"
             "+-2^k, the symmetric exponential graph) and full have\n"
             "symmetric doubly stochastic mixing matrices, which\n"
             "DecentLaM's analysis assumes; exponential and onepeer\n"
             "are directed (W not symmetric): DecentLaM's momentum\n"
             "recursion then has complex eigenvalues and reached\n"
             "10% test accuracy (4 ranks, batch 1024, 2 epochs).\n"
             "WARNING printed (and recorded in the result row as\n"
             "\"warning\") for decentlam on a directed graph"},
    {.name = "shards", .type = CLI_CALL, .fn = shards_opt, .dst = &targ.c,
     .arg = "S",
     .help = "iid (default: one seeded permutation cut into equal\n"
             "shards) or dirichlet:alpha=A (0 < A <= 1e6): label-skewed\n"
             "shards, each class split among the ranks by proportions\n"
             "drawn from Dir(A) (Hsu et al. 2019; A = 0.1: three\n"
             "classes hold over 90% of most shards; large A: ~iid).\n"
             "Every sample in one shard; sizes differ, and each rank\n"
             "still takes B/ranks samples per step, passing over a\n"
             "small shard more often (train/shards.h).  Recorded in\n"
             "the row as \"shards\", with shard_size_min/max and\n"
             "shard_label_tv"},
    {.name = "consensus-every", .type = CLI_LONG,
     .dst = &targ.c.consensus_every, .arg = "N", .lo = 0, .hi = 1L << 40,
     .help = "every N steps, the RMS distance of the ranks' models\n"
             "from their average (consensus_rms, as in the epoch\n"
             "rows), into the final row's consensus_curve [[step,\n"
             "rms], ...] (its cost: consensus_s); default 0 (off)"},
    {.name = "global-batch", .type = CLI_LONG, .dst = &targ.c.global_batch,
     .arg = "B", .lo = 1, .hi = 1L << 24,
     .help = "samples per step over all ranks (default 1024); must\n"
             "be a multiple of the rank count"},
    {.name = "micro-batch", .type = CLI_LONG, .dst = &targ.c.micro_batch,
     .arg = "M", .lo = 1, .hi = 1L << 20,
     .help = "rows per forward/backward pass; local batches above it\n"
             "are accumulated (default min(local batch, 512))"},
    {.name = "epochs", .type = CLI_DOUBLE, .dst = &targ.c.epochs, .arg = "E",
     .lo = 1e-3, .hi = 1e5,
     .help = "passes over the training set (default 10)"},
    {.name = "max-steps", .type = CLI_LONG, .dst = &targ.c.max_steps,
     .arg = "N", .lo = 1, .hi = 1L << 40,
     .help = "stop after N steps (tests)"},
    {.name = "warmup", .type = CLI_DOUBLE, .dst = &targ.c.warmup, .arg = "F",
     .lo = 0, .hi = 1,
     .help = "linear lr warm-up over fraction F of the steps\n"
             "(default 0.1)"},
    {.name = "lr-base", .type = CLI_DOUBLE, .dst = &targ.c.lr_base,
     .arg = "LR", .lo = 1e-9, .hi = 1e4,
     .help = "the learning rate at the reference batch\n"
             "(--lr-ref-batch, default 128), scaled to the global\n"
             "batch B by --lr-scaling; replaces the tuned table\n"
             "below (an lr= in the spec still wins)"},
    {.name = "lr-scaling", .type = CLI_CALL, .fn = one_of_opt,
     .dst = &(struct one_of){&targ.c.lr_scaling, lr_scalings}, .arg = "S",
     .help = "auto (default), linear (lr = base x B/ref), sqrt\n"
             "(base x sqrt(B/ref)), none.  auto: linear for sgd,\n"
             "lars, dmsgd, decentlam, jointspar, jointspar_lars\n"
             "(Goyal et al. 2017; You et al. 2017); sqrt for lamb,\n"
             "adamw, slamb, onebit_lamb (Krizhevsky 2014; the LAMB\n"
             "paper).  The result row states lr, lr_base,\n"
             "lr_scaling and lr_rule"},
    {.name = "lr-ref-batch", .type = CLI_LONG, .dst = &targ.c.lr_ref_batch,
     .arg = "B", .lo = 1, .hi = 1L << 24,
     .help = "the batch --lr-base refers to (default 128)"},
    {.name = "val", .type = CLI_LONG, .dst = &targ.c.val, .arg = "N",
     .lo = 0, .hi = 1L << 40,
     .help = "hold out the last N training samples (same split for\n"
             "every seed) as a validation set, for choosing learning\n"
             "rates; val_accuracy/val_loss are reported next to the\n"
             "test set's (default 0: none)"},
    {.name = "decay", .type = CLI_CALL, .fn = one_of_opt,
     .dst = &(struct one_of){&targ.c.decay, decays}, .arg = "D",
     .help = "cosine (default), linear, step (x0.1 at 50% and 75%),\n"
             "none"},
    {.name = "seed", .type = CLI_LONG, .dst = &targ.c.seed, .arg = "S",
     .lo = 0, .hi = (double)(1L << 52),
     .help = "initialisation, shards, batches (default 1)"},
    {.name = "dataset", .type = CLI_CALL, .fn = one_of_opt,
     .dst = &(struct one_of){&targ.c.dataset, dataset_names}, .arg = "D",
     .help = "auto (default: fashion-mnist if installed, else\n"
             "teacher), fashion-mnist, teacher"},
    {.name = "data", .type = CLI_STR, .dst = &targ.c.data_dir, .arg = "DIR",
     .help = "IDX directory (default $LBSCALE_DATA or\n"
             DATA_FASHION_DIR ")"},
    {.name = "subset", .type = CLI_LONG, .dst = &targ.c.subset, .arg = "N",
     .lo = 1, .hi = 1L << 40,
     .help = "use only the first N training samples"},
    {.name = "test-subset", .type = CLI_LONG, .dst = &targ.c.test_subset,
     .arg = "N", .lo = 1, .hi = 1L << 40,
     .help = "use only the first N test samples"},
    {.name = "threads", .type = CLI_LONG, .dst = &targ.c.threads, .arg = "T",
     .lo = 1, .hi = 4096,
     .help = "OpenBLAS and OpenMP threads per rank (default 1; the\n"
             "sgemm results depend on it, so it is part of the\n"
             "reproducibility key)"},
    {.name = "comm", .type = CLI_CALL, .fn = one_of_opt,
     .dst = &(struct one_of){&targ.backend, backends}, .arg = "B",
     .help = "self or mpi (default: mpi under mpirun, else self)"},
    {.name = "no-trace", .type = CLI_CLEAR, .dst = &targ.trace,
     .help = "do not write the trace"},
    {.name = "trace-all-ranks", .type = CLI_FLAG, .dst = &targ.trace_all,
     .help = "every rank writes train-trace-OPTIM.rankR.jsonl\n"
             "(default: rank 0 writes train-trace-OPTIM.jsonl; with\n"
             "--compress train-trace-OPTIM-COMPRESSOR.jsonl).  A later\n"
             "run of the same into the same --out directory adds -2,\n"
             "-3, ...; the train.jsonl row names its file (\"trace\")"},
    {.name = "stall-timeout", .type = CLI_CALL, .fn = stall_opt,
     .dst = &targ.stall, .arg = "S",
     .help = "exit 1 when a rank makes no progress for S seconds, e.g.\n"
             "because a peer died or hangs; 0 = never.  Default auto:\n"
             "60 s until the first step (and evaluation) is timed,\n"
             "then 10 x the longest step (evaluation) so far, at\n"
             "least 30 s"},
    {.name = "fault", .type = CLI_CALL, .fn = fault_opt, .dst = &targ.c,
     .arg = "K:R:S",
     .help = "testing: at step S rank R injects a NaN gradient (K =\n"
             "nan), kills itself with SIGKILL (kill) or hangs (hang)"},
    CLI_COMMON_OPTS(&tcom),
    {.name = "help", .type = CLI_CALL, .fn = help_opt, .short_name = 'h',
     .help = "this help"},
    {0}};

static const struct cli_verb train_verb = {
    .name = "train", .usage = train_usage, .about = train_about,
    .opts = train_opts};

/* --help: the generated part, then the tuned lr table (rank 0 only). */
static int help_opt(const char *opt, const char *value, void *unused)
{
    (void)opt, (void)value, (void)unused;
    if (!quiet_rank)
        print_help(&train_verb, stdout);
    return CLI_EXIT;
}

/* 0 ok, 1 handled (help printed: exit 0), EXIT_BAD_INPUT. */
static int parse_args(int argc, char **argv, struct train_opts *t,
                      struct cli_common *com)
{
    targ = *t;
    tcom = *com;
    int rc = parse_quietly(&train_verb, argc, argv);
    *t = targ;
    *com = tcom;
    if (rc)
        return rc < 0 ? EXIT_BAD_INPUT : 1;
    if (!t->c.spec)
        FAIL("train", "--optim SPEC is required (see lbscale optim --list)");
    return 0;
}

/* ---- agreement across ranks -------------------------------------------- */

/* Every rank passes its own rc; all get the code of the lowest failing
 * rank (0 if none).  *who: that rank (or -1).  The caller prints its own
 * message only when who == its rank, so one line reaches stderr. */
static int ranks_agree(struct lbs_comm *c, int rc, int *who)
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
static int options_differ(struct lbs_comm *c,
                          const struct lbs_train_config *t,
                          const char *const **names_out)
{
    static const char *const names[] = {
        "--optim", "--model", "--topology", "--dataset", "--data",
        "--global-batch", "--micro-batch", "--epochs", "--max-steps",
        "--warmup", "--decay", "--seed", "--subset", "--test-subset",
        "--threads", "--fault", "--compress", "--val", "--lr-base",
        "--lr-ref-batch", "--lr-scaling", "--shards", "--consensus-every",
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
    snprintf(buf[12], 64, "%ld", t->consensus_every);
    const char *val[K] = {
        t->spec, t->model, t->topology, t->dataset, t->data_dir, buf[0],
        buf[1], buf[2], buf[3], buf[4], t->decay, buf[5], buf[6], buf[7],
        buf[8], t->fault_str, t->compress, buf[9], buf[10], buf[11],
        t->lr_scaling, t->shards, buf[12],
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

/* ---- string buffer for the trace ----------------------------------------- */

static void sb_ms_array(struct strbuf *b, const char *key, const double *x,
                        size_t n)
{
    sb_printf(b, ",\"%s\":[", key);
    for (size_t i = 0; i < n; i++)
        sb_printf(b, "%s%.4f", i ? "," : "", x[i] * 1e3);
    sb_printf(b, "]");
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


/* The trace file name's stem for this run, by what it holds:
 * train-trace-OPTIM[-COMPRESSOR] (the optimizer's and the compressor's
 * names, without parameters); write_trace adds -2, -3, ... when another
 * run in the same directory (a suite, a concurrent run) has taken it. */
static void pick_trace_base(const char *spec, const char *compress,
                            char *base, size_t len)
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
    snprintf(base, len, "train-trace-%s", tag);
}

struct trace_name { const char *stem; int all; };

/* lbs_name_fn: candidate i of the trace's name, STEM[-i].jsonl (or
 * .rank0.jsonl with --trace-all-ranks); skipped when the name is taken in
 * the other form.  The rename that claims it never replaces, so two runs
 * racing into one directory each keep their own trace. */
static int trace_candidate(void *ctx, int dfd, int i, char *buf, size_t len)
{
    const struct trace_name *t = ctx;
    char other[128];
    int w = i == 1 ? snprintf(buf, len, "%s", t->stem)
                   : snprintf(buf, len, "%s-%d", t->stem, i);
    if (w < 0 || (size_t)w + 16 >= len)
        return -1;
    snprintf(other, sizeof other, "%s%s", buf, t->all ? ".jsonl"
                                                      : ".rank0.jsonl");
    strcat(buf, t->all ? ".rank0.jsonl" : ".jsonl");
    return faccessat(dfd, other, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
}


/* Everything one training run carries from step to step (verb_train). */
struct train_run {
    struct train_opts t;
    struct cli_common com;
    int argc;
    char **argv;
    struct lbs_err e;
    struct lbs_comm *comm;              /* the real comm (mpi or self) */
    struct lbs_comm *tcomm;             /* the timing wrapper around it */
    int rank, P;
    struct lbs_train *tr;
    const struct lbs_train_info *info;  /* tr's */
    struct lbs_run *run;
    json_t *curve;
    double train_s, comm_s;
    long steps;
    char rundir[4096], trbase[128];
    /* the optimizer's communication, metered over tcomm */
    double t_comm;
    size_t bytes[LBS_COLL_COUNT], calls[LBS_COLL_COUNT], sent;
    int64_t by[2 * LBS_COLL_COUNT + 1];    /* step 5: bytes, calls maximum */
    struct strbuf tr_lines;             /* the trace after its header */
    int tracing;                        /* this rank collects a trace */
};

/* The trace file: rank 0 (or the one rank) claims a new name (r->trbase
 * becomes its stem); with --trace-all-ranks the others then write theirs
 * under the stem rank 0 broadcast. */
static int write_trace(struct train_run *r, struct lbs_err *err)
{
    const struct train_opts *t = &r->t;
    const struct lbs_train_info *i = r->info;
    json_t *h = json_pack(
        "{s:s,s:i,s:s,s:s,s:s,s:o,s:i,s:i,s:I,s:o,s:s,s:s,s:s,s:I,s:I,s:I,"
        "s:i,s:I,s:s}",
        "format", "lbscale-train-trace", "version", 1, "extends",
        "lbscale-trace/1", "optim", lbs_optim_name(i->optim), "params",
        lbs_optim_params(i->optim), "compress",
        t->c.compress ? json_string(t->c.compress) : json_null(), "ranks",
        r->P, "rank", r->rank, "steps", (json_int_t)r->steps, "layers",
        lbs_train_layers_json(i->model), "spec", i->spec, "model",
        t->c.model, "dataset", i->data->name, "global_batch",
        (json_int_t)t->c.global_batch, "local_batch", (json_int_t)i->local,
        "micro_batch", (json_int_t)i->micro, "threads", (int)t->c.threads,
        "seed", (json_int_t)t->c.seed, "time_unit", "ms");
    /* under a suite: the attempt that wrote this file, so that a resumed
     * suite can remove the trace of an attempt that never committed */
    const char *att = getenv(LBS_ATTEMPT_ENV);
    if (att && *att)
        json_object_set_new(h, "attempt", json_string(att));
    char *hs = json_dumps(h, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(h);
    const struct strbuf *tl = &r->tr_lines;
    if (!hs || tl->oom) {
        free(hs);
        return lbs_err_set(err, -ENOMEM, "trace: out of memory");
    }
    size_t hl = strlen(hs);
    char *all = malloc(hl + 1 + tl->len);
    if (!all) {
        free(hs);
        return lbs_err_set(err, -ENOMEM, "trace: out of memory");
    }
    memcpy(all, hs, hl);
    all[hl] = '\n';
    if (tl->len)
        memcpy(all + hl + 1, tl->p, tl->len);
    int rc;
    if (r->rank == 0) {
        char stem[sizeof r->trbase], chosen[sizeof r->trbase + 16];
        snprintf(stem, sizeof stem, "%s", r->trbase);
        struct trace_name tn = {stem, t->trace_all};
        rc = lbs_write_unique(r->rundir, trace_candidate, &tn, all,
                              hl + 1 + tl->len, chosen, sizeof chosen, err);
        if (!rc)    /* the stem: the name less .jsonl / .rank0.jsonl */
            snprintf(r->trbase, sizeof r->trbase, "%.*s",
                     (int)(strlen(chosen) - (t->trace_all ? 12 : 6)),
                     chosen);
    } else {
        char path[4300];
        snprintf(path, sizeof path, "%s/%s.rank%d.jsonl", r->rundir,
                 r->trbase, r->rank);
        rc = lbs_write_atomic(path, all, hl + 1 + tl->len, err);
    }
    free(all);
    free(hs);
    return rc;
}

/* --export-layers FILE: the model's tensors as {"model":..., "layers":
 * [{"name":..., "shape":[...]}]}, the format optim/sim --layers read. */
static int export_layers(const struct train_opts *t)
{
    struct mlp *m;
    struct lbs_err e;
    if (t->c.is_cnn ? cnn_new(1, &m, &e)
                    : mlp_new(t->c.dims, t->c.nd, 1, &m, &e)) {
        cli_error("train", "%s", e.msg);
        return EXIT_RUNTIME;
    }
    json_t *root = json_pack("{s:s,s:o,s:I}", "model", t->c.model, "layers",
                             lbs_train_layers_json(m), "parameters",
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

/* The model's dimensions, before MPI starts or anything is written: 0, or
 * EXIT_BAD_INPUT after one line (on rank 0). */
static int check_input(struct train_run *r)
{
    struct lbs_err e;
    if (lbs_train_parse_model(&r->t.c, &e))
        FAIL("--model", "%s", e.msg);
    return 0;
}

/* Reject a bad spec (and compressor) before MPI starts or anything is
 * written: 0, or EXIT_BAD_INPUT after one line (on rank 0). */
static int check_spec(struct lbs_train_config t)
{
    struct lbs_err e;
    /* Reject a bad spec before MPI starts or anything is written. */
    {
        char name[64];
        const char *args;
        int rc = lbs_spec_split(t.spec, name, sizeof name, &args, &e);
        if (!rc) {
            rc = lbs_optim_check(t.spec, NULL, &e);
            if (rc)
                FAIL("--optim", "%s", e.msg);
            rc = lbs_optim_check(t.spec, t.compress, &e);
            if (rc)
                FAIL("--compress", "%s", e.msg);
        }
        if (rc)
            FAIL("--optim", "%s", e.msg);
    }
    return 0;
}

/* Step 1: every rank got the same options.  0 or the code to exit with
 * (rank 0 printed why). */
static int options_agree(struct train_run *r)
{
    const char *const *names;
    int k = options_differ(r->comm, &r->t.c, &names);
    if (k < -1) {
        if (r->rank == 0)
            cli_error("train", "start-up option check failed: %s", r->e.msg);
        return -EIO;
    }
    if (k >= 0) {
        if (r->rank == 0)
            cli_error(names[k], "differs across ranks (every rank must get "
                      "the same options); refusing to start");
        return -EINVAL;
    }
    return 0;
}

/* Step 2a: the run, batch shapes that depend on the rank count, the data,
 * this rank's shard and the step count.  Returns a failure every rank
 * agreed on (printed); *pending: the shard's, agreed on after the model. */
static int setup_data(struct train_run *r, int *pending)
{
    const struct lbs_train_config *t = &r->t.c;
    struct lbs_err *e = &r->e;
    int rc = 0, who, P = r->P, rank = r->rank;
    if (t->global_batch % P)
        rc = lbs_err_set(e, -EINVAL, "%ld is not a multiple of the %d "
                         "ranks", t->global_batch, P);
    if ((rc = ranks_agree(r->comm, rc, &who))) {
        if (who == rank)
            cli_error("--global-batch", "%s", e->msg);
        return rc;
    }
    rc = lbs_train_new(t, r->comm, &r->tr, e);
    if (!rc) {
        r->info = lbs_train_info(r->tr);
        rc = lbs_train_load(r->tr, e);
    }
    if ((rc = ranks_agree(r->comm, rc, &who))) {
        if (who == rank)
            cli_error("train", "%s", e->msg);
        return rc;
    }
    if (r->info->note[0] && rank == 0)
        fprintf(stderr, "lbscale: train: note: %s\n", r->info->note);
    *pending = lbs_train_shard(r->tr, e);
    return 0;
}

/* A fault that can never fire would pass as a clean run. */
static int check_fault(const struct train_run *r, struct lbs_err *e)
{
    const struct lbs_train_config *t = &r->t.c;
    long total = r->info->total_steps;
    if (t->fault != LBS_TRAIN_FAULT_NONE && t->fault_rank >= r->P)
        return lbs_err_set(e, -EINVAL, "--fault %s: rank %ld is not one of "
                           "the %d ranks (0..%d)", t->fault_str,
                           t->fault_rank, r->P, r->P - 1);
    if (t->fault != LBS_TRAIN_FAULT_NONE && t->fault_step > total)
        return lbs_err_set(e, -EINVAL, "--fault %s: step %ld is past the "
                           "run's last step (%ld)", t->fault_str,
                           t->fault_step, total);
    return 0;
}

/* Step 2b: model, effective spec, optimizer (over the traced comm) and
 * the batch buffers; rc from setup_data goes in. */
static int setup_model(struct train_run *r, int rc)
{
    struct lbs_err *e = &r->e;
    int who;
    if (!rc)
        rc = check_fault(r, e);
    if (!rc)
        rc = lbs_train_model(r->tr, e);
    /* DecentLaM on a directed graph (recorded in the row as "warning") */
    if (!rc && r->info->warning[0] && r->rank == 0)
        fprintf(stderr, "lbscale: train: WARNING: %s\n", r->info->warning);
    if (!rc)
        rc = lbs_comm_record_wrap(r->comm, &r->tcomm, e);
    if (!rc)
        rc = lbs_train_optim(r->tr, r->tcomm, e);
    if ((rc = ranks_agree(r->comm, rc, &who)) && who == r->rank)
        cli_error("train", "%s", e->msg);
    return rc;
}

/* Step 3: the run directory (rank 0), only now that the input is good,
 * and where the trace goes: every rank needs it with --trace-all-ranks. */
static int open_results(struct train_run *r)
{
    int rc = 0, who;
    if (r->rank == 0)
        rc = cli_open_run(&r->com, "train", r->argc, r->argv, &r->run);
    if ((rc = ranks_agree(r->comm, rc, &who)))
        return rc;
    if (r->run) {
        snprintf(r->rundir, sizeof r->rundir, "%s", lbs_run_dir(r->run));
        pick_trace_base(r->info->spec, r->t.c.compress, r->trbase,
                        sizeof r->trbase);
    }
    /* the trace's final name is chosen by rank 0 when it writes it */
    if (r->P > 1 && r->t.trace_all && r->com.save &&
        (rc = lbs_bcast(r->comm, r->rundir, sizeof r->rundir, LBS_UINT8, 0,
                        -1)))
        return rc;
    return 0;
}

static void print_header(const struct train_run *r)
{
    const struct lbs_train_config *t = &r->t.c;
    const struct lbs_train_info *i = r->info;
    printf("# train %s on %s (%s%s), %d rank%s, global batch %ld = %d x "
           "%zu (micro %zu), %ld steps, lr rule: %s\n", i->spec,
           t->model, i->data->name, i->note[0] ? ", fallback" : "", r->P,
           r->P > 1 ? "s" : "", t->global_batch, r->P, i->local, i->micro,
           i->total_steps, i->lr_rule);
    printf("# %6s %7s %9s %9s %9s %9s %9s %7s %9s\n", "epoch", "step",
           "lr", "trn_loss", "trn_acc", "tst_loss", "tst_acc", "skipped",
           "wall(s)");
    fflush(stdout);
}

/* --fault: this rank at this step dies or hangs (NaN is the library's). */
static void inject_fault(const struct lbs_train_config *t, int rank, long it)
{
    if (t->fault != LBS_TRAIN_FAULT_NONE && it == t->fault_step &&
        rank == t->fault_rank) {
        if (t->fault == LBS_TRAIN_FAULT_KILL)
            raise(SIGKILL);
        if (t->fault == LBS_TRAIN_FAULT_HANG)
            for (;;)
                pause();
    }
}

/* The step's trace lines: its communication calls, then the step. */
static void trace_step(struct train_run *r, const struct lbs_train_step *st,
                       const struct lbs_comm_record_entry *e, size_t ne,
                       double comm,
                       double t0)
{
    struct strbuf *b = &r->tr_lines;
    long it = st->it;
    for (size_t i = 0; i < ne; i++) {
        struct lbs_comm_record_entry x = e[i];
        char line[LBS_TRACE_LINE_MAX];
        x.step = it;        /* the trainer's iteration */
        lbs_trace_call_line(line, sizeof line, &x, 0, LBS_TRACE_TIMED);
        sb_printf(b, "%s\n", line);
    }
    sb_printf(b, "{\"type\":\"step\",\"step\":%ld,\"skipped\":%d,"
              "\"lr_scale\":%.6g,\"loss\":%.6g,\"keep\":[", it, st->skipped,
              st->lr_scale, st->loss);
    for (size_t l = 0; l < st->nlayers; l++)
        sb_printf(b, "%s%d", l ? "," : "", st->keep[l]);
    sb_printf(b, "]");
    sb_ms_array(b, "fwd_ms", st->fwd_s, st->nlayers);
    sb_ms_array(b, "bwd_ms", st->bwd_s, st->nlayers);
    sb_ms_array(b, "wgrad_ms", st->wgrad_s, st->nlayers);
    sb_printf(b, ",\"data_ms\":%.4f,\"optim_ms\":%.4f,\"comm_ms\":%.4f,"
              "\"comm_calls\":%zu,\"step_ms\":%.4f}\n", st->data_s * 1e3,
              st->optim_s * 1e3, comm * 1e3, ne, (cli_now() - t0) * 1e3);
}

/* One step over the traced comm: its calls metered, traced when asked.
 * Returns lbs_train_step's code (0, 1 skipped, <0). */
static int traced_step(struct train_run *r, long it,
                       struct lbs_train_step *st)
{
    double t0 = cli_now();
    lbs_comm_record_clear(r->tcomm);
    int rc = lbs_train_step(r->tr, it, st, &r->e);
    if (rc < 0)
        return rc;
    size_t ne;
    const struct lbs_comm_record_entry *e =
        lbs_comm_record_entries(r->tcomm, &ne);
    double comm = 0;
    for (size_t i = 0; i < ne; i++) {
        comm += e[i].seconds;
        r->bytes[e[i].kind] += e[i].bytes;
        r->calls[e[i].kind]++;
        /* what this rank injects: a neighbour buffer goes to each peer */
        r->sent += e[i].kind == LBS_COLL_NEIGHBOR
                       ? e[i].bytes * (size_t)e[i].peers : e[i].bytes;
    }
    r->t_comm += comm;
    if (r->tracing)
        trace_step(r, st, e, ne, comm, t0);
    return rc;
}

/* The per-epoch row: evaluate, print (rank 0), append to the curve. */
static int epoch_row(struct train_run *r, long it)
{
    json_t *row;
    double e0 = cli_now();
    lbs_watchdog_pet(LBS_UNIT_EVAL);
    int rc = lbs_train_evaluate(r->tr, it, &row, &r->e);
    if (rc) {
        cli_error("train", "rank %d, evaluation: %s", r->rank, r->e.msg);
        return rc;
    }
    lbs_watchdog_took(LBS_UNIT_EVAL, cli_now() - e0);
    if (r->rank == 0)
        print_row(row, r->com.json);
    json_array_append_new(r->curve, row);
    return 0;
}

/* --consensus-every N: after every N-th step, the consensus distance. */
static int consensus_point(struct train_run *r, long it)
{
    long n = r->t.c.consensus_every;
    double rms;
    if (!n || it % n)
        return 0;
    int rc = lbs_train_consensus(r->tr, it, &rms, &r->e);
    if (rc)
        cli_error("train", "rank %d, consensus after step %ld: %s", r->rank,
                  it, r->e.msg);
    return rc;
}

/* Step 4: the steps, with an evaluation at every epoch's end and at the
 * last step. */
static int train_loop(struct train_run *r)
{
    double train0 = cli_now();
    long it;
    struct lbs_train_step st;
    for (it = 1; it <= r->info->total_steps; it++) {
        lbs_watchdog_pet(LBS_UNIT_STEP);
        double s0 = cli_now();
        inject_fault(&r->t.c, r->rank, it);
        int rc = traced_step(r, it, &st);
        if (rc < 0) {
            cli_error("train", "rank %d, step %ld: %s", r->rank, it,
                      r->e.msg);
            return rc;
        }
        if (rc == 1 && r->rank == 0)
            fprintf(stderr, "lbscale: train: %s\n", r->e.msg);
        lbs_watchdog_took(LBS_UNIT_STEP, cli_now() - s0);
        if ((rc = consensus_point(r, it)))
            return rc;
        if (st.evaluate && (rc = epoch_row(r, it)))
            return rc;
    }
    lbs_watchdog_pet(LBS_UNIT_EVAL);   /* the closing reductions and writes */
    r->train_s = cli_now() - train0;
    r->steps = it - 1;
    return 0;
}

/* Step 5a: totals over ranks: times averaged, bytes the maximum. */
static int reduce_totals(struct train_run *r)
{
    int64_t *by = r->by;
    for (int q = 0; q < LBS_COLL_COUNT; q++) {
        by[q] = (int64_t)r->bytes[q];
        by[LBS_COLL_COUNT + q] = (int64_t)r->calls[q];
    }
    by[2 * LBS_COLL_COUNT] = (int64_t)r->sent;
    double comm = r->t_comm;
    r->comm->err = &r->e;
    int rc = lbs_train_totals(r->tr, &r->e);
    if (!rc && r->P > 1 &&
        !(rc = lbs_allreduce(r->comm, &comm, 1, LBS_FLOAT64, LBS_SUM, -1)))
        rc = lbs_allreduce(r->comm, by, 2 * LBS_COLL_COUNT + 1, LBS_INT64,
                           LBS_MAX, -1);
    if (rc) {
        cli_error("train", "rank %d: %s", r->rank, r->e.msg);
        return rc;
    }
    r->comm_s = comm / r->P;
    return 0;
}

/* comm_by_kind of the final row; *bsum, *calls: the totals. */
static json_t *bytes_by_kind(const int64_t *by, long long *bsum,
                             long long *calls)
{
    json_t *bk = json_object();
    *bsum = *calls = 0;
    for (int q = 0; q < LBS_COLL_COUNT; q++) {
        *bsum += by[q];
        *calls += by[LBS_COLL_COUNT + q];
        if (by[LBS_COLL_COUNT + q])
            json_object_set_new(bk, lbs_coll_name((enum lbs_coll)q),
                                json_pack("{s:I,s:I}", "bytes",
                                          (json_int_t)by[q], "calls",
                                          (json_int_t)by[LBS_COLL_COUNT + q]));
    }
    return bk;
}

/* Step 5b: the final row: the run's, then the command line and the trace. */
static json_t *final_row(struct train_run *r)
{
    struct lbs_train_costs c = {.train_s = r->train_s, .comm_s = r->comm_s,
                                .sent_bytes = r->by[2 * LBS_COLL_COUNT]};
    c.comm_by_kind = bytes_by_kind(r->by, &c.comm_bytes, &c.comm_calls);
    json_t *row = lbs_train_final_row(r->tr, &c);
    if (!row)
        return NULL;
    json_t *av = json_array();
    for (int q = 0; q < r->argc; q++)
        json_array_append_new(av, json_string(r->argv[q]));
    json_object_set_new(row, "argv", av);
    json_object_set_new(row, "parameters",
                        json_integer((json_int_t)r->info->model->nparams));
    json_object_set_new(row, "trace", r->t.trace && r->com.save
                        ? json_sprintf(r->t.trace_all ? "%s.rank*.jsonl"
                                                      : "%s.jsonl",
                                       r->trbase)
                        : json_null());
    return row;
}

/* Step 6: traces and results; the row is consumed. */
static int write_results(struct train_run *r, json_t *row)
{
    const struct train_opts *t = &r->t;
    int rc = 0, who;
    int tracing = t->trace && r->com.save;
    if (tracing && r->rank == 0)
        rc = write_trace(r, &r->e);
    if (tracing && t->trace_all && r->P > 1) {
        /* rank 0's claimed name, then every other rank's file */
        int brc = lbs_bcast(r->comm, r->trbase, sizeof r->trbase, LBS_UINT8,
                            0, -1);
        if (!rc && brc)
            rc = lbs_err_set(&r->e, brc, "trace: broadcast failed");
        if (!rc && r->rank != 0)
            rc = write_trace(r, &r->e);
    }
    if (rc)
        cli_error("train", "rank %d: %s", r->rank, r->e.msg);
    if (tracing)
        json_object_set_new(row, "trace", json_sprintf(t->trace_all
                            ? "%s.rank*.jsonl" : "%s.jsonl", r->trbase));
    if (r->rank == 0) {
        print_row(row, r->com.json);
        if (r->run) {
            json_t *res = json_deep_copy(row);
            json_object_set(res, "curve", r->curve);
            if (rc)
                json_decref(res);
            else if ((rc = lbs_run_append(r->run, "train", res, &r->e)))
                cli_error("train", "%s", r->e.msg);
            else if (!r->com.json)
                fprintf(stderr, "results: %s/train.jsonl\n",
                        lbs_run_dir(r->run));
        }
    }
    json_decref(row);
    return ranks_agree(r->comm, rc, &who);
}

static void train_run_free(struct train_run *r)
{
    lbs_watchdog_off();
    json_decref(r->curve);
    lbs_run_close(r->run);
    lbs_train_free(r->tr);
    lbs_comm_free(r->tcomm);
    free(r->tr_lines.p);
    lbs_comm_free(r->comm);
}

/* After the input checks: MPI, the run and its results. */
static int train_main(struct train_run *r)
{
    cli_threads(r->t.c.threads);
    openblas_set_num_threads((int)r->t.c.threads);

    r->t.c.wall0 = lbs_train_now();
    const char *backend = r->t.backend ? r->t.backend
                          : (LBS_HAVE_MPI && under_mpirun()) ? "mpi" : "self";
    int rc = lbs_comm_new(backend, &r->comm, &r->e);
    if (rc) {
        if (!quiet_rank)
            cli_error("--comm", "%s", r->e.msg);
        return cli_exit_code(rc);
    }
    r->comm->err = &r->e;
    r->rank = r->comm->rank;
    r->P = r->comm->size;
    quiet_rank = 0;
    lbs_watchdog_init(r->rank, r->t.stall);
    r->curve = json_array();
    snprintf(r->trbase, sizeof r->trbase, "train-trace");

    int pending = 0;
    if (!(rc = options_agree(r)) && !(rc = setup_data(r, &pending)) &&
        !(rc = setup_model(r, pending)) &&
        !(rc = open_results(r))) {
        if (r->rank == 0 && !r->com.json)
            print_header(r);
        r->tracing = r->t.trace && r->com.save &&
                     (r->t.trace_all || r->rank == 0);
        if (!(rc = train_loop(r)) && !(rc = reduce_totals(r))) {
            json_t *row = final_row(r);
            rc = row ? write_results(r, row)
                     : lbs_err_set(&r->e, -ENOMEM, "out of memory");
            if (!row)
                cli_error("train", "rank %d: %s", r->rank, r->e.msg);
        }
    }
    train_run_free(r);
    return cli_exit_code(rc);
}

int verb_train(int argc, char **argv)
{
    struct train_run r = {
        .argc = argc, .argv = argv, .com = {.save = 1},
        .t = {.c = {.model = MLP_DEFAULT, .dataset = "auto",
                    .decay = "cosine", .global_batch = 1024, .epochs = 10,
                    .warmup = 0.1, .seed = 1, .threads = 1,
                    .lr_ref_batch = 128, .lr_scaling = "auto"},
              .stall = LBS_STALL_AUTO, .trace = 1},
    };
    quiet_rank = env_rank() != 0;
    int prc = parse_args(argc, argv, &r.t, &r.com);
    if (prc)
        return prc == 1 ? 0 : prc;
    if ((prc = check_input(&r)))
        return prc;
    if (r.t.export_layers)
        return export_layers(&r.t);
    if ((prc = check_spec(r.t.c)))
        return prc;
    return train_main(&r);
}
