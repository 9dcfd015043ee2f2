/* watchdog.h - `lbscale train`'s guard against a stalled rank (train/
 * only): SIGALRM ends the process (exit 1, one line on stderr) when a unit
 * of work (a step, an evaluation) takes longer than the limit, so a dead
 * or hung peer can never hang the job.
 *
 * --stall-timeout auto (LBS_STALL_AUTO): a harness should notice a hung
 * peer in seconds, not minutes, yet never kill a slow but healthy run.
 * The limit for the next unit is 10 x the longest such unit measured so
 * far, at least 30 s; before the first one has been timed, 60 s (start-up,
 * first touch of the data).  One watchdog per process (it owns SIGALRM,
 * and SIGCONT: a process stopped and continued gets the full limit again,
 * watchdog.c).
 */
#ifndef LBS_TRAIN_WATCHDOG_H
#define LBS_TRAIN_WATCHDOG_H

#define LBS_STALL_AUTO (-1)

enum lbs_stall_unit { LBS_UNIT_STEP, LBS_UNIT_EVAL, LBS_NUNITS };

/* s seconds (0: never, LBS_STALL_AUTO); rank names this process. */
void lbs_watchdog_init(int rank, long s);
/* Progress: re-arm for the next unit of kind u. */
void lbs_watchdog_pet(enum lbs_stall_unit u);
/* A unit of kind u took secs: what the auto limit scales with. */
void lbs_watchdog_took(enum lbs_stall_unit u, double secs);
void lbs_watchdog_off(void);

#endif
