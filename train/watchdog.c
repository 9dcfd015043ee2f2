/* watchdog.c - the stall guard of `lbscale train` (watchdog.h). */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include "watchdog.h"

#define STALL_FLOOR_S 30.0
#define STALL_FIRST_S 60.0
#define STALL_FACTOR 10.0

static char stall_msg[200];
static size_t stall_len;
static long stall_fixed;             /* seconds; 0 = never; LBS_STALL_AUTO */
static int stall_rank;
static double stall_longest[LBS_NUNITS];  /* auto: longest unit so far (s) */
static volatile sig_atomic_t stall_armed;  /* seconds armed; 0: off */
static volatile sig_atomic_t stall_fired;

/* A stopped process (SIGSTOP, a job-control pause, a harness pausing a
 * background study) is not a stalled rank, but the real-time alarm runs
 * on while it is stopped and fires the moment it continues.  So the first
 * alarm only waits STALL_GRACE_S more; SIGCONT, delivered right after it
 * on a continue, re-arms the full limit.  A second alarm with no continue
 * between them is a stall. */
#define STALL_GRACE_S 2

static void on_alarm(int sig)
{
    (void)sig;
    if (!stall_fired) {
        stall_fired = 1;
        alarm(STALL_GRACE_S);
        return;
    }
    ssize_t w = write(STDERR_FILENO, stall_msg, stall_len);
    (void)w;
    _exit(1);   /* the CLI's runtime-failure code */
}

static void on_cont(int sig)
{
    (void)sig;
    if (stall_armed) {
        stall_fired = 0;
        alarm((unsigned)stall_armed);
    }
}

/* Arm the alarm for s seconds; the message is formatted here, outside the
 * signal handler, which may only write it. */
static void watchdog_arm(unsigned s)
{
    if (s != (unsigned)stall_armed) {
        int n = snprintf(stall_msg, sizeof stall_msg, "lbscale: train: rank "
                         "%d made no progress for %u s (a peer died or "
                         "hung?); exiting\n", stall_rank, s);
        stall_len = n > 0 ? (size_t)n : 0;
        stall_armed = (sig_atomic_t)s;
    }
    stall_fired = 0;
    alarm(s);
}

void lbs_watchdog_init(int rank, long s)
{
    stall_fixed = s;
    stall_rank = rank;
    if (!s)
        return;
    struct sigaction sa = {0};
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    sa.sa_handler = on_cont;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGCONT, &sa, NULL);
    watchdog_arm(s > 0 ? (unsigned)s : (unsigned)STALL_FIRST_S);
}

void lbs_watchdog_pet(enum lbs_stall_unit u)
{
    if (stall_fixed > 0)
        watchdog_arm((unsigned)stall_fixed);
    else if (stall_fixed == LBS_STALL_AUTO) {
        double l = stall_longest[u] > 0 ? STALL_FACTOR * stall_longest[u]
                                        : STALL_FIRST_S;
        watchdog_arm((unsigned)ceil(l > STALL_FLOOR_S ? l : STALL_FLOOR_S));
    }
}

void lbs_watchdog_took(enum lbs_stall_unit u, double secs)
{
    if (secs > stall_longest[u])
        stall_longest[u] = secs;
}

void lbs_watchdog_off(void)
{
    if (stall_fixed) {
        stall_armed = 0;    /* a later SIGCONT must not arm it again */
        alarm(0);
    }
}
