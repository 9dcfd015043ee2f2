/* json.c - strict field readers shared by the platform, model and trace
 * readers (see sim_internal.h). */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lbscale/file.h"
#include "sim_internal.h"

int sj_fail(const struct sj *c, const char *path, const char *key,
            const char *fmt, ...)
{
    char why[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    return lbs_err_set(c->err, -EINVAL, "%s: field '%s%s': %s", c->file,
                       path ? path : "", key ? key : "", why);
}

static const char *type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER:
    case JSON_REAL: return "a number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    default: return "null";
    }
}

int sj_num(const struct sj *c, const json_t *obj, const char *path,
           const char *key, unsigned flags, double def, double lo, double hi,
           double *out)
{
    const json_t *v = json_is_object(obj) ? json_object_get(obj, key) : NULL;
    if (!v) {
        if (flags & SJ_REQ)
            return sj_fail(c, path, key, "missing (required)");
        *out = def;
        return 0;
    }
    if (!json_is_number(v))
        return sj_fail(c, path, key, "must be a number, not %s",
                       type_name(v));
    double x = json_number_value(v);
    if (!isfinite(x))
        return sj_fail(c, path, key, "not a finite number");
    if ((flags & SJ_INT) && (x != floor(x) || fabs(x) > 9.007199254740992e15))
        return sj_fail(c, path, key, "must be an integer (got %g)", x);
    if ((flags & SJ_LO_OPEN) ? !(x > lo) : !(x >= lo))
        return sj_fail(c, path, key, "must be %s %g (got %g)",
                       (flags & SJ_LO_OPEN) ? ">" : ">=", lo, x);
    if (!(x <= hi))
        return sj_fail(c, path, key, "must be <= %g (got %g)", hi, x);
    *out = x;
    return 0;
}

int sj_str(const struct sj *c, const json_t *obj, const char *path,
           const char *key, unsigned flags, const char *def, char *buf,
           size_t len)
{
    const json_t *v = json_is_object(obj) ? json_object_get(obj, key) : NULL;
    const char *s;
    if (!v) {
        if (flags & SJ_REQ)
            return sj_fail(c, path, key, "missing (required)");
        s = def ? def : "";
    } else if (!json_is_string(v)) {
        return sj_fail(c, path, key, "must be a string, not %s",
                       type_name(v));
    } else {
        s = json_string_value(v);
        if (strlen(s) != json_string_length(v))
            return sj_fail(c, path, key, "contains a NUL character");
    }
    if (strlen(s) >= len)
        return sj_fail(c, path, key, "longer than %zu characters", len - 1);
    memcpy(buf, s, strlen(s) + 1);
    return 0;
}

int sj_header(const struct sj *c, const json_t *root, const char *format,
              int version)
{
    char f[64];
    double v = 0;
    int rc = sj_str(c, root, "", "format", SJ_REQ, NULL, f, sizeof f);
    if (rc)
        return rc;
    if (strcmp(f, format))
        return sj_fail(c, "", "format", "is \"%s\", expected \"%s\"", f,
                       format);
    if ((rc = sj_num(c, root, "", "version", SJ_REQ | SJ_INT, 0, -1e18, 1e18,
                     &v)))
        return rc;
    if (v != version)
        return sj_fail(c, "", "version", "is %g, this reader knows version %d",
                       v, version);
    return 0;
}

int sj_load(const struct sj *c, const char *text, size_t len, json_t **out)
{
    json_error_t je;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return lbs_err_set(c->err, -EINVAL, "%s: line %d: not valid JSON: %s",
                           c->file, je.line, je.text);
    if (!json_is_object(root)) {
        json_decref(root);
        return lbs_err_set(c->err, -EINVAL, "%s: the document must be a JSON "
                           "object", c->file);
    }
    *out = root;
    return 0;
}

int sj_read_file(const char *path, size_t cap, int nul_ok, char **text,
                 size_t *len, struct lbs_err *err)
{
    int rc = lbs_read_file(path, cap, text, len, err);
    if (!rc && !nul_ok && strlen(*text) != *len) {
        free(*text);
        *text = NULL;
        rc = lbs_err_set(err, -EINVAL, "%s: contains a NUL byte", path);
    }
    return rc;
}

int sj_load_file(const char *path, size_t cap, int nul_ok,
                 sj_parse_fn parse, void *out, struct lbs_err *err)
{
    char *text;
    size_t len;
    int rc = sj_read_file(path, cap, nul_ok, &text, &len, err);
    if (rc)
        return rc;
    rc = parse(text, len, path, out, err);
    free(text);
    return rc;
}

int sj_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double sj_median(double *x, size_t n)
{
    qsort(x, n, sizeof *x, sj_cmp_double);
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

void sj_alternate(const size_t *idx, size_t m, size_t *even, size_t *ne,
                  size_t *odd, size_t *no)
{
    size_t a = 0, b = 0;
    for (size_t i = 0; i < m; i++) {
        if (i % 2)
            odd[b++] = idx[i];
        else
            even[a++] = idx[i];   /* a <= i: safe when even == idx */
    }
    *ne = a;
    *no = b;
}

void sj_copy_path(char *dst, size_t len, const char *path)
{
    size_t n = strlen(path);
    if (n < len) {
        memcpy(dst, path, n + 1);
        return;
    }
    /* keep the tail: the file name matters more than the directories */
    snprintf(dst, len, "...%s", path + n - (len - 4));
}

int sj_known(const struct sj *c, const json_t *obj, const char *path,
             const char *const *keys)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)obj, k, v) {
        int ok = 0;
        for (size_t i = 0; keys[i] && !ok; i++)
            ok = !strcmp(k, keys[i]);
        if (!ok)
            return sj_fail(c, path, k, "unknown field (misspelt?)");
    }
    return 0;
}

int sj_obj(const struct sj *c, const json_t *obj, const char *path,
           const char *key, unsigned flags, json_t **out)
{
    json_t *v = json_is_object(obj) ? json_object_get(obj, key) : NULL;
    *out = NULL;
    if (!v)
        return (flags & SJ_REQ) ? sj_fail(c, path, key, "missing (required)")
                                : 0;
    if (!json_is_object(v))
        return sj_fail(c, path, key, "must be an object, not %s",
                       type_name(v));
    *out = v;
    return 0;
}

int sj_gauss_jordan(double *A, int m, int stride)
{
#define AT(r, c) A[(size_t)(r) * (size_t)stride + (size_t)(c)]
    for (int col = 0; col < m; col++) {
        int piv = col;
        for (int r = col + 1; r < m; r++)
            if (fabs(AT(r, col)) > fabs(AT(piv, col)))
                piv = r;
        if (!(fabs(AT(piv, col)) > 1e-9))
            return -1;
        for (int b = 0; b <= m; b++) {
            double t = AT(col, b);
            AT(col, b) = AT(piv, b);
            AT(piv, b) = t;
        }
        for (int r = 0; r < m; r++) {
            if (r == col)
                continue;
            double f = AT(r, col) / AT(col, col);
            for (int b = col; b <= m; b++)
                AT(r, b) -= f * AT(col, b);
        }
    }
    return 0;
#undef AT
}
