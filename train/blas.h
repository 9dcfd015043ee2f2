/* blas.h - OpenBLAS kernel-family selection and sgemm speed (bench/ only).
 *
 * Debian's OpenBLAS is built with DYNAMIC_ARCH: at load time it reads
 * cpuid and picks a kernel family (its "core name").  On a CPU model it
 * does not know (a VM's masked or new model) it falls back to Prescott's
 * SSE3 kernels, 5-10x below the machine's sgemm speed, or on AMD parts
 * with AVX-512 (Zen 4) to the AVX2 Haswell kernels.  OpenBLAS documents
 * OPENBLAS_CORETYPE=NAME to force a family; it is read once, when the
 * library initialises, so lbscale's main() re-executes itself with it set
 * (blas_autoselect_env) when it is unset and the decision below says so.
 * LBSCALE_BLAS_AUTO=0 turns this off; a user's OPENBLAS_CORETYPE wins
 * unless LBSCALE_BLAS_AUTO=force (then a weaker family it names, e.g.
 * Haswell on an AVX-512 machine, is replaced too).
 */
#ifndef LBS_BLAS_H
#define LBS_BLAS_H

#include <jansson.h>

/* CPU features that matter for the choice (cpuid). */
struct blas_cpu {
    int avx512;   /* avx512f, avx512bw, avx512dq, avx512vl: SkylakeX kernels */
    int avx2;     /* avx2 and fma: Haswell kernels */
};

/* The pure decision: the OPENBLAS_CORETYPE to set, or NULL to leave
 * OpenBLAS's own choice.  corename: openblas_get_corename() (any case).
 *   avx512 CPU, core not an AVX-512 family  -> "SkylakeX"
 *   avx2 CPU, core not an AVX2/AVX-512 family (Prescott, Core2, Nehalem,
 *     Sandybridge, Barcelona, Bulldozer..., "generic", unknown) -> "Haswell"
 *   otherwise NULL.  user_set: OPENBLAS_CORETYPE is already set -> NULL. */
const char *blas_pick_coretype(const char *corename,
                               const struct blas_cpu *cpu, int user_set);

/* This CPU's features. */
void blas_cpu_detect(struct blas_cpu *cpu);

/* Called first thing in main(): when the decision names a family and
 * OPENBLAS_CORETYPE is unset, set it (plus LBSCALE_BLAS_AUTOSET=old core
 * name) and return 1: main() then re-executes itself (the library reads
 * it only when it loads).  0: nothing to do (or already re-executed). */
int blas_autoselect_env(void);
/* The exec failed: take back what blas_autoselect_env set (call it only
 * when that returned 1). */
void blas_autoselect_undo(void);
/* The value of LBSCALE_BLAS_AUTO, or NULL when it is one this tool knows
 * (unset, "1" = the default, "0", "force"): main() refuses it otherwise,
 * before blas_autoselect_env reads it. */
const char *blas_auto_bad(void);

/* {"name":"OpenBLAS","version":"0.3.21","config":...,"corename":...,
 *  "coretype_env":..., "autoselected_from":...} for meta.json. */
json_t *blas_info_json(void);

/* sgemm n x n x n (row-major, 1 thread count as set): best GFLOP/s over
 * about `seconds` of repetitions. */
double blas_sgemm_gflops(int n, double seconds);

/* Nominal single-precision peak of `threads` cores in GFLOP/s: clock (MHz
 * from /proc/cpuinfo) x FLOP/cycle for the widest FMA (64 AVX-512, 32
 * AVX2+FMA, 8 SSE; two FMA pipes assumed).  0 when the clock is unknown.
 * A VM's /proc/cpuinfo often shows the base clock: the fraction can then
 * exceed 1 (the AMD EPYC VM: 2596 MHz listed, SkylakeX sgemm at 3.5 GHz
 * x 64 FLOP/cycle).
 * *mhz gets the clock. */
double blas_peak_gflops(int threads, double *mhz);

#endif
