/* compress_bench.c - `lbscale compress`: one compressor on N gradient-like
 * floats, timed, against the machine's STREAM triad measured in the same
 * run.
 *
 * Input: a Gaussian scale mixture (N(0,1) times a log-normal scale per
 * block of 1024), heavier-tailed than a plain Gaussian as real gradients
 * are, generated from the counter generator (--seed) so any run and the
 * peer script (--save-input) see the same numbers.
 *
 * Step 0 is the check step: compress, decompress, relative error
 * ||x - D(C(x))|| / ||x||, wire bytes, and #wrong = violated invariants:
 * every compressor: finite output, payload == lbs_compress_wire_bytes
 * (fixed sizes) and <= max, the bytes a record comm logs for
 * lbs_compress_exchange == the payload in the declared collective, the
 * exchange result == D(C(x)); with ef=1 D + e == x; and per compressor:
 * none exact; fp16 and bf16 within half an ulp of their format (relative
 * 2^-11 and 2^-8, plus half the smallest subnormal); topk exactly K and a
 * magnitude prefix; thresh <= upper K and a magnitude prefix; randk and
 * cyclick copy x where they keep it; sign +-scale with x's sign; qsgd
 * within one level of x; powersgd error <= ||x||.
 * Steps 1.. are timed (warm-up first): compress and decompress separately.
 * GB/s = input bytes (4N) / median compress time.
 *
 * --device cuda runs the device compressor instead (see the cuda section
 * below): #wrong there is disagreement with the CPU compressor, and the
 * reference is the GPU's device-to-device copy bandwidth.
 */
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "lbs_cuda.h"
#include "lbs_cuda_compress.h"
#include "lbscale/compress.h"
#include "lbscale/isa.h"
#include "lbscale/rng.h"
#include "memsize.h"

struct cbench_args {
    const char *spec, *save_input;
    size_t n;
    long iters, warmup;
    unsigned long seed;
    int threads;
    double stream_gbps;
    int cuda;           /* --device cuda */
};

/* ------------------------------------------------------------ input */

static void make_input(float *x, size_t n, uint64_t seed)
{
    /* salted: the compressors key their masks with small seeds too, and
     * a mask drawn from the data's own stream would select by value */
    const uint64_t salt = lbs_mix64(seed ^ 0xda7a5eedc0ffeeull);
    const uint64_t key = lbs_rng_key(salt, 0, 0), bkey = lbs_rng_key(salt, 1, 0);
#pragma omp parallel for schedule(static)
    for (size_t b = 0; b < (n + 1023) / 1024; b++) {
        double u1 = lbs_rng_uniform(bkey, 2 * b), u2 = lbs_rng_uniform(bkey, 2 * b + 1);
        double sc = exp(0.7 * sqrt(-2 * log(1 - u1)) * cos(6.283185307179586 * u2));
        size_t end = (b + 1) * 1024 < n ? (b + 1) * 1024 : n;
        for (size_t i = b * 1024; i < end; i++) {
            uint64_t r = lbs_rng_u64(key, i);
            double v1 = (double)(r >> 32) * 0x1.0p-32,
                   v2 = (double)(uint32_t)r * 0x1.0p-32;
            double z = sqrt(-2 * log(1 - v1)) * cos(6.283185307179586 * v2);
            x[i] = (float)(z * sc * 1e-3);
        }
    }
}

static int save_input(const char *path, const float *x, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -EIO;
    size_t w = fwrite(x, sizeof *x, n, f);
    return fclose(f) == 0 && w == n ? 0 : -EIO;
}

/* ------------------------------------------------------ invariants */

struct check {
    double rel_err, thresh;   /* thresh: min |kept| of sparse ones */
    size_t bytes;
    long wrong;
};

/* Run lbs_compress_exchange of a fresh compressor on a record comm: the
 * logged bytes must be the payload, the result D(C(x)). */
