/* param.c - one parser and one help printer for every spec table.
 *
 * Strictness is the point: "1e", "abc", "10Q", "nan", "inf", "" and
 * duplicate keys are all rejected with a message that names the key, so a
 * typo can never silently fall back to a default.
 */
#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lbscale/param.h"

#define MAX_KEYS 64

int lbs_parse_double(const char *s, double *out)
{
    char *end;
    if (!s || !*s || isspace((unsigned char)*s))
        return -EINVAL;
    errno = 0;
    double v = strtod(s, &end);
    if (*end != '\0' || errno == ERANGE || !isfinite(v))
        return -EINVAL;
    *out = v;
    return 0;
}

int lbs_parse_size(const char *s, size_t *out)
{
    char *end;
    if (!s || !isdigit((unsigned char)*s))
        return -EINVAL;
    errno = 0;
    double v = strtod(s, &end);
    if (errno == ERANGE || !isfinite(v))
        return -EINVAL;
    double mult = 1;
    if (*end) {
        int bin = end[1] == 'i';
        double base = bin ? 1024.0 : 1000.0;
        switch (*end) {
        case 'k': case 'K': mult = base; break;
        case 'm': case 'M': mult = base * base; break;
        case 'g': case 'G': mult = base * base * base; break;
        default: return -EINVAL;
        }
        if (end[1 + bin] != '\0')
            return -EINVAL;
    }
    v *= mult;
    if (v < 0 || v > (double)SIZE_MAX / 2 || v != floor(v))
        return -EINVAL;
    *out = (size_t)v;
    return 0;
}

int lbs_spec_split(const char *spec, char *name, size_t namelen,
                   const char **args, struct lbs_err *err)
{
    if (!spec || !*spec)
        return lbs_err_set(err, -EINVAL, "empty spec string");
    const char *colon = strchr(spec, ':');
    size_t len = colon ? (size_t)(colon - spec) : strlen(spec);
    if (len == 0)
        return lbs_err_set(err, -EINVAL, "spec '%s' has no name before ':'",
                           spec);
    if (len >= namelen)
        return lbs_err_set(err, -EINVAL, "spec name too long in '%s'", spec);
    if (colon && !colon[1])
        return lbs_err_set(err, -EINVAL, "spec '%s' has nothing after ':' "
                           "(give KEY=VALUE,... or drop the ':')", spec);
    memcpy(name, spec, len);
    name[len] = '\0';
    *args = colon ? colon + 1 : "";
    return 0;
}

static const struct lbs_param_spec *find_key(
    const struct lbs_param_spec *t, const char *key, size_t klen)
{
    for (; t->key; t++)
        if (strlen(t->key) == klen && strncmp(t->key, key, klen) == 0)
            return t;
    return NULL;
}

/* The shortest %g form that reads back as exactly v (at most 17 digits,
 * which always do): a recorded spec must rerun with the same values, and
 * %.10g once wrote seed=123456789012 as 1.23456789e+11.  Integral values
 * below 2^63 as plain digits, so a seed is recorded the way it was given. */
static void fmt_num(char *buf, size_t len, double v)
{
    if (isinf(v)) {
        snprintf(buf, len, "%sinf", v < 0 ? "-" : "");
        return;
    }
    if (v == floor(v) && fabs(v) < 9.2e18) {
        snprintf(buf, len, "%.0f", v);
        return;
    }
    for (int digits = 15; digits <= 17; digits++) {
        snprintf(buf, len, "%.*g", digits, v);
        if (strtod(buf, NULL) == v)
            return;
    }
}

static void fmt_range(const struct lbs_param_spec *p, char *buf, size_t len)
{
    char lo[32], hi[32];
    fmt_num(lo, sizeof lo, p->min);
    fmt_num(hi, sizeof hi, p->max);
    snprintf(buf, len, "%c%s, %s%c", (p->flags & LBS_P_MIN_OPEN) ? '(' : '[',
             lo, hi,
             (p->flags & LBS_P_MAX_OPEN) || isinf(p->max) ? ')' : ']');
}

static int in_range(const struct lbs_param_spec *p, double v)
{
    if ((p->flags & LBS_P_MIN_OPEN) ? v <= p->min : v < p->min)
        return 0;
    if ((p->flags & LBS_P_MAX_OPEN) ? v >= p->max : v > p->max)
        return 0;
    return 1;
}

static int parse_bool(const char *s, double *v)
{
    static const char *yes[] = {"1", "true", "on", "yes"};
    static const char *no[] = {"0", "false", "off", "no"};
    for (int i = 0; i < 4; i++) {
        if (!strcasecmp(s, yes[i])) { *v = 1; return 0; }
        if (!strcasecmp(s, no[i])) { *v = 0; return 0; }
    }
    return -EINVAL;
}

