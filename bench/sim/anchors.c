/* anchors.c - `lbscale sim anchors`: published figures beside
 * lbscale's predictions. */
#include <math.h>
#include <stdlib.h>

#include "../cli.h"
#include "sim_cli.h"

/* ---- anchors ---------------------------------------------------------- */

static json_t *anchor_row(const struct lbs_sim_anchor *an, const char *band,
                          int ok)
{
    double ratio = an->predicted / an->published;
    json_t *row = json_pack("{s:s,s:s,s:o,s:o,s:o,s:s,s:s,s:s,s:b}",
        "anchor", an->what, "source", an->source, "published",
        isfinite(an->published) ? json_real(an->published) : json_null(),
        "lbscale", isfinite(an->predicted) ? json_real(an->predicted)
                                           : json_null(),
        "ratio", isfinite(ratio) ? json_real(ratio) : json_null(),
        "unit", an->unit, "note", an->note, "band", band, "in_band", ok);
    if (row && an->model) {
        json_object_set_new(row, "model", json_string(an->model));
        json_object_set_new(row, "platform", json_string(an->platform));
        json_object_set_new(row, "optim", json_string(an->optim));
        json_object_set_new(row, "gpus", json_integer(an->gpus));
        json_object_set_new(row, "setup", json_string(an->setup));
    }
    return row;
}

/* One anchor printed and appended; 1 when it is out of band. */
static int emit_anchor(const struct simargs *a, struct lbs_run *run,
                       const struct lbs_sim_anchor *an, int *rc)
{
    struct lbs_err e;
    int ok = lbs_sim_anchor_in_band(an);
    char band[32] = "shown only";
    if (an->band > 0)
        snprintf(band, sizeof band, an->kind == 'a' ? "+-%g" :
                 an->kind == 'f' ? "x/%g" : "+-%g%%",
                 an->kind == 'r' ? 100 * an->band : an->band);
    json_t *row = anchor_row(an, band, ok);
    if (a->com.json)
        print_json(row);
    else
        printf("  %-48s %9.4g %9.4g %7.3f %-12s %s%s %s\n", an->what,
               an->published, an->predicted, an->predicted / an->published,
               band, ok ? "" : "OUT OF BAND ", an->unit, an->note);
    if (run && (*rc = lbs_run_append(run, "sim_anchors", row, &e)))
        cli_error("sim anchors", "%s", e.msg);
    if (!run)
        json_decref(row);
    return !ok;
}

static int sim_anchors(const struct simargs *a, int argc, char **argv)
{
    struct lbs_err e;
    struct lbs_run *run = NULL;
    struct lbs_sim_anchor an[LBS_SIM_ANCHORS_MAX];
    int na = 0, out_of_band = 0;
    /* --optim FILE: the SLAMB trace to use (default: the preset lookup) */
    int rc = lbs_sim_anchors(a->optim, an, &na, &e);
    if (rc) {
        cli_error("sim anchors", "%s", e.msg);
        return cli_exit_code(rc);
    }
    if ((rc = cli_open_run(&a->com, "sim_anchors", argc, argv, &run)))
        return cli_exit_code(rc);
    if (!a->com.json)
        printf("# published anchors beside lbscale's predictions (never "
               "tuned to them; 'band' gates `sim anchors --check`)\n"
               "# %-48s %9s %9s %7s %-12s %s\n", "anchor", "published",
               "lbscale", "ratio", "band", "");
    for (int i = 0; i < na && !rc; i++)
        out_of_band += emit_anchor(a, run, &an[i], &rc);
    if (!rc && !a->com.json)
        printf("# sources of the published figures: lbscale sim anchors "
               "--json (field source)\n");
    if (!rc && a->check && out_of_band) {
        cli_error("sim anchors", "%d anchor%s out of band", out_of_band,
                  out_of_band == 1 ? "" : "s");
        rc = -EIO;
    }
    lbs_run_close(run);
    return cli_exit_code(rc);
}

int cmd_anchors(int argc, char **argv, struct simargs *a)
{
    const struct cli_opt opts[] = {
        SIM_OPTIM_ROW(a, "the SLAMB trace of bert-xl (default:\n"
                         "<data>/traces/slamb-bert-xl*.jsonl)"),
        {.name = "check", .type = CLI_FLAG, .dst = &a->check,
         .help = "exit 1 when a prediction leaves its band"},
        CLI_COMMON_OPTS(&a->com), {0}};
    const struct cli_verb v = {
        .name = "sim anchors",
        .usage = "usage: lbscale sim anchors [--optim SLAMB.jsonl] [--json]",
        .about = "Prints the published anchors (NVLink allreduce busbw on "
                 "8xA100\nand 8xH100, per-NIC bandwidth, SLAMB's 90% scaling "
                 "efficiency for\nBERT-XL on 1,024 A100s, from a SLAMB trace "
                 "of bert-xl: --optim FILE or\n<data>/traces/"
                 "slamb-bert-xl*.jsonl) beside what the presets predict.",
        .opts = opts};
    int rc = cli_parse(&v, argc - 1, argv + 1, NULL, NULL);
    if (rc)
        return rc < 0 ? EXIT_BAD_INPUT : 0;
    return sim_anchors(a, argc, argv);
}