static long exchange_wrong(const char *spec, const float *x, const float *out,
                           size_t n, size_t bytes, struct lbs_err *err)
{
    struct lbs_compressor *c;
    struct lbs_comm *comm;
    float *g = malloc(n * sizeof *g);
    long bad = 0;
    if (!g || lbs_compressor_new(spec, &c, err)) {
        free(g);
        return 1;
    }
    if (lbs_comm_record_new(1, &comm, err)) {
        lbs_compressor_free(c);
        free(g);
        return 1;
    }
    memcpy(g, x, n * sizeof *g);
    if (lbs_compress_exchange(c, comm, g, n, 0, 0, err)) {
        bad = 1;
    } else {
        size_t tot[LBS_COLL_COUNT];
        lbs_comm_record_totals(comm, tot, NULL);
        enum lbs_coll k = lbs_compressor_collective(c);
        size_t extra = k == LBS_COLL_ALLGATHERV ? 8 : 0;   /* the sizes */
        size_t all = 0;
        for (int j = 0; j < LBS_COLL_COUNT; j++)
            all += tot[j];
        bad += tot[k] != bytes || all != bytes + extra;
#pragma omp parallel for reduction(+ : bad) schedule(static)
        for (size_t i = 0; i < n; i++)
            bad += fabsf(g[i] - out[i]) > 1e-6f * fabsf(out[i]) + 1e-30f;
    }
    lbs_comm_free(comm);
    lbs_compressor_free(c);
    free(g);
    return bad;
}

static int check_step(const struct cbench_args *a, struct lbs_compressor *c,
                      const float *x, float *out, void *p, struct check *ck,
                      struct lbs_err *err)
{
    size_t n = a->n, wire = lbs_compress_wire_bytes(c, n, 0, 0);
    int rc = lbs_compress(c, x, n, 0, 0, p, &ck->bytes, err);
    if (!rc)
        rc = lbs_decompress(c, p, ck->bytes, n, 0, 0, out, err);
    if (rc)
        return rc;
    double d = 0, s = 0;
    long bad = 0;
#pragma omp parallel for reduction(+ : d, s, bad) schedule(static)
    for (size_t i = 0; i < n; i++) {
        double e = (double)x[i] - out[i];
        d += e * e;
        s += (double)x[i] * x[i];
        bad += !isfinite(out[i]);
    }
    ck->rel_err = s > 0 ? sqrt(d / s) : sqrt(d);
    bad += (wire && ck->bytes != wire) ||
           ck->bytes > lbs_compress_max_bytes(c, n);
    if (lbs_compressor_ef(c)) {   /* step 0: e_old = 0, so D + e == x */
        size_t en;
        const float *e = lbs_compress_residual(c, 0, &en);
        bad += !e || en != n;
        if (e && en == n) {
#pragma omp parallel for reduction(+ : bad) schedule(static)
            for (size_t i = 0; i < n; i++)
                bad += fabs((double)out[i] + e[i] - x[i]) >
                       2e-7 * (fabs(out[i]) + fabs(e[i]) + fabs(x[i])) +
                           1e-30;
        }
    }
    /* the compressor's own invariant, kept beside it in core/compress */
    struct lbs_compress_check cc = {.x = x, .out = out, .n = n, .payload = p,
                                    .bytes = ck->bytes,
                                    .rel_err = ck->rel_err,
                                    .min_kept = ck->thresh};
    bad += lbs_compress_wrong(c, &cc);
    ck->thresh = cc.min_kept;
    bad += exchange_wrong(a->spec, x, out, n, ck->bytes, err);
    ck->wrong = bad;
    return 0;
}

/* ------------------------------------------------------------ timing */

