/* fma_probe.c - see fma_probe.h.  Each level's loop is compiled for its
 * own instruction set (function target attributes) and called only when
 * the CPU has it (lbs_isa_best, which also honours LBSCALE_CPU_MAX). */
#include <immintrin.h>
#include <omp.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "fma_probe.h"
#include "lbscale/isa.h"

/* Twelve independent accumulators per thread, each its own variable so
 * that it lives in a register: more than the FMA latency (4-5 cycles)
 * times the FMA ports (2), so the loop is bound by throughput.
 * x = x m + c stays near c / (1 - m): normal floats, no denormal stalls.
 * Each new value goes through an empty asm in a vector register, so the
 * compiler can neither fold the chains nor drop any. */
#define CHAINS 12
#define MUL 0.999999f
#define ADD 1e-7f
#define EACH(F) F(0) F(1) F(2) F(3) F(4) F(5) F(6) F(7) F(8) F(9) F(10) F(11)

/* FLOP per loop iteration: CHAINS vectors of `lanes` floats, 2 each. */
#define FLOP(lanes) (2.0 * CHAINS * (lanes))

/* The loop of one level: vector type V, its set1, add and horizontal sum;
 * DECL_name and STEP_name declare and step one chain. */
#define FMA_LOOP(name, V, SET1, ADD_V, SUM)                          \
    static float name(long iters)                                          \
    {                                                                      \
        const V m = SET1(MUL), c = SET1(ADD);                              \
        EACH(DECL_##name)                                                  \
        for (long i = 0; i < iters; i++) {                                 \
            EACH(STEP_##name)                                              \
        }                                                                  \
        V s = x0;                                                          \
        s = ADD_V(s, x1); s = ADD_V(s, x2); s = ADD_V(s, x3);              \
        s = ADD_V(s, x4); s = ADD_V(s, x5); s = ADD_V(s, x6);              \
        s = ADD_V(s, x7); s = ADD_V(s, x8); s = ADD_V(s, x9);              \
        s = ADD_V(s, x10); s = ADD_V(s, x11);                              \
        return SUM(s);                                                     \
    }

#define DECL_loop_c(k) __m128 x##k = _mm_set1_ps((float)(k));
#define STEP_loop_c(k)                                                     \
    x##k = _mm_add_ps(_mm_mul_ps(x##k, m), c);   /* SSE2: no FMA */        \
    __asm__ volatile("" : "+x"(x##k));
FMA_LOOP(loop_c, __m128, _mm_set1_ps, _mm_add_ps, _mm_cvtss_f32)

#define DECL_loop_avx2(k) __m256 x##k = _mm256_set1_ps((float)(k));
#define STEP_loop_avx2(k)                                                  \
    x##k = _mm256_fmadd_ps(x##k, m, c);                                    \
    __asm__ volatile("" : "+x"(x##k));
__attribute__((target("avx2,fma")))
FMA_LOOP(loop_avx2, __m256, _mm256_set1_ps, _mm256_add_ps,
         _mm256_cvtss_f32)

#define DECL_loop_avx512(k) __m512 x##k = _mm512_set1_ps((float)(k));
#define STEP_loop_avx512(k)                                                \
    x##k = _mm512_fmadd_ps(x##k, m, c);                                    \
    __asm__ volatile("" : "+v"(x##k));
__attribute__((target("avx512f")))
FMA_LOOP(loop_avx512, __m512, _mm512_set1_ps, _mm512_add_ps,
         _mm512_reduce_add_ps)

typedef float (*fma_loop)(long);

static double thread_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* `iters` iterations on every thread: the wall seconds from the fork to
 * the join, and each thread's own rate in best[t] (raised when higher),
 * GFLOP/s over the CPU time the thread ran.  CPU time, not wall time: on
 * a machine shared with other jobs a thread that waits for its core
 * would read a slower FMA unit than the core has.  The sums land in a
 * volatile so the loops stay. */
static double run(fma_loop f, double lanes, long iters, int threads,
                  double *best)
{
    static volatile float sink;
    double t0 = cli_now();
#pragma omp parallel num_threads(threads)
    {
        int t = omp_get_thread_num();
        double c0 = thread_cpu_s();
        float s = f(iters);
        double c = thread_cpu_s() - c0;
        double g = c > 0 ? FLOP(lanes) * (double)iters / c / 1e9 : 0;
        if (best && t < threads && g > best[t])
            best[t] = g;
#pragma omp atomic
        sink += s;
    }
    return cli_now() - t0;
}

/* The sum over the threads of each one's best rate in five runs of at
 * least `seconds` each: the count of iterations grows until one run
 * takes that long (which also wakes the threads and lets the clock
 * settle under wide vectors).  Threads that share one core's FMA units
 * (SMT) each read their share, so the sum stays the core's peak. */
static double level_peak(fma_loop f, double lanes, int threads,
                         double seconds)
{
    double best[256] = {0}, t, sum = 0;
    long iters = 1 << 12;
    threads = threads > 256 ? 256 : threads;
    while ((t = run(f, lanes, iters, threads, NULL)) < seconds &&
           iters < (1L << 40))
        iters *= t > 0 && seconds / t < 8 ? 2 : 8;
    for (int r = 0; r < 5; r++)
        run(f, lanes, iters, threads, best);
    for (int i = 0; i < threads; i++)
        sum += best[i];
    return sum;
}

void fma_probe(int threads, double seconds, struct fma_peak *p)
{
    static const struct {
        const char *name;
        fma_loop f;
        double lanes;
    } lv[FMA_LEVELS] = {{"c", loop_c, 4}, {"avx2", loop_avx2, 8},
                        {"avx512", loop_avx512, 16}};
    memset(p, 0, sizeof *p);
    const char *best = lbs_isa_best();
    for (int i = 0; i < FMA_LEVELS; i++) {
        p->level[i] = lv[i].name;
        p->gflops[i] = level_peak(lv[i].f, lv[i].lanes,
                                  threads > 0 ? threads : 1, seconds);
        p->n = i + 1;
        if (!strcmp(best, lv[i].name))
            break;
    }
}
