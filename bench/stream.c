/* stream.c - `lbscale stream`: the machine's memory bandwidth, measured
 * the way McCalpin's STREAM does it (copy c=a, triad a=b+s*c on doubles,
 * best of N iterations, bytes = 16 per element for copy, 24 for triad,
 * write-allocate traffic not counted) with OpenMP threads.  Every other
 * bandwidth lbscale reports is compared against this number. */
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
#include "lbs_cuda.h"
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

/* After k rounds of (copy; triad) from a=1, b=2: c holds a's previous
 * value and a = 2 + 3c.  Count elements that disagree. */
static long stream_check(const double *a, const double *c, size_t n,
                         double a_exp, double c_exp)
{
    long wrong = 0;
#pragma omp parallel for reduction(+ : wrong) schedule(static)
    for (size_t i = 0; i < n; i++)
        wrong += (a[i] != a_exp) + (c[i] != c_exp);
    return wrong;
}

int stream_measure(size_t n, int iters, struct stream_result *r)
{
    size_t bytes;
    if (lbs_array_bytes(n, sizeof(double), 64, &bytes))
        return -ENOMEM;
    double *a = aligned_alloc(64, bytes);
    double *b = aligned_alloc(64, bytes);
    double *c = aligned_alloc(64, bytes);
    if (!a || !b || !c) {
        free(a); free(b); free(c);
        return -ENOMEM;
    }
    stream_init(a, b, c, n);
    double best_copy = 1e30, best_triad = 1e30, a_exp = 1.0, c_exp = 0.0;
    for (int k = 0; k < iters + 1; k++) {   /* first round is warm-up */
        double t0 = cli_now();
        stream_copy(a, c, n);
        double t1 = cli_now();
        stream_triad(a, b, c, 3.0, n);
        double t2 = cli_now();
        c_exp = a_exp;
        a_exp = 2.0 + 3.0 * c_exp;
        if (k > 0) {
            best_copy = t1 - t0 < best_copy ? t1 - t0 : best_copy;
            best_triad = t2 - t1 < best_triad ? t2 - t1 : best_triad;
        }
    }
    r->n = n;
    r->copy_gbps = 16.0 * (double)n / best_copy / 1e9;
    r->triad_gbps = 24.0 * (double)n / best_triad / 1e9;
    r->wrong = stream_check(a, c, n, a_exp, c_exp);
    free(a); free(b); free(c);
    return 0;
}

int stream_pair_open(struct stream_pair *s, size_t n)
{
    size_t bytes;
    *s = (struct stream_pair){0};
    if (lbs_array_bytes(n, sizeof(double), 64, &bytes))
        return -ENOMEM;
    s->a = aligned_alloc(64, bytes);
    s->b = aligned_alloc(64, bytes);
    s->c = aligned_alloc(64, bytes);
    if (!s->a || !s->b || !s->c) {
        stream_pair_close(s);
        return -ENOMEM;
    }
    s->n = n;
    stream_init(s->a, s->b, s->c, n);
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++)
        s->c[i] = 1.0;
    stream_triad(s->a, s->b, s->c, 3.0, n);   /* warm-up */
    return 0;
}

double stream_pair_triad(struct stream_pair *s)
{
    double t0 = cli_now();
    stream_triad(s->a, s->b, s->c, 3.0, s->n);
    return 24.0 * (double)s->n / (cli_now() - t0) / 1e9;
}

long stream_pair_close(struct stream_pair *s)
{
    long wrong = -1;
    if (s->a && s->b && s->c) {
        wrong = 0;
#pragma omp parallel for reduction(+ : wrong) schedule(static)
        for (size_t i = 0; i < s->n; i++)
            wrong += s->a[i] != 5.0;
    }
    free(s->a);
    free(s->b);
    free(s->c);
    *s = (struct stream_pair){0};
    return wrong;
}

