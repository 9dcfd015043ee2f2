/* stream.c - `lbscale stream`: the machine's memory bandwidth, measured
 * the way McCalpin's STREAM does it (copy c=a, triad a=b+s*c on doubles,
 * best of N iterations, bytes = 16 per element for copy, 24 for triad,
 * write-allocate traffic not counted) with OpenMP threads, plus an
 * in-place read-modify-write a = a + s*c (24 bytes, and no write-allocate:
 * the line of a is read anyway).
 *
 * Why two references: STREAM's triad stores to a line it has not read,
 * so the hardware reads it first (write-allocate) and moves 32 bytes per
 * element while STREAM counts 24.  An optimizer updates m, v and w in
 * place and its bytes model counts exactly what moves, so against the
 * triad an optimizer at the memory limit reads 1.3-1.5 (measured on this
 * machine) and the roofline would say "above the limit".  The in-place
 * kernel counts like the optimizers do: it is their reference.  The
 * compressors read their input and write a small fresh output: they keep
 * the triad, as the targets are stated. */
#include <errno.h>
#include <omp.h>
#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <cblas.h>

#include "blas.h"
#include "cli.h"
#include "driver.h"
#include "fma_probe.h"
#include "lbs_cuda.h"
#include "lbscale/mem.h"
#include "memsize.h"

static void stream_init(double *a, double *b, double *c, size_t n)
{
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) {
        a[i] = 1.0;
        b[i] = 2.0;
        c[i] = 0.0;
    }
}

static void stream_copy(const double *restrict a, double *restrict c,
                        size_t n)
{
#pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < n; i++)
        c[i] = a[i];
}

static void stream_triad(double *restrict a, const double *restrict b,
                         const double *restrict c, double s, size_t n)
{
#pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < n; i++)
        a[i] = b[i] + s * c[i];
}

/* In place: a = a + s*c (reads a and c, writes a: 24 bytes per element,
 * all of them moved). */
static void stream_rmw(double *restrict a, const double *restrict c,
                       double s, size_t n)
{
#pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < n; i++)
        a[i] = a[i] + s * c[i];
}

/* After k rounds of stream_call from a=1, b=2: c holds a's previous
 * value and a = 2.  Count elements that disagree. */
static long stream_check(const double *a, const double *c, size_t n,
                         double a_exp, double c_exp)
{
    long wrong = 0;
#pragma omp parallel for reduction(+ : wrong) schedule(static)
    for (size_t i = 0; i < n; i++)
        wrong += (a[i] != a_exp) + (c[i] != c_exp);
    return wrong;
}

/* The STREAM kernel for the driver: one call is copy, triad, then the
 * in-place a += -3c (three phases), which undoes the triad's 3c: a = 2
 * after every call, c = a's previous value. */
struct stream_kernel {
    double *a, *b, *c;
    size_t n;
    double a_exp, c_exp;
};

static int stream_call(void *ctx, long i, double *t, struct lbs_err *err)
{
    struct stream_kernel *k = ctx;
    (void)i, (void)err;
    double t0 = cli_now();
    stream_copy(k->a, k->c, k->n);
    double t1 = cli_now();
    stream_triad(k->a, k->b, k->c, 3.0, k->n);
    double t2 = cli_now();
    stream_rmw(k->a, k->c, -3.0, k->n);
    double t3 = cli_now();
    t[0] = t1 - t0;
    t[1] = t2 - t1;
    t[2] = t3 - t2;
    k->c_exp = k->a_exp;
    k->a_exp = 2.0;
    return 0;
}

static long stream_wrong(void *ctx, struct lbs_err *err)
{
    struct stream_kernel *k = ctx;
    (void)err;
    return stream_check(k->a, k->c, k->n, k->a_exp, k->c_exp);
}

/* STREAM's convention: the best (shortest) of the timed iterations, after
 * one warm-up round. */
int stream_measure(size_t n, int iters, struct stream_result *r)
{
    struct stream_kernel k = {.a = lbs_array_alloc(n, sizeof(double)),
                              .b = lbs_array_alloc(n, sizeof(double)),
                              .c = lbs_array_alloc(n, sizeof(double)),
                              .n = n, .a_exp = 1.0, .c_exp = 0.0};
    const struct bench_kernel kern = {.what = "stream", .ctx = &k,
                                      .nphase = 3, .call = stream_call,
                                      .check = stream_wrong};
    const struct bench_loop loop = {.warmup = 1, .iters = iters};
    struct bench_result res;
    struct lbs_err e;
    int rc = -ENOMEM;
    if (k.a && k.b && k.c) {
        stream_init(k.a, k.b, k.c, n);
        rc = bench_time(&kern, &loop, &res, &e);
    }
    if (!rc) {
        r->n = n;
        r->copy_gbps = 16.0 * (double)n / res.st[0].min / 1e9;
        r->triad_gbps = 24.0 * (double)n / res.st[1].min / 1e9;
        r->rmw_gbps = 24.0 * (double)n / res.st[2].min / 1e9;
        r->wrong = res.wrong;
        bench_result_free(&res);
    }
    free(k.a); free(k.b); free(k.c);
    return rc;
}

