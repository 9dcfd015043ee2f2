/* fma_probe.h - the CPU's FP32 multiply-add peak, measured (bench/stream.c).
 *
 * `lbscale stream` puts sgemm beside the rate at which the cores really
 * retire FP32 fused multiply-adds, not beside a clock x FLOP/cycle guess:
 * the clock /proc/cpuinfo reports is not the one the cores run at (turbo,
 * or a lower clock under wide vectors), and a core may split a 512-bit FMA
 * into two 256-bit halves.  A short loop of independent FMA chains runs on
 * every thread at each kernel level the CPU has (lbscale/isa.h: c = SSE2
 * multiply then add, avx2 = 256-bit FMA, avx512 = 512-bit FMA).
 */
#ifndef LBS_FMA_PROBE_H
#define LBS_FMA_PROBE_H

#define FMA_LEVELS 3   /* c, avx2, avx512 (lbscale/isa.h's order) */

struct fma_peak {
    const char *level[FMA_LEVELS];
    double gflops[FMA_LEVELS];   /* 0: a level the CPU lacks */
    int n;                       /* levels measured: the best is n - 1 */
};

/* GFLOP/s of each level on `threads` OpenMP threads (best of a few runs
 * of about `seconds` each, all levels together about 6 x that). */
void fma_probe(int threads, double seconds, struct fma_peak *p);

#endif
