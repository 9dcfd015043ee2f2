/* train_opts.c - `lbscale train`'s command line: the option table, its
 * parsers, --help with the learning-rate table, and the fault spec. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lr.h"
#include "shards.h"
#include "watchdog.h"
#include "train_int.h"

/* ---- options ---------------------------------------------------------- */

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

/* After the options: the tuned learning-rate table (the optimizers'
 * lr_rule, lbscale/optim.h) between these two paragraphs. */
static const char train_lr_head[] =
"Default learning rates (used unless the spec sets lr): lr = lr_ref x\n"
"(B/1024)^alpha, at most lr_max (tuned on Fashion-MNIST: each optimizer's\n"
"file says how); linear warm-up, then the decay:\n";

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
    struct lbs_optim_props p;
    for (const char *const *n = lbs_optim_names(); *n; n++)
        if (!lbs_optim_props(*n, &p, NULL) && p.lr_rule)
            fprintf(f, "  %-15s %8g %6.3g %8g\n", *n, p.lr_rule->lr_ref,
                    p.lr_rule->alpha, p.lr_rule->lr_max);
    fputs(train_lr_tail, f);
}

/* MPI rank from the launcher's environment, before MPI is initialised:
 * only rank 0 prints command-line errors (every rank sees the same ones). */
int train_env_rank(void)
{
    const char *v = getenv("OMPI_COMM_WORLD_RANK");
    if (!v)
        v = getenv("PMI_RANK");
    return v ? atoi(v) : 0;
}

int train_under_mpirun(void)
{
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE");
}

int train_quiet_rank;

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
    if (!train_quiet_rank)
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
    if (!train_quiet_rank)
        print_help(&train_verb, stdout);
    return CLI_EXIT;
}

/* 0 ok, 1 handled (help printed: exit 0), EXIT_BAD_INPUT. */
int train_parse_args(int argc, char **argv, struct train_opts *t,
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
