/* plot.c - `lbscale plot RUN`: figures from a results run, drawn by the
 * gnuplot scripts in plots/ (one script per figure kind).  The JSONL files
 * are turned into whitespace tables under RUN/plots/ first, so each script
 * stays a plain gnuplot script that can be rerun by hand. */
#include <limits.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "lbs_config.h"

extern char **environ;

static const char *plots_dir(void)
{
    const char *e = getenv("LBSCALE_PLOTS");
    return e && *e ? e : LBS_PLOTS_DIR;
}

/* Run gnuplot with -e assignments and a script; 0 on success. */
static int run_gnuplot(const char *assign, const char *script)
{
    char *argv[] = {"gnuplot", "-e", (char *)assign, (char *)script, NULL};
    pid_t pid;
    int st;
    if (posix_spawnp(&pid, "gnuplot", NULL, NULL, argv, environ))
        return -ENOENT;
    if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
        return -EIO;
    return 0;
}

/* Rows of a JSONL file (new reference) or NULL when the file is absent. */
static json_t *load_jsonl(const char *path, struct lbs_err *err, int *rc)
{
    FILE *f = fopen(path, "r");
    *rc = 0;
    if (!f)
        return NULL;
    json_t *rows = json_array();
    char *line = NULL;
    size_t cap = 0;
    int ln = 0;
    while (getline(&line, &cap, f) > 0) {
        ln++;
        json_error_t je;
        json_t *r = json_loads(line, 0, &je);
        if (!r) {
            *rc = lbs_err_set(err, -EINVAL, "%s line %d: %s", path, ln,
                              je.text);
            json_decref(rows);
            rows = NULL;
            break;
        }
        json_array_append_new(rows, r);
    }
    free(line);
    fclose(f);
    return rows;
}

static int fig_roofline(const char *run, const char *outdir,
                        struct lbs_err *err)
{
    char path[PATH_MAX + 32], dat[PATH_MAX + 32], assign[3 * PATH_MAX + 64],
        gp[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/optim.jsonl", run);
    int rc;
    json_t *rows = load_jsonl(path, err, &rc);
    if (!rows)
        return rc;   /* nothing to draw is not an error */
    size_t i, len = 0, cap = 4096;
    char *text = malloc(cap);
    json_t *r;
    len += (size_t)snprintf(text, cap, "# optim gbps stream_gbps "
                            "roofline_frac elements threads\n");
    json_array_foreach(rows, i, r) {
        if (len + 256 > cap)
            text = realloc(text, cap *= 2);
        len += (size_t)snprintf(text + len, cap - len,
            "%s %.4f %.4f %.4f %lld %lld\n",
            json_string_value(json_object_get(r, "optim")),
            json_real_value(json_object_get(r, "gbps")),
            json_real_value(json_object_get(r, "stream_gbps")),
            json_real_value(json_object_get(r, "roofline_frac")),
            (long long)json_integer_value(json_object_get(r, "elements")),
            (long long)json_integer_value(json_object_get(r, "threads")));
    }
    json_decref(rows);
    snprintf(dat, sizeof dat, "%s/roofline.dat", outdir);
    rc = lbs_write_atomic(dat, text, len, err);
    free(text);
    if (rc)
        return rc;
    snprintf(assign, sizeof assign, "datafile='%s'; outbase='%s/roofline'",
             dat, outdir);
    snprintf(gp, sizeof gp, "%s/roofline.gp", plots_dir());
    rc = run_gnuplot(assign, gp);
    if (rc == -ENOENT)
        return lbs_err_set(err, rc, "gnuplot not found (apt-get install "
                           "gnuplot-nox)");
    if (rc)
        return lbs_err_set(err, rc, "gnuplot failed on %s", gp);
    fprintf(stderr, "plot: %s/roofline.png\n", outdir);
    return 0;
}

int plot_run(const char *run, struct lbs_err *err)
{
    struct stat st;
    if (stat(run, &st) || !S_ISDIR(st.st_mode))
        return lbs_err_set(err, -ENOENT, "no results run directory '%s'",
                           run);
    char outdir[PATH_MAX];
    snprintf(outdir, sizeof outdir, "%s/plots", run);
    if (mkdir(outdir, 0755) && errno != EEXIST)
        return lbs_err_set(err, -EIO, "cannot create %s", outdir);
    return fig_roofline(run, outdir, err);
}

static void usage(FILE *f)
{
    fprintf(f,
"usage: lbscale plot RUN_DIR\n"
"\n"
"Draws every figure the run's results allow, as PNG and SVG under\n"
"RUN_DIR/plots/, with the gnuplot scripts in %s (or $LBSCALE_PLOTS):\n"
"  roofline   optim.jsonl: achieved GB/s per optimizer step vs STREAM triad\n"
"  -h, --help this help\n", plots_dir());
}

int verb_plot(int argc, char **argv)
{
    if (argc != 2) {
        if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
            usage(stdout);
            return 0;
        }
        cli_error("plot", "expected exactly one results directory (see --help)");
        return EXIT_BAD_INPUT;
    }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        usage(stdout);
        return 0;
    }
    struct lbs_err e;
    int rc = plot_run(argv[1], &e);
    if (rc)
        cli_error("plot", "%s", e.msg);
    return cli_exit_code(rc);
}
