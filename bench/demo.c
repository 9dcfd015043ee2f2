/* demo.c - `lbscale demo`: the default suite, built in, run through the
 * suite machinery (suite.c) into one results run, ending with the figures,
 * report.html and a plain-text summary.  About 10 minutes on 2 cores.
 *
 * Entries whose verb this binary does not have (or that need mpirun where
 * there is none) are "optional": skipped with a note instead of failing
 * the demo.  `lbscale demo --print-suite` prints the suite as a file to
 * edit and run with `lbscale suite`.  The study-* entries are a small
 * subset of issue 17's convergence study (docs/studies.md), whose figure
 * the report draws from them.  Base rates: the full study's choices at
 * batch 128 (SGD-M 0.05, LAMB 0.007, which it also chose for LAMB at 1024
 * and 2048); SGD-M at 1024 diverges at 0.05 x 8 in these 18 steps, and
 * 0.00625 won among 0.00625, 0.0125, 0.025 on this subset (seed 1). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "suite.h"

/* BERT-XL is simulated for every optimizer but 1-bit LAMB: its plan comes
 * from traces recorded on a 1/32-size copy of the model (see
 * sim/data/traces/make_traces.sh), and 1-bit LAMB's fused buffer cannot be
 * scaled that way. */
static const char demo_suite[] =
"{\n"
"  \"suite\": \"demo\",\n"
"  \"description\": \"The default suite: STREAM, the step of every optimizer"
" and every compressor against it, collectives on 1-4 ranks, a LAMB vs SLAMB"
" training comparison under mpirun, a small subset of the convergence"
" study (SGD-M and LAMB at two batches, two seeds, statistics by"
" tools/study.py), and simulated scaling to 1,024 GPUs of"
" BERT-Large and BERT-XL on DGX-A100 for every optimizer.\",\n"
"  \"vars\": {\"elements\": \"100M\", \"compress_elements\": \"32M\",\n"
"           \"train_ranks\": 4, \"train_epochs\": 10,\n"
"           \"study_epochs\": 3, \"study_subset\": 6144,\n"
"           \"platform\": \"dgx-a100\", \"max_gpus\": 1024},\n"
"  \"entries\": [\n"
"    {\"name\": \"stream\", \"verb\": \"stream\", \"est_s\": 6},\n"
"    {\"name\": \"optim-{optim}\", \"verb\": \"optim\",\n"
"     \"foreach\": {\"optim\": \"@optimizers\"},\n"
"     \"args\": [\"--optim\", \"{optim}\", \"--elements\", \"{elements}\"],\n"
"     \"est_s\": 14},\n"
"    {\"name\": \"compress-{c}\", \"verb\": \"compress\",\n"
"     \"foreach\": {\"c\": \"@compressors\"},\n"
"     \"args\": [\"--compressor\", \"{c}\", \"--elements\",\n"
"              \"{compress_elements}\", \"--stream-gbps\",\n"
"              \"{stream.triad_gbps}\"], \"est_s\": 6},\n"
"    {\"name\": \"coll-np{np}\", \"verb\": \"coll\", \"ranks\": \"{np}\",\n"
"     \"foreach\": {\"np\": [1, 2, 3, 4]}, \"optional\": true,\n"
"     \"est_s\": 20},\n"
"    {\"name\": \"train-{optim}\", \"verb\": \"train\",\n"
"     \"ranks\": \"{train_ranks}\", \"foreach\": {\"optim\": [\"lamb\", \"slamb\"]},\n"
"     \"args\": [\"--optim\", \"{optim}\", \"--epochs\", \"{train_epochs}\"],\n"
"     \"optional\": true, \"est_s\": 45},\n"
"    {\"name\": \"study-sgd-b128-s{seed}\", \"verb\": \"train\",\n"
"     \"foreach\": {\"seed\": [1, 2]},\n"
"     \"args\": [\"--optim\", \"sgd\", \"--lr-base\", \"0.05\",\n"
"              \"--global-batch\", \"128\", \"--seed\", \"{seed}\",\n"
"              \"--epochs\", \"{study_epochs}\", \"--subset\",\n"
"              \"{study_subset}\", \"--val\", \"1000\", \"--test-subset\",\n"
"              \"2000\", \"--no-trace\"], \"optional\": true, \"est_s\": 2},\n"
"    {\"name\": \"study-sgd-b1024-s{seed}\", \"verb\": \"train\",\n"
"     \"foreach\": {\"seed\": [1, 2]},\n"
"     \"args\": [\"--optim\", \"sgd\", \"--lr-base\", \"0.00625\",\n"
"              \"--global-batch\", \"1024\", \"--seed\", \"{seed}\",\n"
"              \"--epochs\", \"{study_epochs}\", \"--subset\",\n"
"              \"{study_subset}\", \"--val\", \"1000\", \"--test-subset\",\n"
"              \"2000\", \"--no-trace\"], \"optional\": true, \"est_s\": 2},\n"
"    {\"name\": \"study-lamb-b{batch}-s{seed}\", \"verb\": \"train\",\n"
"     \"foreach\": {\"batch\": [128, 1024], \"seed\": [1, 2]},\n"
"     \"args\": [\"--optim\", \"lamb\", \"--lr-base\", \"0.007\",\n"
"              \"--global-batch\", \"{batch}\", \"--seed\", \"{seed}\",\n"
"              \"--epochs\", \"{study_epochs}\", \"--subset\",\n"
"              \"{study_subset}\", \"--val\", \"1000\", \"--test-subset\",\n"
"              \"2000\", \"--no-trace\"], \"optional\": true, \"est_s\": 2},\n"
"    {\"name\": \"sim-bert-large-{optim}\", \"verb\": \"sim\",\n"
"     \"foreach\": {\"optim\": \"@optimizers\"},\n"
"     \"args\": [\"sweep\", \"--model\", \"bert-large\", \"--platform\",\n"
"              \"{platform}\", \"--optim\", \"{optim}\", \"--gpus\",\n"
"              \"8..{max_gpus}\"], \"optional\": true, \"est_s\": 2},\n"
"    {\"name\": \"sim-bert-xl-{optim}\", \"verb\": \"sim\",\n"
"     \"foreach\": {\"optim\": [\"sgd\", \"lars\", \"lamb\", \"adamw\",\n"
"                 \"slamb\", \"jointspar\", \"jointspar_lars\", \"dmsgd\",\n"
"                 \"decentlam\"]},\n"
"     \"args\": [\"sweep\", \"--model\", \"bert-xl\", \"--platform\",\n"
"              \"{platform}\", \"--optim\", \"{optim}\", \"--gpus\",\n"
"              \"8..{max_gpus}\"], \"optional\": true, \"est_s\": 2},\n"
"    {\"name\": \"sim-netsweep-bert-xl\", \"verb\": \"sim\",\n"
"     \"args\": [\"netsweep\", \"--model\", \"bert-xl\", \"--platform\",\n"
"              \"dgx-a100\", \"--optim\", \"lamb,slamb,onebit_lamb\", \"--gpus\",\n"
"              \"1024\"], \"optional\": true, \"est_s\": 2},\n"
"    {\"name\": \"sim-anchors\", \"verb\": \"sim\", \"args\": [\"anchors\"],\n"
"     \"optional\": true, \"est_s\": 1},\n"
"    {\"name\": \"train-lamb+{c}\", \"verb\": \"train\",\n"
"     \"ranks\": \"{train_ranks}\",\n"
"     \"foreach\": {\"c\": [\"topk:k=0.01,ef=1\", \"powersgd:r=4,ef=1\"]},\n"
"     \"args\": [\"--optim\", \"lamb\", \"--compress\", \"{c}\", \"--epochs\",\n"
"              \"{train_epochs}\"], \"optional\": true, \"est_s\": 45},\n"
"    {\"name\": \"sim-tradeoff-{p}\", \"verb\": \"sim\",\n"
"     \"foreach\": {\"p\": [\"dgx-a100\", \"eth-25g\"]},\n"
"     \"args\": [\"sweep\", \"--model\", \"bert-large\", \"--platform\", \"{p}\",\n"
"              \"--optim\", \"lamb_topk,lamb_powersgd\", \"--gpus\", \"1024\"],\n"
"     \"optional\": true, \"est_s\": 1},\n"
"    {\"name\": \"sim-tradeoff-eth-25g-lamb\", \"verb\": \"sim\",\n"
"     \"args\": [\"sweep\", \"--model\", \"bert-large\", \"--platform\",\n"
"              \"eth-25g\", \"--optim\", \"lamb\", \"--gpus\", \"1024\"],\n"
"     \"optional\": true, \"est_s\": 1}\n"
"  ]\n"
"}\n";

