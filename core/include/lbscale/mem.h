/* lbscale/mem.h - memory for the arrays the kernels stream: parameters,
 * gradients, optimizer state, compressor buffers, STREAM's arrays.
 *
 * An array of 2 MiB or more starts on a 2 MiB boundary and is advised as
 * transparent huge pages (madvise MADV_HUGEPAGE), which Linux honours in
 * its default THP mode "madvise".  Why: on 4 KiB pages every page is a
 * TLB walk and a restart of the hardware prefetchers; on this project's
 * 2-core VM, alternated in one process, 2 MiB pages ran the in-place
 * a += s c at 1.02-1.35x and a read-only sum at 1.16-1.26x the GB/s of
 * 4 KiB pages, and whole optimizer steps took 0.87-0.98 of the time
 * (docs/kernels.md, "Huge pages").  Smaller arrays are 64-byte aligned.
 * Where the kernel has no THP the advice is ignored and the array is an
 * ordinary one.
 *
 * LBSCALE_HUGEPAGES=0 turns the advice off (to measure what it is worth);
 * 1 or unset leaves it on.  Release every array with free().
 */
#ifndef LBSCALE_MEM_H
#define LBSCALE_MEM_H

#include <stddef.h>

#include "lbscale/error.h"

/* count x size bytes, uninitialised: NULL when the product overflows or
 * memory runs out (a zero-byte request gets a 64-byte array). */
void *lbs_array_alloc(size_t count, size_t size);
/* The same, zeroed (which also touches every page, from this thread). */
void *lbs_array_zalloc(size_t count, size_t size);

/* Whether arrays are advised as huge pages (LBSCALE_HUGEPAGES). */
int lbs_hugepages_on(void);
/* Check LBSCALE_HUGEPAGES: 0 when unset, "0" or "1"; else -EINVAL with the
 * value named in err (the CLI refuses it with exit 2). */
int lbs_hugepages_from_env(struct lbs_err *err);
/* This process's anonymous memory on huge pages now, in KiB (Linux
 * /proc/self/smaps_rollup, AnonHugePages); -1 where it cannot be read. */
long lbs_hugepages_kib(void);

#endif
