/* results.c - run directories, meta.json and atomic JSONL files. */
#include <fcntl.h>
#include <hwloc.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <cblas.h>

#include "git_rev.h"
#include "lbs_config.h"
#include "lbs_cuda.h"
#include "results.h"

#if LBS_HAVE_MPI
#include <mpi.h>
#endif

struct verb_file {
    char verb[32];
    char *text;       /* whole file content */
    size_t len, cap;
};

struct lbs_run {
    char dir[PATH_MAX];
    struct verb_file files[16];
    int nfiles;
};

int lbs_write_atomic(const char *path, const char *text, size_t len,
                     struct lbs_err *err)
{
    char tmp[PATH_MAX + 16];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return lbs_err_set(err, -EIO, "cannot create %s: %s", tmp,
                           strerror(errno));
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(fd, text + off, len - off);
        if (w < 0) {
            int e = errno;
            close(fd);
            unlink(tmp);
            return lbs_err_set(err, -EIO, "write %s: %s", tmp, strerror(e));
        }
        off += (size_t)w;
    }
    if (fsync(fd) || close(fd) || rename(tmp, path)) {
        int e = errno;
        unlink(tmp);
        return lbs_err_set(err, -EIO, "cannot write %s: %s", path,
                           strerror(e));
    }
    return 0;
}

int lbs_mkdir_p(const char *path)
{
    char buf[PATH_MAX];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            if (mkdir(buf, 0755) && errno != EEXIST)
                return -1;
            *p = '/';
        }
    return (mkdir(buf, 0755) && errno != EEXIST) ? -1 : 0;
}

static void utc_stamp(char *buf, size_t len, const char *fmt);

/* A new results/<UTC>-<rev>[-N] directory, created exclusively so two runs
 * started in the same second never share one.  1 on success, -1 on error. */
static int new_run_dir(char *out, size_t len)
{
    const char *root = getenv("LBSCALE_RESULTS");
    char stamp[64], base[PATH_MAX];
    root = root && *root ? root : "results";
    if (lbs_mkdir_p(root))
        return -1;
    utc_stamp(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ");
    snprintf(base, sizeof base, "%s/%s-%s", root, stamp, LBS_GIT_REV);
    for (int i = 1; i < 1000; i++) {
        int w = i == 1 ? snprintf(out, len, "%s", base)
                       : snprintf(out, len, "%s-%d", base, i);
        if (w < 0 || (size_t)w >= len)
            return -1;
        if (mkdir(out, 0755) == 0)
            return 1;
        if (errno != EEXIST)
            return -1;
    }
    return -1;
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    fclose(f);
    if (s) {
        s[n] = '\0';
        *len = (size_t)n;
    }
    return s;
}

static void cpu_model(char *buf, size_t len)
{
    snprintf(buf, len, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "model name", 10)) {
            char *c = strchr(line, ':');
            if (c) {
                c += 2;
                c[strcspn(c, "\n")] = '\0';
                snprintf(buf, len, "%s", c);
            }
            break;
        }
    fclose(f);
}

static json_t *topology(void)
{
    hwloc_topology_t t;
    json_t *o = json_object();
    if (hwloc_topology_init(&t) || hwloc_topology_load(t))
        return o;
    json_object_set_new(o, "packages", json_integer(
        hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PACKAGE)));
    json_object_set_new(o, "numa_nodes", json_integer(
        hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE)));
    json_object_set_new(o, "cores", json_integer(
        hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE)));
    json_object_set_new(o, "pus", json_integer(
        hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PU)));
    hwloc_obj_t root = hwloc_get_root_obj(t);
    json_object_set_new(o, "memory_bytes",
                        json_integer((json_int_t)root->total_memory));
    static const hwloc_obj_type_t caches[] = {HWLOC_OBJ_L1CACHE,
        HWLOC_OBJ_L2CACHE, HWLOC_OBJ_L3CACHE};
    static const char *names[] = {"l1d_bytes", "l2_bytes", "l3_bytes"};
    for (int i = 0; i < 3; i++) {
        hwloc_obj_t c = hwloc_get_obj_by_type(t, caches[i], 0);
        if (c && c->attr)
            json_object_set_new(o, names[i],
                json_integer((json_int_t)c->attr->cache.size));
        if (c)
            json_object_set_new(o, i == 2 ? "l3_count" : i == 1 ? "l2_count"
                                : "l1d_count", json_integer(
                hwloc_get_nbobjs_by_type(t, caches[i])));
    }
    hwloc_topology_destroy(t);
    return o;
}