static const char demo_usage[] =
"usage: lbscale demo [--elements N] [--threads T] [--out DIR | --resume RUN]\n"
"                    [--set KEY=VALUE] [--dry-run] [--no-plot] [--json]\n"
"                    [--print-suite]";

static const char demo_about[] =
"Runs the default suite (about 2 minutes on a quiet 2-core machine, longer\n"
"when others share it) into one\n"
"results/<run-id>/: STREAM; the step of every optimizer and every\n"
"compressor, as a fraction of that STREAM; collectives on 1-4 ranks; LAMB\n"
"vs SLAMB training under mpirun; a small subset of the convergence study\n"
"(SGD-M and LAMB at batches 128 and 1024, seeds 1-2, 3 epochs of 6,144\n"
"images; statistics and the study figure by tools/study.py and\n"
"plots/study.gp); simulated scaling to 1,024 GPUs of BERT-Large and\n"
"BERT-XL on DGX-A100 for every optimizer.  Then it draws\n"
"the figures (RUN/plots/), writes RUN/report.html and prints a summary.\n"
"Entries whose verb is not built into this binary, or that need mpirun\n"
"where there is none, are skipped with a note.";

/* --elements N: checked here, passed to the entries as the suite var. */
static int elements_opt(const char *opt, const char *v, void *vars)
{
    size_t n;
    if (cli_size(opt, v, &n))
        return -EINVAL;
    json_object_set_new(vars, "elements", json_string(v));
    return 0;
}

