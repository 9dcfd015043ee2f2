/* sim_model.h - `lbscale sim model` (bench/sim_model.c). */
#ifndef LBS_SIM_MODEL_H
#define LBS_SIM_MODEL_H
/* argv[0] "sim", argv[1] "model", argv[2] the subcommand. */
int sim_model_cmd(int argc, char **argv);
#endif
