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
 * GB/s = the bytes a compress call moves (lbs_compress_cpu_bytes: the 4N
 * input, or less for cyclick and randk, which read only their mask's
 * lines) / median compress time; B/elem = those bytes / N.
 * A compressor made of matrix products (PowerSGD, lbs_compress_flops) is
 * also priced in flops: after every compress + decompress the same
 * cblas_sgemm calls run bare on the same shapes (A B A B, after the
 * triad), and the row reports both GFLOP/s and their ratio per pair
 * (sgemm_frac: median [min, max]).
 *
 * --device cuda runs the device compressor instead (see the cuda section
 * below): #wrong there is disagreement with the CPU compressor, and the
 * reference is the GPU's device-to-device copy bandwidth: compress_cuda.c.
 * What the two files share is compress_int.h.
 */
#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lbs_cuda.h"
#include "lbscale/isa.h"
#include "lbscale/mem.h"
#include "lbscale/rng.h"
#include "memsize.h"
#include "compress_int.h"

/* ------------------------------------------------------------ input */

void cbench_make_input(float *x, size_t n, uint64_t seed)
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

/* Whole or absent, and only over a regular file (lbs_write_atomic). */
int cbench_save_input(const char *path, const float *x, size_t n,
                      struct lbs_err *err)
{
    return lbs_write_atomic(path, (const char *)x, n * sizeof *x, err);
}

/* ------------------------------------------------------ invariants */