static int parse_value(const struct lbs_param_spec *p, const char *what,
                       const char *s, double *v, struct lbs_err *err)
{
    char range[80];
    switch (p->type) {
    case LBS_P_BOOL:
        if (parse_bool(s, v))
            return lbs_err_set(err, -EINVAL,
                               "%s: key '%s': '%s' is not a boolean (0/1)",
                               what, p->key, s);
        return 0;
    case LBS_P_ENUM:
        for (int i = 0; p->choices[i]; i++)
            if (!strcmp(s, p->choices[i])) {
                *v = i;
                return 0;
            }
        return lbs_err_set(err, -EINVAL, "%s: key '%s': unknown choice '%s'",
                           what, p->key, s);
    case LBS_P_REAL:
    case LBS_P_INT:
        break;
    }
    if (lbs_parse_double(s, v))
        return lbs_err_set(err, -EINVAL,
                           "%s: key '%s': '%s' is not a finite number", what,
                           p->key, s);
    if (p->type == LBS_P_INT && *v != floor(*v))
        return lbs_err_set(err, -EINVAL, "%s: key '%s': '%s' is not an integer",
                           what, p->key, s);
    if (!in_range(p, *v)) {
        fmt_range(p, range, sizeof range);
        return lbs_err_set(err, -EINVAL, "%s: key '%s' = %s out of range %s",
                           what, p->key, s, range);
    }
    return 0;
}

int lbs_params_parse(const struct lbs_param_spec *table, const char *what,
                     const char *args, void *cfg, struct lbs_err *err)
{
    const struct lbs_param_spec *seen[MAX_KEYS];
    size_t nseen = 0;
    for (const struct lbs_param_spec *p = table; p->key; p++)
        *(double *)((char *)cfg + p->offset) = p->def;
    const char *s = args ? args : "";
    while (*s) {
        const char *end = strchr(s, ',');
        size_t len = end ? (size_t)(end - s) : strlen(s);
        const char *eq = memchr(s, '=', len);
        if (!eq)
            return lbs_err_set(err, -EINVAL, "%s: '%.*s' is not key=value",
                               what, (int)len, s);
        const struct lbs_param_spec *p = find_key(table, s, (size_t)(eq - s));
        if (!p)
            return lbs_err_set(err, -ENOENT, "%s: unknown key '%.*s' (see "
                               "lbscale optim --help %s)", what,
                               (int)(eq - s), s, what);
        for (size_t i = 0; i < nseen; i++)
            if (seen[i] == p)
                return lbs_err_set(err, -EINVAL, "%s: key '%s' given twice",
                                   what, p->key);
        if (nseen < MAX_KEYS)
            seen[nseen++] = p;
        char val[128];
        size_t vlen = len - (size_t)(eq + 1 - s);
        if (vlen >= sizeof val)
            return lbs_err_set(err, -EINVAL, "%s: key '%s': value too long",
                               what, p->key);
        memcpy(val, eq + 1, vlen);
        val[vlen] = '\0';
        double v;
        int rc = parse_value(p, what, val, &v, err);
        if (rc)
            return rc;
        *(double *)((char *)cfg + p->offset) = v;
        if (!end)
            break;
        s = end + 1;
        if (!*s)
            return lbs_err_set(err, -EINVAL, "%s: trailing ',' in spec", what);
    }
    return 0;
}

static void fmt_value(const struct lbs_param_spec *p, double v, char *buf,
                      size_t len)
{
    if (p->type == LBS_P_ENUM)
        snprintf(buf, len, "%s", p->choices[(int)v]);
    else
        fmt_num(buf, len, v);
}

void lbs_params_print(const struct lbs_param_spec *table, FILE *f)
{
    for (const struct lbs_param_spec *p = table; p->key; p++) {
        char def[64], range[96];
        fmt_value(p, p->def, def, sizeof def);
        if (p->type == LBS_P_BOOL)
            snprintf(range, sizeof range, "0|1");
        else if (p->type == LBS_P_ENUM) {
            size_t o = 0;
            range[0] = '\0';
            for (int i = 0; p->choices[i] && o < sizeof range; i++)
                o += (size_t)snprintf(range + o, sizeof range - o, "%s%s",
                                      i ? "|" : "", p->choices[i]);
        } else
            fmt_range(p, range, sizeof range);
        fprintf(f, "    %-16s default %-8s %-18s %s\n", p->key, def, range,
                p->help);
    }
}

