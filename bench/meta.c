/* meta.c - the machine description a results run's meta.json holds:
 * host, CPU, topology (hwloc), kernel level, library versions (OpenBLAS
 * and its kernel-family choice, MPI), the GPU, the command line.  bench/
 * hands it to lbs_run_open (report/results.h), which writes it once per
 * run directory. */
#include <hwloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <cblas.h>

#include "blas.h"
#include "cli.h"
#include "git_rev.h"
#include "lbs_config.h"
#include "lbs_cuda.h"
#include "lbscale/isa.h"
#include "lbscale/mem.h"

#if LBS_HAVE_MPI
#include <mpi.h>
#endif

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

/* The arrays' pages (lbscale/mem.h): advised as huge or not, and the
 * kernel's THP mode, the bracketed word of its sysfs file ("madvise" on
 * Debian: only advised memory gets huge pages; "never": none does). */
static json_t *hugepages(void)
{
    char line[128], mode[32] = "";
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (f) {
        const char *l = fgets(line, sizeof line, f) ? strchr(line, '[') : 0;
        if (l)
            sscanf(l + 1, "%31[^]]", mode);
        fclose(f);
    }
    const char *env = getenv("LBSCALE_HUGEPAGES");
    return json_pack("{s:b, s:o, s:o}", "advised", lbs_hugepages_on(),
                     "env", env ? json_string(env) : json_null(),
                     "thp_mode", *mode ? json_string(mode) : json_null());
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
    json_object_set_new(o, "blas", blas_info_json());
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

json_t *lbs_meta_collect(int argc, char **argv)
{
    json_t *m = json_object();
    char buf[512];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
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
    /* the kernels' vector level (core/kern): in use, best, and forced */
    json_t *isa = json_object();
    json_object_set_new(isa, "level", json_string(lbs_isa_name()));
    json_object_set_new(isa, "best", json_string(lbs_isa_best()));
    const char *fz = getenv("LBSCALE_ISA");
    json_object_set_new(isa, "env", fz ? json_string(fz) : json_null());
    json_object_set_new(m, "isa", isa);
    json_object_set_new(m, "hugepages", hugepages());
    /* the OpenMP threads' wait at barriers (bench/main.c): the policy
     * and whether lbscale chose it (the user had set neither variable) */
    const char *wp = getenv("OMP_WAIT_POLICY"),
               *spin = getenv("GOMP_SPINCOUNT");
    json_object_set_new(m, "omp_wait", json_pack(
        "{s:o, s:o, s:b}", "policy", wp ? json_string(wp) : json_null(),
        "gomp_spincount", spin ? json_string(spin) : json_null(),
        "set_by_lbscale", getenv("LBSCALE_OMP_WAITSET") != NULL));
    /* a run made with the gates' planted slowdown says so */
    const char *slow = getenv("LBSCALE_TEST_SLOWDOWN");
    json_object_set_new(m, "test_slowdown",
                        slow && *slow ? json_string(slow) : json_null());
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
