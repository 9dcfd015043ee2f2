/* suite.c - `lbscale suite FILE.json`: run a declared list of benchmark
 * entries into one results run, resumable, with progress, figures, a
 * report and a plain-text summary.  The format is in bench/suites/README.md
 * and suite.h.
 *
 * Order of work: read and expand the file, validate every entry (verb
 * known and built into this binary, arguments strings, options the verb's
 * --help lists, optimizer/compressor specs parseable, mpirun present for
 * multi-rank entries) - all before anything runs or any file is written;
 * then run each entry as a child process (fork+exec, own process group,
 * ended when the suite dies, stdout/stderr through pipes, a timeout per
 * entry) under a fresh attempt id, and commit it by appending its row to
 * RUN/suite.jsonl (results.h: rows of uncommitted attempts never count);
 * the child's output is kept in RUN/logs/NNN-name.log (atomically).
 */
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "lbs_config.h"
#include "lbscale/compress.h"
#include "lbscale/file.h"
#include "lbscale/optim.h"
#include "strbuf.h"
#include "plot.h"
#include "report.h"
#include "results.h"
#include "suite.h"

extern char **environ;

/* Verbs a suite entry may name (the benchmark verbs; suite, demo, plot,
 * report and check act on whole runs and are not entries). */
static const char *const suite_verbs[] = {"stream", "optim", "compress",
                                          "coll", "sim", "train", NULL};

#define TAIL_BYTES 2000            /* stderr tail kept in suite.jsonl */
#define KEEP_BYTES (8u << 20)      /* output kept per stream for the log */
#define DEFAULT_TIMEOUT 1800.0
/* A suite beyond this many entries (after foreach) is a typo, not a plan:
 * refused before expansion, so a 100 x 100 x 100 foreach cannot hang. */
#define MAX_ENTRIES 10000

/* Set when the suite's own bookkeeping could not be written (its rows,
 * a log, suite.json, the figures or the report: a full disk): the suite
 * then exits 1 even when every entry passed. */
static int suite_io_failed;

/* A suite file is a page of JSON; 16 MiB is far beyond any plan, and the
 * bound (with lbs_read_file's regular-file check) keeps a FIFO or
 * /dev/zero named as the suite from hanging or eating the machine. */
#define SUITE_FILE_MAX_BYTES ((size_t)16 << 20)

/* ------------------------------------------------------------------ */
/* child processes                                                      */

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
    interrupted = sig;
}

struct child {
    int exit_code;      /* -1 when killed by a signal */
    int signal;
    int timed_out;
    int interrupted;
    int spawn_errno;    /* fork or exec set-up failed */
    double seconds;
    struct strbuf out, err;
};

typedef void (*tick_fn)(void *ctx, double running_s);

static void child_free(struct child *c)
{
    free(c->out.p);
    free(c->err.p);
}

/* argv[0] as a path execve can take: PATH searched in the parent, since
 * the forked child may only make async-signal-safe calls. */
static int find_exe(const char *name, char *out, size_t len)
{
    if (strchr(name, '/'))
        return snprintf(out, len, "%s", name) < (int)len ? 0 : ENAMETOOLONG;
    const char *path = getenv("PATH");
    for (const char *p = path ? path : "/usr/bin:/bin"; *p;) {
        size_t n = strcspn(p, ":");
        int w = snprintf(out, len, "%.*s/%s", (int)n, n ? p : ".", name);
        if (w > 0 && (size_t)w < len && !access(out, X_OK))
            return 0;
        p += n + (p[n] == ':');
    }
    return ENOENT;
}

/* The child's side of child_run, between fork and exec: its own process
 * group (so a timeout can end it with its grandchildren), SIGTERM when the
 * suite dies (even by SIGKILL: PR_SET_PDEATHSIG; mpirun passes it to its
 * ranks), default signal dispositions, stdin from /dev/null. */
static void child_exec(const char *exe, char *const argv[], char *const envp[],
                       pid_t parent, int out_fd, int err_fd)
{
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent)        /* the suite died before prctl */
        _exit(127);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    int in = open("/dev/null", O_RDONLY);
    if (in < 0 || dup2(in, 0) < 0 || dup2(out_fd, 1) < 0 ||
        dup2(err_fd, 2) < 0)
        _exit(127);
    execve(exe, argv, envp);
    _exit(127);
}

/* environ without NAME, plus NAME=value unless value is NULL (new array
 * whose first slot is the string env_free frees; the rest are environ's) */
static char **env_with(const char *name, const char *value)
{
    size_t n = 0, k = strlen(name);
    while (environ[n])
        n++;
    char **env = calloc(n + 3, sizeof *env);
    char *kv = value ? malloc(k + strlen(value) + 2) : NULL;
    if (!env || (value && !kv)) {
        free(env);
        free(kv);
        return NULL;
    }
    size_t j = 1;       /* env[0]: ownership slot, not passed to exec */
    if (kv) {
        sprintf(kv, "%s=%s", name, value);
        env[0] = env[j++] = kv;
    }
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], name, k) || environ[i][k] != '=')
            env[j++] = environ[i];
    return env;
}

static void env_free(char **env)
{
    if (env)
        free(env[0]);
    free(env);
}

/* Run argv (PATH searched) with $LBSCALE_ATTEMPT=attempt, stdin from
 * /dev/null and both output streams captured; kill its process group
 * after timeout_s seconds (TERM, then KILL 5 s later) or when the suite is
 * interrupted.  tick is called about every 0.25 s (may be NULL). */
static void child_run(char *const argv[], const char *attempt,
                      double timeout_s, tick_fn tick, void *ctx,
                      struct child *c)
{
    memset(c, 0, sizeof *c);
    c->out.keep = c->err.keep = KEEP_BYTES;   /* the log keeps the tail */
    c->exit_code = -1;
    char exe[PATH_MAX];
    int rc = find_exe(argv[0], exe, sizeof exe);
    if (rc) {
        errno = rc;
        goto fail;
    }
    char **envp = env_with(LBS_ATTEMPT_ENV, attempt);
    if (!envp)
        goto fail;
    int po[2], pe[2];
    if (pipe2(po, O_CLOEXEC)) {
        env_free(envp);
        goto fail;
    }
    if (pipe2(pe, O_CLOEXEC)) {
        close(po[0]);
        close(po[1]);
        env_free(envp);
        goto fail;
    }
    pid_t parent = getpid();
    double t0 = cli_now();
    /* _Fork: fork without the atfork handlers.  The child only execs
     * (async-signal-safe calls before it), and OpenBLAS's prefork handler
     * joins its threads, one of which can be stuck in malloc for ever when
     * memory is starved: the suite would hang before its first entry. */
    pid_t pid = _Fork();
    if (pid == 0)
        child_exec(exe, argv, envp + 1, parent, po[1], pe[1]);
    int fork_errno = errno;
    env_free(envp);
    close(po[1]);
    close(pe[1]);
    if (pid < 0) {
        close(po[0]);
        close(pe[0]);
        errno = fork_errno;
        goto fail;
    }
    setpgid(pid, pid);   /* also here: no race with kill(-pid) below */
    struct pollfd fds[2] = {{po[0], POLLIN, 0}, {pe[0], POLLIN, 0}};
    int open_fds = 2, exited = 0, st = 0, killed = 0;
    double kill_at = 0, drain_until = 0;
    char chunk[8192];
    for (;;) {
        double now = cli_now();
        if (!exited) {
            pid_t w = waitpid(pid, &st, WNOHANG);
            if (w == pid) {
                exited = 1;
                drain_until = now + 2.0;   /* grandchildren may hold pipes */
            }
        }
        if (exited && (open_fds == 0 || now > drain_until))
            break;
        if (!exited && !killed && (interrupted ||
                                   (timeout_s > 0 && now - t0 > timeout_s))) {
            if (interrupted)
                c->interrupted = 1;
            else
                c->timed_out = 1;
            kill(-pid, SIGTERM);
            killed = 1;
            kill_at = now + 5.0;
        } else if (!exited && killed == 1 && now > kill_at) {
            kill(-pid, SIGKILL);
            killed = 2;
        }
        if (tick && !exited)
            tick(ctx, now - t0);
        if (open_fds == 0) {
            poll(NULL, 0, 50);
            continue;
        }
        int n = poll(fds, 2, 250);
        if (n < 0 && errno != EINTR)
            break;
        for (int i = 0; n > 0 && i < 2; i++) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            ssize_t r = read(fds[i].fd, chunk, sizeof chunk);
            if (r > 0) {
                sb_add(i ? &c->err : &c->out, chunk, (size_t)r);
            } else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
                close(fds[i].fd);
                fds[i].fd = -1;
                open_fds--;
            }
        }
    }
    for (int i = 0; i < 2; i++)
        if (fds[i].fd >= 0)
            close(fds[i].fd);
    if (!exited) {
        kill(-pid, SIGKILL);
        waitpid(pid, &st, 0);
    }
    c->seconds = cli_now() - t0;
    if (WIFEXITED(st))
        c->exit_code = WEXITSTATUS(st);
    else if (WIFSIGNALED(st))
        c->signal = WTERMSIG(st);
    return;
