/* fuzz_spec.c - libFuzzer harness for spec strings ("name:key=value,...")
 * through core's one parser, as an optimizer spec and as a compressor
 * spec.  An accepted spec must record an effective list that reads back
 * to the same list (issue 14: recorded specs reproduce their runs), and
 * must run: one optimizer step on a 2-layer problem, one compress /
 * decompress round of 64 values.  Input: the spec (up to 1 KB, cut at a
 * NUL).  Built by tests/fuzz/build.sh.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lbscale/compress.h"
#include "lbscale/optim.h"

static void recorded_same(const char *name, const char *params,
                          const char *again)
{
    if (strcmp(params, again)) {
        fprintf(stderr, "%s: recorded '%s', read back as '%s'\n", name,
                params, again);
        abort();
    }
}

static void optim_spec(const char *spec)
{
    float w0[3] = {0.5f, -0.25f, 1}, w1[4] = {1, 2, 3, -4};
    float g0[3] = {0.1f, 0.2f, -0.3f}, g1[4] = {-1, 0.5f, 0.25f, 2};
    struct lbs_layer l[2] = {
        {.name = "a", .w = w0, .g = g0, .n = 3, .ndim = 1, .shape = {3}},
        {.name = "b", .w = w1, .g = g1, .n = 4, .ndim = 2, .shape = {2, 2}},
    };
    struct lbs_optim *o, *o2;
    struct lbs_err e;
    char rec[1200];
    if (lbs_optim_new(spec, l, 2, NULL, &o, &e))
        return;
    snprintf(rec, sizeof rec, "%s:%s", lbs_optim_name(o),
             lbs_optim_params(o));
    if (lbs_optim_new(rec, l, 2, NULL, &o2, &e)) {
        fprintf(stderr, "'%s' recorded as '%s', refused: %s\n", spec, rec,
                e.msg);
        abort();
    }
    recorded_same(spec, lbs_optim_params(o), lbs_optim_params(o2));
    lbs_optim_free(o2);
    lbs_optim_step(o, &e);   /* may refuse (NaN), must not crash */
    lbs_optim_free(o);
}

static void compressor_spec(const char *spec)
{
    struct lbs_compressor *c, *c2;
    struct lbs_err e;
    char rec[1200];
    if (lbs_compressor_new(spec, &c, &e))
        return;
    snprintf(rec, sizeof rec, "%s:%s", lbs_compressor_name(c),
             lbs_compressor_params(c));
    if (lbs_compressor_new(rec, &c2, &e)) {
        fprintf(stderr, "'%s' recorded as '%s', refused: %s\n", spec, rec,
                e.msg);
        abort();
    }
    recorded_same(spec, lbs_compressor_params(c), lbs_compressor_params(c2));
    lbs_compressor_free(c2);
    float x[64], out[64];
    for (int i = 0; i < 64; i++)
        x[i] = (float)((i * 37) % 17) - 8.0f;
    void *p = malloc(lbs_compress_max_bytes(c, 64) + 64);
    size_t bytes;
    if (p && !lbs_compress(c, x, 64, 0, 1, p, &bytes, &e)) {
        if (bytes > lbs_compress_max_bytes(c, 64))
            abort();
        lbs_decompress(c, p, bytes, 64, 0, 1, out, &e);
    }
    free(p);
    lbs_compressor_free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char spec[1025];
    size_t n = size < sizeof spec - 1 ? size : sizeof spec - 1;
    memcpy(spec, data, n);
    spec[n] = '\0';
    optim_spec(spec);
    compressor_spec(spec);
    return 0;
}
