/* main.c - `lbscale VERB ...`: dispatch to the verbs. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "blas.h"
#include "cli.h"
#include "git_rev.h"
#include "lbs_config.h"
#include "lbscale/isa.h"
#include "lbscale/mem.h"
#include "lbscale/param.h"
#include "results.h"

struct verb {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
};

static const struct verb verbs[] = {
    {"stream", verb_stream, "memory bandwidth (STREAM copy/triad; --device cuda: GPU copy)"},
    {"optim", verb_optim, "time one optimizer step vs the STREAM roofline (or GPU copy)"},
    {"compress", verb_compress, "time one gradient compressor vs STREAM, with invariants"},
    {"coll", verb_coll, "collective benchmark (nccl-tests style; mpirun for P > 1)"},
    {"demo", verb_demo, "the default suite (about 2 min on 2 idle cores): every benchmark, figures, report"},
    {"suite", verb_suite, "run a JSON list of benchmark entries into one results run"},
    {"report", verb_report, "write a run's self-contained report.html"},
    {"check", verb_check, "compare a run with checked-in baselines (CI gates)"},
    {"compare", verb_compare, "every metric two runs share, with a significance verdict"},
    {"plot", verb_plot, "draw a results run's figures with gnuplot"},
    {"sim", verb_sim, "simulate iteration time and scaling on GPU clusters"},
    {"train", verb_train, "train an MLP on Fashion-MNIST with any optimizer (mpirun)"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: lbscale VERB [options]   (lbscale VERB --help)\n\n"
               "verbs:\n");
    for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
        fprintf(f, "  %-8s %s\n", verbs[i].name, verbs[i].summary);
    fprintf(f, "\n  --version  print the version, git revision and what was "
               "built in\n  -h, --help this help\n"
               "\noptions take their value as '--opt VALUE' or "
               "'--opt=VALUE' (getopt_long, bench/opt.c); a long option\n"
               "may be shortened to any prefix no other option of the verb "
               "shares\n"
               "exit status: 0 ok, 1 runtime failure, 2 bad input\n"
               "results land in results/<UTC time>-<git rev>/ "
               "(meta.json + one JSONL per verb)\n"
               "environment: LBSCALE_ISA=c|avx2|avx512 (kernel level; "
               "default the best the CPU has)\n"
               "  LBSCALE_HUGEPAGES=0|1 (advise the streamed arrays as "
               "transparent huge pages; default 1)\n"
               "  OMP_WAIT_POLICY (default here PASSIVE: threads sleep at "
               "barriers instead of\n    spinning; set ACTIVE, or "
               "GOMP_SPINCOUNT, for libgomp's own spin-wait)\n"
               "  LBSCALE_TEST_SLOWDOWN=VERB/NAME=F (tests of the gates only: "
               "optim or compress\n    kernel NAME takes F times as long; "
               "recorded in meta.json)\n");
}

/* A reader met a row torn by a writer that died mid-write: say so (the
 * row is skipped; the next append to that file cuts it off). */
static void say_torn(const char *path, long line, size_t bytes)
{
    fprintf(stderr, "lbscale: warning: %s line %ld: torn last row (%zu "
            "bytes without a newline: its writer died mid-write); "
            "skipped\n", path, line, bytes);
}

/* Leave without the exit handlers.  When memory is short, an OpenBLAS
 * worker can spin for ever in malloc (its buffer at start, or after an
 * allocation failure), and OpenBLAS's exit handler joins it: a process
 * that printed its one line would never end.  Everything a verb commits
 * is in files it closed already; the stdio streams are flushed here.
 * Under AddressSanitizer the ordinary exit stays, for its leak check. */
static int finish(int rc)
{
    /* stdout that could not be written (a full disk, /dev/full) is a
     * runtime failure, not a silent exit 0 with the output lost */
    errno = 0;
    int bad = fflush(stdout) != 0 || ferror(stdout);
    if (bad && rc == 0) {
        fprintf(stderr, "lbscale: stdout: cannot write: %s\n",
                errno ? strerror(errno) : "write error");
        rc = EXIT_RUNTIME;
    }
    fflush(NULL);
#if defined(__SANITIZE_ADDRESS__)
    return rc;
#else
    _exit(rc);
#endif
}