struct cli_stats roofline_pairs(const char *what, double *r, size_t n)
{
    size_t over = 0;
    for (size_t i = 0; i < n; i++)
        over += r[i] > ROOFLINE_WARN;
    struct cli_stats st = cli_stats(r, n);
    if (over)
        fprintf(stderr, "lbscale: warning: %s: %zu of %zu roofline ratios "
                "above %.2f (max %.3f): the bytes model or the measurement "
                "is wrong\n", what, over, n, ROOFLINE_WARN, st.max);
    return st;
}

double cli_peak_rss_mib(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru))
        return 0;
    return (double)ru.ru_maxrss / 1024.0;   /* Linux: KiB */
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

static void usage(FILE *f)
{
    fprintf(f,
"usage: lbscale stream [--elements N] [--iters K] [--threads T]\n"
"                      [--sgemm N] [--device cpu|cuda] [--json]\n"
"\n"
"Measures memory bandwidth like STREAM: copy (c=a) and triad (a=b+s*c)\n"
"over three arrays of N doubles, best of K timed iterations after one\n"
"warm-up, GB/s = 1e9 bytes/s counting 16 (copy) and 24 (triad) bytes per\n"
"element.  #wrong counts elements whose final value is not the exact\n"
"expected one.\n"
"\n"
"  --elements N    doubles per array (default 32M; suffixes K M G, Ki Mi Gi);\n"
"                  the three arrays must fit in 90%% of the memory\n"
"                  available (else exit 2)\n"
"  --iters K       timed iterations (default 10)\n"
"  --threads T     OpenMP threads (default: OMP_NUM_THREADS or all cores)\n"
"  --sgemm N       also time OpenBLAS sgemm N x N x N on the same threads\n"
"                  (default 1024; 0 = skip): sgemm_gflops, the nominal\n"
"                  peak (clock x 64/32/8 FLOP/cycle for AVX-512/AVX2/SSE)\n"
"                  and the fraction of it, with OpenBLAS's kernel family\n"
"                  (blas_core; lbscale selects the machine's family at\n"
"                  start-up when OpenBLAS falls back, see meta.json\n"
"                  versions.blas; LBSCALE_BLAS_AUTO=0 disables that,\n"
"                  =force overrides a weaker OPENBLAS_CORETYPE too)\n"
"  --device D      cpu (default) or cuda: device-to-device copy on GPU 0\n"
"                  between two buffers of N floats (default 256M = 1 GiB\n"
"                  each), by cudaMemcpy and by a copy kernel, best of K;\n"
"                  GB/s counts read + write (8 bytes per float, as STREAM\n"
"                  copy); copy_gbps is the better of the two, the number\n"
"                  optim --device cuda compares against.  Without a GPU or\n"
"                  a CUDA build: one line on stderr, exit 2\n"
CLI_COMMON_HELP);
}

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
    if (com->json) {
        char *s = json_dumps(row, JSON_COMPACT | JSON_PRESERVE_ORDER);
        puts(s);
        free(s);
    } else {
        printf("# GPU: %s, device-to-device copy of %zu floats (%.3g GB)\n",
               r.gpu, n, 4e-9 * (double)n);
        printf("# %12s %14s %14s %7s\n", "elements", "memcpy(GB/s)",
               "kernel(GB/s)", "#wrong");
        printf("  %12zu %14.1f %14.1f %7ld\n", n, r.memcpy_gbps,
               r.kernel_gbps, r.wrong);
    }
    if (run) {
        if (lbs_run_append(run, "stream", json_incref(row), &e)) {
            cli_error("stream", "%s", e.msg);
            rc = EXIT_RUNTIME;
        } else if (!com->json)
            fprintf(stderr, "results: %s/stream.jsonl\n", lbs_run_dir(run));
    }
    json_decref(row);
    lbs_run_close(run);
    if (!rc && r.wrong) {
        cli_error("stream", "--device cuda: %ld floats copied wrong",
                  r.wrong);
        rc = EXIT_RUNTIME;
    }
    return rc;
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

