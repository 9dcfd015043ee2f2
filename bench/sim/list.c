/* list.c - `lbscale sim list`: the presets. */
#include <stdlib.h>

#include "../cli.h"
#include "lbs_sim_paths.h"
#include "sim_cli.h"

/* ---- list -------------------------------------------------------------- */

static int sim_list(int json)
{
    static const char *const kinds[][2] = {{"platforms", ".json"},
                                           {"models", ".json"},
                                           {"traces", ".jsonl"}};
    json_t *o = json_pack("{s:s}", "data", lbs_sim_data_dir());
    for (int k = 0; k < 3; k++) {
        char **names = lbs_sim_preset_names(kinds[k][0], kinds[k][1]);
        json_t *arr = json_array();
        for (size_t i = 0; names && names[i]; i++)
            json_array_append_new(arr, json_string(names[i]));
        lbs_sim_names_free(names);
        json_object_set_new(o, kinds[k][0], arr);
    }
    /* the optimizers planned without a trace, as core's props say */
    json_t *dp = json_array();
    for (const char *const *n = lbs_optim_names(); *n; n++)
        if (lbs_sim_is_data_parallel(*n))
            json_array_append_new(dp, json_string(*n));
    json_object_set_new(o, "data_parallel", dp);
    if (json) {
        print_json(o);
    } else {
        for (int k = 0; k < 3; k++) {
            size_t i;
            json_t *x;
            printf("%s (%s/%s):\n", kinds[k][0], lbs_sim_data_dir(),
                   kinds[k][0]);
            json_array_foreach(json_object_get(o, kinds[k][0]), i, x)
                printf("  %s\n", json_string_value(x));
        }
        size_t i;
        json_t *x;
        printf("data-parallel optimizers (no trace needed):\n");
        json_array_foreach(dp, i, x)
            printf("  %s\n", json_string_value(x));
    }
    json_decref(o);
    return 0;
}

int cmd_list(int argc, char **argv, struct simargs *unused)
{
    int json = 0;
    const struct cli_opt opts[] = {
        {.name = "json", .type = CLI_FLAG, .dst = &json,
         .help = "one JSON object: {\"data\", \"platforms\", \"models\", "
                 "\"traces\", \"data_parallel\"}"},
        {0}};
    const struct cli_verb v = {
        .name = "sim list", .usage = "usage: lbscale sim list [--json]",
        .about = "The platform, model and trace presets the simulator reads "
                 "(from\n$LBSCALE_SIM_DATA, else " LBS_SIM_DATA_SRC "), "
                 "sorted by name.",
        .opts = opts};
    (void)unused;
    int rc = cli_parse(&v, argc - 1, argv + 1, NULL, NULL);
    if (rc)
        return rc < 0 ? EXIT_BAD_INPUT : 0;
    return sim_list(json);
}
