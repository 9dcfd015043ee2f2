/* fuzz_chakra.c - libFuzzer harness for the Chakra execution-trace reader
 * (lbscale sim import --chakra, sim/chakra.c): varint32-length-delimited
 * protobuf messages unpacked by protobuf-c, then the collectives turned
 * into trace-v1 lines.  Every rejection must name the file; an accepted
 * input must write a header and at least one call line that the trace-v1
 * reader accepts back.  Seeds: traces `sim export --chakra` writes
 * (seeds.py).  Built by tests/fuzz/build.sh. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lbscale_sim.h"

static struct lbs_sim_model *model(void)
{
    static struct lbs_sim_model *m;
    if (!m) {
        const char *t =
            "{\"format\": \"lbscale-model\", \"version\": 1, \"name\": \"f\","
            " \"efficiency\": 0.5, \"batch_per_gpu\": 1, \"bucket_mb\": 0.001,"
            " \"layers\": ["
            " {\"name\": \"a\", \"shape\": [64, 64], \"fwd_gflops\": 1},"
            " {\"name\": \"b\", \"shape\": [64], \"fwd_gflops\": 0}]}";
        if (lbs_sim_model_parse(t, "f.json", &m, NULL))
            abort();
    }
    return m;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = NULL;
    size_t len = 0, n = 0, skipped = 0;
    struct lbs_err e = {{0}};
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return 0;
    int rc = lbs_sim_chakra_import_mem("fuzz.et", data, size, model(), 0, f,
                                       &n, &skipped, &e);
    fclose(f);
    if (rc) {
        if (!strstr(e.msg, "fuzz.et") && rc != -ENOMEM)
            abort();    /* an error that does not name the file */
    } else {
        struct lbs_sim_plan *p = NULL;
        if (n < 1 || lbs_sim_trace_parse(text, len, "import.jsonl", &p, &e))
            abort();    /* what it wrote must read back */
        lbs_sim_plan_free(p);
    }
    free(text);
    return 0;
}
