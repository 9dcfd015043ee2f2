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

/* The lines of such a text (JSONL), one call each: from *pos, the next
 * line that is not blank (spaces, tabs and CR only) in *line, *ll bytes
 * without its '\n'; *no counts every line, blanks included (1-based);
 * *ended says whether a '\n' ended it (0: the text's last bytes, perhaps
 * a row still being written).  Returns 1, or 0 past the end. */
int lbs_text_next_line(const char *text, size_t len, size_t *pos, long *no,
                       const char **line, size_t *ll, int *ended);

/* cap as "1 MiB" / "2 GiB" / "512 bytes" into buf (for messages, --help). */
const char *lbs_size_str(size_t bytes, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
