/* results.c - run directories, meta.json, append-only JSONL files and the
 * attempt bookkeeping that makes a suite's rows land exactly once. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lbscale/file.h"
#include "git_rev.h"
#include "results.h"

/* Room left under PATH_MAX for "/<verb>.jsonl", "/plots/<figure>.svg"
 * and the like: a run directory longer than this is refused up front. */
#define RUN_DIR_MAX (PATH_MAX - 128)

struct lbs_run {
    char dir[PATH_MAX];
    char attempt[LBS_ATTEMPT_MAX + 1];   /* "" outside a suite */
};

/* Whether errno from creating or opening a user-given path means the path
 * was bad (exit 2) rather than the machine failing (exit 1). */
static int path_errno_is_input(int e)
{
    return e == ENOENT || e == ENOTDIR || e == EEXIST || e == EACCES ||
           e == EPERM || e == EROFS || e == ENAMETOOLONG || e == ELOOP ||
           e == EINVAL || e == EISDIR;
}

static int path_err(struct lbs_err *err, int e, const char *fmt,
                    const char *path)
{
    return lbs_err_set(err, path_errno_is_input(e) ? -EINVAL : -EIO, fmt,
                       path, strerror(e));
}

int lbs_out_file_check(const char *path, struct lbs_err *err)
{
    struct stat st;
    if (!*path)
        return lbs_err_set(err, -EINVAL, "empty output path");
    if (lstat(path, &st))
        return errno == ENOENT || errno == ENOTDIR ? 0
               : path_err(err, errno, "%s: cannot stat: %s", path);
    if (S_ISREG(st.st_mode))
        return 0;
    /* rename() over a device, FIFO or socket would replace the node
     * itself (/dev/null with --trace as root); over a symlink it would
     * replace the link the user may have meant to write through */
    return lbs_err_set(err, -EINVAL, "%s: exists and is not a regular file "
                       "(%s); output goes only to regular files", path,
                       S_ISDIR(st.st_mode) ? "a directory"
                       : S_ISLNK(st.st_mode) ? "a symbolic link"
                       : S_ISFIFO(st.st_mode) ? "a FIFO"
                       : S_ISSOCK(st.st_mode) ? "a socket" : "a device");
}

/* ".lbscale-tmp.<pid>.<16 hex>": the private prefix is what lets
 * lbs_clean_stale_tmp prove a leftover is one of ours (a user's
 * notes.tmp.4000000.txt never starts with it), the pid whether its
 * writer is gone, the random part that no one can plant it in advance. */
static int tmp_name(char *buf, size_t len)
{
    unsigned char r[8];
    size_t got = 0;
    while (got < sizeof r) {
        ssize_t n = getrandom(r + got, sizeof r - got, 0);
        if (n < 0 && errno != EINTR)
            return -1;
        if (n > 0)
            got += (size_t)n;
    }
    snprintf(buf, len, LBS_TMP_PREFIX "%ld.%02x%02x%02x%02x%02x%02x%02x%02x",
             (long)getpid(), r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]);
    return 0;
}

int lbs_tmp_create(int dfd, char *name, size_t len, int dir)
{
    for (int i = 0; i < 100; i++) {
        if (tmp_name(name, len))
            return -1;
        /* O_EXCL never opens what is there, a planted symlink included */
        int fd = dir ? mkdirat(dfd, name, 0700)
                     : openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL |
                              O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd >= 0 || errno != EEXIST)
            return fd;
    }
    return -1;
}

int lbs_path_split(const char *path, char *dir, size_t len,
                   const char **base)
{
    const char *slash = strrchr(path, '/');
    size_t n = !slash || slash == path ? 1 : (size_t)(slash - path);
    *base = slash ? slash + 1 : path;
    if (n >= len)
        return -ENAMETOOLONG;
    memcpy(dir, slash ? path : ".", n);
    dir[n] = '\0';
    return 0;
}

