/* error.c - the lbs_err helpers (see lbscale/error.h). */
#include <stdarg.h>
#include <stdio.h>

#include "lbscale/error.h"

int lbs_err_set(struct lbs_err *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return code;
}

int lbs_err_is_input(int code)
{
    return code == -EINVAL || code == -ENOENT || code == -ENOTSUP ||
           code == -EDOM;
}