static int bench_run(const struct cbench_args *a, json_t **row,
                     struct lbs_err *err)
{
    size_t n = a->n;
    struct lbs_compressor *c;
    int rc = lbs_compressor_new(a->spec, &c, err);
    if (rc)
        return rc;
    float *x = malloc(n * sizeof *x), *out = malloc(n * sizeof *out);
    void *p = malloc(lbs_compress_max_bytes(c, n) + 64);
    double *tc = calloc((size_t)a->iters, sizeof *tc),
           *td = calloc((size_t)a->iters, sizeof *td),
           *tri = calloc((size_t)a->iters, sizeof *tri),
           *ratio = calloc((size_t)a->iters, sizeof *ratio);
    /* the roofline reference: a STREAM triad before every compress,
     * warm-up included (A B A B ...), as `lbscale optim` */
    struct stream_pair sp = {0};
    const int pair = a->stream_gbps <= 0;
    if (!x || !out || !p || !tc || !td || !tri || !ratio ||
        (pair && stream_pair_open(&sp, 32000000))) {
        rc = lbs_err_set(err, -ENOMEM, "out of memory for %zu elements", n);
        goto out;
    }
    make_input(x, n, a->seed);
    if (a->save_input && save_input(a->save_input, x, n)) {
        rc = lbs_err_set(err, -EIO, "cannot write --save-input %s",
                         a->save_input);
        goto out;
    }
    struct check ck = {0};
    if ((rc = check_step(a, c, x, out, p, &ck, err)))
        goto out;
    double wire_sum = 0;
    for (long i = 0; i < a->warmup + a->iters && !rc; i++) {
        size_t bytes;
        double tg = pair ? stream_pair_triad(&sp) : a->stream_gbps;
        double t0 = cli_now();
        rc = lbs_compress(c, x, n, 0, 1 + i, p, &bytes, err);
        double t1 = cli_now();
        if (!rc)
            rc = lbs_decompress(c, p, bytes, n, 0, 1 + i, out, err);
        double t2 = cli_now();
        if (i >= a->warmup) {
            tc[i - a->warmup] = t1 - t0;
            td[i - a->warmup] = t2 - t1;
            tri[i - a->warmup] = tg;
            ratio[i - a->warmup] = 4.0 * (double)n / (t1 - t0) / 1e9 / tg;
            wire_sum += (double)bytes;
        }
    }
    if (rc)
        goto out;
    if (pair && stream_pair_close(&sp) != 0) {
        rc = lbs_err_set(err, -EIO, "STREAM triad reference computed wrong "
                         "values");
        goto out;
    }
    struct cli_stats sc = cli_stats(tc, (size_t)a->iters),
                     sd = cli_stats(td, (size_t)a->iters),
                     ts = cli_stats(tri, (size_t)a->iters);
    char what[160];
    snprintf(what, sizeof what, "compress %s", lbs_compressor_name(c));
    double in = 4.0 * (double)n, gbps = in / sc.median / 1e9;
    struct cli_stats rs = pair ? roofline_pairs(what, ratio,
                                                (size_t)a->iters)
        : (struct cli_stats){.median = gbps / a->stream_gbps,
                             .min = in / sc.max / 1e9 / a->stream_gbps,
                             .max = in / sc.min / 1e9 / a->stream_gbps};
    *row = json_pack(
        "{s:s,s:s,s:s,s:s,s:I,s:i,s:i,s:i,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,"
        "s:I,s:f,s:f,s:f,s:I}",
        "bench", "compress", "compressor", lbs_compressor_name(c), "params",
        lbs_compressor_params(c), "collective",
        lbs_coll_name(lbs_compressor_collective(c)), "elements",
        (json_int_t)n, "threads", a->threads, "warmup", (int)a->warmup,
        "iters", (int)a->iters, "compress_ms_median", sc.median * 1e3,
        "compress_ms_min", sc.min * 1e3, "compress_ms_max", sc.max * 1e3,
        "decompress_ms_median", sd.median * 1e3, "gbps", gbps,
        "decompress_gbps", in / sd.median / 1e9, "stream_gbps",
        ts.median, "stream_frac", rs.median, "wire_bytes",
        (json_int_t)ck.bytes, "wire_bytes_mean", wire_sum / (double)a->iters,
        "compression_ratio", in / (double)ck.bytes, "rel_err", ck.rel_err,
        "wrong", (json_int_t)ck.wrong);
    if (ck.thresh > 0)
        json_object_set_new(*row, "kth_abs", json_real(ck.thresh));
    json_object_set_new(*row, "seed", json_integer((json_int_t)a->seed));
    json_object_set_new(*row, "compress_ms_mean", json_real(sc.mean * 1e3));
    json_object_set_new(*row, "compress_ms_sd", json_real(sc.sd * 1e3));
    json_object_set_new(*row, "outliers",
                        json_integer((json_int_t)sc.outliers));
    json_object_set_new(*row, "stream_frac_min", json_real(rs.min));
    json_object_set_new(*row, "stream_frac_max", json_real(rs.max));
    json_object_set_new(*row, "stream_ref", json_string(
        pair ? "triad interleaved with the compress calls (median of the "
               "pairs)" : "given (--stream-gbps)"));
    json_object_set_new(*row, "isa", json_string(lbs_isa_name()));
out:
    if (pair)
        stream_pair_close(&sp);
    free(tri);
    free(ratio);
    free(x);
    free(out);
    free(p);
    free(tc);
    free(td);
    lbs_compressor_free(c);
    return rc;
}

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

