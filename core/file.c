/* file.c - lbs_read_file (see lbscale/file.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lbscale/file.h"

const char *lbs_size_str(size_t bytes, char *buf, size_t len)
{
    static const char *const unit[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    size_t v = bytes;
    while (u < 4 && v >= 1024 && v % 1024 == 0) {
        v /= 1024;
        u++;
    }
    snprintf(buf, len, "%zu %s", v, unit[u]);
    return buf;
}

/* Read fd to its end into a buffer grown from hint; more than cap bytes
 * is an error (the file grew after fstat, or st_size lied: /proc). */
static int read_all(int fd, const char *path, size_t hint, size_t cap,
                    char **text, size_t *len, struct lbs_err *err)
{
    char cs[32];
    size_t size = (hint < cap ? hint : cap) + 1, n = 0;
    char *buf = malloc(size + 1);
    if (!buf)
        return lbs_err_set(err, -ENOMEM, "%s: out of memory", path);
    for (;;) {
        if (n == size) {
            if (n > cap) {
                free(buf);
                return lbs_err_set(err, -EINVAL, "%s: larger than %s", path,
                                   lbs_size_str(cap, cs, sizeof cs));
            }
            size_t grow = size > cap - size ? cap + 1 : 2 * size;
            char *q = realloc(buf, grow + 1);
            if (!q) {
                free(buf);
                return lbs_err_set(err, -ENOMEM, "%s: out of memory", path);
            }
            buf = q;
            size = grow;
        }
        ssize_t r = read(fd, buf + n, size - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            free(buf);
            return lbs_err_set(err, -EIO, "%s: read error: %s", path,
                               strerror(e));
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    if (n > cap) {
        free(buf);
        return lbs_err_set(err, -EINVAL, "%s: larger than %s", path,
                           lbs_size_str(cap, cs, sizeof cs));
    }
    buf[n] = '\0';
    *text = buf;
    *len = n;
    return 0;
}

int lbs_read_file(const char *path, size_t cap, char **text, size_t *len,
                  struct lbs_err *err)
{
    char cs[32];
    struct stat st;
    *text = NULL;
    *len = 0;
    /* O_NONBLOCK: opening a FIFO must not wait for a writer; the type
     * check below refuses it right after */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return lbs_err_set(err, errno == ENOENT ? -ENOENT : -EINVAL,
                           "%s: cannot open: %s", path, strerror(errno));
    int rc = 0;
    if (fstat(fd, &st))
        rc = lbs_err_set(err, -EIO, "%s: cannot stat: %s", path,
                         strerror(errno));
    else if (!S_ISREG(st.st_mode))
        rc = lbs_err_set(err, -EINVAL, "%s: not a regular file (%s)", path,
                         S_ISDIR(st.st_mode) ? "a directory"
                         : S_ISFIFO(st.st_mode) ? "a FIFO"
                         : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)
                             ? "a device" : "a socket");
    else if ((unsigned long long)st.st_size > cap)
        rc = lbs_err_set(err, -EINVAL, "%s: larger than %s (%lld bytes)",
                         path, lbs_size_str(cap, cs, sizeof cs),
                         (long long)st.st_size);
    else
        rc = read_all(fd, path, (size_t)st.st_size, cap, text, len, err);
    close(fd);
    return rc;
}

int lbs_text_next_line(const char *text, size_t len, size_t *pos, long *no,
                       const char **line, size_t *ll, int *ended)
{
    while (*pos < len) {
        const char *s = text + *pos, *nl = memchr(s, '\n', len - *pos);
        size_t l = nl ? (size_t)(nl - s) : len - *pos, k = 0;
        *pos += l + 1;
        ++*no;
        while (k < l && (s[k] == ' ' || s[k] == '\t' || s[k] == '\r'))
            k++;
        if (k < l) {
            *line = s;
            *ll = l;
            *ended = nl != NULL;
            return 1;
        }
    }
    return 0;
}
