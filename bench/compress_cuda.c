/* compress_cuda.c - `lbscale compress --device cuda` (bench/
 * compress_bench.c is the verb and the CPU path). */
#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "compress_int.h"

/* ------------------------------------------------------------- cuda */

/* --device cuda: the device compressor (lbs_cuda_compress.h) on the same
 * input, checked against the CPU compressor on step 0 and timed like the
 * CPU path, against the device-to-device copy bandwidth measured in the
 * same run.  #wrong here counts disagreements with the CPU reference:
 * payload bytes (topk, randk: every byte; sign: every bit byte, and a
 * scale off by more than SIGN_SCALE_TOL relative), the decoded output and
 * the ef residual (bit-exact, sign: within the scale difference). */
#define SIGN_SCALE_TOL 1e-4

struct cuda_check {
    long wrong;
    double rel_err, kth, scale_diff;
    size_t bytes;
};

/* Elements of es (1 or 4) bytes whose bits differ. */
static long count_ne(const void *a, const void *b, size_t n, size_t es)
{
    const uint8_t *x = a, *y = b;
    long bad = 0;
    if (es == 4) {
#pragma omp parallel for reduction(+ : bad) schedule(static)
        for (size_t i = 0; i < n; i++) {
            uint32_t u, v;
            memcpy(&u, x + 4 * i, 4);
            memcpy(&v, y + 4 * i, 4);
            bad += u != v;
        }
    } else {
        for (size_t i = 0; i < n; i++)
            bad += x[i] != y[i];
    }
    return bad;
}

/* |a - b| <= tol elementwise, NaN-safe (a NaN counts). */
static long count_far(const float *a, const float *b, size_t n, double tol)
{
    long bad = 0;
#pragma omp parallel for reduction(+ : bad) schedule(static)
    for (size_t i = 0; i < n; i++)
        bad += !(fabs((double)a[i] - b[i]) <= tol);
    return bad;
}

static int cuda_check_step(const struct cbench_args *a,
                           struct lbs_cuda_compressor *gc, const float *x,
                           float *dx, void *dp, float *dout,
                           struct cuda_check *ck, struct lbs_err *err)
{
    size_t n = a->n;
    struct lbs_compressor *ref;
    int rc = lbs_compressor_new(a->spec, &ref, err);
    if (rc)
        return rc;
    const char *name = lbs_compressor_name(ref);
    size_t maxb = lbs_compress_max_bytes(ref, n), cb = 0;
    void *pc = calloc(1, maxb + 8), *pg = calloc(1, maxb + 8);
    float *oc = malloc(n * sizeof *oc), *og = malloc(n * sizeof *og);
    float *eg = NULL;
    if (!pc || !pg || !oc || !og) {
        rc = lbs_err_set(err, -ENOMEM, "out of memory for the reference");
        goto out;
    }
    if ((rc = lbs_compress(ref, x, n, 0, 0, pc, &cb, err)) ||
        (rc = lbs_decompress(ref, pc, cb, n, 0, 0, oc, err)) ||
        (rc = lbs_cuda_compress(gc, dx, n, 0, 0, dp, &ck->bytes, err)) ||
        (rc = lbs_cuda_decompress(gc, dp, ck->bytes, n, 0, 0, dout, err)) ||
        (rc = lbs_cuda_mem_get(pg, dp, ck->bytes, err)) ||
        (rc = lbs_cuda_mem_get(og, dout, n * sizeof *og, err)))
        goto out;
    long bad = ck->bytes != cb;
    size_t b = ck->bytes < cb ? ck->bytes : cb;
    double tol = 0;   /* allowed |D_gpu - D_cpu| */
    if (!strcmp(name, "sign")) {
        float sc, sg;
        memcpy(&sc, pc, 4);
        memcpy(&sg, pg, 4);
        ck->scale_diff = sc != 0 ? fabs((double)sg - sc) / fabs(sc)
                                 : fabs((double)sg);
        bad += !(ck->scale_diff <= SIGN_SCALE_TOL);
        bad += b > 4 ? count_ne((char *)pc + 4, (char *)pg + 4, b - 4, 1) : 0;
        tol = fabs((double)sg - sc);
    } else {
        bad += count_ne(pc, pg, b / 4, 4);
    }
    bad += tol ? count_far(oc, og, n, tol) : count_ne(oc, og, n, 4);
    if (lbs_compressor_ef(ref)) {
        size_t en;
        const float *e = lbs_compress_residual(ref, 0, &en);
        eg = malloc(n * sizeof *eg);
        if (!eg) {
            rc = lbs_err_set(err, -ENOMEM, "out of memory");
            goto out;
        }
        if ((rc = lbs_cuda_compress_residual(gc, 0, eg, n, err)))
            goto out;
        if (!e || en != n)
            bad++;
        else if (!tol)
            bad += count_ne(e, eg, n, 4);
        else {   /* e = x -+ scale: the scales' difference + a rounding */
#pragma omp parallel for reduction(+ : bad) schedule(static)
            for (size_t i = 0; i < n; i++)
                bad += !(fabs((double)e[i] - eg[i]) <=
                         tol + 0x1p-23 * (fabs(x[i]) + fabs(oc[i])));
        }
    }
    double d = 0, s = 0, kth = INFINITY;
#pragma omp parallel for reduction(+ : d, s) schedule(static)
    for (size_t i = 0; i < n; i++) {
        double q = (double)x[i] - og[i];
        d += q * q;
        s += (double)x[i] * x[i];
    }
    if (!strcmp(name, "topk"))   /* smallest kept magnitude (peer check) */
        for (size_t j = 0; j < ck->bytes / 8; j++)
            kth = fmin(kth, fabs(((const float *)pg)[ck->bytes / 8 + j]));
    ck->kth = isfinite(kth) ? kth : 0;
    ck->rel_err = s > 0 ? sqrt(d / s) : sqrt(d);
    ck->wrong = bad;
out:
    free(pc);
    free(pg);
    free(oc);
    free(og);
    free(eg);
    lbs_compressor_free(ref);
    return rc;
}

