/* check_compress.c - the CUDA compressors against the CPU reference, in
 * the style of dav1d's checkasm: the same input goes through lbs_compress
 * (the reference) and lbs_cuda_compress, the results are compared, then
 * both are timed.
 *
 * What must agree, and how closely:
 *   topk, randk  payload bytes, decoded values and the ef residual after
 *                two steps (the second adds g to an old residual, and for
 *                randk draws a new mask): bit-identical.
 *   sign         the bit bytes: identical (ef=1: the first step only;
 *                after it the residuals differ by the scale difference,
 *                and an element of g + e near 0 may take either sign).
 *                The scale: relative difference <= SCALE_TOL (1e-4).  The CPU sums float
 *                partials of up to 1024 elements per SSE lane (relative
 *                error up to about 1024 * 2^-24 = 6.1e-5), the GPU sums in
 *                double.  Decoding the CPU's payload on the GPU:
 *                bit-identical; decoding each side's own payload: differs
 *                by the scale difference; the ef residual by that plus one
 *                rounding (2^-23 (|x| + scale)).
 *   NaN          the GPU's arithmetic returns the canonical NaN where the
 *                CPU propagates an operand's NaN bits, so a decoded or
 *                residual value matches when both are NaN; payload values
 *                are copies and must match bit for bit.
 * Inputs: a Gaussian scale mixture (gradient-like), the same quantised to
 * a grid (many exact ties at the top-k cut, resolved to the lowest
 * indices), all ones (every element ties: top-k's degenerate path), one
 * with NaN, +-inf, +-0 and subnormals, and sizes 1, 5, 31, 33 and 1000
 * (partial sign words and bytes, K = n).
 *
 * Output: one line per case, then a timing table (median of the compress
 * call on the CPU with OMP_NUM_THREADS threads - 2 under meson test - and
 * on the GPU, each call waited for).  Exit 0 when every
 * case agrees, 1 otherwise, 77 (skipped, "SKIP: why") without a CUDA
 * build or a GPU (a GPU that CUDA cannot use fails: check_common.h).
 *   check_compress [--elements N] [--no-bench]     (default N = 4M)
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lbs_config.h"
#include "check_common.h"
#include "lbs_cuda.h"
#include "lbs_cuda_compress.h"
#include "lbscale/compress.h"
#include "lbscale/rng.h"

#define SCALE_TOL 1e-4
#define BENCH_ITERS 5

enum input { IN_GAUSS, IN_QUANT, IN_ONES, IN_SPECIAL, NINPUT };
static const char *const input_names[] = {"gauss", "quant", "ones",
                                          "special"};

/* The cases: every compressor in the registry whose ops table has GPU
 * kernels, with the cases and exactness its table lists (struct
 * lbs_compress_device), so a new compressor with a GPU hook is checked
 * here without a new test file.  A compressor with exact = 0 (sign) has a
 * leading float scale compared to SCALE_TOL, the rest bit for bit. */

/* The input of one kind; `salt` makes step 1's gradient differ. */
static void make_input(float *x, size_t n, enum input kind, uint64_t salt)
{
    uint64_t key = lbs_rng_key(0xc0ffee ^ salt, 0, (uint64_t)kind);
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) {
        double u1 = lbs_rng_uniform(key, 2 * i),
               u2 = lbs_rng_uniform(key, 2 * i + 1),
               sc = exp(2.0 * lbs_rng_uniform(key, (i / 1024) | 1ull << 62));
        double z = sqrt(-2 * log(1 - u1)) * cos(6.283185307179586 * u2);
        float v = (float)(z * sc * 1e-3);
        switch (kind) {
        case IN_GAUSS: x[i] = v; break;
        case IN_QUANT: x[i] = roundf(v * 2e3f) / 2e3f; break;
        case IN_ONES: x[i] = 1.0f; break;
        case IN_SPECIAL: {
            static const float sp[] = {NAN, INFINITY, -INFINITY, 0.0f,
                                       -0.0f, 1e-40f, -1e-42f};
            uint64_t r = lbs_rng_below(key, i | 1ull << 63, 64);
            x[i] = r < 7 ? sp[r] : v;
            break;
        }
        case NINPUT: break;
        }
    }
}