static json_t *versions(void)
{
    json_t *o = json_object();
    json_object_set_new(o, "lbscale", json_string(LBS_VERSION));
    json_object_set_new(o, "compiler", json_string(__VERSION__));
    json_object_set_new(o, "jansson", json_string(JANSSON_VERSION));
    unsigned h = hwloc_get_api_version();
    char buf[256];
    snprintf(buf, sizeof buf, "%u.%u.%u", h >> 16, (h >> 8) & 0xff, h & 0xff);
    json_object_set_new(o, "hwloc", json_string(buf));
    json_object_set_new(o, "openblas", json_string(openblas_get_config()));
#if LBS_HAVE_MPI
    char mv[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(mv, &len);
    mv[strcspn(mv, ",\n")] = '\0';
    json_object_set_new(o, "mpi", json_string(mv));
#else
    json_object_set_new(o, "mpi", json_null());
#endif
    json_object_set_new(o, "cuda_build", json_boolean(LBS_HAVE_CUDA));
    json_object_set_new(o, "nccl_build", json_boolean(LBS_HAVE_NCCL));
    return o;
}

static void utc_stamp(char *buf, size_t len, const char *fmt)
{
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(buf, len, fmt, &tm);
}

json_t *lbs_meta_collect(int argc, char **argv)
{
    json_t *m = json_object();
    char buf[512];
    utc_stamp(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ");
    json_object_set_new(m, "created_utc", json_string(buf));
    json_object_set_new(m, "git_rev", json_string(LBS_GIT_REV));
    struct utsname u;
    if (!uname(&u)) {
        json_object_set_new(m, "hostname", json_string(u.nodename));
        snprintf(buf, sizeof buf, "%s %s %s", u.sysname, u.release, u.machine);
        json_object_set_new(m, "os", json_string(buf));
    }
    cpu_model(buf, sizeof buf);
    json_object_set_new(m, "cpu_model", json_string(buf));
    json_object_set_new(m, "online_cpus",
                        json_integer(sysconf(_SC_NPROCESSORS_ONLN)));
    json_object_set_new(m, "topology", topology());
    json_object_set_new(m, "versions", versions());
    char gpu[256];
    struct lbs_err e;
    int ng = lbs_cuda_probe(gpu, sizeof gpu, &e);
    json_object_set_new(m, "gpu", ng > 0 ? json_string(gpu) : json_null());
    json_t *cmd = json_array();
    for (int i = 0; i < argc; i++)
        json_array_append_new(cmd, json_string(argv[i]));
    json_object_set_new(m, "command", cmd);
    return m;
}

int lbs_run_open(const char *dir, int argc, char **argv, struct lbs_run **out,
                 struct lbs_err *err)
{
    struct lbs_run *r = calloc(1, sizeof *r);
    if (!r)
        return lbs_err_set(err, -ENOMEM, "out of memory");
    int fresh = 0;
    if (dir) {
        snprintf(r->dir, sizeof r->dir, "%s", dir);
    } else {
        fresh = new_run_dir(r->dir, sizeof r->dir);
    }
    if (fresh < 0 || (!fresh && lbs_mkdir_p(r->dir))) {
        int e = errno;
        free(r);
        return lbs_err_set(err, -EIO, "cannot create results directory %s: "
                           "%s", dir ? dir : "results/", strerror(e));
    }
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/meta.json", r->dir);
    if (access(path, F_OK)) {
        json_t *m = lbs_meta_collect(argc, argv);
        char *s = json_dumps(m, JSON_INDENT(2) | JSON_SORT_KEYS);
        json_decref(m);
        size_t len = strlen(s);
        s = realloc(s, len + 2);
        strcpy(s + len, "\n");
        int rc = lbs_write_atomic(path, s, len + 1, err);
        free(s);
        if (rc) {
            free(r);
            return rc;
        }
    }
    *out = r;
    return 0;
}

const char *lbs_run_dir(const struct lbs_run *r) { return r->dir; }

static struct verb_file *verb_file(struct lbs_run *r, const char *verb)
{
    for (int i = 0; i < r->nfiles; i++)
        if (!strcmp(r->files[i].verb, verb))
            return &r->files[i];
    if (r->nfiles == (int)(sizeof r->files / sizeof r->files[0]))
        return NULL;
    struct verb_file *f = &r->files[r->nfiles++];
    snprintf(f->verb, sizeof f->verb, "%s", verb);
    char path[PATH_MAX + 48];
    snprintf(path, sizeof path, "%s/%s.jsonl", r->dir, verb);
    f->text = slurp(path, &f->len);   /* continue an existing file */
    f->cap = f->len;
    return f;
}

int lbs_run_append(struct lbs_run *r, const char *verb, json_t *row,
                   struct lbs_err *err)
{
    struct verb_file *f = verb_file(r, verb);
    char *line = json_dumps(row, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(row);
    if (!f || !line) {
        free(line);
        return lbs_err_set(err, -ENOMEM, "cannot record %s row", verb);
    }
    size_t ll = strlen(line);
    if (f->len + ll + 2 > f->cap) {
        size_t cap = (f->len + ll + 2) * 2;
        char *t = realloc(f->text, cap);
        if (!t) {
            free(line);
            return lbs_err_set(err, -ENOMEM, "out of memory");
        }
        f->text = t;
        f->cap = cap;
    }
    memcpy(f->text + f->len, line, ll);
    f->len += ll;
    f->text[f->len++] = '\n';
    free(line);
    char path[PATH_MAX + 48];
    snprintf(path, sizeof path, "%s/%s.jsonl", r->dir, verb);
    return lbs_write_atomic(path, f->text, f->len, err);
}

void lbs_run_close(struct lbs_run *r)
{
    if (!r)
        return;
    for (int i = 0; i < r->nfiles; i++)
        free(r->files[i].text);
    free(r);
}
