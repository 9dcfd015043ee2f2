/* cli.c - option parsing, errors, timing shared by the verbs. */
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "lbscale/isa.h"
#include "lbscale/param.h"

/* Control characters of the user's input (ESC, form feed, a newline in a
 * file name) as \xNN: the message stays one line and cannot drive the
 * terminal. */
static void printable(const char *in, char *out, size_t len)
{
    size_t o = 0;
    for (; *in && o + 5 < len; in++) {
        unsigned char c = (unsigned char)*in;
        if (c < 0x20 || c == 0x7f)
            o += (size_t)snprintf(out + o, len - o, "\\x%02x", c);
        else
            out[o++] = (char)c;
    }
    out[o] = '\0';
}

/* One write of the whole line: under mpirun, another process's output
 * (mpirun's own abort notice) must not land in the middle of it. */
void cli_error(const char *what, const char *fmt, ...)
{
    char msg[1024], shown[1024 * 4 + 8];
    va_list ap;
    /* an over-long what (a 2,000-byte verb) is cut, so the prefix and
     * the reason always fit the line */
    int k = strlen(what) > 200
            ? snprintf(msg, sizeof msg, "lbscale: %.200s...: ", what)
            : snprintf(msg, sizeof msg, "lbscale: %s: ", what);
    if (k < 0 || (size_t)k >= sizeof msg)
        k = 0;
    va_start(ap, fmt);
    vsnprintf(msg + k, sizeof msg - (size_t)k, fmt, ap);
    va_end(ap);
    printable(msg, shown, sizeof shown);
    fprintf(stderr, "%s\n", shown);
    fflush(stderr);
}

int cli_exit_code(int rc)
{
    return rc == 0 ? 0 : lbs_err_is_input(rc) ? EXIT_BAD_INPUT : EXIT_RUNTIME;
}

int cli_size(const char *opt, const char *s, size_t *out)
{
    if (!s) {
        cli_error(opt, "missing value");
        return -EINVAL;
    }
    if (lbs_parse_size(s, out) || *out == 0) {
        cli_error(opt, "'%s' is not a positive count (e.g. 1000, 64M, 4Ki)",
                  s);
        return -EINVAL;
    }
    return 0;
}

int cli_double(const char *opt, const char *s, double lo, double hi,
               double *out)
{
    if (!s) {
        cli_error(opt, "missing value");
        return -EINVAL;
    }
    if (lbs_parse_double(s, out)) {
        cli_error(opt, "'%s' is not a finite number", s);
        return -EINVAL;
    }
    if (*out < lo || *out > hi) {
        cli_error(opt, "%s out of range [%g, %g]", s, lo, hi);
        return -EINVAL;
    }
    return 0;
}

int cli_int(const char *opt, const char *s, long lo, long hi, long *out)
{
    double d;
    if (cli_double(opt, s, (double)lo, (double)hi, &d))
        return -EINVAL;
    if (d != floor(d)) {
        cli_error(opt, "'%s' is not an integer", s);
        return -EINVAL;
    }
    *out = (long)d;
    return 0;
}

int cli_isa(const char *opt, const char *s)
{
    struct lbs_err e;
    if (!s) {
        cli_error(opt, "missing value");
        return -EINVAL;
    }
    if (lbs_isa_select(s, &e)) {
        cli_error(opt, "%s", e.msg);
        return -EINVAL;
    }
    return 0;
}

double cli_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* LBSCALE_TEST_SLOWDOWN parsed: verb and name (NULL without), factor. */
static int slowdown_parse(char *verb, char *name, size_t len, double *f,
                          struct lbs_err *e)
{
    const char *v = getenv("LBSCALE_TEST_SLOWDOWN");
    verb[0] = name[0] = '\0';
    *f = 1;
    if (!v || !*v)
        return 0;
    const char *sl = strchr(v, '/'), *eq = strrchr(v, '=');
    char *end;
    if (!sl || !eq || eq < sl || sl == v || eq == sl + 1 ||
        (size_t)(sl - v) >= len || (size_t)(eq - sl - 1) >= len)
        return lbs_err_set(e, -EINVAL, "'%s': expected VERB/NAME=FACTOR "
                           "(e.g. compress/qsgd=1.1)", v);
    snprintf(verb, len, "%.*s", (int)(sl - v), v);
    snprintf(name, len, "%.*s", (int)(eq - sl - 1), sl + 1);
    if (strcmp(verb, "optim") && strcmp(verb, "compress"))
        return lbs_err_set(e, -EINVAL, "'%s': the verb must be optim or "
                           "compress", v);
    *f = strtod(eq + 1, &end);
    if (end == eq + 1 || *end || !(*f > 1 && *f <= 100))
        return lbs_err_set(e, -EINVAL, "'%s': the factor must be a number "
                           "in (1, 100]", v);
    return 0;
}

int cli_slowdown_check(struct lbs_err *e)
{
    char verb[64], name[64];
    double f;
    return slowdown_parse(verb, name, sizeof verb, &f, e);
}

double cli_slowdown(const char *verb, const char *spec)
{
    char v[64], name[64];
    double f;
    struct lbs_err e;
    if (!spec || slowdown_parse(v, name, sizeof v, &f, &e) || strcmp(v, verb))
        return 1;
    size_t l = strcspn(spec, ":");
    return strlen(name) == l && !strncmp(spec, name, l) ? f : 1;
}

void cli_slowdown_spin(double f, double elapsed)
{
    double until = cli_now() + (f - 1) * elapsed;
    while (cli_now() < until)
        ;
}

