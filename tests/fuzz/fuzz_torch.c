/* fuzz_torch.c - libFuzzer harness for the PyTorch profiler trace reader
 * (lbscale sim model import, sim/torch_import.c): Chrome trace JSON, the
 * legacy list or Kineto's object.  Every rejection must name the file; an
 * accepted input must give a model the model reader accepts back.  Seeds:
 * the fixtures of tests/data/torch (seeds.py).  Built by build.sh. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lbscale_sim.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct lbs_sim_torch_opts o = {.trace = "fuzz.json", .name = "f",
                                   .batch_per_gpu = 1, .bucket_mb = 25,
                                   .trace_sum = "crc32:0"};
    struct lbs_sim_torch_info in;
    struct lbs_err e = {{0}};
    char *model = NULL;
    int rc = lbs_sim_torch_import_mem(&o, (const char *)data, size, &model,
                                      &in, &e);
    if (rc) {
        if (!strstr(e.msg, "fuzz.json") && rc != -ENOMEM)
            abort();    /* an error that does not name the file */
    } else {
        struct lbs_sim_model *m = NULL;
        if (lbs_sim_model_parse(model, "model.json", &m, &e))
            abort();    /* what it made must read back */
        lbs_sim_model_free(m);
    }
    free(model);
    return 0;
}