int verb_stream(int argc, char **argv)
{
    struct cli_common com = {.save = 1};
    size_t n = 32000000;
    long iters = 10, threads = 0, sgemm_n = 1024;
    int cuda = 0, n_given = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int c = cli_common_opt(&com, argc, argv, &i);
        if (c < 0)
            return EXIT_BAD_INPUT;
        if (c)
            continue;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--elements")) {
            if (cli_size(a, v, &n)) return EXIT_BAD_INPUT;
            n_given = 1;
            i++;
        } else if (!strcmp(a, "--device")) {
            if (!v || (strcmp(v, "cpu") && strcmp(v, "cuda"))) {
                cli_error(a, "expected cpu or cuda, got '%s'", v ? v : "");
                return EXIT_BAD_INPUT;
            }
            cuda = !strcmp(v, "cuda");
            i++;
        } else if (!strcmp(a, "--iters")) {
            if (cli_int(a, v, 1, 100000, &iters)) return EXIT_BAD_INPUT;
            i++;
        } else if (!strcmp(a, "--sgemm")) {
            if (cli_int(a, v, 0, 16384, &sgemm_n)) return EXIT_BAD_INPUT;
            i++;
        } else if (!strcmp(a, "--threads")) {
            if (cli_int(a, v, 1, 4096, &threads)) return EXIT_BAD_INPUT;
            i++;
        } else {
            cli_error("stream", "unknown option '%s' (see --help)", a);
            return EXIT_BAD_INPUT;
        }
    }
    if (cuda && !n_given)
        n = 256000000;   /* 1 GiB per buffer: device bandwidth, not cache */
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
    json_t *row = json_pack("{s:s,s:I,s:i,s:i,s:f,s:f,s:I}", "bench", "stream",
                            "elements", (json_int_t)n, "threads", nt, "iters", (int)iters,
                            "copy_gbps", r.copy_gbps, "triad_gbps",
                            r.triad_gbps, "wrong", (json_int_t)r.wrong);
    double sg = 0, peak = 0, mhz = 0;
    if (sgemm_n > 0) {
        openblas_set_num_threads(nt);
        sg = blas_sgemm_gflops((int)sgemm_n, 1.0);
        peak = blas_peak_gflops(nt, &mhz);
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
    if (com.json) {
        char *s = json_dumps(row, JSON_COMPACT | JSON_PRESERVE_ORDER);
        puts(s);
        free(s);
    } else {
        printf("# %12s %8s %14s %15s %7s\n", "elements", "threads",
               "copy(GB/s)", "triad(GB/s)", "#wrong");
        printf("  %12zu %8d %14.2f %15.2f %7ld\n", n, nt, r.copy_gbps,
               r.triad_gbps, r.wrong);
        if (sgemm_n > 0)
            printf("# sgemm %ld^3 on %d thread%s: %.1f GFLOP/s (OpenBLAS %s "
                   "kernels), %.0f%% of a nominal %.0f GFLOP/s peak\n",
                   sgemm_n, nt, nt > 1 ? "s" : "", sg,
                   openblas_get_corename(), peak > 0 ? 100 * sg / peak : 0,
                   peak);
        if (sgemm_n > 0 && peak > 0 && sg > peak)
            printf("# (above 100%%: the %.0f MHz /proc/cpuinfo reports is "
                   "below the running (turbo) clock)\n", mhz);
    }
    int rc = 0;
    if (run) {
        struct lbs_err e;
        if (lbs_run_append(run, "stream", json_incref(row), &e)) {
            cli_error("stream", "%s", e.msg);
            rc = EXIT_RUNTIME;
        } else if (!com.json)
            fprintf(stderr, "results: %s/stream.jsonl\n", lbs_run_dir(run));
    }
    json_decref(row);
    lbs_run_close(run);
    if (!rc && r.wrong) {
        cli_error("stream", "%ld elements have wrong values", r.wrong);
        rc = EXIT_RUNTIME;
    }
    return rc;
}