static int run(int argc, char **argv);

/* libgomp's default wait at a barrier is a spin of 300,000 iterations
 * before it sleeps.  A spinning team member holds its core, which the
 * other threads (OpenBLAS's own, or another process) need: 2-thread
 * training ran 2.3-4.4x faster passive, and the kernels showed no cost
 * beyond run-to-run drift (results/studies/omp-passive-20261206), so lbscale waits
 * passively unless the user chose (OMP_WAIT_POLICY or GOMP_SPINCOUNT
 * set).  LBSCALE_OMP_WAITSET=1 records that lbscale set it (meta.json). */
static int omp_wait_env(void)
{
    if (getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT"))
        return 0;
    setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
    setenv("LBSCALE_OMP_WAITSET", "1", 1);
    return 1;
}

/* OpenBLAS's kernel family and libgomp's wait policy are read once, when
 * the libraries load, before main(): where either is to be set, set both
 * and re-execute once (the environment says it was done, so the new
 * image and every lbscale it starts keep it). */
static void startup_env(char **argv)
{
    int blas = blas_autoselect_env(), omp = omp_wait_env();
    if (!blas && !omp)
        return;
    execv("/proc/self/exe", argv);
    /* exec failed: run on with the libraries' own choices, and take back
     * only what this call set (an inherited setting is in force) */
    if (blas)
        blas_autoselect_undo();
    if (omp) {
        unsetenv("OMP_WAIT_POLICY");
        unsetenv("LBSCALE_OMP_WAITSET");
    }
}

int main(int argc, char **argv)
{
    return finish(run(argc, argv));
}

static int run(int argc, char **argv)
{
    /* OpenBLAS's kernel family and libgomp's wait policy are fixed when
     * they initialise: set them before anything else, re-executing if
     * needed */
    const char *bad_auto = blas_auto_bad();
    if (bad_auto) {
        cli_error("LBSCALE_BLAS_AUTO", "'%s': 1 (default: pick OpenBLAS's "
                  "kernel family), 0 (leave it) or force", bad_auto);
        return EXIT_BAD_INPUT;
    }
    startup_env(argv);
    lbs_jsonl_on_torn(say_torn);
    if (argc < 2) {   /* bad input: one line, like every refusal */
        fprintf(stderr, "lbscale: no verb given (");
        for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
            fprintf(stderr, "%s%s", i ? ", " : "", verbs[i].name);
        fprintf(stderr, "; lbscale --help)\n");
        return EXIT_BAD_INPUT;
    }
    const char *v = argv[1];
    /* LBSCALE_ISA: a level the CPU lacks (or no level at all) is refused
     * here, before any kernel could run */
    struct lbs_err e;
    if (lbs_isa_from_env(&e)) {
        cli_error("LBSCALE_ISA", "%s", e.msg);
        return EXIT_BAD_INPUT;
    }
    if (lbs_hugepages_from_env(&e)) {
        cli_error("LBSCALE_HUGEPAGES", "%s", e.msg);
        return EXIT_BAD_INPUT;
    }
    if (cli_slowdown_check(&e)) {
        cli_error("LBSCALE_TEST_SLOWDOWN", "%s", e.msg);
        return EXIT_BAD_INPUT;
    }
    if (!strcmp(v, "-h") || !strcmp(v, "--help") || !strcmp(v, "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(v, "--version") || !strcmp(v, "version")) {
        printf("lbscale %s (git %s, mpi %s, cuda %s)\n", LBS_VERSION,
               LBS_GIT_REV, LBS_HAVE_MPI ? "yes" : "no",
               LBS_HAVE_CUDA ? "yes" : "no");
        return 0;
    }
    for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
        if (!strcmp(v, verbs[i].name))
            return verbs[i].fn(argc - 1, argv + 1);
    const char *names[sizeof verbs / sizeof verbs[0]];
    for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
        names[i] = verbs[i].name;
    const char *near = lbs_closest(v, names, sizeof verbs / sizeof verbs[0]);
    if (near)
        cli_error(v, "unknown verb; did you mean '%s'? (run 'lbscale "
                  "--help' for the list)", near);
    else
        cli_error(v, "unknown verb (run 'lbscale --help' for the list)");
    return EXIT_BAD_INPUT;
}
