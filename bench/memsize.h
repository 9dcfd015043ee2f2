/* memsize.h - overflow-checked buffer sizes and whether they fit in this
 * machine's memory (bench/ only).
 *
 * The size parser accepts counts up to SIZE_MAX / 2, so `count x element
 * size` can wrap around; a wrapped size once made `stream --elements
 * 2305843009213693952` allocate 0 bytes and write past them.  Every
 * benchmark computes its byte counts here and refuses, as bad input and
 * before anything is written, what cannot be allocated: a size that
 * overflows, or more than 90% of the memory available (overcommit would
 * let the allocation succeed and the OOM killer end the run later).
 */
#ifndef LBS_MEMSIZE_H
#define LBS_MEMSIZE_H

#include <stddef.h>

#include "lbscale/error.h"

/* n values of elem bytes, rounded up to a multiple of align (a power of
 * two, or 1): 0 and *out set, or -EOVERFLOW. */
int lbs_array_bytes(size_t n, size_t elem, size_t align, size_t *out);

/* count arrays of n values of elem bytes must fit in 90% of the memory
 * available now (/proc/meminfo MemAvailable, else the physical total):
 * 0, or -EINVAL with "<what>: ..." in err saying how much is needed and
 * how much the machine has (what names the option, e.g. "--elements 5G"). */
int lbs_buffers_fit(size_t n, size_t elem, size_t count, const char *what,
                    struct lbs_err *err);

#endif
