/* sim/main.c - `lbscale sim ...`: the simulator from the command line.
 *
 * One file per subcommand beside this one (sweep.c, step.c, coll.c,
 * anchors.c, validate.c, export.c, import.c, netsweep.c, speed.c,
 * calibrate.c, list.c); this file dispatches to them.  What they share
 * (struct simargs, the option rows, model and point loading) is
 * sim_cli.h and common.c: a new subcommand is one file, one line in
 * cmds[] below, one in usage() and one in bench/meson.build.
 *
 * The files parse options (one table per subcommand, bench/opt.h) and
 * print; the simulator's substance (presets, optimizer entries, sweeps,
 * anchors, the speed benchmark, calibration input and the platform
 * writer) is the library's (sim/lbscale_sim.h).  Every input is loaded
 * and checked before a results directory is created, so bad input leaves
 * nothing behind (exit 2, one line on stderr).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lbs_sim_paths.h"
#include "sim_cli.h"

/* ---- dispatch ---------------------------------------------------------- */

static void usage(FILE *f)
{
    fputs("usage: lbscale sim COMMAND [options]   (lbscale sim COMMAND "
          "--help)\n\n"
          "  sweep      iteration time, exposed communication and scaling\n"
          "             efficiency per optimizer over 8..16384 GPUs\n"
          "  step       one (optimizer, GPU count) point; --timeline shows\n"
          "             every collective with its algorithm\n"
          "  coll       one collective: cost of every algorithm/protocol\n"
          "  anchors    published figures beside lbscale's predictions\n"
          "  export     one simulated step as Chakra execution traces\n"
          "  import     a Chakra trace's collectives as a trace-v1 plan\n"
          "  validate   published end-to-end figures (none fitted) beside\n"
          "             the predictions, with the geometric-mean error\n"
          "  netsweep   scaling efficiency against network bandwidth per node\n"
          "  speed      how fast the simulator is (benchmark figures)\n"
          "  calibrate  fit a platform from `lbscale coll` JSONL, nccl-tests\n"
          "             or OSU output (--nodes, --gpus-per-node: its size)\n"
          "  list       platform, model and trace presets\n"
          "  model      model import: a model from a PyTorch profiler trace\n\n"
          "Scaling efficiency E(P) = T(one node: gpus_per_node GPUs) / T(P)\n"
          "at the same per-GPU batch (weak scaling).  Presets are read from\n"
          "$LBSCALE_SIM_DATA, else " LBS_SIM_DATA_SRC ".\n", f);
}

int verb_sim(int argc, char **argv)
{
    static const struct {
        const char *name;
        int (*run)(int argc, char **argv, struct simargs *a);
    } cmds[] = {{"sweep", cmd_sweep}, {"step", cmd_step}, {"coll", cmd_coll},
                {"anchors", cmd_anchors}, {"validate", cmd_validate},
                {"export", cmd_export}, {"import", cmd_import},
                {"speed", cmd_speed},
                {"netsweep", cmd_netsweep}, {"calibrate", cmd_calibrate},
                {"list", cmd_list}, {"model", cmd_model}};
    if (argc < 2) {
        cli_error("sim", "which command? (lbscale sim --help lists them)");
        return EXIT_BAD_INPUT;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
        usage(stdout);
        return 0;
    }
    const char *data = getenv("LBSCALE_SIM_DATA");
    struct stat st;
    if (data && *data && (stat(data, &st) || !S_ISDIR(st.st_mode))) {
        cli_error("LBSCALE_SIM_DATA", "'%.200s' is not a directory (it "
                  "holds platforms/, models/, traces/)", data);
        return EXIT_BAD_INPUT;
    }
    struct simargs a = {.com = {.save = 1}, .grad_bytes = 4,
                        .grad_dtype = "fp32"};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        if (!strcmp(cmd, cmds[i].name))
            return cmds[i].run(argc, argv, &a);
    cli_error("sim", "unknown command '%s' (see lbscale sim --help)", cmd);
    return EXIT_BAD_INPUT;
}
