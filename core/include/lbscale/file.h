/* lbscale/file.h - reading a whole input file with a size cap.
 *
 * Every reader of user-named files (platform, model and trace files of
 * the simulator, results JSONL, coll samples) goes through lbs_read_file,
 * so none of them can hang on a FIFO or a terminal, or read without end
 * from /dev/zero: only regular files are accepted, and only up to a cap
 * that the reader states in its --help.
 */
#ifndef LBSCALE_FILE_H
#define LBSCALE_FILE_H

#include <stddef.h>
#include "lbscale/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Read the regular file at path, at most cap bytes, into a new
 * NUL-terminated buffer (*text, free with free(); *len bytes before the
 * NUL, which may contain NULs of its own).  Errors name the path:
 * -ENOENT missing, -EINVAL not a regular file (FIFO, device, directory)
 * or larger than cap, -EIO a read error, -ENOMEM. */
int lbs_read_file(const char *path, size_t cap, char **text, size_t *len,
                  struct lbs_err *err);

/* cap as "1 MiB" / "2 GiB" / "512 bytes" into buf (for messages, --help). */
const char *lbs_size_str(size_t bytes, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