/* Split path into its directory (opened) and last component. */
static int open_parent(const char *path, const char **base)
{
    char dir[PATH_MAX];
    int rc = lbs_path_split(path, dir, sizeof dir, base);
    if (rc) {
        errno = -rc;
        return -1;
    }
    return open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

static int write_all(int fd, const char *text, size_t len)
{
    size_t off = 0;
    while (off < len) {
        ssize_t n = write(fd, text + off, len - off);
        if (n < 0 && errno != EINTR)
            return errno;
        if (n > 0)
            off += (size_t)n;
    }
    return 0;
}

int lbs_write_atomic(const char *path, const char *text, size_t len,
                     struct lbs_err *err)
{
    /* the temporary is made in the target's directory, held open, so the
     * rename cannot land anywhere else; a non-regular file at the final
     * name is refused, never replaced */
    int rc = lbs_out_file_check(path, err);
    if (rc)
        return rc;
    const char *base;
    if (path[strlen(path) - 1] == '/')
        return lbs_err_set(err, -EINVAL, "%s: not a file name", path);
    int dfd = open_parent(path, &base);
    if (dfd < 0)
        return path_err(err, errno, "cannot write %s: %s", path);
    char tmp[64];
    int fd = lbs_tmp_create(dfd, tmp, sizeof tmp, 0);
    if (fd < 0) {
        int e = errno;
        close(dfd);
        return path_err(err, e, "cannot create a file next to %s: %s", path);
    }
    int e = write_all(fd, text, len);
    if (!e && fsync(fd))
        e = errno;
    if (close(fd) && !e)
        e = errno;
    if (!e && (rc = lbs_out_file_check(path, err))) {
        unlinkat(dfd, tmp, 0);
        close(dfd);
        return rc;
    }
    if (!e && renameat(dfd, tmp, dfd, base))
        e = errno;
    if (e)
        unlinkat(dfd, tmp, 0);
    close(dfd);
    return e ? path_err(err, e, "cannot write %s: %s", path) : 0;
}

/* Rename tmp to name in dfd unless name exists: 0, or errno (EEXIST). */
static int rename_new(int dfd, const char *tmp, const char *name)
{
    if (!renameat2(dfd, tmp, dfd, name, RENAME_NOREPLACE))
        return 0;
    if (errno != EINVAL && errno != ENOSYS)
        return errno;
    /* a file system without RENAME_NOREPLACE: link() fails on an existing
     * name just as atomically */
    if (linkat(dfd, tmp, dfd, name, 0))
        return errno;
    unlinkat(dfd, tmp, 0);
    return 0;
}

int lbs_write_unique(const char *dir, lbs_name_fn *name, void *ctx,
                     const char *text, size_t len, char *chosen,
                     size_t clen, struct lbs_err *err)
{
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return path_err(err, errno, "cannot write in %s: %s", dir);
    char tmp[64];
    int fd = lbs_tmp_create(dfd, tmp, sizeof tmp, 0);
    int e = fd < 0 ? errno : write_all(fd, text, len);
    if (fd >= 0 && !e && fsync(fd))
        e = errno;
    if (fd >= 0 && close(fd) && !e)
        e = errno;
    int taken = 1;
    for (int i = 1; !e && taken && i < 100000; i++) {
        int r = name(ctx, dfd, i, chosen, clen);
        if (r < 0) {
            e = ENAMETOOLONG;
        } else if (r == 0) {
            e = rename_new(dfd, tmp, chosen);
            taken = e == EEXIST;
            if (taken)
                e = 0;
        }
    }
    if (!e && taken)
        e = EEXIST;
    if (fd >= 0 && e)
        unlinkat(dfd, tmp, 0);
    close(dfd);
    return e ? path_err(err, e, "cannot write a new file in %s: %s", dir)
             : 0;
}

int lbs_mkdir_p(const char *path)
{
    char buf[PATH_MAX];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof buf) {
        errno = n ? ENAMETOOLONG : ENOENT;
        return -1;
    }
    memcpy(buf, path, n + 1);
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            if (mkdir(buf, 0755) && errno != EEXIST)
                return -1;
            *p = '/';
        }
    if (mkdir(buf, 0755) && errno != EEXIST)
        return -1;
    struct stat st;
    if (stat(buf, &st))
        return -1;
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return 0;
}