struct check {
    double rel_err, thresh;   /* thresh: min |kept| of sparse ones */
    double first_s;           /* the first compress call (lazy set-up) */
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
    /* the first use of c: the wire size asks for the mask already */
    double t0 = cli_now();
    size_t n = a->n, wire = lbs_compress_wire_bytes(c, n, 0, 0);
    int rc = lbs_compress(c, x, n, 0, 0, p, &ck->bytes, err);
    ck->first_s = cli_now() - t0;
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

/* The compressor's sgemm calls, bare, on the same shapes: x the layer,
 * the factors scratch, 'o' the decompress buffer (beta as the compressor
 * uses it).  Returns the seconds. */
static double sgemm_ref(struct ckernel *k)
{
    double t0 = cli_now();
    for (int j = 0; j < k->gemm.ngemm; j++) {
        const struct lbs_compress_gemm *g = &k->gemm.g[j];
        float *buf[4] = {k->x, k->gp, k->gq, k->out};
        const char *names = "xpqo";
        float *a = buf[strchr(names, g->a) - names],
              *b = buf[strchr(names, g->b) - names],
              *c = buf[strchr(names, g->c) - names];
        cblas_sgemm(CblasRowMajor, g->ta ? CblasTrans : CblasNoTrans,
                    g->tb ? CblasTrans : CblasNoTrans, (int)g->m, (int)g->n,
                    (int)g->k, 1.0f, a, (int)g->lda, b, (int)g->ldb, g->beta,
                    c, (int)g->ldc);
    }
    return cli_now() - t0;
}

static int ckernel_call(void *ctx, long i, double *t, struct lbs_err *err)
{
    struct ckernel *k = ctx;
    size_t n = k->a->n, bytes = 0;
    double t0 = cli_now();
    int rc = k->gc ? lbs_cuda_compress(k->gc, k->x, n, 0, 1 + i, k->p,
                                       &bytes, err)
                   : lbs_compress(k->c, k->x, n, 0, 1 + i, k->p, &bytes, err);
    if (k->slow > 1)
        cli_slowdown_spin(k->slow, cli_now() - t0);
    double t1 = cli_now();
    if (!rc)
        rc = k->gc ? lbs_cuda_decompress(k->gc, k->p, bytes, n, 0, 1 + i,
                                         k->out, err)
                   : lbs_decompress(k->c, k->p, bytes, n, 0, 1 + i, k->out,
                                    err);
    /* decompress too: PowerSGD's gated sgemm_frac times both calls, so a
     * plant on compress alone moved it about 6%, not 10% (ab-20261207) */
    if (k->slow > 1)
        cli_slowdown_spin(k->slow, cli_now() - t1);
    double t2 = cli_now();
    t[0] = t1 - t0;
    t[1] = t2 - t1;
    if (i >= k->a->warmup)
        k->wire_sum += (double)bytes;
    if (!rc && k->gemm.ngemm > 0) {
        k->t_ps[i] = t2 - t0;
        k->t_ref[i] = sgemm_ref(k);
    }
    return rc;
}

/* The loop of either device: warm-up, timed calls, against ref_gbps
 * (0: a STREAM triad before every compress, as `lbscale optim`). */
int cbench_time(struct ckernel *k, const char *name, double ref_gbps,
                long wrong, struct bench_result *r,
                struct lbs_err *err)
{
    char what[160];
    snprintf(what, sizeof what, "compress %s", name);
    const struct bench_kernel kern = {
        .what = what, .ctx = k, .nphase = 2, .call = ckernel_call,
        .bytes = k->gc ? 4.0 * (double)k->a->n
                       : lbs_compress_cpu_bytes(k->c, k->a->n)};
    const struct bench_loop loop = {.warmup = k->a->warmup,
                                    .iters = k->a->iters,
                                    .ref_gbps = ref_gbps};
    int rc = bench_time(&kern, &loop, r, err);
    r->wrong = wrong;   /* the check step's, before the loop */
    return rc;
}

/* The flop rows of a matrix-product compressor: per timed call i,
 * powersgd = (compress + decompress flops) / its seconds, sgemm = the
 * sgemm calls' flops / their seconds, and the ratio of the two. */
static void gemm_fields(json_t *row, const struct cbench_args *a,
                        const struct ckernel *k)
{
    const size_t m = (size_t)a->iters;
    double *ps = malloc(3 * m * sizeof *ps), *sg = ps + m, *fr = sg + m;
    if (!ps || !m) {
        free(ps);
        return;
    }
    const double fl = k->gemm.compress + k->gemm.decompress;
    for (size_t i = 0; i < m; i++) {
        ps[i] = fl / k->t_ps[a->warmup + i] / 1e9;
        sg[i] = k->gemm.gemm / k->t_ref[a->warmup + i] / 1e9;
        fr[i] = ps[i] / sg[i];
    }
    struct cli_stats sps = cli_stats(ps, m), ssg = cli_stats(sg, m),
                     sfr = cli_stats(fr, m);
    char shapes[256] = "";
    size_t o = 0;
    for (int j = 0; j < k->gemm.ngemm && o < sizeof shapes; j++) {
        const struct lbs_compress_gemm *g = &k->gemm.g[j];
        o += (size_t)snprintf(shapes + o, sizeof shapes - o, "%s%c%c %zux%zux%zu",
                              j ? ", " : "", g->ta ? 'T' : 'N',
                              g->tb ? 'T' : 'N', g->m, g->n, g->k);
    }
    json_object_set_new(row, "powersgd_flops_per_call", json_real(fl));
    json_object_set_new(row, "sgemm_flops_per_call",
                        json_real(k->gemm.gemm));
    json_object_set_new(row, "sgemm_shapes_mnk", json_string(shapes));
    json_object_set_new(row, "powersgd_gflops", json_real(sps.median));
    json_object_set_new(row, "sgemm_gflops", json_real(ssg.median));
    json_object_set_new(row, "sgemm_frac", json_real(sfr.median));
    json_object_set_new(row, "sgemm_frac_min", json_real(sfr.min));
    json_object_set_new(row, "sgemm_frac_max", json_real(sfr.max));
    free(ps);
}

static json_t *cpu_row(const struct cbench_args *a, struct lbs_compressor *c,
                       const struct check *ck, const struct ckernel *k,
                       const struct bench_result *r)
{
    const struct cli_stats *sc = &r->st[0], *sd = &r->st[1];
    double in = 4.0 * (double)a->n;
    json_t *row = json_pack(
        "{s:s,s:s,s:s,s:s,s:I,s:i,s:i,s:i,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,"
        "s:I,s:f,s:f,s:f,s:I}",
        "bench", "compress", "compressor", lbs_compressor_name(c), "params",
        lbs_compressor_params(c), "collective",
        lbs_coll_name(lbs_compressor_collective(c)), "elements",
        (json_int_t)a->n, "threads", a->threads, "warmup", (int)a->warmup,
        "iters", (int)a->iters, "compress_ms_median", sc->median * 1e3,
        "compress_ms_min", sc->min * 1e3, "compress_ms_max", sc->max * 1e3,
        "decompress_ms_median", sd->median * 1e3, "gbps", r->gbps,
        "decompress_gbps", in / sd->median / 1e9, "stream_gbps",
        r->ref.median, "stream_frac", r->ratio.median, "wire_bytes",
        (json_int_t)ck->bytes, "wire_bytes_mean",
        k->wire_sum / (double)a->iters, "compression_ratio",
        in / (double)ck->bytes, "rel_err", ck->rel_err,
        "wrong", (json_int_t)ck->wrong);
    if (ck->thresh > 0)
        json_object_set_new(row, "kth_abs", json_real(ck->thresh));
    json_object_set_new(row, "seed", json_integer((json_int_t)a->seed));
    json_object_set_new(row, "compress_ms_mean", json_real(sc->mean * 1e3));
    json_object_set_new(row, "compress_ms_sd", json_real(sc->sd * 1e3));
    json_object_set_new(row, "outliers",
                        json_integer((json_int_t)sc->outliers));
    json_object_set_new(row, "stream_frac_min", json_real(r->ratio.min));
    json_object_set_new(row, "stream_frac_max", json_real(r->ratio.max));
    json_object_set_new(row, "stream_ref", json_string(
        r->paired ? "triad interleaved with the compress calls (median of "
                    "the pairs)" : "given (--stream-gbps)"));
    json_object_set_new(row, "isa", json_string(lbs_isa_name()));
    json_object_set_new(row, "huge_mib", cli_huge_mib());
    json_object_set_new(row, "bytes_per_elem", json_real(
        lbs_compress_cpu_bytes(c, a->n) / (double)a->n));
    if (k->gemm.ngemm > 0)
        gemm_fields(row, a, k);
    return row;
}

/* The sgemm reference's buffers, when the compressor makes sgemm calls
 * (lbs_compress_flops); nothing otherwise. */
static int gemm_alloc(struct ckernel *k, struct lbs_err *err)
{
    if (lbs_compress_flops(k->c, k->a->n, &k->gemm))
        return 0;   /* -ENOTSUP: no matrix products */
    size_t calls = (size_t)(k->a->warmup + k->a->iters);
    k->gp = malloc(k->gemm.p_elems * sizeof *k->gp);
    k->gq = malloc(k->gemm.q_elems * sizeof *k->gq);
    k->t_ps = calloc(calls + 1, sizeof *k->t_ps);
    k->t_ref = calloc(calls + 1, sizeof *k->t_ref);
    if (!k->gp || !k->gq || !k->t_ps || !k->t_ref)
        return lbs_err_set(err, -ENOMEM, "out of memory for the sgemm "
                           "reference");
    for (size_t i = 0; i < k->gemm.p_elems; i++)
        k->gp[i] = 1.0f / (float)(1 + i % 7);
    for (size_t i = 0; i < k->gemm.q_elems; i++)
        k->gq[i] = 1.0f / (float)(1 + i % 5);
    return 0;
}

static int bench_run(const struct cbench_args *a, json_t **row,
                     struct lbs_err *err)
{
    size_t n = a->n;
    struct ckernel k = {.a = a, .slow = cli_slowdown("compress", a->spec)};
    double t0 = cli_now();
    int rc = lbs_compressor_new(a->spec, &k.c, err);
    if (rc)
        return rc;
    const double new_s = cli_now() - t0;
    /* on 2 MiB pages where the kernel gives them, as the optimizers'
     * layers and the interleaved reference are (lbscale/mem.h): a ratio
     * of a 4 KiB-page kernel to a 2 MiB-page reference moved with each
     * process's pages */
    k.x = lbs_array_alloc(n, sizeof *k.x);
    k.out = lbs_array_alloc(n, sizeof *k.out);
    k.p = lbs_array_alloc(lbs_compress_max_bytes(k.c, n) + 64, 1);
    if (!k.x || !k.out || !k.p) {
        rc = lbs_err_set(err, -ENOMEM, "out of memory for %zu elements", n);
        goto out;
    }
    cbench_make_input(k.x, n, a->seed);
    if (a->save_input &&
        (rc = cbench_save_input(a->save_input, k.x, n, err)))
        goto out;
    if ((rc = gemm_alloc(&k, err)))
        goto out;
    struct check ck = {0};
    struct bench_result r;
    if ((rc = check_step(a, k.c, k.x, k.out, k.p, &ck, err)) ||
        (rc = cbench_time(&k, lbs_compressor_name(k.c), a->stream_gbps,
                          ck.wrong, &r, err)))
        goto out;
    *row = cpu_row(a, k.c, &ck, &k, &r);
    /* start-up: construction plus what the first call does beyond a
     * steady one (masks built on first use); at least the construction */
    double first = ck.first_s - r.st[0].median;
    json_object_set_new(*row, "setup_ms",
                        json_real((new_s + (first > 0 ? first : 0)) * 1e3));
    bench_result_free(&r);
out:
    free(k.x);
    free(k.out);
    free(k.p);
    free(k.gp);
    free(k.gq);
    free(k.t_ps);
    free(k.t_ref);
    lbs_compressor_free(k.c);
    return rc;
}

/* ---------------------------------------------------------- printing */

static const struct bench_col cpu_cols[] = {
    BENCH_COL("compress", "%-9s", "%-9s", "compressor"),
    BENCH_COL("elements", "%10s", "%10lld", "elements"),
    BENCH_COL("thr", "%3s", "%3lld", "threads"),
    BENCH_COL("collective", "%-10s", "%-10s", "collective"),
    BENCH_COL("comp(ms)", "%9s", "%9.2f", "compress_ms_median"),
    BENCH_COL("min(ms)", "%8s", "%8.2f", "compress_ms_min"),
    BENCH_COL("max(ms)", "%8s", "%8.2f", "compress_ms_max"),
    BENCH_COL("dec(ms)", "%9s", "%9.2f", "decompress_ms_median"),
    BENCH_COL("B/elem", "%6s", "%6.2f", "bytes_per_elem"),
    BENCH_COL("GB/s", "%7s", "%7.2f", "gbps"),
    BENCH_COL("STREAM", "%7s", "%7.2f", "stream_gbps"),
    BENCH_COL("ratio", "%6s", "%6.3f", "stream_frac"),
    BENCH_COL2("[min, max]", "%15s", " [%5.3f, %5.3f]", "stream_frac_min",
               "stream_frac_max"),
    BENCH_COL("isa", "%-6s", "%-6s", "isa"),
    BENCH_COL("setup(ms)", "%9s", "%9.1f", "setup_ms"),
    BENCH_COL("wire(B)", "%12s", "%12lld", "wire_bytes"),
    BENCH_COL("x_smaller", "%8s", "%8.1f", "compression_ratio"),
    BENCH_COL("rel_err", "%9s", "%9.3e", "rel_err"),
    BENCH_COL("#wrong", "%6s", "%6lld", "wrong"),
    {0}};
static const struct bench_table cpu_table = {"# ", "  ", cpu_cols};

static const struct bench_col cuda_cols[] = {
    BENCH_COL("compress", "%-9s", "%-9s", "compressor"),
    BENCH_COL("elements", "%10s", "%10lld", "elements"),
    BENCH_COL("collective", "%-10s", "%-10s", "collective"),
    BENCH_COL("comp(ms)", "%9s", "%9.3f", "compress_ms_median"),
    BENCH_COL("min(ms)", "%8s", "%8.3f", "compress_ms_min"),
    BENCH_COL("max(ms)", "%8s", "%8.3f", "compress_ms_max"),
    BENCH_COL("dec(ms)", "%9s", "%9.3f", "decompress_ms_median"),
    BENCH_COL("GB/s", "%8s", "%8.1f", "gbps"),
    BENCH_COL("copyGB/s", "%8s", "%8.1f", "copy_gbps"),
    BENCH_COL("ratio", "%6s", "%6.3f", "copy_frac"),
    BENCH_COL("reads", "%6s", "%6.2f", "read_x"),
    BENCH_COL("wire(B)", "%12s", "%12lld", "wire_bytes"),
    BENCH_COL("x_smaller", "%8s", "%8.1f", "compression_ratio"),
    BENCH_COL("rel_err", "%9s", "%9.3e", "rel_err"),
    BENCH_COL("#wrong", "%6s", "%6lld", "wrong"),
    {0}};
static const struct bench_table cuda_table = {"# ", "  ", cuda_cols};

static void cuda_note(const json_t *r, int when, FILE *f)
{
    if (when == 0)
        fprintf(f, "# %s (cuda); copy = device-to-device cudaMemcpy, "
                "read+write\n", json_string_value(json_object_get(r, "gpu")));
}

/* After a matrix-product compressor's row: its flop rate against the
 * BLAS's on the same shapes. */
static void gemm_note(const json_t *r, int when, FILE *f)
{
    if (when != 1 || !json_object_get(r, "sgemm_frac"))
        return;
#define G(key) json_real_value(json_object_get(r, key))
    fprintf(f, "  flops: %s %.3f GFLOP/s (compress + decompress, %.4g flop "
            "per call); cblas_sgemm on the same shapes (%s, m x n x k) "
            "%.3f GFLOP/s\n  sgemm_frac %.3f [%.3f, %.3f] (median [min, "
            "max] of the interleaved pairs)\n",
            json_string_value(json_object_get(r, "compressor")),
            G("powersgd_gflops"), G("powersgd_flops_per_call"),
            json_string_value(json_object_get(r, "sgemm_shapes_mnk")),
            G("sgemm_gflops"), G("sgemm_frac"), G("sgemm_frac_min"),
            G("sgemm_frac_max"));
#undef G
}

static struct cli_export export_to;   /* --export-csv / --export-markdown */

#define EXPORT_COLS                                                       \
    "compressor", "params", "elements", "threads", "iters",               \
    "compress_ms_mean", "compress_ms_sd", "compress_ms_median",           \
    "compress_ms_min", "compress_ms_max", "outliers",                     \
    "decompress_ms_median", "gbps", "stream_frac", "wire_bytes",          \
    "rel_err", "wrong"
static const char *const export_cols[] = {EXPORT_COLS, NULL};
/* ...and a matrix-product compressor's (the units are in the names) */
static const char *const export_gemm_cols[] = {
    EXPORT_COLS, "powersgd_flops_per_call", "powersgd_gflops",
    "sgemm_gflops", "sgemm_frac", "sgemm_frac_min", "sgemm_frac_max",
    NULL};
#undef EXPORT_COLS

static int emit(const struct cli_common *com, struct lbs_run *run,
                json_t *row)
{
    const int cuda = json_object_get(row, "gpu") != NULL;
    const struct bench_out bo = {
        .verb = "compress", .json = com->json,
        .table = cuda ? &cuda_table : &cpu_table,
        .timing = cuda ? NULL : "compress", .timing_key = "compress_ms",
        .note = cuda ? cuda_note : gemm_note, .exp = &export_to,
        .exp_cols = json_object_get(row, "sgemm_frac") ? export_gemm_cols
                                                       : export_cols,
        .run = run};
    if (bench_emit(&bo, row, 1))
        return -EIO;
    bench_saved(&bo);
    return 0;
}

static int compress_main(struct cbench_args *a, const struct cli_common *com,
                         int argc, char **argv)
{
    struct lbs_err e;
    int rc = lbs_compressor_check(a->spec, &e);
    if (rc) {   /* before anything is measured or written */
        cli_error("compress", "%s", e.msg);
        return cli_exit_code(rc);
    }
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
        double copy = 0;
        rc = bench_cuda_copy_ref(cn, 10, &cs, &copy, &e);
        if (!rc)
            rc = cbench_cuda_run(a, gc, gpu, copy, &row, &e);
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
"GB/s = B/elem x N bytes / median compress time, B/elem the bytes a call\n"
"moves per element: 4 (the input) for every compressor that reads all of\n"
"it; for cyclick and randk (ef=0) the lines their mask touches, its\n"
"indices and the payload (0.67 and 0.71 at k=0.01; randk's time is its\n"
"mask's arithmetic, so its ratio is low).  ratio: a STREAM triad\n"
"(3 x 32M doubles, same threads) runs before every compress, warm-up\n"
"included (A B A B ...); each pair gives compress GB/s / triad GB/s and\n"
"the row shows their median [min, max] (STREAM = median triad GB/s); a\n"
"median ratio above 1.40 prints a warning (bytes model or measurement\n"
"wrong; single pairs above it are a reference call slowed by others):\n"
"the triad counts 24 bytes an element and moves 32 (its store reads the\n"
"line first), so a kernel that only reads can reach 32/24 of it, and 5%\n"
"more is noise.  The input, output and payload are on 2 MiB pages where\n"
"Linux gives them (LBSCALE_HUGEPAGES=0: not), as the training's arrays.\n"
"--stream-gbps X divides by X instead (no pairs, no warning).\n"
"wire(B) = payload bytes of the check step, x_smaller = 4N / wire,\n"
"rel_err = ||x - D(C(x))|| / ||x||, #wrong = violated invariants (payload\n"
"size, record-backend bytes, exchange result, error feedback, and the\n"
"compressor's own: exact top-k, magnitude prefix, +-scale, one QSGD level).\n"
"ef=1 adds the residual passes to the timed compress.\n"
"setup(ms) = the compressor's construction plus what its first call took\n"
"beyond a median one (masks built on first use): its start-up cost.\n"
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

int verb_compress(int argc, char **argv)
{
    struct cli_common com = {.save = 1};
    struct cbench_args a = {.n = 100000000, .iters = 10, .warmup = 2,
                            .seed = 1};
    long threads = 0, seed = 1;
    int device = 0;
    const struct cli_opt opts[] = {
        {.name = "compressor", .type = CLI_STR, .dst = &a.spec, .arg = "S",
         .help = "e.g. topk:k=0.01 or sign:ef=1 (see --list)"},
        CLI_ELEMENTS_OPT(&a.n, UINT32_MAX - 1.0,   /* 32-bit indices */
                         "values (default 100M; suffixes K M G, Ki Mi Gi)"),
        CLI_THREADS_OPT(&threads),
        CLI_ITERS_OPT(&a.iters, 0, 1000000, "timed steps (default 10)"),
        CLI_WARMUP_OPT(&a.warmup, 0, "untimed steps first (default 2)"),
        {.name = "seed", .type = CLI_LONG, .dst = &seed, .arg = "S",
         .lo = 0, .hi = 2147483647, .help = "input data seed (default 1)"},
        CLI_DEVICE_OPT(&device, "cpu (default) or cuda"),
        CLI_STREAM_GBPS_OPT(&a.stream_gbps,
                            "skip the STREAM measurement and use X GB/s "
                            "(cpu)"),
        CLI_ISA_OPT,
        {.name = "save-input", .type = CLI_CALL, .fn = cli_out_file,
         .dst = &a.save_input,
         .arg = "F",
         .help = "write the input as raw little-endian float32 to F (for\n"
                 "tools/peers/torch_topk.py)"},
        CLI_EXPORT_OPTS(&export_to),
        CLI_COMMON_OPTS(&com),
        {0}};
    const struct cli_verb verb = {
        .name = "compress", .usage = compress_usage, .about = compress_about,
        .opts = opts, .topic = "compressor",
        .topic_help = lbs_compressor_help};
    int rc = cli_parse(&verb, argc, argv, NULL, NULL);
    if (rc)
        return rc < 0 ? EXIT_BAD_INPUT : 0;
    if (!a.spec) {
        cli_error("compress", "--compressor SPEC is required (see --list)");
        return EXIT_BAD_INPUT;
    }
    a.seed = (unsigned long)seed;
    a.cuda = device == 1;
    a.threads = cli_threads(threads);
    return compress_main(&a, &com, argc, argv);
}
