/* validate.c - `lbscale sim validate`: published end-to-end figures,
 * none fitted, beside the predictions. */
#include <errno.h>
#include <stdlib.h>

#include "../cli.h"
#include "sim_cli.h"

/* ---- validate: published end-to-end figures, none fitted -------------- */

static int sim_validate(const struct simargs *a, const char *manifest,
                        int argc, char **argv)
{
    struct lbs_err e;
    struct lbs_run *run = NULL;
    struct lbs_sim_validation v;
    int rc = lbs_sim_validate(manifest, &v, &e);
    if (rc) {
        cli_error("sim validate", "%s", e.msg);
        return cli_exit_code(rc);
    }
    if ((rc = cli_open_run(&a->com, "sim_validate", argc, argv, &run))) {
        lbs_sim_validation_free(&v);
        return cli_exit_code(rc);
    }
    if (!a->com.json)
        printf("# published end-to-end figures beside lbscale's predictions "
               "(chosen and committed before any prediction; shown, not "
               "gated: docs/validation.md \"e\")\n"
               "# %-5s %-62s %9s %9s %7s %7s\n", "id", "figure", "published",
               "lbscale", "ratio", "error");
    for (size_t i = 0; i < v.n && !rc; i++) {
        const struct lbs_sim_vrow *r = &v.row[i];
        double ratio = r->predicted / r->published;
        json_t *row = json_pack("{s:s,s:s,s:s,s:f,s:f,s:f,s:f,s:f,s:f,s:f}",
            "id", r->id, "what", r->what, "source", r->source,
            "published", r->published, "predicted", r->predicted,
            "ratio", ratio, "error", ratio - 1, "warmup", r->warmup,
            "num_iter_ms", r->num_s * 1e3, "den_iter_ms", r->den_s * 1e3);
        if (!row) {
            rc = lbs_err_set(&e, -ENOMEM, "out of memory");
            cli_error("sim validate", "%s", e.msg);
            break;
        }
        if (a->com.json)
            print_json(row);
        else
            printf("  %-5s %-62.62s %9.4g %9.4g %7.3f %+6.1f%%\n", r->id,
                   r->what, r->published, r->predicted, ratio,
                   100 * (ratio - 1));
        if (run && (rc = lbs_run_append(run, "sim_validate", row, &e)))
            cli_error("sim validate", "%s", e.msg);
        else if (!run)
            json_decref(row);
    }
    if (!rc && !a->com.json)
        printf("# %zu rows: geometric mean of |prediction/published - 1| "
               "%.1f%%, worst %.1f%% (%s)\n", v.n, 100 * v.gmean,
               100 * v.worst, v.row[v.worst_row].id);
    lbs_run_close(run);
    lbs_sim_validation_free(&v);
    return cli_exit_code(rc);
}

int cmd_validate(int argc, char **argv, struct simargs *a)
{
    const char *manifest = NULL;
    const struct cli_opt opts[] = {
        {.name = "manifest", .type = CLI_STR, .dst = &manifest, .arg = "FILE",
         .help = "the rows to simulate (default:\n"
                 "<data>/validation/validation.json)"},
        CLI_COMMON_OPTS(&a->com), {0}};
    const struct cli_verb v = {
        .name = "sim validate",
        .usage = "usage: lbscale sim validate [--manifest FILE] [--json]",
        .about = "Simulates every published end-to-end figure of the "
                 "validation list\n(docs/validation.md \"e\": throughput, "
                 "scaling efficiency and speedups\nof compressed optimizers "
                 "on Ethernet and InfiniBand clusters) and prints\neach "
                 "beside its published value, with the geometric mean of "
                 "the\nerrors and the worst row.  Shown, not gated: nothing "
                 "was fitted to it.",
        .opts = opts};
    int rc = cli_parse(&v, argc - 1, argv + 1, NULL, NULL);
    if (rc)
        return rc < 0 ? EXIT_BAD_INPUT : 0;
    return sim_validate(a, manifest, argc, argv);
}
