/* export.c - `lbscale sim export`: one simulated step as Chakra
 * execution traces. */
#include <errno.h>
#include <stdlib.h>

#include "../cli.h"
#include "sim_cli.h"

/* ---- export: one simulated step as Chakra execution traces ------------ */

static int sim_export(const struct simargs *a, const char *dir,
                      const char *prefix, long ranks, int final)
{
    struct lbs_err e;
    struct point_in in = {0};
    int rc = point_load(a, &in, &e);
    if (!rc)
        rc = lbs_sim_parse_gpus(a->gpus ? a->gpus : "8", &in.P, &in.np, &e);
    if (!rc && (in.np != 1 || in.nent != 1))
        rc = lbs_err_set(&e, -EINVAL, "export takes one optimizer and one "
                         "GPU count (--optim, --gpus)");
    struct lbs_sim_opts o = sim_opts(a);
    char jsrc[LBS_SIM_FILE_MAX + 800];
    if (!rc) {
        job_source(a, in.m, in.pl, &o, jsrc, sizeof jsrc);
        o.optim_bytes_per_elem = in.ent[0].bpe;
        rc = point_check(a, &in, &o, &e);
    }
    long n = ranks > 0 ? ranks : (!rc ? in.P[0] : 1);
    if (!rc)
        rc = lbs_sim_chakra_export(in.pl, in.m,
                                   lbs_sim_entry_plan(&in.ent[0], in.P[0]),
                                   in.P[0], &o, final, dir, prefix, n, &e);
    if (rc)
        cli_error("sim export", "%s", e.msg);
    else if (!a->com.json)
        printf("# %s on %s, %s, %ld GPUs, %s step: %ld Chakra execution "
               "traces (schema 1.0.2-chakra.1.0.0) in %s/%s.<rank>.et\n",
               in.ent[0].name, in.pl->name, in.m->name, in.P[0],
               final ? "final-phase" : "first", n, dir, prefix);
    point_in_free(&in);
    return cli_exit_code(rc);
}

int cmd_export(int argc, char **argv, struct simargs *a)
{
    const char *dir = NULL, *prefix = "et";
    long ranks = 0;
    int final = 0;
    const struct cli_opt opts[] = {
        {.name = "chakra", .type = CLI_STR, .dst = &dir, .arg = "DIR",
         .help = "write DIR/PREFIX.<rank>.et (DIR must not exist)"},
        {.name = "prefix", .type = CLI_STR, .dst = &prefix, .arg = "P",
         .help = "file name prefix (default et, as Chakra's converters)"},
        {.name = "ranks", .type = CLI_LONG, .dst = &ranks, .arg = "N",
         .lo = 1, .hi = 100000,
         .help = "files for ranks 0..N-1 only (default: every GPU)"},
        {.name = "final", .type = CLI_FLAG, .dst = &final,
         .help = "the final phase's step (1-bit LAMB's compressed one)\n"
                 "instead of the first"},
        SIM_SWEEP_ROWS(a), CLI_COMMON_OPTS(&a->com), {0}};
    const struct cli_verb v = {
        .name = "sim export",
        .usage = "usage: lbscale sim export --chakra DIR --model M "
                 "--platform P --optim NAME [--gpus 8]",
        .about = "One simulated training step as MLCommons Chakra execution "
                 "traces (one\nfile per rank), for ASTRA-sim and the other "
                 "tools that replay them:\nforward, backward per layer, "
                 "every collective (comm_type, comm_size)\nwith the "
                 "dependencies the engine ran it with, neighbour exchanges "
                 "as\nsend/receive pairs, the optimizer step.  Schema: "
                 "sim/chakra/chakra_et.proto.",
        .opts = opts, .epilog = FILES_NOTE};
    int rc = cli_parse(&v, argc - 1, argv + 1, NULL, NULL);
    if (rc)
        return rc < 0 ? EXIT_BAD_INPUT : 0;
    if (!dir) {
        cli_error("sim export", "--chakra DIR is required");
        return EXIT_BAD_INPUT;
    }
    if (need_point_args(a, "sim export"))
        return EXIT_BAD_INPUT;
    return sim_export(a, dir, prefix, ranks, final);
}