static json_t *cuda_row(const struct cbench_args *a,
                        struct lbs_compressor *ref, const char *gpu,
                        double copy_gbps, const struct cuda_check *ck,
                        const struct ckernel *k, const struct bench_result *r)
{
    const struct cli_stats *sc = &r->st[0], *sd = &r->st[1];
    double in = 4.0 * (double)a->n, gbps = r->gbps,
           read_ms = in / (copy_gbps * 1e9) * 1e3;
    json_t *row = json_pack(
        "{s:s,s:s,s:s,s:s,s:s,s:s,s:I,s:i,s:i,s:f,s:f,s:f,s:f,s:f,s:f,s:f,"
        "s:f,s:f,s:f,s:I,s:f,s:f,s:f,s:I}",
        "bench", "compress", "device", "cuda", "gpu", gpu, "compressor",
        lbs_compressor_name(ref), "params", lbs_compressor_params(ref),
        "collective", lbs_coll_name(lbs_compressor_collective(ref)),
        "elements", (json_int_t)a->n, "warmup", (int)a->warmup, "iters",
        (int)a->iters, "compress_ms_median", sc->median * 1e3,
        "compress_ms_min", sc->min * 1e3, "compress_ms_max", sc->max * 1e3,
        "decompress_ms_median", sd->median * 1e3, "gbps", gbps,
        "decompress_gbps", in / sd->median / 1e9, "copy_gbps", copy_gbps,
        "copy_frac", gbps / copy_gbps, "read_ms", read_ms, "read_x",
        sc->median * 1e3 / read_ms, "wire_bytes", (json_int_t)ck->bytes,
        "wire_bytes_mean", k->wire_sum / (double)a->iters,
        "compression_ratio", in / (double)ck->bytes, "rel_err", ck->rel_err,
        "wrong", (json_int_t)ck->wrong);
    if (row && ck->kth > 0)
        json_object_set_new(row, "kth_abs", json_real(ck->kth));
    if (row && !strcmp(lbs_compressor_name(ref), "sign"))
        json_object_set_new(row, "scale_rel_diff",
                            json_real(ck->scale_diff));
    if (row)
        json_object_set_new(row, "seed", json_integer((json_int_t)a->seed));
    return row;
}

int cbench_cuda_run(const struct cbench_args *a,
                    struct lbs_cuda_compressor *gc, const char *gpu,
                    double copy_gbps, json_t **row,
                    struct lbs_err *err)
{
    size_t n = a->n, maxb = lbs_cuda_compress_max_bytes(gc, n);
    float *x = malloc(n * sizeof *x);
    struct ckernel k = {.a = a, .gc = gc,
                        .slow = cli_slowdown("compress", a->spec)};
    struct lbs_compressor *ref = NULL;
    int rc = 0;
    if (!x) {
        rc = lbs_err_set(err, -ENOMEM, "out of memory for %zu elements", n);
        goto out;
    }
    cbench_make_input(x, n, a->seed);
    if (a->save_input &&
        (rc = cbench_save_input(a->save_input, x, n, err)))
        goto out;
    if ((rc = lbs_cuda_mem_alloc((void **)&k.x, n * sizeof *k.x, err)) ||
        (rc = lbs_cuda_mem_alloc((void **)&k.out, n * sizeof *k.out, err)) ||
        (rc = lbs_cuda_mem_alloc(&k.p, maxb + 8, err)) ||
        (rc = lbs_cuda_mem_put(k.x, x, n * sizeof *x, err)))
        goto out;
    struct cuda_check ck = {0};
    struct bench_result r;
    if ((rc = cuda_check_step(a, gc, x, k.x, k.p, k.out, &ck, err)) ||
        (rc = cbench_time(&k, "--device cuda", copy_gbps, ck.wrong, &r,
                          err)))
        goto out;
    if (!(rc = lbs_compressor_new(a->spec, &ref, err)) &&
        !(*row = cuda_row(a, ref, gpu, copy_gbps, &ck, &k, &r)))
        rc = lbs_err_set(err, -ENOMEM, "out of memory");
    bench_result_free(&r);
out:
    lbs_compressor_free(ref);
    lbs_cuda_mem_free(k.x);
    lbs_cuda_mem_free(k.out);
    lbs_cuda_mem_free(k.p);
    free(x);
    return rc;
}
