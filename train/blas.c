/* blas.c - OpenBLAS kernel-family selection and sgemm speed (see blas.h). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <cblas.h>

#include "blas.h"

static int name_in(const char *name, const char *const *list)
{
    for (; *list; list++)
        if (!strcasecmp(name, *list))
            return 1;
    return 0;
}

const char *blas_pick_coretype(const char *corename,
                               const struct blas_cpu *cpu, int user_set)
{
    static const char *const avx512_cores[] = {
        "SkylakeX", "CooperLake", "SapphireRapids", NULL};
    static const char *const avx2_cores[] = {
        "Haswell", "Zen", "SkylakeX", "CooperLake", "SapphireRapids",
        "Excavator", NULL};
    if (user_set || !cpu)
        return NULL;
    const char *c = corename ? corename : "";
    if (cpu->avx512 && !name_in(c, avx512_cores))
        return "SkylakeX";
    if (cpu->avx2 && !cpu->avx512 && !name_in(c, avx2_cores))
        return "Haswell";
    return NULL;
}

void blas_cpu_detect(struct blas_cpu *cpu)
{
    *cpu = (struct blas_cpu){0};
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    cpu->avx512 = __builtin_cpu_supports("avx512f") &&
                  __builtin_cpu_supports("avx512bw") &&
                  __builtin_cpu_supports("avx512dq") &&
                  __builtin_cpu_supports("avx512vl");
    cpu->avx2 = __builtin_cpu_supports("avx2") &&
                __builtin_cpu_supports("fma");
#endif
}

const char *blas_auto_bad(void)
{
    const char *m = getenv("LBSCALE_BLAS_AUTO");
    return !m || !strcmp(m, "1") || !strcmp(m, "0") || !strcmp(m, "force")
           ? NULL : m;
}

int blas_autoselect_env(void)
{
    const char *mode = getenv("LBSCALE_BLAS_AUTO");
    if (mode && !strcmp(mode, "0"))
        return 0;
    int force = mode && !strcmp(mode, "force");
    const char *env = getenv("OPENBLAS_CORETYPE");
    if (getenv("LBSCALE_BLAS_AUTOSET"))   /* already re-executed once */
        return 0;
    struct blas_cpu cpu;
    blas_cpu_detect(&cpu);
    const char *core = openblas_get_corename();
    const char *pick = blas_pick_coretype(core, &cpu, !force && env && *env);
    if (!pick)
        return 0;
    setenv("OPENBLAS_CORETYPE", pick, 1);
    setenv("LBSCALE_BLAS_AUTOSET", core ? core : "unknown", 1);
    return 1;
}

void blas_autoselect_undo(void)
{
    unsetenv("OPENBLAS_CORETYPE");
    unsetenv("LBSCALE_BLAS_AUTOSET");
}

json_t *blas_info_json(void)
{
    const char *cfg = openblas_get_config();
    char ver[32] = "";
    if (cfg && !strncmp(cfg, "OpenBLAS ", 9))
        sscanf(cfg + 9, "%31s", ver);
    const char *env = getenv("OPENBLAS_CORETYPE");
    const char *from = getenv("LBSCALE_BLAS_AUTOSET");
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string("OpenBLAS"));
    json_object_set_new(o, "version", ver[0] ? json_string(ver) : json_null());
    json_object_set_new(o, "config", cfg ? json_string(cfg) : json_null());
    const char *core = openblas_get_corename();
    json_object_set_new(o, "corename", core ? json_string(core) : json_null());
    json_object_set_new(o, "coretype_env", env ? json_string(env)
                                               : json_null());
    json_object_set_new(o, "autoselected_from", from ? json_string(from)
                                                     : json_null());
    return o;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double blas_sgemm_gflops(int n, double seconds)
{
    size_t nn = (size_t)n * (size_t)n;
    float *a = malloc(nn * sizeof *a), *b = malloc(nn * sizeof *b),
          *c = malloc(nn * sizeof *c);
    if (!a || !b || !c) {
        free(a);
        free(b);
        free(c);
        return 0;
    }
    for (size_t i = 0; i < nn; i++) {
        a[i] = (float)(i % 7) * 0.1f;
        b[i] = (float)(i % 5) * 0.1f;
    }
    double best = 1e30, start = now();
    int reps = 0;
    do {
        double t0 = now();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f,
                    a, n, b, n, 0.0f, c, n);
        double t = now() - t0;
        best = t < best ? t : best;
        reps++;
    } while (reps < 3 || now() - start < seconds);
    free(a);
    free(b);
    free(c);
    return 2.0 * (double)n * (double)nn / best / 1e9;
}

double blas_peak_gflops(int threads, double *mhz)
{
    double f = 0;
    FILE *fp = fopen("/proc/cpuinfo", "r");
    if (fp) {
        char line[512];
        while (fgets(line, sizeof line, fp))
            if (!strncmp(line, "cpu MHz", 7)) {
                const char *p = strchr(line, ':');
                if (p)
                    f = atof(p + 1);
                break;
            }
        fclose(fp);
    }
    if (mhz)
        *mhz = f;
    struct blas_cpu cpu;
    blas_cpu_detect(&cpu);
    double per_cycle = cpu.avx512 ? 64 : cpu.avx2 ? 32 : 8;
    return f * 1e-3 * per_cycle * (threads > 0 ? threads : 1);
}
