/* lbscale/isa.h - which vector instruction set the CPU kernels use.
 *
 * The optimizers' and compressors' hot loops exist at three levels
 * (portable C = baseline x86-64, AVX2+FMA, AVX-512 F/BW/VL/DQ) and one is
 * chosen once, on first use, from cpuid: the best the CPU and OS support,
 * or a lower one named by the environment variable LBSCALE_ISA
 * (c | avx2 | avx512).  A level the CPU lacks is refused, never run.
 * Elementwise results are bit-identical at every level; sums (norms)
 * differ by rounding only (docs/kernels.md states the bound).
 */
#ifndef LBSCALE_ISA_H
#define LBSCALE_ISA_H

#include "lbscale/error.h"

/* The level in use ("c", "avx2" or "avx512"); selects it if not yet. */
const char *lbs_isa_name(void);
/* The best level this CPU supports. */
const char *lbs_isa_best(void);
/* Use level `name` from now on: -EINVAL for a name that is not a level,
 * -ENOTSUP when the CPU lacks it (err names both).  Not thread-safe
 * against kernels running at the same time: call it at start-up. */
int lbs_isa_select(const char *name, struct lbs_err *err);
/* Apply LBSCALE_ISA when set (as lbs_isa_select; 0 when unset). */
int lbs_isa_from_env(struct lbs_err *err);

#endif