static int cuda_bench_run(const struct cbench_args *a,
                          struct lbs_cuda_compressor *gc, const char *gpu,
                          double copy_gbps, json_t **row,
                          struct lbs_err *err)
{
    size_t n = a->n, maxb = lbs_cuda_compress_max_bytes(gc, n);
    float *x = malloc(n * sizeof *x), *dx = NULL, *dout = NULL;
    void *dp = NULL;
    double *tc = calloc((size_t)a->iters, sizeof *tc),
           *td = calloc((size_t)a->iters, sizeof *td);
    struct lbs_compressor *ref = NULL;
    int rc = 0;
    if (!x || !tc || !td) {
        rc = lbs_err_set(err, -ENOMEM, "out of memory for %zu elements", n);
        goto out;
    }
    make_input(x, n, a->seed);
    if (a->save_input && save_input(a->save_input, x, n)) {
        rc = lbs_err_set(err, -EIO, "cannot write --save-input %s",
                         a->save_input);
        goto out;
    }
    if ((rc = lbs_cuda_mem_alloc((void **)&dx, n * sizeof *dx, err)) ||
        (rc = lbs_cuda_mem_alloc((void **)&dout, n * sizeof *dout, err)) ||
        (rc = lbs_cuda_mem_alloc(&dp, maxb + 8, err)) ||
        (rc = lbs_cuda_mem_put(dx, x, n * sizeof *x, err)))
        goto out;
    struct cuda_check ck = {0};
    if ((rc = cuda_check_step(a, gc, x, dx, dp, dout, &ck, err)))
        goto out;
    double wire_sum = 0;
    for (long i = 0; i < a->warmup + a->iters && !rc; i++) {
        size_t bytes = 0;
        double t0 = cli_now();
        rc = lbs_cuda_compress(gc, dx, n, 0, 1 + i, dp, &bytes, err);
        double t1 = cli_now();
        if (!rc)
            rc = lbs_cuda_decompress(gc, dp, bytes, n, 0, 1 + i, dout, err);
        double t2 = cli_now();
        if (i >= a->warmup) {
            tc[i - a->warmup] = t1 - t0;
            td[i - a->warmup] = t2 - t1;
            wire_sum += (double)bytes;
        }
    }
    if (rc || (rc = lbs_compressor_new(a->spec, &ref, err)))
        goto out;
    struct cli_stats sc = cli_stats(tc, (size_t)a->iters),
                     sd = cli_stats(td, (size_t)a->iters);
    double in = 4.0 * (double)n, gbps = in / sc.median / 1e9,
           read_ms = in / (copy_gbps * 1e9) * 1e3;
    *row = json_pack(
        "{s:s,s:s,s:s,s:s,s:s,s:s,s:I,s:i,s:i,s:f,s:f,s:f,s:f,s:f,s:f,s:f,"
        "s:f,s:f,s:f,s:I,s:f,s:f,s:f,s:I}",
        "bench", "compress", "device", "cuda", "gpu", gpu, "compressor",
        lbs_compressor_name(ref), "params", lbs_compressor_params(ref),
        "collective", lbs_coll_name(lbs_compressor_collective(ref)),
        "elements", (json_int_t)n, "warmup", (int)a->warmup, "iters",
        (int)a->iters, "compress_ms_median", sc.median * 1e3,
        "compress_ms_min", sc.min * 1e3, "compress_ms_max", sc.max * 1e3,
        "decompress_ms_median", sd.median * 1e3, "gbps", gbps,
        "decompress_gbps", in / sd.median / 1e9, "copy_gbps", copy_gbps,
        "copy_frac", gbps / copy_gbps, "read_ms", read_ms, "read_x",
        sc.median * 1e3 / read_ms, "wire_bytes", (json_int_t)ck.bytes,
        "wire_bytes_mean", wire_sum / (double)a->iters, "compression_ratio",
        in / (double)ck.bytes, "rel_err", ck.rel_err, "wrong",
        (json_int_t)ck.wrong);
    if (*row && ck.kth > 0)
        json_object_set_new(*row, "kth_abs", json_real(ck.kth));
    if (*row && !strcmp(lbs_compressor_name(ref), "sign"))
        json_object_set_new(*row, "scale_rel_diff",
                            json_real(ck.scale_diff));
    if (*row)
        json_object_set_new(*row, "seed", json_integer((json_int_t)a->seed));
    else
        rc = lbs_err_set(err, -ENOMEM, "out of memory");
out:
    lbs_compressor_free(ref);
    lbs_cuda_mem_free(dx);
    lbs_cuda_mem_free(dout);
    lbs_cuda_mem_free(dp);
    free(x);
    free(tc);
    free(td);
    return rc;
}