fail:
    c->spawn_errno = errno ? errno : EIO;
}

/* ------------------------------------------------------------------ */
/* the suite                                                            */

struct entry {
    int src;              /* index in the file's "entries" (messages) */
    char *name;
    char *verb;
    json_t *args;         /* expanded strings; {file.field} kept */
    int ranks, repeat, optional;
    double timeout_s, est_s;
    char skip[256];       /* non-empty: skip with this note */
};

struct suite {
    const struct suite_opts *o;
    const char *file;     /* for messages */
    char *text;
    json_t *root;
    json_t *vars;         /* suite vars + --set (new reference) */
    char name[64];
    struct entry *e;
    size_t n, cap;
    char exe[PATH_MAX];
    char mpirun[PATH_MAX];
    int openmpi;
    json_t *help_cache;   /* "verb pos..." -> array of option names */
    json_t *built;        /* array of verb names this binary has */
    json_t *names;        /* entry name -> index in the file */
    char run[PATH_MAX];
    int lock_fd;          /* RUN/.lock, held while the suite runs */
    int interleave;       /* repeats in rounds (default), or entry by entry */
};

/* Bad input: print once, return -EINVAL. */
static int bad(struct suite *s, int src, const char *ename, const char *fmt,
               ...) __attribute__((format(printf, 4, 5)));
static int bad(struct suite *s, int src, const char *ename, const char *fmt,
               ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (src < 0)
        cli_error(s->o->what, "%s: %s", s->file, msg);
    else if (ename)
        cli_error(s->o->what, "%s: entry %d ('%s'): %s", s->file, src + 1,
                  ename, msg);
    else
        cli_error(s->o->what, "%s: entry %d: %s", s->file, src + 1, msg);
    return -EINVAL;
}

static int in_list(const char *const *l, const char *s)
{
    for (; *l; l++)
        if (!strcmp(*l, s))
            return 1;
    return 0;
}

static int in_array(json_t *a, const char *s)
{
    size_t i;
    json_t *v;
    json_array_foreach(a, i, v)
        if (json_is_string(v) && !strcmp(json_string_value(v), s))
            return 1;
    return 0;
}

/* A var value as text ("16M", 4, 0.5). */
static int var_text(json_t *v, char *out, size_t len)
{
    if (json_is_string(v))
        snprintf(out, len, "%s", json_string_value(v));
    else if (json_is_integer(v))
        snprintf(out, len, "%lld", (long long)json_integer_value(v));
    else if (json_is_real(v))
        snprintf(out, len, "%.17g", json_real_value(v));
    else
        return -1;
    return 0;
}

/* Replace {key} by vars[key]; "{{" and "}}" are literal braces; {a.b}
 * (a dot: a field of RUN/a.jsonl, resolved when the entry runs) is kept.
 * Returns a malloc'ed string or NULL with why filled. */
static char *expand(const char *in, json_t *vars, char *why, size_t wlen)
{
    struct strbuf b = {0};
    sb_add(&b, "", 0);
    for (const char *p = in; *p;) {
        if (p[0] == '{' && p[1] == '{') {
            sb_add(&b, "{{", 2);   /* stays escaped until run time */
            p += 2;
        } else if (p[0] == '}' && p[1] == '}') {
            sb_add(&b, "}}", 2);
            p += 2;
        } else if (*p == '{') {
            const char *q = strchr(p, '}');
            if (!q || q == p + 1 || q - p > 64) {
                snprintf(why, wlen, "'%s': '{' without a placeholder name "
                         "and '}' (write '{{' for a brace)", in);
                free(b.p);
                return NULL;
            }
            char key[80];
            snprintf(key, sizeof key, "%.*s", (int)(q - p - 1), p + 1);
            if (strspn(key, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTU"
                            "VWXYZ0123456789_.-") != strlen(key)) {
                snprintf(why, wlen, "'%s': bad placeholder '{%s}'", in, key);
                free(b.p);
                return NULL;
            }
            if (strchr(key, '.')) {
                sb_add(&b, p, (size_t)(q - p + 1));
            } else {
                char val[512];
                json_t *v = json_object_get(vars, key);
                if (!v || var_text(v, val, sizeof val)) {
                    snprintf(why, wlen, "'%s': unknown placeholder '{%s}' "
                             "(not in \"vars\", \"foreach\" or --set)", in,
                             key);
                    free(b.p);
                    return NULL;
                }
                sb_add(&b, val, strlen(val));
            }
            p = q + 1;
        } else {
            sb_add(&b, p, 1);
            p++;
        }
    }
    return b.p;
}

/* Undo "{{" / "}}" escapes (after run-time placeholders are resolved). */
static void unescape(char *s)
{
    char *w = s;
    for (char *r = s; *r; r++) {
        *w++ = *r;
        if ((r[0] == '{' && r[1] == '{') || (r[0] == '}' && r[1] == '}'))
            r++;
    }
    *w = '\0';
}

static int has_runtime(const char *s)
{
    for (const char *p = s; (p = strchr(p, '{'));) {
        if (p[1] == '{') {
            p += 2;
            continue;
        }
        const char *q = strchr(p, '}');
        if (q && memchr(p, '.', (size_t)(q - p)))
            return 1;
        p = q ? q + 1 : p + 1;
    }
    return 0;
}

static int get_num(struct suite *s, int src, const char *ename, json_t *obj,
                   const char *key, double lo, double hi, double def,
                   double *out, json_t *vars, int integer)
{
    json_t *v = json_object_get(obj, key);
    *out = def;
    if (!v)
        return 0;
    if (json_is_string(v)) {   /* "{np}" from foreach */
        char why[256];
        char *t = expand(json_string_value(v), vars, why, sizeof why);
        if (!t)
            return bad(s, src, ename, "\"%s\": %s", key, why);
        char *end;
        double d = strtod(t, &end);
        int ok = end != t && !*end;
        free(t);
        if (!ok)
            return bad(s, src, ename, "\"%s\" must be a number (got '%s')",
                       key, json_string_value(v));
        *out = d;
    } else if (json_is_number(v)) {
        *out = json_number_value(v);
    } else {
        return bad(s, src, ename, "\"%s\" must be a number", key);
    }
    if (!(*out >= lo && *out <= hi) || (integer && *out != floor(*out)))
        return bad(s, src, ename, "\"%s\" = %g out of range (%s in [%g, "
                   "%g])", key, *out, integer ? "an integer" : "a number",
                   lo, hi);
    return 0;
}

