/* preset.c - where the simulator's data lives: the data directory, preset
 * names resolved to files, and the platform and model finders the CLI and
 * tools share (lbscale_sim.h, "Presets"). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lbs_sim_paths.h"
#include "lbscale/param.h"
#include "sim_internal.h"

const char *lbs_sim_data_dir(void)
{
    const char *e = getenv("LBSCALE_SIM_DATA");
    struct stat st;
    if (e && *e)
        return e;
    if (!stat(LBS_SIM_DATA_SRC, &st) && S_ISDIR(st.st_mode))
        return LBS_SIM_DATA_SRC;
    return LBS_SIM_DATA_INSTALLED;
}

int sim_is_path(const char *s, const char *ext)
{
    size_t n = strlen(s), e = strlen(ext);
    return strchr(s, '/') || (n > e && !strcmp(s + n - e, ext));
}

/* "unknown platform 'x' (presets: a, b; or a .json file)": the names of
 * <data>/KINDs/ in directory order, as many as fit. */
static int unknown_preset(const char *kind, const char *arg,
                          struct lbs_err *err)
{
    char names[160] = "";
    size_t o = 0;
    char dir[512];
    snprintf(dir, sizeof dir, "%s/%ss", lbs_sim_data_dir(), kind);
    DIR *d = opendir(dir);
    struct dirent *de;
    while (d && (de = readdir(d))) {
        size_t n = strlen(de->d_name);
        if (n > 5 && !strcmp(de->d_name + n - 5, ".json") &&
            o + n < sizeof names - 8)
            o += (size_t)snprintf(names + o, sizeof names - o, "%s%.*s",
                                  o ? ", " : "", (int)(n - 5), de->d_name);
    }
    if (d)
        closedir(d);
    if (!strcmp(arg, "local") && !strcmp(kind, "platform"))
        return lbs_err_set(err, -ENOENT, "no 'local' platform preset: "
                           "'lbscale sim calibrate FILE...' writes one into "
                           "its run directory (or --out FILE); give that "
                           "file");
    /* a typo of a preset gets "did you mean" (core's edit distance) */
    char sub[32], near[LBS_SIM_NAME_MAX] = "";
    snprintf(sub, sizeof sub, "%ss", kind);
    char **all = lbs_sim_preset_names(sub, ".json");
    size_t nall = 0;
    while (all && all[nall])
        nall++;
    const char *c = all ? lbs_closest(arg, (const char *const *)all, nall)
                        : NULL;
    if (c)
        snprintf(near, sizeof near, "%s", c);
    lbs_sim_names_free(all);
    if (near[0])
        return lbs_err_set(err, -ENOENT, "unknown %s '%.40s'; did you mean "
                           "'%s'? (presets: %s; or a .json file)", kind, arg,
                           near, names);
    return lbs_err_set(err, -ENOENT, "unknown %s '%.40s' (presets: %s; "
                       "or a .json file)", kind, arg, names);
}

int lbs_sim_preset_path(const char *kind, const char *arg, char *buf,
                        size_t len, struct lbs_err *err)
{
    struct stat st;
    if (sim_is_path(arg, ".json")) {
        snprintf(buf, len, "%s", arg);
        return 0;
    }
    for (const char *c = arg; *c; c++)
        if (!(*c == '-' || *c == '_' || *c == '.' || (*c >= '0' && *c <= '9') ||
              (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z')))
            return lbs_err_set(err, -ENOENT, "unknown %s '%.60s'", kind,
                               arg);
    snprintf(buf, len, "%s/%ss/%s.json", lbs_sim_data_dir(), kind, arg);
    if (stat(buf, &st))
        return unknown_preset(kind, arg, err);
    return 0;
}

int lbs_sim_platform_find(const char *arg, struct lbs_sim_platform **out,
                          struct lbs_err *err)
{
    char path[1024];
    int rc = lbs_sim_preset_path("platform", arg, path, sizeof path, err);
    return rc ? rc : lbs_sim_platform_load(path, out, err);
}

int lbs_sim_model_find(const char *arg, struct lbs_sim_model **out,
                       struct lbs_err *err)
{
    char path[1024];
    int rc = lbs_sim_preset_path("model", arg, path, sizeof path, err);
    return rc ? rc : lbs_sim_model_load(path, out, err);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void lbs_sim_names_free(char **names)
{
    for (size_t i = 0; names && names[i]; i++)
        free(names[i]);
    free(names);
}

char **lbs_sim_preset_names(const char *dir_name, const char *ext)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/%s", lbs_sim_data_dir(), dir_name);
    DIR *d = opendir(dir);
    struct dirent *de;
    size_t n = 0, cap = 8, e = strlen(ext);
    char **v = malloc(cap * sizeof *v);
    while (v && d && (de = readdir(d))) {
        size_t len = strlen(de->d_name);
        if (!(len > e && !strcmp(de->d_name + len - e, ext)))
            continue;
        if (n + 1 == cap) {
            char **q = realloc(v, (cap *= 2) * sizeof *v);
            if (!q)
                break;
            v = q;
        }
        if (!(v[n] = strndup(de->d_name, len - e)))
            break;
        n++;
    }
    if (d)
        closedir(d);
    if (!v)
        return NULL;
    v[n] = NULL;
    qsort(v, n, sizeof *v, cmp_str);
    return v;
}
