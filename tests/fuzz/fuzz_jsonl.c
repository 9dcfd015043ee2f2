/* fuzz_jsonl.c - libFuzzer harness for the results readers behind
 * `lbscale report`, `check` and `plot`: lbs_jsonl_load and what report
 * and check do with the rows.  Input: first byte picks the file of a run
 * directory (suite, stream, optim, compress, coll, train, sim .jsonl, or
 * meta.json), the rest is its content, written into a scratch run on
 * tmpfs.  Then: lbs_jsonl_load must give NULL (with a message naming
 * the file) or an array of objects; report's summary tables are built
 * from the run; `check` compares it with a small baseline for that file
 * (every rule, a dotted field).
 * Output goes to /dev/null.  Built by tests/fuzz/build.sh (run with
 * -close_fd_mask=3).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "report.h"
#include "results.h"

static const char *const files[] = {"suite.jsonl", "stream.jsonl",
    "optim.jsonl", "compress.jsonl", "coll.jsonl", "train.jsonl",
    "sim.jsonl", "meta.json"};
#define NFILES (sizeof files / sizeof files[0])

/* One small baseline per results file, one metric per rule and a dotted
 * field, written once: check's matching, medians and rules run on every
 * input without parsing the repository's larger baselines each time. */
static const char *const metrics[NFILES] = {
    "{\"file\": \"suite\", \"where\": {\"event\": \"entry\"}, \"field\": \"wall_s\", \"rule\": \"rise\", \"baseline\": 1}",
    "{\"file\": \"stream\", \"where\": {\"threads\": 2}, \"field\": \"triad_gbps\", \"rule\": \"drop\", \"baseline\": 10}",
    "{\"file\": \"optim\", \"where\": {\"optim\": \"lamb\"}, \"field\": \"roofline_frac\", \"rule\": \"drop\", \"baseline\": 0.5, \"margin\": 0.3}",
    "{\"file\": \"compress\", \"where\": {\"compressor\": \"topk\", \"elements\": 4000000}, \"field\": \"wire_bytes\", \"rule\": \"exact\", \"baseline\": 320000}",
    "{\"file\": \"coll\", \"where\": {\"coll\": \"allreduce\", \"bytes\": 8}, \"field\": \"time_us\", \"rule\": \"rise\", \"baseline\": 9}",
    "{\"file\": \"train\", \"where\": {\"event\": \"final\"}, \"field\": \"curve.0.test_accuracy\", \"rule\": \"drop\", \"baseline\": 0.8}",
    "{\"file\": \"sim\", \"where\": {\"optim\": \"lamb\", \"gpus\": 8}, \"field\": \"iter_ms\", \"rule\": \"rel\", \"tol\": 1e-6, \"baseline\": 106.8}",
    NULL,
};

static char run[64], base[NFILES][96];
static FILE *devnull;

static void setup(void)
{
    const char *tmp = access("/dev/shm", W_OK) ? "/tmp" : "/dev/shm";
    static char top[64];
    snprintf(top, sizeof top, "%s/lbs-fuzz-jsonl.XXXXXX", tmp);
    if (!mkdtemp(top) || !(devnull = fopen("/dev/null", "w")))
        abort();
    snprintf(run, sizeof run, "%s/run", top);
    if (mkdir(run, 0700))
        abort();
    for (size_t i = 0; i < NFILES; i++) {
        if (!metrics[i])
            continue;
        snprintf(base[i], sizeof base[i], "%s/base%zu.json", top, i);
        FILE *f = fopen(base[i], "w");
        if (!f || fprintf(f, "{\"format\": \"lbscale-baseline\", "
                          "\"version\": 1, \"name\": \"fuzz\", "
                          "\"metrics\": [%s]}\n", metrics[i]) < 0 ||
            fclose(f))
            abort();
    }
}

static void check_rows(const char *path)
{
    struct lbs_err e = {{0}};
    json_t *rows = lbs_jsonl_load(path, &e);
    size_t i;
    json_t *r;
    if (!rows && !strstr(e.msg, path))
        abort();
    json_array_foreach(rows, i, r)
        if (!json_is_object(r))
            abort();
    json_decref(rows);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[128];
    if (size < 1)
        return 0;
    if (!run[0])
        setup();
    const char *name = files[data[0] % NFILES];
    snprintf(path, sizeof path, "%s/%s", run, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data + 1, 1, size - 1, f) != size - 1 || fclose(f))
        abort();
    size_t k = data[0] % NFILES;
    if (metrics[k])
        check_rows(path);
    report_summary_text(run, devnull);
    if (metrics[k]) {
        char *argv[] = {"check", run, "--baseline", base[k], NULL};
        verb_check(4, argv);
    }
    unlink(path);
    return 0;
}