/* The triad reads b and c into a; the in-place reference needs a and c
 * only, so it holds two arrays (2 x n doubles), not three. */
int stream_pair_open(struct stream_pair *s, size_t n, int rmw)
{
    *s = (struct stream_pair){.rmw = rmw};
    s->a = lbs_array_alloc(n, sizeof(double));
    s->b = rmw ? NULL : lbs_array_alloc(n, sizeof(double));
    s->c = lbs_array_alloc(n, sizeof(double));
    if (!s->a || (!rmw && !s->b) || !s->c) {
        stream_pair_close(s);
        return -ENOMEM;
    }
    s->n = n;
    if (rmw) {
        /* a = 5, c = 1 as the triad's warm-up leaves them; the warm-up
         * adds 3c and takes it away again (exact in double) */
#pragma omp parallel for schedule(static)
        for (size_t i = 0; i < n; i++) {
            s->a[i] = 5.0;
            s->c[i] = 1.0;
        }
        stream_rmw(s->a, s->c, 3.0, n);
        stream_rmw(s->a, s->c, -3.0, n);
        return 0;
    }
    stream_init(s->a, s->b, s->c, n);
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++)
        s->c[i] = 1.0;
    stream_triad(s->a, s->b, s->c, 3.0, n);   /* warm-up: a = 5 */
    return 0;
}

/* One reference call, timed: the triad (a = 2 + 3c = 5 again), or the
 * in-place a += 3c and a -= 3c in turn (a = 8, then 5 again). */
double stream_pair_ref(struct stream_pair *s)
{
    double t0 = cli_now();
    if (s->rmw)
        stream_rmw(s->a, s->c, s->calls % 2 ? -3.0 : 3.0, s->n);
    else
        stream_triad(s->a, s->b, s->c, 3.0, s->n);
    double t = cli_now() - t0;
    s->calls++;
    return 24.0 * (double)s->n / t / 1e9;
}

long stream_pair_close(struct stream_pair *s)
{
    long wrong = -1;
    if (s->a && (s->rmw || s->b) && s->c) {
        wrong = 0;
        const double a_exp = s->rmw && s->calls % 2 ? 8.0 : 5.0;
#pragma omp parallel for reduction(+ : wrong) schedule(static)
        for (size_t i = 0; i < s->n; i++)
            wrong += s->a[i] != a_exp;
    }
    free(s->a);
    free(s->b);
    free(s->c);
    *s = (struct stream_pair){0};
    return wrong;
}

struct cli_stats roofline_pairs(const char *what, double *r, size_t n,
                                double bound)
{
    struct cli_stats st;
    size_t over = cli_ratio_over(r, n, bound, &st);
    if (over)
        fprintf(stderr, "lbscale: warning: %s: median roofline ratio %.3f "
                "above %.2f (%zu of %zu pairs above, max %.3f): the bytes "
                "model or the measurement is wrong\n", what, st.median,
                bound, over, n, st.max);
    return st;
}

double cli_peak_rss_mib(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru))
        return 0;
    return (double)ru.ru_maxrss / 1024.0;   /* Linux: KiB */
}

json_t *cli_huge_mib(void)
{
    long kib = lbs_hugepages_kib();
    return kib < 0 ? json_null() : json_real((double)kib / 1024.0);
}

double cli_rss_mib(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, res = 0;
    if (!f)
        return 0;
    if (fscanf(f, "%ld %ld", &pages, &res) != 2)
        res = 0;
    fclose(f);
    return (double)res * (double)sysconf(_SC_PAGESIZE) / 1048576.0;
}

/* ---------------------------------------------------------- printing */