/* Same bits, or both NaN (results of arithmetic; see the header). */
static long count_diff(const float *a, const float *b, size_t n,
                       double tol, const float *x, double scale)
{
    long bad = 0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(a[i]) && isnan(b[i]))
            continue;
        if (tol == 0)
            bad += memcmp(&a[i], &b[i], 4) != 0;
        else   /* sign: scale difference, plus one rounding for x -+ s */
            bad += !(fabs((double)a[i] - b[i]) <=
                     tol + (x ? 0x1p-23 * (fabs(x[i]) + scale) : 0));
    }
    return bad;
}

struct bufs {
    float *x, *x2, *dx, *dout, *out_c, *out_g, *e_c, *e_g;
    void *p_c, *p_g, *dp;
};

static void bufs_free(struct bufs *b)
{
    free(b->x); free(b->x2); free(b->out_c); free(b->out_g);
    free(b->e_c); free(b->e_g); free(b->p_c); free(b->p_g);
    lbs_cuda_mem_free(b->dx);
    lbs_cuda_mem_free(b->dout);
    lbs_cuda_mem_free(b->dp);
}

/* One case: 0 agree, 1 disagree (line printed either way), <0 error. */
static int run_case(const char *spec, int exact, enum input kind, size_t n,
                    struct lbs_err *err)
{
    struct lbs_compressor *c = NULL;
    struct lbs_cuda_compressor *g = NULL;
    struct bufs b = {0};
    int rc = lbs_compressor_new(spec, &c, err);
    if (!rc)
        rc = lbs_cuda_compressor_new(spec, &g, err);
    if (rc)
        goto out;
    const int sign = !exact, ef = lbs_compressor_ef(c);
    size_t maxb = lbs_compress_max_bytes(c, n);
    b.x = malloc(n * 4); b.x2 = malloc(n * 4);
    b.out_c = malloc(n * 4); b.out_g = malloc(n * 4);
    b.e_c = malloc(n * 4); b.e_g = malloc(n * 4);
    b.p_c = malloc(maxb + 8); b.p_g = malloc(maxb + 8);
    if (!b.x || !b.x2 || !b.out_c || !b.out_g || !b.e_c || !b.e_g ||
        !b.p_c || !b.p_g) {
        rc = lbs_err_set(err, -ENOMEM, "out of memory");
        goto out;
    }
    if ((rc = lbs_cuda_mem_alloc((void **)&b.dx, n * 4, err)) ||
        (rc = lbs_cuda_mem_alloc((void **)&b.dout, n * 4, err)) ||
        (rc = lbs_cuda_mem_alloc(&b.dp, maxb + 8, err)))
        goto out;
    make_input(b.x, n, kind, 0);
    if (ef)
        make_input(b.x2, n, kind, 1);
    long bad_p = 0, bad_d = 0, bad_x = 0, bad_e = 0;
    double sdiff = 0;
    /* ef: a second step on top of the first residual - except for sign,
     * whose residuals differ by the scales' difference, so an element of
     * g + e near 0 may then legitimately take another sign */
    for (int step = 0; step < (ef && !sign ? 2 : 1); step++) {
        const float *x = step ? b.x2 : b.x;
        size_t bc = 0, bg = 0;
        if ((rc = lbs_compress(c, x, n, 3, step, b.p_c, &bc, err)) ||
            (rc = lbs_decompress(c, b.p_c, bc, n, 3, step, b.out_c, err)) ||
            (rc = lbs_cuda_mem_put(b.dx, x, n * 4, err)) ||
            (rc = lbs_cuda_compress(g, b.dx, n, 3, step, b.dp, &bg, err)) ||
            (rc = lbs_cuda_mem_get(b.p_g, b.dp, bg, err)) ||
            (rc = lbs_cuda_decompress(g, b.dp, bg, n, 3, step, b.dout,
                                      err)) ||
            (rc = lbs_cuda_mem_get(b.out_g, b.dout, n * 4, err)))
            goto out;
        bad_p += bc != bg;
        size_t m = bc < bg ? bc : bg;
        double tol = 0, sc = 0;
        if (sign) {
            float s1, s2;
            memcpy(&s1, b.p_c, 4);
            memcpy(&s2, b.p_g, 4);
            double d = s1 ? fabs((double)s2 - s1) / fabs(s1) : fabs(s2);
            sdiff = fmax(sdiff, d);
            bad_p += !(d <= SCALE_TOL);
            bad_p += m > 4 && memcmp((char *)b.p_c + 4, (char *)b.p_g + 4,
                                     m - 4);
            tol = fabs((double)s2 - s1);
            sc = fabs(s1);
            /* the CPU's payload decoded on the GPU: bit for bit */
            if ((rc = lbs_cuda_mem_put(b.dp, b.p_c, bc, err)) ||
                (rc = lbs_cuda_decompress(g, b.dp, bc, n, 3, step, b.dout,
                                          err)) ||
                (rc = lbs_cuda_mem_get(b.e_g, b.dout, n * 4, err)))
                goto out;
            bad_x += count_diff(b.out_c, b.e_g, n, 0, NULL, 0);
        } else {
            bad_p += memcmp(b.p_c, b.p_g, m) != 0;
        }
        bad_d += count_diff(b.out_c, b.out_g, n, tol, NULL, 0);
        if (ef) {
            size_t en = 0;
            const float *e = lbs_compress_residual(c, 3, &en);
            if ((rc = lbs_cuda_compress_residual(g, 3, b.e_g, n, err)))
                goto out;
            bad_e += !e || en != n ? 1
                     : count_diff(e, b.e_g, n, tol, x, sc);
        }
    }
    int fail = bad_p || bad_d || bad_x || bad_e;
    printf("  %-28s %-8s %9zu  %-6s payload %ld  decode %ld", spec,
           input_names[kind], n, fail ? "FAILED" : "ok", bad_p, bad_d);
    if (sign)
        printf("  cpu-payload decode %ld  scale rel diff %.2e", bad_x, sdiff);
    if (ef)
        printf("  residual %ld", bad_e);
    printf("\n");
    rc = fail;
out:
    bufs_free(&b);
    lbs_cuda_compressor_free(g);
    lbs_compressor_free(c);
    return rc;
}

