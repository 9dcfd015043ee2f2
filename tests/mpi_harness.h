/* mpi_harness.h - the set-up, checks and report the MPI tests share
 * (mpi_comm.c, mpi_decentral.c, mpi_slamb.c, mpi_cdp.c, mpi_compress.c;
 * each runs under mpirun by run_mpi.sh, e.g. 4 ranks).
 *
 * Every check runs on every rank between begin() and end(desc): fail()
 * marks this rank's verdict false and says why on stderr, prefixed by the
 * rank; end() combines the verdicts of all ranks with an int32 MIN
 * allreduce and rank 0 prints one TAP line.  mpi_start() opens the mpi
 * comm C (exit 77 with a TAP skip line when this build has no MPI) and
 * checks the rank count the test was started for; mpi_finish() prints
 * the plan (when the checks were not counted up front), frees C and
 * gives the exit status: 0 when every check passed on every rank, else 1.
 *
 * Header-only (static): each test is a program of its own.
 */
#ifndef LBS_TESTS_MPI_HARNESS_H
#define LBS_TESTS_MPI_HARNESS_H

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "lbscale/lbscale.h"

static struct lbs_comm *C;      /* the real mpi comm */
static int tap_n, tap_failed;
static int local_ok;            /* this rank's verdict for the current check */

static inline void fail(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
static inline void fail(const char *fmt, ...)
{
    va_list ap;
    if (local_ok)   /* first failure of a check on this rank: say which */
        fprintf(stderr, "# rank %d: check %d: ", C->rank, tap_n + 1);
    else
        fprintf(stderr, "# rank %d:   ", C->rank);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    local_ok = 0;
}

static inline void begin(void) { local_ok = 1; }

/* Combine the verdicts of all ranks and print the TAP line on rank 0. */
static inline void end(const char *desc)
{
    int32_t all = local_ok;
    struct lbs_err e, *saved = C->err;   /* e must not outlive this call */
    C->err = &e;
    if (lbs_allreduce(C, &all, 1, LBS_INT32, LBS_MIN, -1)) {
        fprintf(stderr, "# rank %d: verdict allreduce failed: %s\n", C->rank,
                e.msg);
        all = 0;
    }
    C->err = saved;
    tap_n++;
    if (!all)
        tap_failed++;
    if (C->rank == 0) {
        printf("%sok %d - %s\n", all ? "" : "not ", tap_n, desc);
        fflush(stdout);
    }
}

/* fail() with the call's text when it returns non-zero */
#define CHECK_RC(call)                                                      \
    do {                                                                    \
        struct lbs_err e_;                                                  \
        C->err = &e_;                                                       \
        int rc_ = (call);                                                   \
        if (rc_)                                                            \
            fail("%s returned %d: %s", #call, rc_, e_.msg);                 \
    } while (0)

/* Open C; argv[1], when given, is the rank count the test expects.
 * -1 to go on, else the exit status (77: no MPI in this build). */
static inline int mpi_start(int argc, char **argv)
{
    struct lbs_err e;
    int rc = lbs_comm_mpi_new(&C, &e);
    if (rc == -ENOTSUP) {
        printf("1..0 # SKIP this build has no MPI\n");
        return 77;
    }
    if (rc) {
        fprintf(stderr, "lbs_comm_mpi_new: %s\n", e.msg);
        return 1;
    }
    if (C->rank == 0)
        printf("# %d ranks\n", C->size);
    if (argc > 1 && C->size != atoi(argv[1])) {
        if (C->rank == 0)
            fprintf(stderr, "expected %s ranks, got %d\n", argv[1], C->size);
        lbs_comm_free(C);
        return 1;
    }
    return -1;
}

/* The plan line after the checks unless planned (printed up front), C
 * freed; the exit status. */
static inline int mpi_finish(int planned)
{
    if (C->rank == 0 && !planned) {
        printf("1..%d\n", tap_n);
        fflush(stdout);
    }
    int failed = tap_failed;
    lbs_comm_free(C);
    return failed ? 1 : 0;
}

#endif