static void print_cuda_row(const json_t *r)
{
#define D(k) json_real_value(json_object_get(r, k))
#define I(k) (long long)json_integer_value(json_object_get(r, k))
#define S(k) json_string_value(json_object_get(r, k))
    printf("# %s (cuda); copy = device-to-device cudaMemcpy, read+write\n",
           S("gpu"));
    printf("# %-9s %10s %-10s %9s %8s %8s %9s %8s %8s %6s %6s %12s %8s %9s "
           "%6s\n", "compress", "elements", "collective", "comp(ms)",
           "min(ms)", "max(ms)", "dec(ms)", "GB/s", "copyGB/s", "ratio",
           "reads", "wire(B)", "x_smaller", "rel_err", "#wrong");
    printf("  %-9s %10lld %-10s %9.3f %8.3f %8.3f %9.3f %8.1f %8.1f %6.3f "
           "%6.2f %12lld %8.1f %9.3e %6lld\n", S("compressor"),
           I("elements"), S("collective"), D("compress_ms_median"),
           D("compress_ms_min"), D("compress_ms_max"),
           D("decompress_ms_median"), D("gbps"), D("copy_gbps"),
           D("copy_frac"), D("read_x"), I("wire_bytes"),
           D("compression_ratio"), D("rel_err"), I("wrong"));
#undef D
#undef I
#undef S
}

static void print_header(void)
{
    printf("# %-9s %10s %3s %-10s %9s %8s %8s %9s %7s %7s %6s %15s %-6s "
           "%12s %8s %9s %6s\n", "compress", "elements", "thr",
           "collective", "comp(ms)", "min(ms)", "max(ms)", "dec(ms)", "GB/s",
           "STREAM", "ratio", "[min, max]", "isa", "wire(B)", "x_smaller",
           "rel_err", "#wrong");
}

static void print_row(const json_t *r)
{
#define D(k) json_real_value(json_object_get(r, k))
#define I(k) (long long)json_integer_value(json_object_get(r, k))
#define S(k) json_string_value(json_object_get(r, k))
    printf("  %-9s %10lld %3lld %-10s %9.2f %8.2f %8.2f %9.2f %7.2f %7.2f "
           "%6.3f  [%5.3f, %5.3f] %-6s %12lld %8.1f %9.3e %6lld\n",
           S("compressor"), I("elements"),
           I("threads"), S("collective"), D("compress_ms_median"),
           D("compress_ms_min"), D("compress_ms_max"),
           D("decompress_ms_median"), D("gbps"), D("stream_gbps"),
           D("stream_frac"), D("stream_frac_min"), D("stream_frac_max"),
           S("isa") ? S("isa") : "-", I("wire_bytes"), D("compression_ratio"),
           D("rel_err"), I("wrong"));
#undef D
#undef I
#undef S
}