/* Median compress time of the CPU and the GPU on the gradient input. */
static int bench(const char *spec, size_t n, struct lbs_err *err)
{
    struct lbs_compressor *c = NULL;
    struct lbs_cuda_compressor *g = NULL;
    struct bufs b = {0};
    double tc[BENCH_ITERS], tg[BENCH_ITERS];
    int rc = lbs_compressor_new(spec, &c, err);
    if (!rc)
        rc = lbs_cuda_compressor_new(spec, &g, err);
    if (rc)
        goto out;
    size_t maxb = lbs_compress_max_bytes(c, n), bytes;
    b.x = malloc(n * 4);
    b.p_c = malloc(maxb + 8);
    if (!b.x || !b.p_c) {
        rc = lbs_err_set(err, -ENOMEM, "out of memory");
        goto out;
    }
    make_input(b.x, n, IN_GAUSS, 0);
    if ((rc = lbs_cuda_mem_alloc((void **)&b.dx, n * 4, err)) ||
        (rc = lbs_cuda_mem_alloc(&b.dp, maxb + 8, err)) ||
        (rc = lbs_cuda_mem_put(b.dx, b.x, n * 4, err)))
        goto out;
    for (int i = -1; i < BENCH_ITERS && !rc; i++) {   /* -1: warm-up */
        double t0 = check_now();
        rc = lbs_compress(c, b.x, n, 0, i + 1, b.p_c, &bytes, err);
        double t1 = check_now();
        if (!rc)
            rc = lbs_cuda_compress(g, b.dx, n, 0, i + 1, b.dp, &bytes, err);
        double t2 = check_now();
        if (i >= 0) {
            tc[i] = t1 - t0;
            tg[i] = t2 - t1;
        }
    }
    if (rc)
        goto out;
    double mc = check_median(tc, BENCH_ITERS),
           mg = check_median(tg, BENCH_ITERS);
    printf("  %-28s %10zu %10.3f %10.3f %9.1f %8.1fx\n", spec, n, mc * 1e3,
           mg * 1e3, 4.0 * (double)n / mg / 1e9, mc / mg);
out:
    bufs_free(&b);
    lbs_cuda_compressor_free(g);
    lbs_compressor_free(c);
    return rc;
}