/* One expanded entry from the source object and a vars combination. */
static int add_entry(struct suite *s, int src, json_t *obj, json_t *vars)
{
    char why[512];
    json_t *jv = json_object_get(obj, "verb");
    json_t *jn = json_object_get(obj, "name");
    if (jn && !json_is_string(jn))
        return bad(s, src, NULL, "\"name\" must be a string");
    if (!json_is_string(jv))
        return bad(s, src, jn ? json_string_value(jn) : NULL,
                   "\"verb\" (a string) is required");
    const char *verb = json_string_value(jv);
    char *name;
    if (jn) {
        name = expand(json_string_value(jn), vars, why, sizeof why);
        if (!name)
            return bad(s, src, json_string_value(jn), "\"name\": %s", why);
    } else {
        name = strdup(verb);
    }
    if (!*name || strlen(name) > 80 ||
        strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                     "0123456789_.:+=,@-") != strlen(name)) {
        int r = bad(s, src, name, "name must be 1-80 characters of "
                    "[A-Za-z0-9_.:+=,@-]");
        free(name);
        return r;
    }
    struct entry e = {.src = src, .name = name};
    int rc;
    if (!in_list(suite_verbs, verb)) {
        rc = bad(s, src, name, "unknown verb '%s' (suite entries may use: "
                 "stream optim compress coll sim train)", verb);
        goto err;
    }
    e.verb = strdup(verb);
    e.args = json_array();
    json_t *ja = json_object_get(obj, "args");
    if (ja && !json_is_array(ja)) {
        rc = bad(s, src, name, "\"args\" must be an array of strings");
        goto err;
    }
    size_t i;
    json_t *a;
    json_array_foreach(ja, i, a) {
        if (!json_is_string(a)) {
            rc = bad(s, src, name, "args[%zu] is not a string (write numbers "
                     "as \"16M\", \"0.5\")", i);
            goto err;
        }
        char *t = expand(json_string_value(a), vars, why, sizeof why);
        if (!t) {
            rc = bad(s, src, name, "args[%zu]: %s", i, why);
            goto err;
        }
        static const char *const forbidden[] = {"--out", "--no-save",
                                                "--help", "-h", NULL};
        if (in_list(forbidden, t)) {
            rc = bad(s, src, name, "args[%zu]: '%s' is not allowed in a "
                     "suite (the runner sets the run directory)", i, t);
            free(t);
            goto err;
        }
        json_array_append_new(e.args, json_string(t));
        free(t);
    }
    double d;
    if ((rc = get_num(s, src, name, obj, "ranks", 1, 4096, 1, &d, vars, 1)))
        goto err;
    e.ranks = (int)d;
    if ((rc = get_num(s, src, name, obj, "repeat", 1, 1000, 1, &d, vars, 1)))
        goto err;
    e.repeat = (int)d;
    double deft = DEFAULT_TIMEOUT;
    json_t *gt = json_object_get(s->root, "timeout_s");
    if (gt)
        deft = json_number_value(gt);
    if ((rc = get_num(s, src, name, obj, "timeout_s", 1, 7 * 86400.0, deft,
                      &e.timeout_s, vars, 0)))
        goto err;
    if ((rc = get_num(s, src, name, obj, "est_s", 0, 7 * 86400.0, 0,
                      &e.est_s, vars, 0)))
        goto err;
    json_t *jo = json_object_get(obj, "optional");
    if (jo && !json_is_boolean(jo)) {
        rc = bad(s, src, name, "\"optional\" must be true or false");
        goto err;
    }
    e.optional = json_is_true(jo);
    json_t *dup = json_object_get(s->names, name);   /* O(1), not O(n) */
    if (dup) {
        rc = bad(s, src, name, "duplicate entry name (entry %d has it; "
                 "give \"name\" with {placeholders})",
                 (int)json_integer_value(dup) + 1);
        goto err;
    }
    json_object_set_new(s->names, name, json_integer(src));
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 32;
        s->e = realloc(s->e, s->cap * sizeof *s->e);
    }
    s->e[s->n++] = e;
    return 0;
err:
    free(e.name);
    free(e.verb);
    json_decref(e.args);
    return rc;
}

/* The values of one "foreach" key: an array of strings/numbers or
 * "@optimizers" / "@compressors" (the registries of this binary). */
static json_t *foreach_values(struct suite *s, int src, const char *key,
                              json_t *v)
{
    json_t *out = json_array();
    if (json_is_string(v)) {
        const char *const *l =
            !strcmp(json_string_value(v), "@optimizers") ? lbs_optim_names()
            : !strcmp(json_string_value(v), "@compressors")
                ? lbs_compressor_names() : NULL;
        if (!l) {
            bad(s, src, NULL, "foreach \"%s\": '%s' is neither a list nor "
                "@optimizers / @compressors", key, json_string_value(v));
            json_decref(out);
            return NULL;
        }
        for (; *l; l++)
            json_array_append_new(out, json_string(*l));
        return out;
    }
    size_t i;
    json_t *x;
    if (!json_is_array(v) || !json_array_size(v)) {
        bad(s, src, NULL, "foreach \"%s\" must be a non-empty list", key);
        json_decref(out);
        return NULL;
    }
    json_array_foreach(v, i, x) {
        if (!json_is_string(x) && !json_is_number(x)) {
            bad(s, src, NULL, "foreach \"%s\"[%zu] must be a string or a "
                "number", key, i);
            json_decref(out);
            return NULL;
        }
        json_array_append(out, x);
    }
    return out;
}

/* Cartesian product of the foreach keys from position k on. */
static int expand_foreach(struct suite *s, int src, json_t *obj,
                          json_t *keys, json_t *lists, size_t k, json_t *vars)
{
    if (k == json_array_size(keys))
        return add_entry(s, src, obj, vars);
    const char *key = json_string_value(json_array_get(keys, k));
    json_t *l = json_array_get(lists, k);
    size_t i;
    json_t *v;
    json_array_foreach(l, i, v) {
        json_object_set(vars, key, v);
        int rc = expand_foreach(s, src, obj, keys, lists, k + 1, vars);
        if (rc)
            return rc;
    }
    json_object_del(vars, key);
    return 0;
}

static int check_keys(struct suite *s, int src, json_t *obj,
                      const char *const *allowed)
{
    const char *k;
    json_t *v;
    json_object_foreach(obj, k, v)
        if (!in_list(allowed, k)) {
            char list[256] = "";
            for (const char *const *a = allowed; *a; a++)
                snprintf(list + strlen(list), sizeof list - strlen(list),
                         "%s%s", a == allowed ? "" : " ", *a);
            return bad(s, src, NULL, "unknown key \"%s\" (known: %s)", k,
                       list);
        }
    return 0;
}

static int parse(struct suite *s)
{
    json_error_t je;
    s->root = json_loads(s->text, JSON_REJECT_DUPLICATES, &je);
    if (!s->root)
        return bad(s, -1, NULL, "line %d column %d: %s", je.line, je.column,
                   je.text);
    if (!json_is_object(s->root))
        return bad(s, -1, NULL, "the top level must be an object with "
                   "\"entries\"");
    static const char *const top[] = {"suite", "description", "vars",
                                      "timeout_s", "interleave", "entries",
                                      NULL};
    if (check_keys(s, -1, s->root, top))
        return -EINVAL;
    json_t *il = json_object_get(s->root, "interleave");
    if (il && !json_is_boolean(il))
        return bad(s, -1, NULL, "\"interleave\" must be true or false");
    s->interleave = !il || json_is_true(il);
    json_t *jn = json_object_get(s->root, "suite");
    if (jn && !json_is_string(jn))
        return bad(s, -1, NULL, "\"suite\" must be a string");
    if (jn)
        snprintf(s->name, sizeof s->name, "%s", json_string_value(jn));
    json_t *gt = json_object_get(s->root, "timeout_s");
    if (gt && (!json_is_number(gt) || json_number_value(gt) < 1))
        return bad(s, -1, NULL, "\"timeout_s\" must be a number >= 1");
    s->vars = json_object();
    json_t *jv = json_object_get(s->root, "vars");
    if (jv && !json_is_object(jv))
        return bad(s, -1, NULL, "\"vars\" must be an object");
    const char *k;
    json_t *v;
    json_object_foreach(jv, k, v) {
        if (!json_is_string(v) && !json_is_number(v))
            return bad(s, -1, NULL, "vars \"%s\" must be a string or a "
                       "number", k);
        json_object_set(s->vars, k, v);
    }
    json_object_foreach(s->o->vars, k, v) {
        if (!json_object_get(s->vars, k))
            return bad(s, -1, NULL, "--set %s: the suite has no var \"%s\" "
                       "(vars: see --dry-run)", k, k);
        json_object_set(s->vars, k, v);
    }
    json_t *ents = json_object_get(s->root, "entries");
    if (!json_is_array(ents) || !json_array_size(ents))
        return bad(s, -1, NULL, "\"entries\" must be a non-empty array");
    static const char *const ekeys[] = {"name", "verb", "args", "ranks",
        "repeat", "timeout_s", "est_s", "foreach", "optional", NULL};
    size_t i, k2;
    json_t *obj;
    s->names = json_object();
    json_array_foreach(ents, i, obj) {
        if (!json_is_object(obj))
            return bad(s, (int)i, NULL, "not an object");
        if (check_keys(s, (int)i, obj, ekeys))
            return -EINVAL;
        json_t *fe = json_object_get(obj, "foreach");
        json_t *keys = json_array(), *lists = json_array();
        int rc = 0;
        if (fe && !json_is_object(fe))
            rc = bad(s, (int)i, NULL, "\"foreach\" must be an object "
                     "{\"key\": [values] | \"@optimizers\"}");
        json_object_foreach(fe, k, v) {
            if (rc)
                break;
            json_t *l = foreach_values(s, (int)i, k, v);
            if (!l) {
                rc = -EINVAL;
                break;
            }
            json_array_append_new(keys, json_string(k));
            json_array_append_new(lists, l);
        }
        size_t runs = 1;
        json_t *l;
        json_array_foreach(lists, k2, l)
            if (!rc && (__builtin_mul_overflow(runs, json_array_size(l),
                                               &runs) ||
                        s->n + runs > MAX_ENTRIES))
                rc = bad(s, (int)i, NULL, "\"foreach\" expands to more "
                         "than the %d entries a suite may hold", MAX_ENTRIES);
        json_t *vars = json_deep_copy(s->vars);
        if (!rc)
            rc = expand_foreach(s, (int)i, obj, keys, lists, 0, vars);
        json_decref(vars);
        json_decref(keys);
        json_decref(lists);
        if (rc)
            return rc;
    }
    return 0;
}