/* ".lbscale-tmp.<pid>.<suffix>": the pid, or 0 when name is not one of
 * ours.  Only the private prefix counts: "notes.tmp.4000000.txt" is a
 * user's file, whatever its name looks like. */
static long tmp_owner(const char *name)
{
    size_t pl = strlen(LBS_TMP_PREFIX);
    if (strncmp(name, LBS_TMP_PREFIX, pl))
        return 0;
    char *end;
    long pid = strtol(name + pl, &end, 10);
    return pid > 0 && *end == '.' && end[1] ? pid : 0;
}

/* Whether no live process has this pid: none at all (ESRCH), or only a
 * zombie - a writer killed a moment ago has closed its files (and so
 * released the suite's lock) before its new parent reaps it, and it will
 * never rename its temporary. */
static int pid_gone(long pid)
{
    if (kill((pid_t)pid, 0))
        return errno == ESRCH;
    char p[64], buf[256];
    snprintf(p, sizeof p, "/proc/%ld/stat", pid);
    FILE *f = fopen(p, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* "pid (comm) S ...": the state follows the last ')' */
    const char *r = strrchr(buf, ')');
    return r && r[1] == ' ' && (r[2] == 'Z' || r[2] == 'X');
}

/* Directory name (relative to dfd) as a DIR, opened with extra flags
 * (O_NOFOLLOW: not through a link); NULL when it cannot be. */
static DIR *dir_open(int dfd, const char *name, int flags)
{
    int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | flags);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d && fd >= 0)
        close(fd);
    return d;
}

/* Remove a private temporary directory (gnuplot's figures) and the plain
 * files in it; nothing in it is followed. */
static void remove_tmp_dir(int dfd, const char *name)
{
    DIR *d = dir_open(dfd, name, O_NOFOLLOW);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
            unlinkat(dirfd(d), de->d_name, 0);
    closedir(d);
    unlinkat(dfd, name, AT_REMOVEDIR);
}

void lbs_clean_stale_tmp(const char *dir)
{
    DIR *d = dir_open(AT_FDCWD, dir, 0);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d))) {
        long pid = tmp_owner(de->d_name);
        struct stat st;
        if (!pid || !pid_gone(pid) ||
            fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW))
            continue;
        if (S_ISDIR(st.st_mode))
            remove_tmp_dir(dirfd(d), de->d_name);
        else
            unlinkat(dirfd(d), de->d_name, 0);
    }
    closedir(d);
}

