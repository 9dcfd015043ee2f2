/* psgd_dump.c SPEC ROWS COLS STEPS - run a compressor (PowerSGD) on the
 * ROWS x COLS float32 matrix read from stdin for STEPS steps (warm start
 * carried between them) and write, per step, the decoded matrix and then
 * the payload's first factor P (ROWS x r) as float32 on stdout, for
 * tests/psgd_ref.py to hold against numpy's SVD. */
#include <stdio.h>
#include <stdlib.h>

#include "lbscale/compress.h"

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: psgd_dump SPEC ROWS COLS STEPS\n");
        return 2;
    }
    size_t rows = strtoul(argv[2], NULL, 10), cols = strtoul(argv[3], NULL, 10);
    long steps = strtol(argv[4], NULL, 10);
    size_t n = rows * cols;
    struct lbs_err e;
    struct lbs_compressor *c;
    if (lbs_compressor_new(argv[1], &c, &e)) {
        fprintf(stderr, "%s\n", e.msg);
        return 2;
    }
    size_t cap = lbs_compress_max_bytes(c, n), bytes;
    float *x = malloc(n * sizeof *x), *out = malloc(n * sizeof *out);
    void *p = malloc(cap);
    if (!x || !out || !p || fread(x, sizeof *x, n, stdin) != n) {
        fprintf(stderr, "psgd_dump: cannot read %zu floats\n", n);
        return 1;
    }
    for (long s = 0; s < steps; s++) {
        if (lbs_compress(c, x, n, 0, s, p, &bytes, &e) ||
            lbs_decompress(c, p, bytes, n, 0, s, out, &e)) {
            fprintf(stderr, "step %ld: %s\n", s, e.msg);
            return 1;
        }
        /* the payload is [P | Q]: 4 r (rows + cols) bytes */
        size_t r = bytes / 4 / (rows + cols);
        if (fwrite(out, sizeof *out, n, stdout) != n ||
            fwrite(p, sizeof(float), rows * r, stdout) != rows * r)
            return 1;
    }
    lbs_compressor_free(c);
    free(x);
    free(out);
    free(p);
    return 0;
}