static struct cli_export export_to;   /* --export-csv / --export-markdown */

static int emit(const struct cli_common *com, struct lbs_run *run,
                json_t *row)
{
    struct lbs_err e;
    if (com->json) {
        char *s = json_dumps(row, JSON_COMPACT | JSON_PRESERVE_ORDER);
        puts(s);
        free(s);
    } else if (json_object_get(row, "gpu")) {
        print_cuda_row(row);
    } else {
        print_header();
        print_row(row);
        struct cli_stats st = {
            .mean = json_real_value(json_object_get(row, "compress_ms_mean")),
            .sd = json_real_value(json_object_get(row, "compress_ms_sd")),
            .median = json_real_value(json_object_get(row,
                                                      "compress_ms_median")),
            .min = json_real_value(json_object_get(row, "compress_ms_min")),
            .max = json_real_value(json_object_get(row, "compress_ms_max")),
            .n = (size_t)json_integer_value(json_object_get(row, "iters")),
            .outliers = (size_t)json_integer_value(
                json_object_get(row, "outliers"))};
        cli_timing_print(stdout, "  ", "compress", &st, 1, "ms");
    }
    static const char *const cols[] = {
        "compressor", "params", "elements", "threads", "iters",
        "compress_ms_mean", "compress_ms_sd", "compress_ms_median",
        "compress_ms_min", "compress_ms_max", "outliers",
        "decompress_ms_median", "gbps", "stream_frac", "wire_bytes",
        "rel_err", "wrong", NULL};
    if (cli_export_write(&export_to, "compress", row, cols))
        return -EIO;
    if (run && lbs_run_append(run, "compress", json_incref(row), &e)) {
        cli_error("compress", "%s", e.msg);
        return -EIO;
    }
    if (run && !com->json)
        fprintf(stderr, "results: %s/compress.jsonl\n", lbs_run_dir(run));
    return 0;
}

static int compress_main(struct cbench_args *a, const struct cli_common *com,
                         int argc, char **argv)
{
    struct lbs_err e;
    struct lbs_compressor *probe;
    int rc = lbs_compressor_new(a->spec, &probe, &e);
    if (rc) {   /* before anything is measured or written */
        cli_error("compress", "%s", e.msg);
        return cli_exit_code(rc);
    }
    lbs_compressor_free(probe);
    /* the input, the decompressed output and the payload (at most the
     * input's size): a size the machine cannot hold is bad input */
    char what[64];
    snprintf(what, sizeof what, "--elements %zu", a->n);
    if (!a->cuda && (rc = lbs_buffers_fit(a->n, sizeof(float), 3, what, &e))) {
        cli_error("compress", "%s", e.msg);
        return EXIT_BAD_INPUT;
    }
    char gpu[256] = "";
    struct lbs_cuda_compressor *gc = NULL;
    if (a->cuda) {   /* no CUDA build, no GPU, no kernel: bad input */
        if (lbs_cuda_probe(gpu, sizeof gpu, &e) < 0) {
            cli_error("compress", "--device cuda: %s", e.msg);
            return EXIT_BAD_INPUT;
        }
        if ((rc = lbs_cuda_compressor_new(a->spec, &gc, &e))) {
            cli_error("compress", "--device cuda: %s", e.msg);
            return cli_exit_code(rc);
        }
    }
    struct lbs_run *run = NULL;
    int orc = cli_open_run(com, "compress", argc, argv, &run);
    if (orc) {
        lbs_cuda_compressor_free(gc);
        return cli_exit_code(orc);
    }
    json_t *row = NULL;
    if (a->cuda) {
        /* the copy reference of `stream --device cuda` and `optim
         * --device cuda` (the better of cudaMemcpy and a copy kernel),
         * over the input's size but at least 64 MiB, so small inputs
         * still measure bandwidth, not latency */
        struct lbs_cuda_stream cs = {0};
        size_t cn = a->n > ((size_t)16 << 20) ? a->n : (size_t)16 << 20;
        rc = lbs_cuda_stream(cn, 10, &cs, &e);
        if (!rc && cs.wrong)
            rc = lbs_err_set(&e, -EIO, "device copy reference: %ld floats "
                             "copied wrong", cs.wrong);
        double copy = cs.memcpy_gbps > cs.kernel_gbps ? cs.memcpy_gbps
                                                      : cs.kernel_gbps;
        if (!rc)
            rc = cuda_bench_run(a, gc, gpu, copy, &row, &e);
        lbs_cuda_compressor_free(gc);
        goto done;
    }
    rc = bench_run(a, &row, &e);
done:
    if (rc)
        cli_error("compress", "%s", e.msg);
    else
        rc = emit(com, run, row);
    if (!rc && json_integer_value(json_object_get(row, "wrong"))) {
        cli_error("compress", a->cuda ? "%lld disagreement(s) with the CPU "
                  "compressor (#wrong)" : "%lld invariant(s) violated "
                  "(#wrong)",
                  (long long)json_integer_value(json_object_get(row, "wrong")));
        rc = -EIO;
    }
    json_decref(row);
    lbs_run_close(run);
    return cli_exit_code(rc);
}