/* Verbs this binary has: the list `lbscale --help` prints. */
static int probe_built(struct suite *s)
{
    s->built = json_array();
    char *argv[] = {s->exe, "--help", NULL};
    struct child c;
    child_run(argv, NULL, 30, NULL, NULL, &c);
    int in = 0;
    for (char *line = c.out.p ? strtok(c.out.p, "\n") : NULL; line;
         line = strtok(NULL, "\n")) {
        if (!strncmp(line, "verbs:", 6)) {
            in = 1;
        } else if (in && line[0] == ' ') {
            char w[64];
            if (sscanf(line, " %63s", w) == 1)
                json_array_append_new(s->built, json_string(w));
        } else if (in) {
            break;
        }
    }
    child_free(&c);
    if (!json_array_size(s->built)) {
        cli_error(s->o->what, "cannot list the verbs of %s", s->exe);
        return -EIO;
    }
    return 0;
}

/* Options the verb's --help mentions ("--foo" words), cached per verb and
 * leading positional words ("sim sweep"); NULL when help fails. */
static json_t *verb_options(struct suite *s, const struct entry *e)
{
    char key[256];
    char *argv[16];
    int n = 0;
    argv[n++] = s->exe;
    argv[n++] = e->verb;
    snprintf(key, sizeof key, "%s", e->verb);
    size_t i;
    json_t *a;
    json_array_foreach(e->args, i, a) {
        const char *t = json_string_value(a);
        if (t[0] == '-' || n >= 13 || strlen(key) + strlen(t) + 2 > sizeof key)
            break;
        argv[n++] = (char *)t;
        snprintf(key + strlen(key), sizeof key - strlen(key), " %s", t);
    }
    argv[n++] = "--help";
    argv[n] = NULL;
    json_t *hit = json_object_get(s->help_cache, key);
    if (hit)
        return json_is_array(hit) ? hit : NULL;
    struct child c;
    child_run(argv, NULL, 30, NULL, NULL, &c);
    json_t *opts = json_array();
    if (c.exit_code == 0 && c.out.p) {
        for (char *p = c.out.p; (p = strstr(p, "--"));) {
            char *q = p + 2;
            while (*q && (strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOP"
                                 "QRSTUVWXYZ0123456789-", *q)))
                q++;
            if (q > p + 2 && q[-1] != '-') {
                char opt[64];
                snprintf(opt, sizeof opt, "%.*s", (int)(q - p), p);
                if (!in_array(opts, opt))
                    json_array_append_new(opts, json_string(opt));
            }
            p = q;
        }
    }
    int ok = c.exit_code == 0 && json_array_size(opts) > 0;
    child_free(&c);
    json_object_set_new(s->help_cache, key, ok ? opts : json_false());
    if (!ok)
        json_decref(opts);
    return ok ? json_object_get(s->help_cache, key) : NULL;
}

/* Validate one entry against this binary; fills e->skip for an optional
 * entry that cannot run here.  -EINVAL (printed) for bad input. */
static int validate_entry(struct suite *s, struct entry *e)
{
    char why[300] = "";
    if (!in_array(s->built, e->verb)) {
        snprintf(why, sizeof why, "verb '%s' is not built into this binary "
                 "(lbscale --help)", e->verb);
    } else if (e->ranks > 1 && !s->mpirun[0]) {
        snprintf(why, sizeof why, "%d ranks need mpirun, which is not on "
                 "PATH%s", e->ranks, LBS_HAVE_MPI ? "" :
                 " (and this build has no MPI)");
    } else if (e->ranks > 1 && !LBS_HAVE_MPI) {
        snprintf(why, sizeof why, "%d ranks need MPI, which this build "
                 "does not have", e->ranks);
    }
    if (!why[0]) {
        json_t *opts = verb_options(s, e);
        size_t i;
        json_t *a;
        json_array_foreach(e->args, i, a) {
            const char *t = json_string_value(a);
            if (opts && !strncmp(t, "--", 2) && strlen(t) > 2 &&
                !in_array(opts, t)) {
                snprintf(why, sizeof why, "'%s' is not an option of '%s' "
                         "(lbscale %s --help)", t, e->verb, e->verb);
                break;
            }
            const char *next = json_string_value(json_array_get(e->args,
                                                                i + 1));
            int is_optim = !strcmp(t, "--optim") &&
                (!strcmp(e->verb, "optim") || !strcmp(e->verb, "train"));
            int is_comp = !strcmp(t, "--compressor") &&
                !strcmp(e->verb, "compress");
            if ((is_optim || is_comp) && !next) {
                snprintf(why, sizeof why, "'%s' needs a value", t);
                break;
            }
            if (!(is_optim || is_comp) || has_runtime(next) ||
                strstr(next, "{{"))
                continue;
            struct lbs_err le;
            int rc;
            rc = is_optim ? lbs_optim_check(next, NULL, &le)
                          : lbs_compressor_check(next, &le);
            if (rc && lbs_err_is_input(rc)) {
                snprintf(why, sizeof why, "%s %s: %s", t, next, le.msg);
                break;
            }
        }
    }
    if (why[0]) {
        if (!e->optional)
            return bad(s, e->src, e->name, "%s", why);
        snprintf(e->skip, sizeof e->skip, "%s", why);
    }
    return 0;
}

