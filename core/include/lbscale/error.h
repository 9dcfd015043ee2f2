/* lbscale/error.h - the error convention shared by every lbscale call.
 *
 * Every fallible function returns 0 on success or a negative errno-style
 * code, and (when the caller passes a non-NULL struct lbs_err) writes one
 * human-readable line into err->msg naming what was wrong.  Nothing in the
 * library aborts or prints on bad input; the CLI turns the line into
 * "lbscale: <what>: <why>" and exits 2 (bad input) or 1 (runtime failure).
 *
 * Codes used:
 *   -EINVAL  malformed or out-of-range input (spec strings, values, shapes)
 *   -ENOENT  unknown name (optimizer, key, backend) or missing file
 *   -ENOMEM  allocation failed
 *   -EDOM    non-finite value met at run time (NaN/Inf gradient)
 *   -EIO     a communication backend or the OS failed
 *   -ENOTSUP a feature that this build does not have (MPI, CUDA)
 */
#ifndef LBSCALE_ERROR_H
#define LBSCALE_ERROR_H

#include <errno.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LBS_ERR_MSG_MAX 256

/* Caller-owned; the library only writes into msg. */
struct lbs_err {
    char msg[LBS_ERR_MSG_MAX];
};

/* Fill err (may be NULL) printf-style and return code (negative). */
int lbs_err_set(struct lbs_err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* True for the codes that mean "the user's input was bad" (exit 2). */
int lbs_err_is_input(int code);

#ifdef __cplusplus
}
#endif
#endif