static const char compress_usage[] =
"usage: lbscale compress --compressor SPEC [--elements N] [--threads T]\n"
"                        [--iters K] [--warmup W] [--seed S]\n"
"                        [--stream-gbps X] [--save-input FILE] [--json]\n"
"                        [--isa c|avx2|avx512]\n"
"       lbscale compress --device cuda --compressor SPEC [--elements N]\n"
"                        [--iters K] [--warmup W] [--seed S] [--json] ...\n"
"       lbscale compress --list            compressors and their keys\n"
"       lbscale compress --help [NAME]     this help, or one compressor's";

static const char compress_about[] =
"Compresses N gradient-like fp32 values (a Gaussian scale mixture) as one\n"
"layer: warm-up W steps, then K timed steps (median, min, max), compress\n"
"and decompress timed separately, each step a new step number (new masks).\n"
"GB/s = 4N input bytes / median compress time.  ratio: a STREAM triad\n"
"(3 x 32M doubles, same threads) runs before every compress, warm-up\n"
"included (A B A B ...); each pair gives compress GB/s / triad GB/s and\n"
"the row shows their median [min, max] (STREAM = median triad GB/s); a\n"
"ratio above 1.05 prints a warning (bytes model or measurement wrong).\n"
"--stream-gbps X divides by X instead (no pairs, no warning).\n"
"wire(B) = payload bytes of the check step, x_smaller = 4N / wire,\n"
"rel_err = ||x - D(C(x))|| / ||x||, #wrong = violated invariants (payload\n"
"size, record-backend bytes, exchange result, error feedback, and the\n"
"compressor's own: exact top-k, magnitude prefix, +-scale, one QSGD level).\n"
"ef=1 adds the residual passes to the timed compress.\n"
"\n"
"--device cuda (topk, randk, sign; ef=0|1): the same input on the first\n"
"GPU, compress/decompress between device buffers, each call waited for.\n"
"Step 0 is checked against the CPU compressor: #wrong = payload bytes,\n"
"decoded values and ef residual that differ (bit-exact; sign's scale may\n"
"differ by 1e-4 relative, its decode and residual by that difference).\n"
"ratio = GB/s / device-to-device cudaMemcpy GB/s (read + write counted)\n"
"measured in the same run; reads = compress time / time of one read of\n"
"the 4N input bytes at that copy bandwidth.  No CUDA build or no GPU: one\n"
"line on stderr, exit 2, nothing written.";