static void find_mpirun(struct suite *s)
{
    const char *path = getenv("PATH");
    s->mpirun[0] = '\0';
    if (!path)
        return;
    char *dup = strdup(path), *save = NULL;
    for (char *d = strtok_r(dup, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        char p[PATH_MAX];
        snprintf(p, sizeof p, "%s/mpirun", *d ? d : ".");
        if (!access(p, X_OK)) {
            snprintf(s->mpirun, sizeof s->mpirun, "%s", p);
            break;
        }
    }
    free(dup);
    if (!s->mpirun[0])
        return;
    char *argv[] = {s->mpirun, "--version", NULL};
    struct child c;
    child_run(argv, NULL, 30, NULL, NULL, &c);
    s->openmpi = (c.out.p && strstr(c.out.p, "Open MPI")) ||
                 (c.err.p && strstr(c.err.p, "Open MPI"));
    child_free(&c);
}

/* ------------------------------------------------------------------ */
/* running                                                              */

static void fmt_dur(double s, char *out, size_t len)
{
    long t = (long)(s + 0.5);
    if (t >= 3600)
        snprintf(out, len, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else
        snprintf(out, len, "%ld:%02ld", t / 60, t % 60);
}

struct progress {
    int tty;
    size_t i, n;           /* 1-based position, total runs */
    const char *name;
    double t0;             /* suite start */
    double done_s, done_est, todo_est;   /* for the ETA */
    size_t done_n, todo_n;
    double last;
};

static double eta(const struct progress *p, double running)
{
    double elapsed = cli_now() - p->t0;
    (void)elapsed;
    if (p->done_est > 0 && p->todo_est > 0)
        return p->todo_est * (p->done_s / p->done_est) - running;
    if (p->done_n)
        return (p->done_s / (double)p->done_n) * (double)p->todo_n - running;
    return p->todo_est > 0 ? p->todo_est - running : -1;
}

/* Seconds between progress lines when stderr is not a terminal (CI logs):
 * often enough to show life, rare enough to stay readable. */
#define PROGRESS_EVERY_S 30.0

/* $LBSCALE_PROGRESS_S overrides the interval (tests), 0.1 .. 3600 s. */
static double progress_every(void)
{
    const char *e = getenv("LBSCALE_PROGRESS_S");
    double v = e ? atof(e) : 0;
    return v >= 0.1 && v <= 3600 ? v : PROGRESS_EVERY_S;
}

static void tick(void *ctx, double running)
{
    struct progress *p = ctx;
    if (cli_now() - p->last < (p->tty ? 0.5 : progress_every()))
        return;
    p->last = cli_now();
    char el[32], r[32], et[32] = "?";
    fmt_dur(cli_now() - p->t0, el, sizeof el);
    fmt_dur(running, r, sizeof r);
    double e = eta(p, running);
    if (e >= 0)
        fmt_dur(e, et, sizeof et);
    else if (e > -1e300 && (p->done_n || p->todo_est > 0))
        snprintf(et, sizeof et, "0:00");
    if (p->tty)
        fprintf(stderr, "\r\033[K[%zu/%zu] %s  %s | elapsed %s | ETA %s",
                p->i, p->n, p->name, r, el, et);
    else
        fprintf(stderr, "progress: [%zu/%zu] %s running %s | elapsed %s | "
                "ETA %s\n", p->i, p->n, p->name, r, el, et);
    fflush(stderr);
}

/* {file.field}: the field in the last row of RUN/file.jsonl that has it. */
static int resolve_runtime(const char *run, const char *in, char **out,
                           char *why, size_t wlen)
{
    struct strbuf b = {0};
    sb_add(&b, "", 0);
    for (const char *p = in; *p;) {
        const char *q;
        if (p[0] == '{' && p[1] != '{' && (q = strchr(p, '}')) &&
            memchr(p, '.', (size_t)(q - p))) {
            char key[80], file[80];
            snprintf(key, sizeof key, "%.*s", (int)(q - p - 1), p + 1);
            char *dot = strchr(key, '.');
            *dot = '\0';
            snprintf(file, sizeof file, "%s", key);
            struct lbs_err le;
            json_t *rows = lbs_run_rows(run, file, &le);
            json_t *v = NULL;
            for (size_t i = rows ? json_array_size(rows) : 0; !v && i-- > 0;)
                v = lbs_row_field(json_array_get(rows, i), dot + 1);
            char val[512];
            if (!v || var_text(v, val, sizeof val)) {
                snprintf(why, wlen, "no value for {%s.%s}: %s.jsonl in the "
                         "run has no row with '%s' (did an earlier entry "
                         "fail?)", file, dot + 1, file, dot + 1);
                json_decref(rows);
                free(b.p);
                return -ENOENT;
            }
            json_decref(rows);
            sb_add(&b, val, strlen(val));
            p = q + 1;
        } else if ((p[0] == '{' && p[1] == '{') || (p[0] == '}' && p[1] == '}')) {
            sb_add(&b, p, 2);
            p += 2;
        } else {
            sb_add(&b, p++, 1);
        }
    }
    unescape(b.p);
    *out = b.p;
    return 0;
}

static json_t *argv_json(char *const *argv)
{
    json_t *a = json_array();
    for (; *argv; argv++)
        json_array_append_new(a, json_string(*argv));
    return a;
}

static void utc_now(char *buf, size_t len)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* The last non-empty lines of s, at most TAIL_BYTES. */
static const char *tail_of(const struct strbuf *b)
{
    if (!b->p)
        return "";
    size_t n = b->len;
    while (n && (b->p[n - 1] == '\n' || b->p[n - 1] == ' '))
        n--;
    b->p[n] = '\0';
    return n > TAIL_BYTES ? b->p + n - TAIL_BYTES : b->p;
}

static const char *last_line(const char *s, char *out, size_t len)
{
    const char *nl = strrchr(s, '\n');
    snprintf(out, len, "%s", nl ? nl + 1 : s);
    return out;
}

/* Keys of completed (status ok) runs in RUN/suite.jsonl: "name#rep". */
static json_t *done_set(const char *run, struct lbs_err *err)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/suite.jsonl", run);
    json_t *rows = lbs_jsonl_load(path, err);
    if (!rows)
        return NULL;
    json_t *done = json_object();
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r) {
        const char *ev = json_string_value(json_object_get(r, "event"));
        const char *st = json_string_value(json_object_get(r, "status"));
        if (!ev || strcmp(ev, "entry") || !st)
            continue;
        char key[512];
        char *args = json_dumps(json_object_get(r, "args"), JSON_COMPACT);
        snprintf(key, sizeof key, "%s#%lld#%lld#%s",
                 json_string_value(json_object_get(r, "name")),
                 (long long)json_integer_value(json_object_get(r, "rep")),
                 (long long)json_integer_value(json_object_get(r, "ranks")),
                 args ? args : "");
        free(args);
        if (!strcmp(st, "ok"))
            json_object_set_new(done, key, json_true());
        else
            json_object_del(done, key);
    }
    json_decref(rows);
    return done;
}

static void entry_key(const struct entry *e, int rep, char *key, size_t len)
{
    char *args = json_dumps(e->args, JSON_COMPACT);
    snprintf(key, len, "%s#%d#%d#%s", e->name, rep, e->ranks, args ? args : "");
    free(args);
}

static void sanitize(const char *in, char *out, size_t len)
{
    size_t i = 0;
    for (; in[i] && i + 1 < len; i++)
        out[i] = strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXY"
                        "Z0123456789_.-", in[i]) ? in[i] : '_';
    out[i] = '\0';
}

struct tally {
    int ok, failed, skipped, done_before;
    double seconds;
};

/* A fresh id for one attempt at an entry: "<entry>.<rep>.<random>".  The
 * rows the attempt writes carry it and count once the suite's "ok" row
 * with the same id is appended (results.h). */
static void new_attempt(size_t idx, int rep, char *out, size_t len)
{
    uint64_t r = 0;
    if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r)
        r = (uint64_t)getpid() << 32 ^ (uint64_t)(cli_now() * 1e9);
    snprintf(out, len, "%zu.%d.%016llx", idx + 1, rep, (unsigned long long)r);
}

/* Run one repetition of e; appends the suite.jsonl row.  Returns the row
 * (borrowed from *rows). */
/* An entry's status from how its child ended; why says more. */
static const char *child_status(const struct child *c, const struct entry *e,
                                const char *argv0, char *why, size_t wlen)
{
    if (c->spawn_errno) {
        snprintf(why, wlen, "cannot start %s: %s", argv0,
                 strerror(c->spawn_errno));
        return "failed";
    }
    if (c->interrupted) {
        snprintf(why, wlen, "interrupted after %.1f s", c->seconds);
        return "interrupted";
    }
    if (c->timed_out) {
        snprintf(why, wlen, "timed out after %.0f s (entry timeout_s)",
                 e->timeout_s);
        return "failed";
    }
    if (c->exit_code != 0) {
        if (c->signal)
            snprintf(why, wlen, "killed by signal %d", c->signal);
        else
            snprintf(why, wlen, "exit status %d", c->exit_code);
        return "failed";
    }
    return "ok";
}

/* RUN/logs/NNN-name.log: the child's output, kept whole (atomically);
 * row gets its "log". */
static void write_log(const struct suite *s, const struct entry *e, int rep,
                      size_t idx, const char *status, const struct child *c,
                      json_t *row)
{
    struct lbs_err le;
    char dir[PATH_MAX + 8], path[PATH_MAX + 128], nm[96];
    if (lbs_run_subdir(s->run, "logs", dir, sizeof dir, &le)) {
        cli_error(s->o->what, "%s", le.msg);
        suite_io_failed = 1;
        return;
    }
    sanitize(e->name, nm, sizeof nm);
    if (e->repeat > 1)
        snprintf(nm + strlen(nm), sizeof nm - strlen(nm), ".%d", rep);
    snprintf(path, sizeof path, "%s/%03zu-%s.log", dir, idx + 1, nm);
    struct strbuf lg = {0};
    sb_printf(&lg, "# entry %zu '%s': %s\n# stdout%s\n", idx + 1,
               e->name, status, c->out.dropped ? " (head dropped)" : "");
    if (c->out.p)
        sb_add(&lg, c->out.p, c->out.len);
    sb_printf(&lg, "\n# stderr%s\n", c->err.dropped ? " (head dropped)"
                                                    : "");
    if (c->err.p)
        sb_add(&lg, c->err.p, strlen(c->err.p));
    sb_add(&lg, "\n", 1);
    if (!lbs_write_atomic(path, lg.p, lg.len, &le)) {
        json_object_set_new(row, "log", json_string(path + strlen(s->run)
                                                    + 1));
    } else {
        cli_error(s->o->what, "log: %s", le.msg);
        suite_io_failed = 1;
    }
    free(lg.p);
}

/* Tallies, progress and the entry's line (JSON on stdout; the progress
 * line or the failure on stderr). */