int main(int argc, char **argv)
{
    size_t n = 4u << 20;
    int do_bench = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--no-bench")) {
            do_bench = 0;
        } else if (!strcmp(argv[i], "--elements") && i + 1 < argc) {
            n = strtoul(argv[++i], NULL, 10);
        } else {
            fprintf(stderr, "usage: check_compress [--elements N] "
                    "[--no-bench]\n");
            return 2;
        }
    }
    struct lbs_err e = {{0}};
    char gpu[256];
    if (!LBS_HAVE_CUDA || lbs_cuda_probe(gpu, sizeof gpu, &e) < 0) {
        /* skip only without CUDA or without any GPU (check_common.h) */
        if (LBS_HAVE_CUDA && lbs_gpu_present()) {
            printf("FAILED: an NVIDIA GPU is present but CUDA cannot use "
                   "it: %s\n", e.msg);
            return 1;
        }
        printf("SKIP: %s\n", LBS_HAVE_CUDA ? e.msg
               : "this lbscale was built without CUDA");
        return 77;
    }
    printf("check_compress: CPU compressors vs CUDA on %s\n", gpu);
    static const size_t small[] = {1, 5, 31, 33, 1000};
    int fails = 0, runs = 0, rc = 0;
    for (const char *const *nm = lbs_compressor_names(); *nm && rc >= 0;
         nm++) {
        struct lbs_compressor_props p;
        if (lbs_compressor_props(*nm, &p, NULL) || !p.device)
            continue;
        const struct lbs_compress_device *d = p.device;
        for (const struct lbs_compress_device_check *k = d->checks;
             k->spec && rc >= 0; k++) {
            for (int in = 0; in < NINPUT && rc >= 0; in++) {
                if (in == IN_SPECIAL && k->finite_only)
                    continue;
                /* n + 37: not a multiple of 8, 32 or a block */
                rc = run_case(k->spec, d->exact, (enum input)in, n + 37, &e);
                fails += rc > 0;
                runs++;
            }
            for (size_t s = 0; s < sizeof small / sizeof *small && rc >= 0;
                 s++) {
                rc = run_case(k->spec, d->exact, IN_GAUSS, small[s], &e);
                fails += rc > 0;
                runs++;
            }
        }
    }
    if (rc < 0) {
        fprintf(stderr, "check_compress: %s\n", e.msg);
        return 1;
    }
    if (do_bench) {
        printf("# %-28s %10s %10s %10s %9s %9s\n", "compress", "elements",
               "cpu(ms)", "gpu(ms)", "gpu GB/s", "speedup");
        for (const char *const *nm = lbs_compressor_names(); *nm && !rc;
             nm++) {
            struct lbs_compressor_props p;
            if (lbs_compressor_props(*nm, &p, NULL) || !p.device)
                continue;
            for (const struct lbs_compress_device_check *k =
                     p.device->checks; k->spec && !rc; k++)
                rc = bench(k->spec, n, &e);
        }
        if (rc) {
            fprintf(stderr, "check_compress: %s\n", e.msg);
            return 1;
        }
    }
    printf("%s: %d of %d cases disagree\n", fails ? "FAILED" : "ok", fails,
           runs);
    return fails ? 1 : 0;
}