int lbs_run_subdir(const char *run, const char *name, char *out, size_t len,
                   struct lbs_err *err)
{
    int w = snprintf(out, len, "%s/%s", run, name);
    if (w < 0 || (size_t)w >= len)
        return path_err(err, ENAMETOOLONG, "%s: %s", run);
    if (mkdir(out, 0755) && errno != EEXIST)
        return path_err(err, errno, "cannot create %s: %s", out);
    /* a planted RUN/plots -> elsewhere would send everything written
     * there outside the run */
    int fd = open(out, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return lbs_err_set(err, -EINVAL, "%s: %s", out,
                           errno == ELOOP || errno == ENOTDIR
                           ? "not a directory of the run (a symbolic link "
                             "or a file); nothing is written through it"
                           : strerror(errno));
    close(fd);
    return 0;
}

static void utc_stamp(char *buf, size_t len, const char *fmt)
{
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(buf, len, fmt, &tm);
}


/* A new results/<UTC>-<rev>[-N] directory, created exclusively so two runs
 * started in the same second never share one.  0, or -1 with errno set. */
static int new_run_dir(const char *root, char *out, size_t len)
{
    char stamp[64], base[PATH_MAX];
    if (lbs_mkdir_p(root))
        return -1;
    utc_stamp(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ");
    snprintf(base, sizeof base, "%s/%s-%s", root, stamp, LBS_GIT_REV);
    for (int i = 1; i < 1000; i++) {
        int w = i == 1 ? snprintf(out, len, "%s", base)
                       : snprintf(out, len, "%s-%d", base, i);
        if (w < 0 || (size_t)w >= len) {
            errno = ENAMETOOLONG;
            return -1;
        }
        if (mkdir(out, 0755) == 0)
            return 0;
        if (errno != EEXIST)
            return -1;
    }
    return -1;
}
/* The suite's attempt id from the environment: "" outside a suite. */
static int attempt_from_env(char *out, struct lbs_err *err)
{
    const char *a = getenv(LBS_ATTEMPT_ENV);
    out[0] = '\0';
    if (!a)
        return 0;
    size_t n = strlen(a);
    if (n == 0 || n > LBS_ATTEMPT_MAX ||
        strspn(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                  "0123456789._-") != n)
        return lbs_err_set(err, -EINVAL, "%s: not an attempt id (1-%d of "
                           "[A-Za-z0-9._-]); it is set by lbscale suite",
                           LBS_ATTEMPT_ENV, LBS_ATTEMPT_MAX);
    memcpy(out, a, n + 1);
    return 0;
}

/* What meta.json holds: meta's object, or only the command line. */
static json_t *meta_of(lbs_meta_fn *meta, int argc, char **argv)
{
    if (meta)
        return meta(argc, argv);
    json_t *m = json_object(), *cmd = json_array();
    for (int i = 0; i < argc; i++)
        json_array_append_new(cmd, json_string(argv[i]));
    json_object_set_new(m, "command", cmd);
    return m;
}

int lbs_run_open(const char *dir, lbs_meta_fn *meta, int argc, char **argv,
                 struct lbs_run **out, struct lbs_err *err)
{
    *out = NULL;
    const char *root = getenv("LBSCALE_RESULTS");
    root = root && *root ? root : "results";
    const char *given = dir ? dir : root;
    const char *what = dir ? "--out" : root == getenv("LBSCALE_RESULTS")
                                       ? "$LBSCALE_RESULTS" : "results root";
    if (!*given)
        return lbs_err_set(err, -EINVAL, "%s: empty path", what);
    if (strlen(given) > RUN_DIR_MAX)
        return lbs_err_set(err, -EINVAL, "%s: path of %zu bytes is longer "
                           "than the %d this tool accepts", what,
                           strlen(given), RUN_DIR_MAX);
    struct lbs_run *r = calloc(1, sizeof *r);
    if (!r)
        return lbs_err_set(err, -ENOMEM, "out of memory");
    int rc = attempt_from_env(r->attempt, err);
    if (rc) {
        free(r);
        return rc;
    }
    if (dir) {
        snprintf(r->dir, sizeof r->dir, "%s", dir);
        rc = lbs_mkdir_p(r->dir);
    } else {
        rc = new_run_dir(root, r->dir, RUN_DIR_MAX);
    }
    if (rc) {
        int e = errno;
        free(r);
        return path_err(err, e, !strcmp(what, "$LBSCALE_RESULTS")
                        ? "cannot create results directory %s (from "
                          "$LBSCALE_RESULTS): %s"
                        : "cannot create results directory %s: %s", given);
    }
    lbs_clean_stale_tmp(r->dir);
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/meta.json", r->dir);
    if (access(path, F_OK)) {
        json_t *m = meta_of(meta, argc, argv);
        char *s = json_dumps(m, JSON_INDENT(2) | JSON_SORT_KEYS);
        json_decref(m);
        size_t len = s ? strlen(s) : 0;
        char *t = s ? realloc(s, len + 2) : NULL;
        if (!t) {
            free(s);
            free(r);
            return lbs_err_set(err, -ENOMEM, "out of memory");
        }
        memcpy(t + len, "\n", 2);
        rc = lbs_write_atomic(path, t, len + 1, err);
        free(t);
        if (rc) {
            free(r);
            return rc;
        }
    }
    *out = r;
    return 0;
}

const char *lbs_run_dir(const struct lbs_run *r) { return r->dir; }

/* A writer killed inside write() can leave its row without the closing
 * newline.  Called with the file locked, so whoever wrote it is gone: cut
 * the file back to its last complete line. */
static int drop_torn_tail(int fd)
{
    struct stat st;
    if (fstat(fd, &st))
        return -1;
    off_t end = st.st_size, keep = 0;
    char buf[4096];
    while (end > 0) {
        off_t from = end > (off_t)sizeof buf ? end - (off_t)sizeof buf : 0;
        ssize_t n = pread(fd, buf, (size_t)(end - from), from);
        if (n != end - from)
            return -1;
        if (end == st.st_size && buf[n - 1] == '\n')
            return 0;                       /* the common case: intact */
        char *nl = memrchr(buf, '\n', (size_t)n);
        if (nl) {
            keep = from + (nl - buf) + 1;
            break;
        }
        end = from;
    }
    return ftruncate(fd, keep);
}

int lbs_append_line(const char *path, const char *line, size_t len,
                    struct lbs_err *err)
{
    /* O_APPEND + an exclusive lock: concurrent writers (two coll --out R,
     * the ranks of several runs) interleave whole rows and lose none;
     * O_NOFOLLOW: a planted symlink is not written through. */
    int fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_NOFOLLOW |
                        O_CLOEXEC | O_NONBLOCK, 0644);
    if (fd < 0)
        return path_err(err, errno, "cannot open %s: %s", path);
    struct stat st;
    int e = fstat(fd, &st) ? errno : !S_ISREG(st.st_mode) ? EINVAL : 0;
    if (e == EINVAL) {
        close(fd);
        return lbs_err_set(err, -EINVAL, "%s: not a regular file", path);
    }
    while (!e && flock(fd, LOCK_EX))
        if (errno != EINTR)
            e = errno;
    if (!e && drop_torn_tail(fd))
        e = errno;
    off_t before = 0;   /* the size with every whole row, under the lock */
    if (!e && fstat(fd, &st))
        e = errno;
    else if (!e)
        before = st.st_size;
    if (!e && (e = write_all(fd, line, len)))
        /* whole or absent: a full disk (ENOSPC, EDQUOT) or any short
         * write takes the part that landed back out, under the lock */
        while (ftruncate(fd, before) && errno == EINTR)
            ;
    if (close(fd) && !e)   /* closing drops the lock */
        e = errno;
    return e ? path_err(err, e, "cannot append to %s: %s", path) : 0;
}

int lbs_run_append(struct lbs_run *r, const char *verb, json_t *row,
                   struct lbs_err *err)
{
    if (r->attempt[0] && strcmp(verb, "suite"))
        json_object_set_new(row, "attempt", json_string(r->attempt));
    char *line = json_dumps(row, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(row);
    if (!line)
        return lbs_err_set(err, -ENOMEM, "cannot record %s row", verb);
    size_t ll = strlen(line);
    char *t = realloc(line, ll + 2);
    if (!t) {
        free(line);
        return lbs_err_set(err, -ENOMEM, "out of memory");
    }
    memcpy(t + ll, "\n", 2);
    char path[PATH_MAX + 48];
    snprintf(path, sizeof path, "%s/%s.jsonl", r->dir, verb);
    int rc = lbs_append_line(path, t, ll + 1, err);
    free(t);
    return rc;
}

int lbs_run_append_rows(struct lbs_run *r, const char *verb, json_t *rows,
                        struct lbs_err *err)
{
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    if (!mem)
        return lbs_err_set(err, -ENOMEM, "out of memory");
    size_t i;
    json_t *row;
    int bad = 0;
    json_array_foreach(rows, i, row) {
        if (r->attempt[0])
            json_object_set_new(row, "attempt", json_string(r->attempt));
        char *line = json_dumps(row, JSON_COMPACT | JSON_PRESERVE_ORDER);
        bad |= !line || fprintf(mem, "%s\n", line) < 0;
        free(line);
    }
    bad |= fclose(mem) != 0;
    int rc = 0;
    if (bad || (len && !text))
        rc = lbs_err_set(err, -ENOMEM, "cannot record %s rows", verb);
    else if (len) {
        char path[PATH_MAX + 48];
        snprintf(path, sizeof path, "%s/%s.jsonl", r->dir, verb);
        rc = lbs_append_line(path, text, len, err);
    }
    free(text);
    return rc;
}

const char *lbs_run_attempt(const struct lbs_run *r) { return r->attempt; }

void lbs_run_close(struct lbs_run *r)
{
    free(r);
}

int lbs_run_valid(const char *dir, struct lbs_err *err)
{
    struct stat st;
    if (stat(dir, &st) || !S_ISDIR(st.st_mode))
        return lbs_err_set(err, -ENOENT, "no results run directory '%s'",
                           dir);
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/meta.json", dir);
    json_t *m = json_load_file(path, 0, NULL);
    int ok = json_is_object(m);
    json_decref(m);
    return ok ? 0 : lbs_err_set(err, -EINVAL, "%s/meta.json is missing or "
                                "not JSON: not a results run", dir);
}

/* ------------------------------------------------------------------ */
/* attempts: which rows count                                           */

json_t *lbs_run_committed(const char *dir, struct lbs_err *err)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/suite.jsonl", dir);
    json_t *rows = lbs_jsonl_load(path, err);
    if (!rows)
        return NULL;
    json_t *ok = json_object(), *r;
    size_t i;
    int invocation = 0;
    json_array_foreach(rows, i, r) {
        const char *a = json_string_value(json_object_get(r, "attempt"));
        const char *st = json_string_value(json_object_get(r, "status"));
        const char *ev = json_string_value(json_object_get(r, "event"));
        json_t *at = json_object_get(r, "started_s");
        invocation += ev && !strcmp(ev, "start");
        /* when it started: --jobs runs record it; one at a time, the
         * commits come in the order the runs started */
        if (a && st && !strcmp(st, "ok"))
            json_object_set_new(ok, a, json_pack("[i,f]", invocation,
                                json_is_number(at) ? json_number_value(at)
                                                   : (double)i));
    }
    json_decref(rows);
    return ok;
}

/* Whether row belongs to no attempt or to a committed one. */
static int row_counts(json_t *row, json_t *committed)
{
    const char *a = json_string_value(json_object_get(row, "attempt"));
    return !a || json_object_get(committed, a);
}

struct started {
    int invocation;
    double at;
    size_t pos;
    json_t *row;
};

static int by_start(const void *pa, const void *pb)
{
    const struct started *a = pa, *b = pb;
    if (a->invocation != b->invocation)
        return a->invocation < b->invocation ? -1 : 1;
    if (a->at != b->at)
        return a->at < b->at ? -1 : 1;
    return (a->pos > b->pos) - (a->pos < b->pos);
}

/* Suite entries run side by side (--jobs) append their rows in the order
 * they end; readers that take the first or last row of a kind (a
 * figure's reference run, {stream.field}) must see them in the order
 * they started, as one at a time would have written them.  The rows of
 * attempts are put in that order among the places they hold; rows of no
 * attempt stay where they are.  One at a time, nothing moves. */
static void order_by_start(json_t *rows, json_t *committed)
{
    size_t n = json_array_size(rows), k = 0;
    struct started *v = n ? calloc(n, sizeof *v) : NULL;
    for (size_t i = 0; v && i < n; i++) {
        json_t *r = json_array_get(rows, i);
        json_t *when = json_object_get(committed, json_string_value(
            json_object_get(r, "attempt")));
        if (when)
            v[k++] = (struct started){
                (int)json_integer_value(json_array_get(when, 0)),
                json_real_value(json_array_get(when, 1)), i, r};
    }
    if (k > 1) {
        size_t *slot = malloc(k * sizeof *slot);
        for (size_t i = 0; slot && i < k; i++)
            slot[i] = v[i].pos;
        qsort(v, k, sizeof *v, by_start);
        for (size_t i = 0; slot && i < k; i++)
            json_array_set(rows, slot[i], v[i].row);
        free(slot);
    }
    free(v);
}

json_t *lbs_run_rows(const char *dir, const char *verb, struct lbs_err *err)
{
    char path[PATH_MAX + 48];
    snprintf(path, sizeof path, "%s/%s.jsonl", dir, verb);
    json_t *rows = lbs_jsonl_load(path, err);
    if (!rows || !strcmp(verb, "suite"))
        return rows;
    json_t *committed = NULL, *out = json_array(), *r;
    size_t i;
    json_array_foreach(rows, i, r) {
        if (json_object_get(r, "attempt") && !committed &&
            !(committed = lbs_run_committed(dir, err))) {
            json_decref(out);
            out = NULL;
            break;
        }
        if (row_counts(r, committed))
            json_array_append(out, r);
    }
    if (out && committed)
        order_by_start(out, committed);
    json_decref(committed);
    json_decref(rows);
    return out;
}

static json_t *jsonl_load(const char *path, int locked, struct lbs_err *err);

/* Rewrite one JSONL file without the rows of uncommitted attempts, or
 * remove it when its header (a "format" line) says an uncommitted attempt
 * wrote it whole (train traces).  Holds the file's lock meanwhile. */
static int purge_file(const char *dir, const char *name, json_t *committed,
                      struct lbs_err *err)
{
    char path[PATH_MAX + 300];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return 0;
    flock(fd, LOCK_EX);
    json_t *rows = jsonl_load(path, 1, err);
    int rc = rows ? 0 : -EINVAL;
    json_t *first = json_array_get(rows, 0);
    size_t n = json_array_size(rows), kept = 0;
    if (!rc && first && json_object_get(first, "format")) {
        if (!row_counts(first, committed))
            rc = unlink(path) ? lbs_err_set(err, -EIO, "cannot remove %s",
                                            path) : 0;
        n = 0;      /* a whole-file artefact: nothing to filter */
    }
    char *text = NULL;
    size_t len = 0;
    FILE *mem = n ? open_memstream(&text, &len) : NULL;
    for (size_t i = 0; mem && i < n; i++) {
        json_t *r = json_array_get(rows, i);
        if (!row_counts(r, committed))
            continue;
        char *line = json_dumps(r, JSON_COMPACT | JSON_PRESERVE_ORDER);
        if (line)
            fprintf(mem, "%s\n", line);
        free(line);
        kept++;
    }
    if (mem) {
        fclose(mem);
        if (kept < n)
            rc = lbs_write_atomic(path, text ? text : "", len, err);
    } else if (n) {
        rc = lbs_err_set(err, -ENOMEM, "out of memory");
    }
    free(text);
    json_decref(rows);
    close(fd);
    return rc;
}

int lbs_run_purge_uncommitted(const char *dir, struct lbs_err *err)
{
    json_t *committed = lbs_run_committed(dir, err);
    if (!committed)
        return -EINVAL;
    DIR *d = opendir(dir);
    if (!d) {
        json_decref(committed);
        return path_err(err, errno, "cannot read %s: %s", dir);
    }
    int rc = 0;
    struct dirent *de;
    while (!rc && (de = readdir(d))) {
        size_t n = strlen(de->d_name);
        if (n > 6 && !strcmp(de->d_name + n - 6, ".jsonl") &&
            strcmp(de->d_name, "suite.jsonl") && !tmp_owner(de->d_name))
            rc = purge_file(dir, de->d_name, committed, err);
    }
    closedir(d);
    json_decref(committed);
    return rc;
}

/* ------------------------------------------------------------------ */
/* the reader behind report, check, plot, compare and --resume          */

static lbs_torn_fn *torn_hook;

void lbs_jsonl_on_torn(lbs_torn_fn *fn) { torn_hook = fn; }

/* Rows of path; locked: under a shared flock, so no writer is half way
 * through a row and an unterminated last line is a torn one (its writer
 * died inside write()).  purge_file already holds the exclusive lock. */
static json_t *jsonl_load(const char *path, int locked, struct lbs_err *err)
{
    char *text;
    size_t len;
    int lfd = -1;
    if (!locked) {
        /* O_NONBLOCK: a FIFO is refused by lbs_read_file, not waited on */
        lfd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        struct stat st;
        if (lfd >= 0 && (fstat(lfd, &st) || !S_ISREG(st.st_mode))) {
            close(lfd);
            lfd = -1;
        }
        while (lfd >= 0 && flock(lfd, LOCK_SH) && errno == EINTR)
            ;
    }
    /* a regular file within the cap: /dev/zero or a FIFO named like a
     * results file must not hang report, check or plot */
    int rc = lbs_read_file(path, LBS_JSONL_MAX_BYTES, &text, &len, err);
    if (lfd >= 0)
        close(lfd);
    if (rc == -ENOENT)
        return json_array();
    if (rc)
        return NULL;
    json_t *rows = json_array();
    long ln = 0;
    size_t pos = 0, ll;
    const char *line;
    int ended;
    while (rows && lbs_text_next_line(text, len, &pos, &ln, &line, &ll,
                                      &ended)) {
        json_error_t je;
        /* the line's length, not strlen: a NUL inside is an error, not
         * the end of the line */
        json_t *r = json_loadb(line, ll, 0, &je);
        if (!r && !ended) {
            /* torn by a writer killed inside write(): skipped (the next
             * append cuts it off), and said so */
            if (torn_hook)
                torn_hook(path, ln, ll);
            break;
        }
        if (!r || !json_is_object(r)) {
            lbs_err_set(err, -EINVAL, "%s line %ld: %s", path, ln,
                        r ? "not a JSON object" : je.text);
            json_decref(r);
            json_decref(rows);
            rows = NULL;
            break;
        }
        json_array_append_new(rows, r);
    }
    free(text);
    return rows;
}

json_t *lbs_jsonl_load(const char *path, struct lbs_err *err)
{
    return jsonl_load(path, 0, err);
}

json_t *lbs_row_field(json_t *row, const char *path)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    json_t *v = row;
    for (char *s = buf, *dot; v && s; s = dot ? dot + 1 : NULL) {
        dot = strchr(s, '.');
        if (dot)
            *dot = '\0';
        v = json_is_object(v) ? json_object_get(v, s) : NULL;
    }
    return v;
}