static void account(const struct suite *s, const struct entry *e, size_t idx,
                    const char *status, double secs, const char *why,
                    const struct child *c, json_t *row, struct progress *pg,
                    struct tally *t)
{
    t->seconds += secs;
    if (!strcmp(status, "ok"))
        t->ok++;
    else if (!strcmp(status, "skipped"))
        t->skipped++;
    else
        t->failed++;
    pg->done_s += secs;
    pg->done_est += e->est_s;
    pg->todo_est -= e->est_s;
    pg->done_n++;
    pg->todo_n--;
    char d[32], el[32], et[32] = "0:00", ll[256];
    fmt_dur(secs, d, sizeof d);
    fmt_dur(cli_now() - pg->t0, el, sizeof el);
    double eta_s = eta(pg, 0);
    if (eta_s > 0)
        fmt_dur(eta_s, et, sizeof et);
    if (s->o->json) {
        char *txt = json_dumps(row, JSON_COMPACT | JSON_PRESERVE_ORDER);
        puts(txt);
        fflush(stdout);
        free(txt);
    }
    if (pg->tty) {
        fprintf(stderr, "[%zu/%zu] %-8s %-28s %7s   (elapsed %s, ETA %s)%s%s\n",
                pg->i, pg->n, status, e->name, d, el, et,
                why[0] ? "\n        " : "", why);
        if (strcmp(status, "ok") && c->err.p && c->err.p[0])
            fprintf(stderr, "        stderr: %s\n",
                    last_line(tail_of(&c->err), ll, sizeof ll));
    } else if (!strcmp(status, "failed")) {
        cli_error(s->o->what, "entry %zu '%s' failed: %s%s%s", idx + 1,
                  e->name, why, c->err.p && c->err.p[0] ? ": " : "",
                  c->err.p ? last_line(tail_of(&c->err), ll, sizeof ll) : "");
    }
}

static int run_one(struct suite *s, struct lbs_run *run, const struct entry *e,
                   int rep, size_t idx, struct progress *pg, json_t *rows,
                   struct tally *t)
{
    char why[600] = "", started[32], attempt[LBS_ATTEMPT_MAX + 1];
    utc_now(started, sizeof started);
    new_attempt(idx, rep, attempt, sizeof attempt);
    json_t *row = json_pack("{s:s,s:i,s:s,s:s,s:i,s:i,s:i,s:O}", "event",
                            "entry", "index", (int)idx, "name", e->name,
                            "verb", e->verb, "rep", rep, "repeat", e->repeat,
                            "ranks", e->ranks, "args", e->args);
    json_object_set_new(row, "started_utc", json_string(started));
    json_object_set_new(row, "attempt", json_string(attempt));
    const char *status = "ok";
    struct child c;
    memset(&c, 0, sizeof c);
    int ran = 0;
    if (e->skip[0]) {
        status = "skipped";
        snprintf(why, sizeof why, "%s", e->skip);
    } else {
        /* argv: [mpirun flags -np N] exe verb args --out RUN */
        size_t na = json_array_size(e->args);
        char **argv = calloc(na + 16, sizeof *argv);
        char **own = calloc(na + 1, sizeof *own);
        char np[16];
        int n = 0, rc = 0;
        if (e->ranks > 1) {
            snprintf(np, sizeof np, "%d", e->ranks);
            argv[n++] = s->mpirun;
            if (s->openmpi) {
                argv[n++] = "--oversubscribe";
                if (geteuid() == 0)
                    argv[n++] = "--allow-run-as-root";
            }
            argv[n++] = "-np";
            argv[n++] = np;
        }
        argv[n++] = s->exe;
        argv[n++] = e->verb;
        for (size_t i = 0; i < na && !rc; i++) {
            rc = resolve_runtime(s->run, json_string_value(
                json_array_get(e->args, i)), &own[i], why, sizeof why);
            argv[n++] = own[i];
        }
        argv[n++] = "--out";
        argv[n++] = s->run;
        argv[n] = NULL;
        json_object_set_new(row, "argv", rc ? json_null() : argv_json(argv));
        if (rc) {
            status = "failed";
        } else {
            pg->name = e->name;
            child_run(argv, attempt, e->timeout_s, tick, pg, &c);
            ran = 1;
            if (pg->tty)
                fprintf(stderr, "\r\033[K");
            status = child_status(&c, e, argv[0], why, sizeof why);
        }
        for (size_t i = 0; i < na; i++)
            free(own[i]);
        free(own);
        free(argv);
    }
    json_object_set_new(row, "status", json_string(status));
    json_object_set_new(row, "exit_code", ran && c.exit_code >= 0
                        ? json_integer(c.exit_code) : json_null());
    if (c.signal)
        json_object_set_new(row, "signal", json_integer(c.signal));
    json_object_set_new(row, "seconds", json_real(ran ? c.seconds : 0));
    if (why[0])
        json_object_set_new(row, "note", json_string(why));
    json_object_set_new(row, "stderr_tail", json_string(tail_of(&c.err)));
    struct lbs_err le;
    if (ran)
        write_log(s, e, rep, idx, status, &c, row);
    int rc = lbs_run_append(run, "suite", json_incref(row), &le);
    if (rc) {
        cli_error(s->o->what, "%s", le.msg);
        suite_io_failed = 1;
    }
    json_array_append(rows, row);

    account(s, e, idx, status, ran ? c.seconds : 0, why, &c, row, pg, t);
    json_decref(row);
    child_free(&c);
    return rc;
}

static void print_summary(struct suite *s, json_t *rows, const struct tally *t,
                          double wall, int plotted, int reported, FILE *f)
{
    char w[32];
    fmt_dur(wall, w, sizeof w);
    char runs[48] = "";
    if (json_array_size(rows) != s->n)
        snprintf(runs, sizeof runs, ", %zu run(s) now", json_array_size(rows));
    fprintf(f, "\n== suite %s: %zu entries%s: %d ok, %d failed, %d skipped"
            " (wall %s) ==\n", s->name, s->n, runs, t->ok, t->failed,
            t->skipped, w);
    if (t->done_before)
        fprintf(f, "   (%d run(s) completed earlier were not repeated)\n",
                t->done_before);
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r) {
        const char *st = json_string_value(json_object_get(r, "status"));
        char d[32];
        fmt_dur(json_real_value(json_object_get(r, "seconds")), d, sizeof d);
        const char *note = json_string_value(json_object_get(r, "note"));
        char nm[128];
        int rep = (int)json_integer_value(json_object_get(r, "rep"));
        int repeat = (int)json_integer_value(json_object_get(r, "repeat"));
        if (repeat > 1)
            snprintf(nm, sizeof nm, "%s #%d",
                     json_string_value(json_object_get(r, "name")), rep);
        else
            snprintf(nm, sizeof nm, "%s",
                     json_string_value(json_object_get(r, "name")));
        fprintf(f, "  %-11s %-30s %7s%s%s\n", st, nm, d, note ? "  " : "",
                note ? note : "");
        if (st && strcmp(st, "ok") && strcmp(st, "skipped")) {
            char ll[256];
            const char *tl = json_string_value(json_object_get(r,
                                                               "stderr_tail"));
            if (tl && *tl)
                fprintf(f, "  %-11s   stderr: %s\n", "",
                        last_line(tl, ll, sizeof ll));
        }
    }
    fputc('\n', f);
    report_summary_text(s->run, f);
    fprintf(f, "results: %s\n", s->run);
    if (plotted)
        fprintf(f, "figures: %s/plots/\n", s->run);
    if (reported)
        fprintf(f, "report:  %s/report.html\n", s->run);
    if (t->failed)
        fprintf(f, "resume:  lbscale %s%s%s --resume %s  (reruns what did "
                "not succeed)\n", s->o->what,
                strcmp(s->o->what, "suite") ? "" : " ",
                strcmp(s->o->what, "suite") ? "" : s->file, s->run);
}

static void free_suite(struct suite *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->e[i].name);
        free(s->e[i].verb);
        json_decref(s->e[i].args);
    }
    free(s->e);
    free(s->text);
    json_decref(s->root);
    json_decref(s->vars);
    json_decref(s->help_cache);
    json_decref(s->built);
    json_decref(s->names);
    if (s->lock_fd >= 0)
        close(s->lock_fd);
}

int suite_parse_text(const char *text, size_t *entries)
{
    struct suite_opts o = {.file = "suite.json", .what = "suite"};
    struct suite s = {.o = &o, .file = o.file, .text = strdup(text),
                      .lock_fd = -1};
    int rc = s.text ? parse(&s) : -ENOMEM;
    *entries = rc ? 0 : s.n;
    free_suite(&s);
    return rc;
}

