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
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lbscale/file.h"
#include "git_rev.h"
#include "results.h"

/* Room left under PATH_MAX for "/<verb>.jsonl", "/plots/x.tmp.PID.XXXXXX.svg"
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

int lbs_write_atomic(const char *path, const char *text, size_t len,
                     struct lbs_err *err)
{
    /* mkstemp's O_CREAT|O_EXCL with a random suffix: a symlink planted at
     * the temporary name is never followed, and rename() replaces a link
     * at the final name instead of writing through it.  The pid in the
     * name lets lbs_clean_stale_tmp tell a dead writer's leftovers. */
    char tmp[PATH_MAX + 40];
    int w = snprintf(tmp, sizeof tmp, "%s.tmp.%ld.XXXXXX", path,
                     (long)getpid());
    if (w < 0 || (size_t)w >= sizeof tmp)
        return path_err(err, ENAMETOOLONG, "cannot write %s: %s", path);
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0)
        return path_err(err, errno, "cannot create a file next to %s: %s",
                        path);
    size_t off = 0;
    int e = fchmod(fd, 0644) ? errno : 0;
    while (!e && off < len) {
        ssize_t n = write(fd, text + off, len - off);
        if (n < 0 && errno != EINTR)
            e = errno;
        else if (n > 0)
            off += (size_t)n;
    }
    if (!e && fsync(fd))
        e = errno;
    if (close(fd) && !e)
        e = errno;
    if (!e && rename(tmp, path))
        e = errno;
    if (e) {
        unlink(tmp);
        return path_err(err, e, "cannot write %s: %s", path);
    }
    return 0;
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

/* "<name>.tmp.<pid>[.<suffix>]": the pid, or 0 when name is not one. */
static long tmp_owner(const char *name)
{
    const char *t = strstr(name, ".tmp.");
    if (!t)
        return 0;
    char *end;
    long pid = strtol(t + 5, &end, 10);
    return pid > 0 && (*end == '\0' || *end == '.') ? pid : 0;
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

void lbs_clean_stale_tmp(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d))) {
        long pid = tmp_owner(de->d_name);
        if (pid && pid_gone(pid))
            unlinkat(dirfd(d), de->d_name, 0);
    }
    closedir(d);
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
                        O_CLOEXEC, 0644);
    if (fd < 0)
        return path_err(err, errno, "cannot open %s: %s", path);
    int e = 0;
    while (flock(fd, LOCK_EX))
        if (errno != EINTR) {
            e = errno;
            break;
        }
    if (!e && drop_torn_tail(fd))
        e = errno;
    size_t off = 0;
    while (!e && off < len) {
        ssize_t n = write(fd, line + off, len - off);
        if (n < 0 && errno != EINTR)
            e = errno;
        else if (n > 0)
            off += (size_t)n;
    }
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
    json_array_foreach(rows, i, r) {
        const char *a = json_string_value(json_object_get(r, "attempt"));
        const char *st = json_string_value(json_object_get(r, "status"));
        if (a && st && !strcmp(st, "ok"))
            json_object_set_new(ok, a, json_true());
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
    json_decref(committed);
    json_decref(rows);
    return out;
}

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
    json_t *rows = lbs_jsonl_load(path, err);
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

json_t *lbs_jsonl_load(const char *path, struct lbs_err *err)
{
    char *text;
    size_t len;
    /* a regular file within the cap: /dev/zero or a FIFO named like a
     * results file must not hang report, check or plot */
    int rc = lbs_read_file(path, LBS_JSONL_MAX_BYTES, &text, &len, err);
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
        if (!r && !ended)
            break;      /* a row still being written, or torn by a kill */
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