double lbs_row_num(json_t *v)
{
    return json_is_number(v) ? json_number_value(v) : NAN;
}

int lbs_train_config_differs(json_t *a, json_t *b, char *why, size_t len)
{
    static const char *const keys[] = {"ranks", "epochs", "global_batch",
                                       "model", "dataset", "n_train"};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        json_t *x = json_object_get(a, keys[k]), *y = json_object_get(b, keys[k]);
        if (!x || !y || json_is_null(x) || json_is_null(y))
            continue;   /* not recorded by one of them: nothing to hold */
        int same = json_is_number(x) && json_is_number(y)
                       ? json_number_value(x) == json_number_value(y)
                       : json_equal(x, y);
        if (same)
            continue;
        char *sx = json_dumps(x, JSON_ENCODE_ANY | JSON_COMPACT),
             *sy = json_dumps(y, JSON_ENCODE_ANY | JSON_COMPACT);
        snprintf(why, len, "%s %s vs %s", keys[k], sx ? sx : "?",
                 sy ? sy : "?");
        free(sx);
        free(sy);
        return 1;
    }
    return 0;
}

int lbs_train_like_first(json_t **ref, json_t *r, size_t *left, char *why,
                         size_t len)
{
    char d[256];
    if (!*ref) {
        *ref = r;
        return 1;
    }
    if (!lbs_train_config_differs(*ref, r, d, sizeof d))
        return 1;
    if (!(*left)++)
        snprintf(why, len, "%s", d);
    return 0;
}