static void dry_run_list(struct suite *s)
{
    printf("suite %s: %zu entries\n", s->name, s->n);
    const char *k;
    json_t *v;
    json_object_foreach(s->vars, k, v) {
        char val[512];
        var_text(v, val, sizeof val);
        printf("  var %s = %s\n", k, val);
    }
    for (size_t i = 0; i < s->n; i++) {
        const struct entry *e = &s->e[i];
        printf("%3zu %-28s ", i + 1, e->name);
        if (e->ranks > 1)
            printf("mpirun -np %d ", e->ranks);
        printf("lbscale %s", e->verb);
        size_t j;
        json_t *a;
        json_array_foreach(e->args, j, a)
            printf(" %s", json_string_value(a));
        if (e->repeat > 1)
            printf("  (x%d)", e->repeat);
        if (e->skip[0])
            printf("  [skipped: %s]", e->skip);
        putchar('\n');
    }
}

/* Hold RUN/.lock for the suite's life.  The descriptor is inherited by
 * every child (no O_CLOEXEC), so the lock stays taken until the last
 * process of this suite is gone: a resume cannot start while an orphan of
 * a killed suite may still write.  0, or the exit code. */
static int lock_run(struct suite *s)
{
    char p[PATH_MAX + 16];
    snprintf(p, sizeof p, "%s/.lock", s->run);
    int fd = open(p, O_RDWR | O_CREAT | O_NOFOLLOW, 0644);
    if (fd < 0) {
        cli_error(s->o->what, "cannot open %s: %s", p, strerror(errno));
        return EXIT_RUNTIME;
    }
    /* orphans of a suite killed a moment ago get SIGTERM (PDEATHSIG) and
     * need a little while to end */
    for (int i = 0; flock(fd, LOCK_EX | LOCK_NB); i++) {
        if ((errno != EWOULDBLOCK && errno != EINTR) || i >= 100) {
            cli_error(s->o->what, "%s is in use by another suite or its "
                      "children (lock %s held for 10 s)", s->run, p);
            close(fd);
            return EXIT_BAD_INPUT;
        }
        poll(NULL, 0, 100);
    }
    s->lock_fd = fd;
    return 0;
}

/* An earlier suite in this run may have died inside an entry: drop what
 * its unfinished attempts wrote, so the rerun's rows are the only ones. */
static int purge_run(struct suite *s)
{
    char p[PATH_MAX + 32];
    snprintf(p, sizeof p, "%s/logs", s->run);
    lbs_clean_stale_tmp(p);     /* a log being written when it died */
    snprintf(p, sizeof p, "%s/suite.jsonl", s->run);
    if (access(p, F_OK))
        return 0;
    struct lbs_err e;
    if (lbs_run_purge_uncommitted(s->run, &e)) {
        cli_error(s->o->what, "%s", e.msg);
        return EXIT_RUNTIME;
    }
    return 0;
}

/* Read, parse and validate the suite (nothing runs yet): 0, or the exit
 * code after one printed line. */
static int load_suite(struct suite *s)
{
    const struct suite_opts *o = s->o;
    if (o->text) {
        s->text = strdup(o->text);
    } else {
        size_t len;
        struct lbs_err fe;
        int frc = lbs_read_file(o->file, SUITE_FILE_MAX_BYTES, &s->text,
                                &len, &fe);
        if (frc) {
            cli_error(o->what, "%s", fe.msg);
            return cli_exit_code(frc);
        }
    }
    if (readlink("/proc/self/exe", s->exe, sizeof s->exe - 1) <= 0) {
        cli_error(o->what, "cannot find this binary (/proc/self/exe)");
        return EXIT_RUNTIME;
    }
    s->help_cache = json_object();
    if (parse(s))
        return EXIT_BAD_INPUT;
    int multi = 0;
    for (size_t i = 0; i < s->n; i++)
        multi |= s->e[i].ranks > 1;
    if (multi)
        find_mpirun(s);
    if (probe_built(s))
        return EXIT_RUNTIME;
    for (size_t i = 0; i < s->n; i++)
        if (validate_entry(s, &s->e[i]))
            return EXIT_BAD_INPUT;
    return 0;
}

/* Where the suite will write, checked as the run would (so --dry-run
 * refuses what the run refuses): --resume names a suite run (its done
 * entries into *done when done is not NULL); --out, when it exists, is a
 * directory whose logs/ is not a planted link.  0, or EXIT_BAD_INPUT
 * after one line. */
static int check_target(const struct suite *s, json_t **done)
{
    const struct suite_opts *o = s->o;
    struct lbs_err le;
    struct stat st;
    char p[PATH_MAX + 32];
    if (o->resume) {
        snprintf(p, sizeof p, "%s/suite.jsonl", o->resume);
        if (access(p, R_OK)) {
            cli_error(o->what, "--resume %s: no suite.jsonl there (not a "
                      "suite run)", o->resume);
            return EXIT_BAD_INPUT;
        }
        json_t *d = done_set(o->resume, &le);
        if (!d) {
            cli_error(o->what, "--resume: %s", le.msg);
            return EXIT_BAD_INPUT;
        }
        if (done)
            *done = d;
        else
            json_decref(d);
    }
    const char *dir = o->resume ? o->resume : o->out;
    if (dir && !stat(dir, &st) && !S_ISDIR(st.st_mode)) {
        cli_error(o->what, "%s: exists and is not a directory", dir);
        return EXIT_BAD_INPUT;
    }
    snprintf(p, sizeof p, "%s/logs", dir ? dir : ".");
    if (dir && !lstat(p, &st) && !S_ISDIR(st.st_mode)) {
        cli_error(o->what, "%s: not a directory of the run (a symbolic link "
                  "or a file); nothing is written through it", p);
        return EXIT_BAD_INPUT;
    }
    return 0;
}

/* The run directory (new, or --resume's with *done the entries already
 * ok there), locked and purged, with suite.json and the start row: 0, or
 * the exit code after one printed line (nothing left open). */
static int open_suite_run(struct suite *s, struct lbs_run **runp,
                          json_t **donep)
{
    const struct suite_opts *o = s->o;
    struct lbs_err le;
    struct lbs_run *run = NULL;
    json_t *done = NULL;
    int rc;
    if ((rc = check_target(s, &done)))
        return rc;
    if ((rc = lbs_run_open(o->resume ? o->resume : o->out, lbs_meta_collect,
                           o->argc, o->argv, &run, &le))) {
        cli_error(o->what, "%s", le.msg);
        json_decref(done);
        return cli_exit_code(rc);
    }
    snprintf(s->run, sizeof s->run, "%s", lbs_run_dir(run));
    char logs[PATH_MAX + 8];
    /* RUN/logs planted as a link elsewhere: refused before any entry */
    if (lbs_run_subdir(s->run, "logs", logs, sizeof logs, &le)) {
        cli_error(o->what, "%s", le.msg);
        lbs_run_close(run);
        json_decref(done);
        return EXIT_BAD_INPUT;
    }
    if ((rc = lock_run(s)) || (rc = purge_run(s))) {
        lbs_run_close(run);
        json_decref(done);
        return rc;
    }
    char p[PATH_MAX + 32], started[32];
    snprintf(p, sizeof p, "%s/suite.json", s->run);
    if (access(p, F_OK) &&
        lbs_write_atomic(p, s->text, strlen(s->text), &le)) {
        cli_error(o->what, "%s", le.msg);
        suite_io_failed = 1;
    }
    utc_now(started, sizeof started);
    json_t *cmd = json_array();
    for (int i = 0; i < o->argc; i++)
        json_array_append_new(cmd, json_string(o->argv[i]));
    json_t *start = json_pack("{s:s,s:s,s:s,s:o,s:O,s:I,s:b,s:s}", "event",
        "start", "suite", s->name, "file", s->file, "command", cmd, "vars",
        s->vars, "entries", (json_int_t)s->n, "resume", o->resume != NULL,
        "started_utc", started);
    if (lbs_run_append(run, "suite", start, &le)) {
        cli_error(o->what, "%s", le.msg);
        suite_io_failed = 1;
    }
    *runp = run;
    *donep = done;
    return 0;
}

/* Every entry and repetition not done before, until interrupted (SIGINT
 * and SIGTERM stop after the running entry).  Returns whether it was. */