/* --threads T: checked here, inherited by the children. */
static int threads_opt(const char *opt, const char *v, void *unused)
{
    (void)unused;
    long t;
    if (cli_int(opt, v, 1, 4096, &t))
        return -EINVAL;
    setenv("OMP_NUM_THREADS", v, 1);
    return 0;
}

static int print_suite(const char *opt, const char *v, void *unused)
{
    (void)opt, (void)v, (void)unused;
    fputs(demo_suite, stdout);
    return CLI_EXIT;
}

int verb_demo(int argc, char **argv)
{
    json_t *vars = json_object();
    struct suite_opts o = {.what = "demo", .file = "demo (built in)",
                           .text = demo_suite, .argc = argc, .argv = argv,
                           .vars = vars};
    const struct cli_opt opts[] = {
        {.name = "elements", .type = CLI_CALL, .fn = elements_opt,
         .dst = vars, .arg = "N",
         .help = "parameters per optimizer step (default 100M)"},
        {.name = "threads", .type = CLI_CALL, .fn = threads_opt, .arg = "T",
         .help = "OpenMP threads of the benchmarks (default: all cores)"},
        SUITE_RUN_OPTS(&o),
        {.name = "print-suite", .type = CLI_CALL, .fn = print_suite,
         .help = "print the built-in suite (edit it, run it with\n"
                 "lbscale suite FILE.json)"},
        {0}};
    const struct cli_verb verb = {.name = "demo", .usage = demo_usage,
                                  .about = demo_about, .opts = opts};
    int rc = cli_parse(&verb, argc, argv, NULL, NULL);
    if (rc) {
        rc = rc < 0 ? EXIT_BAD_INPUT : 0;
        goto out;
    }
    if (o.out && o.resume) {
        cli_error("demo", "--out and --resume exclude each other");
        rc = EXIT_BAD_INPUT;
        goto out;
    }
    rc = suite_main(&o);
out:
    json_decref(vars);
    return rc;
}