static const struct bench_col stream_cols[] = {
    BENCH_COL("elements", "%12s", "%12lld", "elements"),
    BENCH_COL("threads", "%8s", "%8lld", "threads"),
    BENCH_COL("copy(GB/s)", "%14s", "%14.2f", "copy_gbps"),
    BENCH_COL("triad(GB/s)", "%15s", "%15.2f", "triad_gbps"),
    BENCH_COL("in-place(GB/s)", "%15s", "%15.2f", "rmw_gbps"),
    BENCH_COL("#wrong", "%7s", "%7lld", "wrong"),
    {0}};
static const struct bench_table stream_table = {"# ", "  ", stream_cols};

static const struct bench_col stream_cuda_cols[] = {
    BENCH_COL("elements", "%12s", "%12lld", "elements"),
    BENCH_COL("memcpy(GB/s)", "%14s", "%14.1f", "memcpy_gbps"),
    BENCH_COL("kernel(GB/s)", "%14s", "%14.1f", "kernel_gbps"),
    BENCH_COL("#wrong", "%7s", "%7lld", "wrong"),
    {0}};
static const struct bench_table stream_cuda_table = {"# ", "  ",
                                                      stream_cuda_cols};

/* The GPU line before the cuda row; the sgemm lines after the cpu row. */
static void stream_note(const json_t *r, int when, FILE *f)
{
#define D(k) json_real_value(json_object_get(r, k))
#define IV(k) json_integer_value(json_object_get(r, k))
    const char *gpu = json_string_value(json_object_get(r, "gpu"));
    if (when == 0 && gpu)
        fprintf(f, "# GPU: %s, device-to-device copy of %lld floats "
                "(%.3g GB)\n", gpu, (long long)IV("elements"),
                4e-9 * (double)IV("elements"));
    if (when == 0 || !json_object_get(r, "sgemm_n"))
        return;
    long long nt = IV("threads");
    double sg = D("sgemm_gflops"), peak = D("peak_gflops");
    double fpk = D("fma_peak_gflops");
    fprintf(f, "# sgemm %lld^3 on %lld thread%s: %.1f GFLOP/s (OpenBLAS %s "
            "kernels), %.2f of the measured FMA peak %.1f GFLOP/s (%s)\n",
            (long long)IV("sgemm_n"), nt, nt > 1 ? "s" : "", sg,
            json_string_value(json_object_get(r, "blas_core")),
            fpk > 0 ? sg / fpk : 0, fpk,
            json_string_value(json_object_get(r, "fma_level")));
    const char *lv;
    json_t *g;
    fprintf(f, "# FP32 FMA loop per kernel level, GFLOP/s:");
    json_object_foreach(json_object_get(r, "fma_gflops"), lv, g)
        fprintf(f, " %s %.1f", lv, json_real_value(g));
    fprintf(f, "; nominal peak %.0f GFLOP/s (cpuinfo clock x FLOP/cycle): "
            "sgemm at %.0f%% of it\n", peak, peak > 0 ? 100 * sg / peak : 0);
    if (peak > 0 && sg > peak)
        fprintf(f, "# (above 100%%: the %.0f MHz /proc/cpuinfo reports is "
                "below the running (turbo) clock)\n", D("cpu_mhz"));
#undef D
#undef IV
}

static struct cli_export export_to;   /* --export-csv / --export-markdown */
static const char *const export_cols[] = {
    "elements", "threads", "iters", "copy_gbps", "triad_gbps", "rmw_gbps",
    "wrong", NULL};
static const char *const export_cuda_cols[] = {
    "gpu", "elements", "iters", "memcpy_gbps", "kernel_gbps", "copy_gbps",
    "wrong", NULL};

/* Show and keep one row; then #wrong decides the exit code. */
static int stream_emit(const struct cli_common *com, struct lbs_run *run,
                       json_t *row, const char *bad)
{
    const int cuda = json_object_get(row, "gpu") != NULL;
    const struct bench_out bo = {
        .verb = "stream", .json = com->json,
        .table = cuda ? &stream_cuda_table : &stream_table,
        .note = stream_note, .exp = &export_to,
        .exp_cols = cuda ? export_cuda_cols : export_cols,
        .run = run};
    int rc = bench_emit(&bo, row, 1) ? EXIT_RUNTIME : 0;
    if (!rc)
        bench_saved(&bo);
    long long wrong = json_integer_value(json_object_get(row, "wrong"));
    json_decref(row);
    lbs_run_close(run);
    if (!rc && wrong) {
        cli_error("stream", bad, wrong);
        rc = EXIT_RUNTIME;
    }
    return rc;
}

/* ------------------------------------------------------------- options */

static const char stream_usage[] =
"usage: lbscale stream [--elements N] [--iters K] [--threads T]\n"
"                      [--sgemm N] [--device cpu|cuda] [--json]";