void cli_timing_print(FILE *f, const char *indent, const char *what,
                      const struct cli_stats *s, double scale,
                      const char *unit)
{
    fprintf(f, "%s%s time (mean +- sd):   %9.3f %s +- %9.3f %s   [%zu runs]\n",
            indent, what, s->mean * scale, unit, s->sd * scale, unit, s->n);
    fprintf(f, "%s%s range (min ... max): %9.3f %s ... %8.3f %s   "
            "[median %.3f %s]\n", indent, what, s->min * scale, unit,
            s->max * scale, unit, s->median * scale, unit);
    if (s->outliers)
        fprintf(f, "%sWarning: %zu of %zu runs are statistical outliers "
                "(modified Z-score > 3.5): another process or a cold cache "
                "may have interfered; the median is robust to them, the "
                "mean is not.  Rerun on a quieter machine or with more "
                "iterations.\n", indent, s->outliers, s->n);
}

int cli_export_path(const char *opt, const char *value, void *dst)
{
    if (!value || !*value) {
        cli_error(opt, "missing file name");
        return -EINVAL;
    }
    /* a directory that cannot take the file: bad input, before any work */
    const char *sl = strrchr(value, '/');
    char dir[4096];
    snprintf(dir, sizeof dir, "%.*s", sl ? (int)(sl - value) + (sl == value)
                                         : 1, sl ? value : ".");
    struct stat st;
    struct lbs_err e;
    if (stat(dir, &st) || !S_ISDIR(st.st_mode) || access(dir, W_OK)) {
        cli_error(opt, "cannot write '%s'", value);
        return -EINVAL;
    }
    /* a device, FIFO, socket, directory or symlink there is refused now,
     * not replaced by the rename at the end of the run */
    if (lbs_out_file_check(value, &e)) {
        cli_error(opt, "%s", e.msg);
        return -EINVAL;
    }
    *(const char **)dst = value;
    return 0;
}

int cli_out_file(const char *opt, const char *value, void *dst)
{
    struct lbs_err e;
    if (!value || !*value) {
        cli_error(opt, "missing file name");
        return -EINVAL;
    }
    if (lbs_out_file_check(value, &e)) {
        cli_error(opt, "%s", e.msg);
        return -EINVAL;
    }
    *(const char **)dst = value;
    return 0;
}

static void export_val(char *out, size_t len, json_t *v)
{
    if (json_is_integer(v))
        snprintf(out, len, "%lld", (long long)json_integer_value(v));
    else if (json_is_real(v))
        snprintf(out, len, "%.6g", json_real_value(v));
    else if (json_is_string(v))
        snprintf(out, len, "%s", json_string_value(v));
    else
        snprintf(out, len, "%s", "");
}

#define PUT(...) *o += (size_t)snprintf(t + *o, *o < cap ? cap - *o : 0, \
                                         __VA_ARGS__)
/* The header (and markdown's rule, right-aligned for numbers of row). */
static void export_head(char *t, size_t cap, size_t *o, int md, json_t *row,
                        const char *const *cols)
{
    for (int c = 0; cols[c]; c++) {
        if (md)
            PUT("| %s ", cols[c]);
        else
            PUT("%s%s", c ? "," : "", cols[c]);
    }
    PUT("%s\n", md ? "|" : "");
    if (md) {
        for (int c = 0; cols[c]; c++)
            PUT("|%s", json_is_number(json_object_get(row, cols[c]))
                           ? "---:" : "---");
        PUT("|\n");
    }
}

static void export_row(char *t, size_t cap, size_t *o, int md, json_t *row,
                       const char *const *cols)
{
    char v[512];
    for (int c = 0; cols[c]; c++) {
        export_val(v, sizeof v, json_object_get(row, cols[c]));
        if (md) {
            PUT("| %s ", v);
        } else if (strpbrk(v, ",\"\n")) {   /* CSV quoting */
            PUT("%s\"", c ? "," : "");
            for (const char *p = v; *p; p++)
                PUT("%s", *p == '"' ? "\"\"" : (char[2]){*p, 0});
            PUT("\"");
        } else {
            PUT("%s%s", c ? "," : "", v);
        }
    }
    PUT("%s\n", md ? "|" : "");
}
#undef PUT

int cli_export_write(const struct cli_export *x, const char *verb,
                     json_t *rows, const char *const *cols)
{
    /* one row (an object) or several (an array of them, e.g. coll) */
    size_t nr = json_is_array(rows) ? json_array_size(rows) : 1;
    json_t *first = json_is_array(rows) ? json_array_get(rows, 0) : rows;
    for (int k = 0; k < 2; k++) {
        const char *path = k ? x->md : x->csv;
        if (!path)
            continue;
        size_t cap = 8192 * (nr + 1), o = 0;
        char *t = malloc(cap);
        if (!t)
            return -ENOMEM;
        t[0] = '\0';
        export_head(t, cap, &o, k, first, cols);
        for (size_t r = 0; r < nr; r++)
            export_row(t, cap, &o, k, json_is_array(rows)
                       ? json_array_get(rows, r) : rows, cols);
        struct lbs_err e;
        int rc = o < cap ? lbs_write_atomic(path, t, o, &e)
                         : lbs_err_set(&e, -E2BIG, "%s: row too long", path);
        free(t);
        if (rc) {
            cli_error(verb, "%s", e.msg);
            return rc;
        }
    }
    return 0;
}

int cli_threads(long t)
{
    if (t > 0)
        omp_set_num_threads((int)t);
    return omp_get_max_threads();
}

int cli_open_run(const struct cli_common *c, const char *verb, int argc,
                 char **argv, struct lbs_run **run)
{
    struct lbs_err e;
    *run = NULL;
    if (!c->save)
        return 0;
    int rc = lbs_run_open(c->out, lbs_meta_collect, argc, argv, run, &e);
    if (rc)
        cli_error(verb, "%s", e.msg);
    return rc;
}
