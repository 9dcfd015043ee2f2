/* import.c - `lbscale sim import`: a Chakra trace's collectives as a
 * trace-v1 plan. */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "../cli.h"
#include "sim_cli.h"

/* ---- import: a Chakra trace's collectives as a trace-v1 plan ----------- */

int cmd_import(int argc, char **argv, struct simargs *a)
{
    const char *file = NULL, *outp = NULL;
    long ranks = 0;
    const struct cli_opt opts[] = {
        {.name = "chakra", .type = CLI_STR, .dst = &file, .arg = "FILE",
         .help = "one rank's Chakra execution trace (.et)"},
        SIM_MODEL_ROW(a),
        {.name = "out", .type = CLI_CALL, .fn = cli_out_file, .dst = &outp,
         .arg = "TRACE",
         .help = "the trace-v1 file to write (must not exist)"},
        {.name = "ranks", .type = CLI_LONG, .dst = &ranks, .arg = "P",
         .lo = 1, .hi = 100000000,
         .help = "the rank count it was made for (default: the\n"
                 "metadata's \"gpus\")"},
        {0}};
    const struct cli_verb v = {
        .name = "sim import",
        .usage = "usage: lbscale sim import --chakra FILE --model M --out "
                 "TRACE.jsonl [--ranks P]",
        .about = "Reads the collectives of a Chakra execution trace "
                 "(comm_type, comm_size,\nthe layer whose backward node "
                 "each waits for) into a trace-v1 plan for\nmodel M, which "
                 "`sim sweep --optim TRACE.jsonl` replays.  Point-to-point\n"
                 "nodes are counted, not imported (trace-v1 has no peer "
                 "list).",
        .opts = opts};
    struct lbs_err e;
    struct lbs_sim_model *m = NULL;
    int rc = cli_parse(&v, argc - 1, argv + 1, NULL, NULL);
    if (rc)
        return rc < 0 ? EXIT_BAD_INPUT : 0;
    if (!file || !a->model || !outp) {
        cli_error("sim import", "--chakra, --model and --out are required");
        return EXIT_BAD_INPUT;
    }
    if ((rc = lbs_sim_model_find(a->model, &m, &e))) {
        cli_error("sim import", "%s", e.msg);
        return cli_exit_code(rc);
    }
    int fd = open(outp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                  0644);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        cli_error("--out", "%s: %s%s", outp, strerror(errno),
                  errno == EEXIST ? " (give a new file)" : "");
        rc = errno == EEXIST || errno == ENOENT || errno == ELOOP ? -EINVAL
                                                                  : -EIO;
        if (fd >= 0)
            close(fd);
        lbs_sim_model_free(m);
        return cli_exit_code(rc);
    }
    size_t n = 0, skipped = 0;
    rc = lbs_sim_chakra_import(file, m, ranks, f, &n, &skipped, &e);
    if (fclose(f) && !rc)
        rc = lbs_err_set(&e, -EIO, "%s: %s", outp, strerror(errno));
    if (rc) {
        unlink(outp);       /* nothing partial */
        cli_error("sim import", "%s", e.msg);
    } else {
        printf("# %s: %zu collectives into %s (model %s)%s\n", file, n, outp,
               m->name, skipped ? "; point-to-point nodes not imported" : "");
        if (skipped)
            printf("# %zu point-to-point nodes skipped\n", skipped);
    }
    lbs_sim_model_free(m);
    return cli_exit_code(rc);
}