size_t lbs_params_format(const struct lbs_param_spec *table,
                         const void *cfg, char *buf, size_t len)
{
    size_t o = 0;
    int cut = 0;
    buf[0] = '\0';
    for (const struct lbs_param_spec *p = table; p->key; p++) {
        char v[64];
        fmt_value(p, *(const double *)((const char *)cfg + p->offset), v,
                  sizeof v);
        char item[160];
        int k = snprintf(item, sizeof item, "%s%s=%s", o ? "," : "", p->key,
                         v);
        size_t n = k > 0 ? (size_t)k : 0;
        if (o + n >= len)
            cut = 1;   /* whole items only, and none after a missing one */
        if (!cut)
            memcpy(buf + o, item, n + 1);
        o += n;
    }
    return o;
}

int lbs_params_get(const struct lbs_param_spec *table, const void *cfg,
                   const char *key, double *value)
{
    const struct lbs_param_spec *p = find_key(table, key, strlen(key));
    if (!p)
        return -ENOENT;
    if (cfg)
        memcpy(value, (const char *)cfg + p->offset, sizeof *value);
    return 0;
}

int lbs_params_effective(const struct lbs_param_spec *table,
                         const char *what, const void *cfg, char *buf,
                         size_t len, struct lbs_err *err)
{
    if (lbs_params_format(table, cfg, buf, len) >= len)
        return lbs_err_set(err, -EINVAL, "%s: effective parameters longer "
                           "than %zu characters", what, len - 1);
    return 0;
}

/* ---- registries ---- */

int lbs_registry_index(const struct lbs_spec_registry *r, const char *name,
                       size_t *i)
{
    const char *s;
    for (size_t k = 0; (s = r->name(k)); k++)
        if (!strcmp(s, name)) {
            *i = k;
            return 0;
        }
    return -ENOENT;
}

/* Optimal string alignment distance of a and b (short words). */
static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63)
        return (size_t)-1;
    size_t d[64][64];
    for (size_t i = 0; i <= la; i++)
        d[i][0] = i;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            size_t c = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1 < c)
                c = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < c)
                c = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] &&
                a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < c)
                c = d[i - 2][j - 2] + 1;
            d[i][j] = c;
        }
    return d[la][lb];
}

const char *lbs_closest(const char *word, const char *const *cands,
                        size_t n)
{
    size_t l = strlen(word), most = l <= 4 ? 1 : l <= 8 ? 2 : 3;
    const char *best = NULL;
    size_t bd = most + 1;
    for (size_t i = 0; i < n; i++) {
        if (!cands[i])
            continue;
        size_t d = edit_distance(word, cands[i]);
        if (d == 0)
            return NULL;
        if (d < bd) {
            bd = d;
            best = cands[i];
        }
    }
    return best;
}

const char *const *lbs_registry_names(const struct lbs_spec_registry *r,
                                      const char **names, size_t cap)
{
    if (!names[0])
        for (size_t i = 0; i + 1 < cap && (names[i] = r->name(i)); i++)
            ;
    return names;
}

int lbs_registry_find(const struct lbs_spec_registry *r, const char *spec,
                      size_t *i, const char **args, struct lbs_err *err)
{
    char name[64];
    int rc = lbs_spec_split(spec, name, sizeof name, args, err);
    if (rc)
        return rc;
    if (lbs_registry_index(r, name, i)) {
        const char *names[256] = {NULL};
        const char *near = lbs_closest(name, lbs_registry_names(r, names, 256),
                                       256);
        if (near)
            return lbs_err_set(err, -ENOENT, "unknown %s '%s'; did you mean "
                               "'%s'? (see lbscale %s --list)", r->what, name,
                               near, r->verb);
        return lbs_err_set(err, -ENOENT, "unknown %s '%s' (see lbscale %s "
                           "--list)", r->what, name, r->verb);
    }
    return 0;
}

int lbs_registry_help(const struct lbs_spec_registry *r, const char *name,
                      FILE *f)
{
    size_t i;
    if (name) {
        if (lbs_registry_index(r, name, &i))
            return -ENOENT;
        r->help(i, f);
        return 0;
    }
    for (i = 0; r->name(i); i++)
        r->help(i, f);
    return 0;
}

void lbs_registry_device_names(const struct lbs_spec_registry *r, char *buf,
                               size_t len)
{
    size_t at = 0;
    buf[0] = 0;
    for (size_t i = 0; r->name(i) && at < len; i++)
        if (r->device(i))
            at += (size_t)snprintf(buf + at, len - at, "%s%s",
                                   at ? ", " : "", r->name(i));
}