static int run_entries(struct suite *s, struct lbs_run *run, json_t *done,
                       struct progress *pg, json_t *rows, struct tally *t)
{
    struct sigaction sa = {0}, old_int, old_term;
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    for (size_t i = 0; i < s->n; i++)
        for (int r = 1; r <= s->e[i].repeat; r++) {
            char key[1024];
            entry_key(&s->e[i], r, key, sizeof key);
            if (done && json_object_get(done, key)) {
                t->done_before++;
                continue;
            }
            pg->n++;
            pg->todo_n++;
            pg->todo_est += s->e[i].est_s;
        }
    if (pg->tty)
        fprintf(stderr, "%s %s: %zu entries, %zu run(s)%s -> %s\n",
                s->o->what, s->name, s->n, pg->n,
                t->done_before ? " still to do" : "", s->run);
    /* interleaved: round r runs the r-th repetition of every entry that
     * has one, so an entry's repeats alternate with its neighbours' and
     * drift over the run lands on all of them alike; else each entry's
     * repeats back to back */
    int rounds = 1;
    for (size_t i = 0; i < s->n && s->interleave; i++)
        rounds = s->e[i].repeat > rounds ? s->e[i].repeat : rounds;
    for (int round = 1; round <= rounds && !interrupted; round++)
        for (size_t i = 0; i < s->n && !interrupted; i++) {
            int lo = s->interleave ? round : 1,
                hi = s->interleave ? round : s->e[i].repeat;
            for (int r = lo; r <= hi && r <= s->e[i].repeat && !interrupted;
                 r++) {
                char key[1024];
                entry_key(&s->e[i], r, key, sizeof key);
                if (done && json_object_get(done, key))
                    continue;
                pg->i++;
                run_one(s, run, &s->e[i], r, i, pg, rows, t);
            }
        }
    int was_interrupted = interrupted != 0;
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    return was_interrupted;
}

/* Figures, report and the summary (text, or end as JSON); end consumed. */
static void finish_suite(struct suite *s, json_t *end, json_t *rows,
                         const struct tally *t, double wall,
                         int was_interrupted)
{
    const struct suite_opts *o = s->o;
    struct lbs_err le;
    int plotted = 0, reported = 0;
    if (!o->no_plot && !was_interrupted) {
        int prc = plot_run(s->run, &le);
        if (prc)
            cli_error(o->what, "figures: %s", le.msg);
        else
            plotted = 1;
        /* no gnuplot on this machine is a notice; a figure that could not
         * be written (a full disk, a planted link) is a failure */
        suite_io_failed |= prc && prc != -ENOENT;
        if (report_write(s->run, &le)) {
            cli_error(o->what, "report: %s", le.msg);
            suite_io_failed = 1;
        } else {
            reported = 1;
        }
    }
    if (o->json) {
        json_object_set_new(end, "run", json_string(s->run));
        json_object_set_new(end, "suite", json_string(s->name));
        if (reported) {
            char rp[PATH_MAX + 16];
            snprintf(rp, sizeof rp, "%s/report.html", s->run);
            json_object_set_new(end, "report", json_string(rp));
        }
        char *txt = json_dumps(end, JSON_COMPACT | JSON_PRESERVE_ORDER);
        puts(txt);
        free(txt);
    } else {
        print_summary(s, rows, t, wall, plotted, reported, stdout);
    }
    fflush(stdout);
    json_decref(end);
}

int suite_main(const struct suite_opts *o)
{
    struct suite s = {.o = o, .file = o->file, .lock_fd = -1};
    snprintf(s.name, sizeof s.name, "%s", o->what);
    struct lbs_run *run = NULL;
    json_t *done = NULL;
    suite_io_failed = 0;
    int rc = load_suite(&s);
    if (rc)
        goto out;
    if (o->dry_run) {
        /* the same refusals as the run, then the list */
        if (!(rc = check_target(&s, NULL)))
            dry_run_list(&s);
        goto out;
    }
    if ((rc = open_suite_run(&s, &run, &done)))
        goto out;
    struct progress pg = {.tty = isatty(2), .t0 = cli_now()};
    pg.last = pg.t0;     /* non-tty: the first line after the interval */
    struct tally t = {0};
    json_t *rows = json_array();
    int was_interrupted = run_entries(&s, run, done, &pg, rows, &t);
    double wall = cli_now() - pg.t0;
    char ended[32];
    struct lbs_err le;
    utc_now(ended, sizeof ended);
    json_t *end = json_pack("{s:s,s:i,s:i,s:i,s:i,s:f,s:s,s:b}", "event",
        "end", "ok", t.ok, "failed", t.failed, "skipped", t.skipped,
        "done_before", t.done_before, "wall_s", wall, "ended_utc", ended,
        "interrupted", was_interrupted);
    if (lbs_run_append(run, "suite", json_incref(end), &le)) {
        cli_error(o->what, "%s", le.msg);
        suite_io_failed = 1;
    }
    lbs_run_close(run);
    finish_suite(&s, end, rows, &t, wall, was_interrupted);
    json_decref(rows);
    json_decref(done);
    if (was_interrupted) {
        cli_error(o->what, "interrupted; resume with: lbscale %s%s%s "
                  "--resume %s", o->what, strcmp(o->what, "suite") ? "" : " ",
                  strcmp(o->what, "suite") ? "" : s.file, s.run);
        rc = 130;
    } else {
        rc = t.failed || suite_io_failed ? EXIT_RUNTIME : 0;
    }
out:
    free_suite(&s);
    return rc;
}

/* ------------------------------------------------------------------ */
/* the verb                                                             */

static const char suite_usage[] =
"usage: lbscale suite FILE.json [--out DIR | --resume RUN] [--set KEY=VALUE]\n"
"                     [--dry-run] [--no-plot] [--json]";

static const char suite_about[] =
"Runs the suite's entries (benchmark verbs with arguments, rank counts for\n"
"mpirun, repetitions) as child processes into one results/<run-id>/, then\n"
"draws the figures (lbscale plot), writes report.html (lbscale report) and\n"
"prints a plain-text summary.  Every entry is validated before anything\n"
"runs (bad input: exit 2).  A failing entry is recorded as failed with its\n"
"stderr tail and the suite goes on; the exit status is then 1.\n"
"Each entry is recorded in RUN/suite.jsonl; its output in RUN/logs/.\n"
"Example suites: bench/suites/{quick,full,convergence,scaling,ci}.json;\n"
"the format is described in bench/suites/README.md.";

static const char suite_epilog[] =
"Progress (entry i of n, elapsed, ETA) goes to stderr when it is a\n"
"terminal; otherwise only failures are reported there.  Ctrl-C stops the\n"
"running entry and the suite (exit 130); --resume continues it.";

int suite_set_opt(json_t *vars, const char *what, const char *v)
{
    const char *eq = v ? strchr(v, '=') : NULL;
    if (!eq || eq == v) {
        cli_error(what, "--set needs KEY=VALUE (got '%s')", v ? v : "");
        return -EINVAL;
    }
    char key[128];
    snprintf(key, sizeof key, "%.*s", (int)(eq - v), v);
    json_object_set_new(vars, key, json_string(eq + 1));
    return 0;
}

int suite_set_call(const char *opt, const char *value, void *dst)
{
    (void)opt;
    const struct suite_opts *o = dst;
    return suite_set_opt(o->vars, o->what, value);
}

int verb_suite(int argc, char **argv)
{
    json_t *vars = json_object();
    struct suite_opts o = {.what = "suite", .argc = argc, .argv = argv,
                           .vars = vars};
    const struct cli_opt opts[] = {SUITE_RUN_OPTS(&o), {0}};
    const struct cli_verb verb = {.name = "suite", .usage = suite_usage,
                                  .about = suite_about, .opts = opts,
                                  .epilog = suite_epilog};
    char **pos;
    int npos;
    /* getopt_long moves the file behind the options; meta.json records
     * the command line as typed, so the parser gets a copy */
    char **args = malloc(((size_t)argc + 1) * sizeof *args);
    int rc = EXIT_RUNTIME;
    if (!args)
        goto out;
    memcpy(args, argv, ((size_t)argc + 1) * sizeof *args);
    rc = cli_parse(&verb, argc, args, &pos, &npos);
    if (rc) {
        rc = rc < 0 ? EXIT_BAD_INPUT : 0;
        goto out;
    }
    rc = EXIT_BAD_INPUT;
    if (npos > 1) {
        cli_error("suite", "one suite file only (got '%s' and '%s')",
                  pos[0], pos[1]);
        goto out;
    }
    o.file = npos ? pos[0] : NULL;
    if (!o.file) {
        cli_error("suite", "a suite file is required (see --help)");
        goto out;
    }
    if (o.out && o.resume) {
        cli_error("suite", "--out and --resume exclude each other (--resume "
                  "RUN writes into RUN)");
        goto out;
    }
    rc = suite_main(&o);
out:
    free(args);
    json_decref(vars);
    return rc;
}
