/* compress_int.h - what the files of `lbscale compress` share
 * (compress_bench.c, compress_cuda.c). */
#ifndef LBS_COMPRESS_INT_H
#define LBS_COMPRESS_INT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "lbscale/compress.h"
#include "driver.h"
#include "lbs_cuda_compress.h"
#include "lbscale/error.h"

struct cbench_args {
    const char *spec, *save_input;
    size_t n;
    long iters, warmup;
    unsigned long seed;
    int threads;
    double stream_gbps;
    int cuda;           /* --device cuda */
};

/* The timed call: compress, then decompress, each step a new step
 * number (new masks); the payload bytes of the timed calls are summed. */
struct ckernel {
    const struct cbench_args *a;
    struct lbs_compressor *c;
    struct lbs_cuda_compressor *gc;   /* --device cuda */
    float *x, *out;                   /* device buffers with gc */
    void *p;
    double wire_sum;
    /* the sgemm reference (gemm.ngemm > 0): per call, the compressor's
     * compress + decompress seconds and the bare sgemm calls' seconds */
    struct lbs_compress_flops gemm;
    float *gp, *gq;
    double *t_ps, *t_ref;
    double slow;   /* planted slowdown of compress (cli_slowdown), 1: none */
};

/* compress_cuda.c */
int cbench_cuda_run(const struct cbench_args *a,
                    struct lbs_cuda_compressor *gc, const char *gpu,
                    double copy_gbps, json_t **row,
                    struct lbs_err *err);

/* compress_bench.c */
void cbench_make_input(float *x, size_t n, uint64_t seed);
int cbench_save_input(const char *path, const float *x, size_t n,
                      struct lbs_err *err);
int cbench_time(struct ckernel *k, const char *name, double ref_gbps,
                long wrong, struct bench_result *r,
                struct lbs_err *err);

#endif
