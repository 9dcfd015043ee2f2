/* cli.c - option parsing, errors, timing shared by the verbs. */
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
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
    int k = snprintf(msg, sizeof msg, "lbscale: %s: ", what);
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

double cli_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

struct cli_stats cli_stats(double *x, size_t n)
{
    qsort(x, n, sizeof *x, cmp_d);
    struct cli_stats s = {x[n / 2], x[0], x[n - 1]};
    if (n % 2 == 0)
        s.median = 0.5 * (x[n / 2 - 1] + x[n / 2]);
    return s;
}

int cli_threads(long t)
{
    if (t > 0)
        omp_set_num_threads((int)t);
    return omp_get_max_threads();
}

int cli_common_opt(struct cli_common *c, int argc, char **argv, int *i)
{
    const char *a = argv[*i];
    if (!strcmp(a, "--json")) {
        c->json = 1;
        return 1;
    }
    if (!strcmp(a, "--no-save")) {
        c->save = 0;
        return 1;
    }
    if (!strcmp(a, "--out")) {
        if (*i + 1 >= argc) {
            cli_error("--out", "missing directory");
            return -1;
        }
        c->out = argv[++*i];
        return 1;
    }
    return 0;
}

int cli_open_run(const struct cli_common *c, const char *verb, int argc,
                 char **argv, struct lbs_run **run)
{
    struct lbs_err e;
    *run = NULL;
    if (!c->save)
        return 0;
    int rc = lbs_run_open(c->out, argc, argv, run, &e);
    if (rc)
        cli_error(verb, "%s", e.msg);
    return rc;
}
