/* fuzz_idx.c - libFuzzer harness for the IDX reader of `lbscale train`
 * (train/data.c idx_read, plain or gzip).  Input: first byte's low bit
 * selects 1-D labels or 3-D images, the rest is the file, written to a
 * memfd that idx_read opens by its /proc/self/fd path (a regular file,
 * no disk).  An accepted file must give dimensions whose product is the
 * data it returned; a refusal must name the file.  Built by
 * tests/fuzz/build.sh.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "data.h"

static int fd = -1;
static char path[64];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    if (fd < 0) {
        fd = memfd_create("idx", 0);
        if (fd < 0)
            abort();
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) ||
        (size > 1 && pwrite(fd, data + 1, size - 1, 0) != (ssize_t)(size - 1)))
        abort();
    int ndim = data[0] & 1 ? 3 : 1;
    uint8_t *out;
    size_t dims[3] = {0, 0, 0};
    struct lbs_err e = {{0}};
    if (idx_read(path, ndim, &out, dims, &e)) {
        if (!strstr(e.msg, path) || out)
            abort();
        return 0;
    }
    size_t total = 1;
    for (int i = 0; i < ndim; i++)
        total *= dims[i];
    if (total > size)   /* the payload came from the file */
        abort();
    volatile uint8_t sink = out[total - 1];   /* ASan: all of it exists */
    (void)sink;
    free(out);
    return 0;
}