static const char stream_about[] =
"Measures memory bandwidth like STREAM: copy (c=a) and triad (a=b+s*c)\n"
"over three arrays of N doubles, best of K timed iterations after one\n"
"warm-up, GB/s = 1e9 bytes/s counting 16 (copy) and 24 (triad) bytes per\n"
"element; and in-place (a=a+s*c, 24 bytes), which moves what it counts\n"
"while the triad's store also reads its line first (32 bytes moved).\n"
"Compressors are compared with triad, optimizer steps (which update in\n"
"place) with in-place.  #wrong counts elements whose final value is not the exact\n"
"expected one.";

/* --device cuda: lbs_cuda_stream (core/cuda/stream.cu).  A missing GPU
 * or CUDA build is reported before the results directory is opened. */
static int stream_cuda(const struct cli_common *com, size_t n, int iters,
                       int argc, char **argv)
{
    struct lbs_err e;
    char gpu[256];
    if (lbs_cuda_probe(gpu, sizeof gpu, &e) < 0) {
        cli_error("stream", "--device cuda: %s", e.msg);
        return EXIT_BAD_INPUT;
    }
    struct lbs_run *run;
    int orc = cli_open_run(com, "stream", argc, argv, &run);
    if (orc)
        return cli_exit_code(orc);
    struct lbs_cuda_stream r;
    int rc = lbs_cuda_stream(n, iters, &r, &e);
    if (rc) {
        cli_error("stream", "--device cuda: %s", e.msg);
        lbs_run_close(run);
        return EXIT_RUNTIME;
    }
    double best = r.memcpy_gbps > r.kernel_gbps ? r.memcpy_gbps
                                                : r.kernel_gbps;
    json_t *row = json_pack("{s:s,s:s,s:s,s:I,s:i,s:f,s:f,s:f,s:I}",
                            "bench", "stream", "device", "cuda", "gpu",
                            r.gpu, "elements", (json_int_t)n, "iters", iters,
                            "memcpy_gbps", r.memcpy_gbps, "kernel_gbps",
                            r.kernel_gbps, "copy_gbps", best, "wrong",
                            (json_int_t)r.wrong);
    return stream_emit(com, run, row, "--device cuda: %lld floats copied "
                       "wrong");
}

/* Sizes the machine cannot hold are bad input, refused before the results
 * directory exists: three arrays of n doubles in host memory, or (cuda)
 * two buffers of n floats whose size must not wrap (the GPU's memory is
 * checked on the CUDA side). */
static int stream_size_check(size_t n, int cuda, struct lbs_err *e)
{
    char what[64];
    size_t bytes;
    snprintf(what, sizeof what, "--elements %zu", n);
    if (!cuda)
        return lbs_buffers_fit(n, sizeof(double), 3, what, e);
    if (lbs_array_bytes(n, 2 * sizeof(float), 1, &bytes))
        return lbs_err_set(e, -EINVAL, "%s: two buffers of that many floats "
                           "are larger than the address space", what);
    return 0;
}

/* Seconds per run of the FMA probe (five runs per level): about 0.3-0.5 s
 * for the three levels in all. */
#define FMA_PROBE_S 0.02

/* The CPU row: STREAM copy and triad, in-place, and sgemm beside the
 * measured FMA peak when asked. */
static json_t *stream_row(size_t n, int nt, long iters, long sgemm_n,
                          const struct stream_result *r)
{
    json_t *row = json_pack("{s:s,s:I,s:i,s:i,s:f,s:f,s:f,s:I}", "bench",
                            "stream", "elements", (json_int_t)n, "threads",
                            nt, "iters", (int)iters, "copy_gbps",
                            r->copy_gbps, "triad_gbps", r->triad_gbps,
                            "rmw_gbps", r->rmw_gbps, "wrong",
                            (json_int_t)r->wrong);
    if (sgemm_n > 0) {
        double mhz = 0;
        openblas_set_num_threads(nt);
        struct fma_peak fp;
        fma_probe(nt, FMA_PROBE_S, &fp);
        double sg = blas_sgemm_gflops((int)sgemm_n, 1.0);
        double peak = blas_peak_gflops(nt, &mhz);
        json_t *fj = json_object();
        for (int i = 0; i < fp.n; i++)
            json_object_set_new(fj, fp.level[i], json_real(fp.gflops[i]));
        double fpk = fp.gflops[fp.n - 1];
        json_object_set_new(row, "fma_gflops", fj);
        json_object_set_new(row, "fma_level", json_string(fp.level[fp.n - 1]));
        json_object_set_new(row, "fma_peak_gflops", json_real(fpk));
        json_object_set_new(row, "sgemm_fma_frac",
                            fpk > 0 ? json_real(sg / fpk) : json_null());
        json_object_set_new(row, "sgemm_n", json_integer(sgemm_n));
        json_object_set_new(row, "sgemm_gflops", json_real(sg));
        json_object_set_new(row, "peak_gflops", peak > 0 ? json_real(peak)
                                                         : json_null());
        json_object_set_new(row, "sgemm_peak_frac",
                            peak > 0 ? json_real(sg / peak) : json_null());
        json_object_set_new(row, "cpu_mhz", json_real(mhz));
        json_object_set_new(row, "blas_core",
                            json_string(openblas_get_corename()));
    }
    return row;
}

