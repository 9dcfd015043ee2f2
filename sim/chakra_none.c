/* chakra_none.c - lbs_sim_chakra_export in a build without protobuf-c
 * (sim/meson.build builds chakra.c when protoc-c and libprotobuf-c are
 * found, this file otherwise). */
#include <errno.h>
#include <stdint.h>

#include "lbscale_sim.h"

int lbs_sim_chakra_export(const struct lbs_sim_platform *pl,
                          const struct lbs_sim_model *m,
                          const struct lbs_sim_plan *plan, long P,
                          const struct lbs_sim_opts *o, int final,
                          const char *dir, const char *prefix, long nranks,
                          struct lbs_err *err)
{
    (void)pl; (void)m; (void)plan; (void)P; (void)o; (void)final;
    (void)dir; (void)prefix; (void)nranks;
    return lbs_err_set(err, -ENOTSUP, "this build has no protobuf-c: "
                       "apt-get install protobuf-c-compiler libprotobuf-c-dev "
                       "and rebuild (meson option chakra)");
}

int lbs_sim_chakra_import(const char *path, const struct lbs_sim_model *m,
                          long ranks, FILE *out, size_t *ncalls,
                          size_t *skipped, struct lbs_err *err)
{
    (void)path; (void)m; (void)ranks; (void)out;
    *ncalls = *skipped = 0;
    return lbs_err_set(err, -ENOTSUP, "this build has no protobuf-c: "
                       "apt-get install protobuf-c-compiler libprotobuf-c-dev "
                       "and rebuild (meson option chakra)");
}

int lbs_sim_chakra_import_mem(const char *path, const uint8_t *buf,
                              size_t len, const struct lbs_sim_model *m,
                              long ranks, FILE *out, size_t *ncalls,
                              size_t *skipped, struct lbs_err *err)
{
    (void)buf; (void)len;
    return lbs_sim_chakra_import(path, m, ranks, out, ncalls, skipped, err);
}