/* --list: every compressor and its keys. */
static int list_compressors(const char *opt, const char *value, void *unused)
{
    (void)opt, (void)value, (void)unused;
    lbs_compressor_help(NULL, stdout);
    return CLI_EXIT;
}

int verb_compress(int argc, char **argv)
{
    struct cli_common com = {.save = 1};
    struct cbench_args a = {.n = 100000000, .iters = 10, .warmup = 2,
                            .seed = 1};
    long threads = 0, seed = 1;
    int help = 0, device = 0;
    static const char *const devices[] = {"cpu", "cuda", NULL};
    const struct cli_opt opts[] = {
        {.name = "compressor", .type = CLI_STR, .dst = &a.spec, .arg = "S",
         .help = "e.g. topk:k=0.01 or sign:ef=1 (see --list)"},
        {.name = "elements", .type = CLI_SIZE, .dst = &a.n, .arg = "N",
         .hi = UINT32_MAX - 1.0,   /* 32-bit indices */
         .help = "values (default 100M; suffixes K M G, Ki Mi Gi)"},
        {.name = "threads", .type = CLI_LONG, .dst = &threads, .arg = "T",
         .lo = 1, .hi = 4096,
         .help = "OpenMP threads (default: OMP_NUM_THREADS or all cores)"},
        {.name = "iters", .type = CLI_LONG, .dst = &a.iters, .arg = "K",
         .lo = 1, .hi = 1000000, .help = "timed steps (default 10)"},
        {.name = "warmup", .type = CLI_LONG, .dst = &a.warmup, .arg = "W",
         .lo = 0, .hi = 1000000, .help = "untimed steps first (default 2)"},
        {.name = "seed", .type = CLI_LONG, .dst = &seed, .arg = "S",
         .lo = 0, .hi = 2147483647, .help = "input data seed (default 1)"},
        {.name = "device", .type = CLI_CHOICE, .dst = &device, .arg = "D",
         .choices = devices, .help = "cpu (default) or cuda"},
        {.name = "stream-gbps", .type = CLI_DOUBLE, .dst = &a.stream_gbps,
         .arg = "X", .lo = 1e-3, .hi = 1e6,
         .help = "skip the STREAM measurement and use X GB/s (cpu)"},
        CLI_ISA_OPT,
        {.name = "save-input", .type = CLI_STR, .dst = &a.save_input,
         .arg = "F",
         .help = "write the input as raw little-endian float32 to F (for\n"
                 "bench/peers/torch_topk.py)"},
        {.name = "list", .type = CLI_CALL, .fn = list_compressors,
         .help = "compressors and their keys"},
        CLI_EXPORT_OPTS(&export_to),
        CLI_COMMON_OPTS(&com),
        {.name = "help", .type = CLI_FLAG, .dst = &help, .short_name = 'h',
         .help = "this help; --help NAME: one compressor's keys"},
        {0}};
    const struct cli_verb verb = {.name = "compress", .usage = compress_usage,
                                  .about = compress_about, .opts = opts};
    char **pos;
    int npos;
    int rc = cli_parse(&verb, argc, argv, &pos, &npos);
    if (rc)
        return rc < 0 ? EXIT_BAD_INPUT : 0;
    if (help) {
        if (npos && lbs_compressor_help(pos[0], stdout)) {
            cli_error("compress", "unknown compressor '%s' (see --list)",
                      pos[0]);
            return EXIT_BAD_INPUT;
        }
        if (!npos)
            cli_usage(&verb, stdout);
        return 0;
    }
    if (npos) {
        cli_error("compress", "unexpected argument '%s' (see --help)",
                  pos[0]);
        return EXIT_BAD_INPUT;
    }
    if (!a.spec) {
        cli_error("compress", "--compressor SPEC is required (see --list)");
        return EXIT_BAD_INPUT;
    }
    a.seed = (unsigned long)seed;
    a.cuda = device == 1;
    a.threads = cli_threads(threads);
    return compress_main(&a, &com, argc, argv);
}