int verb_stream(int argc, char **argv)
{
    struct cli_common com = {.save = 1};
    size_t n = 0;   /* 0: not given */
    long iters = 10, threads = 0, sgemm_n = 1024;
    int cuda = 0;
    const struct cli_opt opts[] = {
        CLI_ELEMENTS_OPT(&n, 0,
            "doubles per array (default 32M; suffixes K M G, Ki Mi Gi);\n"
            "the three arrays must fit in 90% of the memory\n"
            "available (else exit 2)"),
        CLI_ITERS_OPT(&iters, 0, 100000, "timed iterations (default 10)"),
        CLI_THREADS_OPT(&threads),
        {.name = "sgemm", .type = CLI_LONG, .dst = &sgemm_n, .arg = "N",
         .lo = 0, .hi = 16384,
         .help = "also time OpenBLAS sgemm N x N x N on the same threads\n"
                 "(default 1024; 0 = skip): sgemm_gflops beside the\n"
                 "FP32 FMA peak measured first by a short loop at each\n"
                 "kernel level the CPU has (fma_gflops: c = SSE2 mul+add,\n"
                 "avx2, avx512; fma_peak_gflops the best level's,\n"
                 "sgemm_fma_frac = sgemm / it), the nominal peak (cpuinfo\n"
                 "clock x 64/32/8 FLOP/cycle) and the fraction of it,\n"
                 "with OpenBLAS's kernel family\n"
                 "(blas_core; lbscale selects the machine's family at\n"
                 "start-up when OpenBLAS falls back, see meta.json\n"
                 "versions.blas; LBSCALE_BLAS_AUTO=0 disables that,\n"
                 "=force overrides a weaker OPENBLAS_CORETYPE too)"},
        CLI_DEVICE_OPT(&cuda,
            "cpu (default) or cuda: device-to-device copy on GPU 0\n"
            "between two buffers of N floats (default 256M = 1 GiB\n"
            "each), by cudaMemcpy and by a copy kernel, best of K;\n"
            "GB/s counts read + write (8 bytes per float, as STREAM\n"
            "copy); copy_gbps is the better of the two, the number\n"
            "optim --device cuda compares against.  Without a GPU or\n"
            "a CUDA build: one line on stderr, exit 2"),
        CLI_EXPORT_OPTS(&export_to),
        CLI_COMMON_OPTS(&com),
        {0}};
    const struct cli_verb verb = {.name = "stream", .usage = stream_usage,
                                  .about = stream_about, .opts = opts};
    int prc = cli_parse(&verb, argc, argv, NULL, NULL);
    if (prc)
        return prc < 0 ? EXIT_BAD_INPUT : 0;
    if (!n)   /* cuda: 1 GiB per buffer: device bandwidth, not cache */
        n = cuda ? 256000000 : 32000000;
    struct lbs_err se;
    if (stream_size_check(n, cuda, &se)) {
        cli_error("stream", "%s", se.msg);
        return EXIT_BAD_INPUT;
    }
    if (cuda)
        return stream_cuda(&com, n, (int)iters, argc, argv);
    int nt = cli_threads(threads);
    struct lbs_run *run;
    int orc = cli_open_run(&com, "stream", argc, argv, &run);
    if (orc)
        return cli_exit_code(orc);
    struct stream_result r;
    if (stream_measure(n, (int)iters, &r)) {
        cli_error("stream", "cannot allocate 3 x %zu doubles", n);
        lbs_run_close(run);
        return EXIT_RUNTIME;
    }
    return stream_emit(&com, run, stream_row(n, nt, iters, sgemm_n, &r),
                       "%lld elements have wrong values");
}
