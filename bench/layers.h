/* layers.h - synthetic parameter sets for benchmarks (bench/ only).
 * Ownership: layers_make allocates the layer array, names and buffers;
 * layers_free releases all of it. */
#ifndef LBS_LAYERS_H
#define LBS_LAYERS_H

#include "lbscale/error.h"
#include "lbscale/layer.h"

#define LAYERS_PRESETS_HELP \
"  flat          one 2-D tensor of N elements\n" \
"  uniform:K     K equal 2-D tensors (default uniform:16)\n" \
"  bert          BERT-like: 24 blocks of attention/FFN matrices, biases and\n" \
"                LayerNorm vectors, hidden size chosen so the total is ~N\n" \
"  bert-large    the real BERT-Large shapes (335M parameters; ignores N)\n" \
"  FILE.json     {\"layers\": [{\"name\": \"fc1.weight\", \"shape\": [512, 784]},\n" \
"                ...]} (ignores N; a regular file of at most 64 MiB)\n"

struct layer_set {
    struct lbs_layer *l;
    size_t n;         /* layers */
    size_t elements;  /* total */
};

int layers_make(const char *preset, size_t elements, unsigned seed,
                struct layer_set *out, struct lbs_err *err);
void layers_free(struct layer_set *s);
/* Validate a preset for `elements` without allocating (same errors as
 * layers_make), and refuse as bad input (-EINVAL) a parameter set whose
 * weights and gradients cannot fit in memory (memsize.h), naming
 * --elements or the --layers preset that fixes the size. */
int layers_check(const char *preset, size_t elements, struct lbs_err *err);

#endif
