/* suite_parse.c - `lbscale suite`'s first phase: read and expand the
 * suite file and validate every entry (verb known and built into this
 * binary, arguments strings, options the verb's --help lists,
 * optimizer/compressor specs parseable, mpirun present for multi-rank
 * entries), all before anything runs or any file is written. */
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "lbs_config.h"
#include "lbscale/optim.h"
#include "suite_int.h"

/* Verbs a suite entry may name (the benchmark verbs; suite, demo, plot,
 * report and check act on whole runs and are not entries). */
static const char *const suite_verbs[] = {"stream", "optim", "compress",
                                          "coll", "sim", "train", NULL};

/* Whether an entry times kernels or the link: stream, optim, compress,
 * coll, and `sim speed` (the simulator's own speed).  --jobs refuses
 * them: side by side they would disturb each other's timings.  train and
 * the simulator's models may run side by side: what a training grid is
 * for (accuracy, loss) does not depend on the load (train's step times
 * do, and the suite records --jobs beside them). */
int suite_entry_times(const struct entry *e)
{
    if (!strcmp(e->verb, "sim")) {
        const char *cmd = json_string_value(json_array_get(e->args, 0));
        return cmd && !strcmp(cmd, "speed");
    }
    return strcmp(e->verb, "train") != 0;
}

#define DEFAULT_TIMEOUT 1800.0
/* A suite beyond this many entries (after foreach) is a typo, not a plan:
 * refused before expansion, so a 100 x 100 x 100 foreach cannot hang. */
#define MAX_ENTRIES 10000

/* ------------------------------------------------------------------ */
/* the suite                                                            */

/* Bad input: print once, return -EINVAL. */
static int bad(struct suite *s, int src, const char *ename, const char *fmt,
               ...) __attribute__((format(printf, 4, 5)));
static int bad(struct suite *s, int src, const char *ename, const char *fmt,
               ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (src < 0)
        cli_error(s->o->what, "%s: %s", s->file, msg);
    else if (ename)
        cli_error(s->o->what, "%s: entry %d ('%s'): %s", s->file, src + 1,
                  ename, msg);
    else
        cli_error(s->o->what, "%s: entry %d: %s", s->file, src + 1, msg);
    return -EINVAL;
}

static int in_list(const char *const *l, const char *s)
{
    for (; *l; l++)
        if (!strcmp(*l, s))
            return 1;
    return 0;
}

static int in_array(json_t *a, const char *s)
{
    size_t i;
    json_t *v;
    json_array_foreach(a, i, v)
        if (json_is_string(v) && !strcmp(json_string_value(v), s))
            return 1;
    return 0;
}

/* A var value as text ("16M", 4, 0.5). */
int suite_var_text(json_t *v, char *out, size_t len)
{
    if (json_is_string(v))
        snprintf(out, len, "%s", json_string_value(v));
    else if (json_is_integer(v))
        snprintf(out, len, "%lld", (long long)json_integer_value(v));
    else if (json_is_real(v))
        snprintf(out, len, "%.17g", json_real_value(v));
    else
        return -1;
    return 0;
}

/* Replace {key} by vars[key]; "{{" and "}}" are literal braces; {a.b}
 * (a dot: a field of RUN/a.jsonl, resolved when the entry runs) is kept
 * and *kept set (kept may be NULL).  Returns a malloc'ed string or NULL
 * with why filled. */
static char *expand(const char *in, json_t *vars, int *kept, char *why,
                    size_t wlen)
{
    struct strbuf b = {0};
    sb_add(&b, "", 0);
    for (const char *p = in; *p;) {
        if (p[0] == '{' && p[1] == '{') {
            sb_add(&b, "{{", 2);   /* stays escaped until run time */
            p += 2;
        } else if (p[0] == '}' && p[1] == '}') {
            sb_add(&b, "}}", 2);
            p += 2;
        } else if (*p == '{') {
            const char *q = strchr(p, '}');
            if (!q || q == p + 1 || q - p > 64) {
                snprintf(why, wlen, "'%s': '{' without a placeholder name "
                         "and '}' (write '{{' for a brace)", in);
                free(b.p);
                return NULL;
            }
            char key[80];
            snprintf(key, sizeof key, "%.*s", (int)(q - p - 1), p + 1);
            if (strspn(key, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTU"
                            "VWXYZ0123456789_.-") != strlen(key)) {
                snprintf(why, wlen, "'%s': bad placeholder '{%s}'", in, key);
                free(b.p);
                return NULL;
            }
            if (strchr(key, '.')) {
                sb_add(&b, p, (size_t)(q - p + 1));
                if (kept)
                    *kept = 1;
            } else {
                char val[512];
                json_t *v = json_object_get(vars, key);
                if (!v || suite_var_text(v, val, sizeof val)) {
                    snprintf(why, wlen, "'%s': unknown placeholder '{%s}' "
                             "(not in \"vars\", \"foreach\" or --set)", in,
                             key);
                    free(b.p);
                    return NULL;
                }
                sb_add(&b, val, strlen(val));
            }
            p = q + 1;
        } else {
            sb_add(&b, p, 1);
            p++;
        }
    }
    return b.p;
}

/* Undo "{{" / "}}" escapes (after run-time placeholders are resolved). */
void suite_unescape(char *s)
{
    char *w = s;
    for (char *r = s; *r; r++) {
        *w++ = *r;
        if ((r[0] == '{' && r[1] == '{') || (r[0] == '}' && r[1] == '}'))
            r++;
    }
    *w = '\0';
}

static int has_runtime(const char *s)
{
    for (const char *p = s; (p = strchr(p, '{'));) {
        if (p[1] == '{') {
            p += 2;
            continue;
        }
        const char *q = strchr(p, '}');
        if (q && memchr(p, '.', (size_t)(q - p)))
            return 1;
        p = q ? q + 1 : p + 1;
    }
    return 0;
}

static int get_num(struct suite *s, int src, const char *ename, json_t *obj,
                   const char *key, double lo, double hi, double def,
                   double *out, json_t *vars, int integer)
{
    json_t *v = json_object_get(obj, key);
    *out = def;
    if (!v)
        return 0;
    if (json_is_string(v)) {   /* "{np}" from foreach */
        char why[256];
        char *t = expand(json_string_value(v), vars, NULL, why, sizeof why);
        if (!t)
            return bad(s, src, ename, "\"%s\": %s", key, why);
        char *end;
        double d = strtod(t, &end);
        int ok = end != t && !*end;
        free(t);
        if (!ok)
            return bad(s, src, ename, "\"%s\" must be a number (got '%s')",
                       key, json_string_value(v));
        *out = d;
    } else if (json_is_number(v)) {
        *out = json_number_value(v);
    } else {
        return bad(s, src, ename, "\"%s\" must be a number", key);
    }
    if (!(*out >= lo && *out <= hi) || (integer && *out != floor(*out)))
        return bad(s, src, ename, "\"%s\" = %g out of range (%s in [%g, "
                   "%g])", key, *out, integer ? "an integer" : "a number",
                   lo, hi);
    return 0;
}

/* One expanded entry from the source object and a vars combination. */
static int add_entry(struct suite *s, int src, json_t *obj, json_t *vars)
{
    char why[512];
    json_t *jv = json_object_get(obj, "verb");
    json_t *jn = json_object_get(obj, "name");
    if (jn && !json_is_string(jn))
        return bad(s, src, NULL, "\"name\" must be a string");
    if (!json_is_string(jv))
        return bad(s, src, jn ? json_string_value(jn) : NULL,
                   "\"verb\" (a string) is required");
    const char *verb = json_string_value(jv);
    char *name;
    if (jn) {
        name = expand(json_string_value(jn), vars, NULL, why, sizeof why);
        if (!name)
            return bad(s, src, json_string_value(jn), "\"name\": %s", why);
    } else {
        name = strdup(verb);
    }
    if (!*name || strlen(name) > 80 ||
        strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                     "0123456789_.:+=,@-") != strlen(name)) {
        int r = bad(s, src, name, "name must be 1-80 characters of "
                    "[A-Za-z0-9_.:+=,@-]");
        free(name);
        return r;
    }
    struct entry e = {.src = src, .name = name};
    int rc;
    if (!in_list(suite_verbs, verb)) {
        rc = bad(s, src, name, "unknown verb '%s' (suite entries may use: "
                 "stream optim compress coll sim train)", verb);
        goto err;
    }
    e.verb = strdup(verb);
    e.args = json_array();
    json_t *ja = json_object_get(obj, "args");
    if (ja && !json_is_array(ja)) {
        rc = bad(s, src, name, "\"args\" must be an array of strings");
        goto err;
    }
    size_t i;
    json_t *a;
    json_array_foreach(ja, i, a) {
        if (!json_is_string(a)) {
            rc = bad(s, src, name, "args[%zu] is not a string (write numbers "
                     "as \"16M\", \"0.5\")", i);
            goto err;
        }
        char *t = expand(json_string_value(a), vars, &e.reads_rows, why,
                         sizeof why);
        if (!t) {
            rc = bad(s, src, name, "args[%zu]: %s", i, why);
            goto err;
        }
        static const char *const forbidden[] = {"--out", "--no-save",
                                                "--help", "-h", NULL};
        if (in_list(forbidden, t)) {
            rc = bad(s, src, name, "args[%zu]: '%s' is not allowed in a "
                     "suite (the runner sets the run directory)", i, t);
            free(t);
            goto err;
        }
        json_array_append_new(e.args, json_string(t));
        free(t);
    }
    double d;
    if ((rc = get_num(s, src, name, obj, "ranks", 1, 4096, 1, &d, vars, 1)))
        goto err;
    e.ranks = (int)d;
    if ((rc = get_num(s, src, name, obj, "repeat", 1, 1000, 1, &d, vars, 1)))
        goto err;
    e.repeat = (int)d;
    double deft = DEFAULT_TIMEOUT;
    json_t *gt = json_object_get(s->root, "timeout_s");
    if (gt)
        deft = json_number_value(gt);
    if ((rc = get_num(s, src, name, obj, "timeout_s", 1, 7 * 86400.0, deft,
                      &e.timeout_s, vars, 0)))
        goto err;
    if ((rc = get_num(s, src, name, obj, "est_s", 0, 7 * 86400.0, 0,
                      &e.est_s, vars, 0)))
        goto err;
    json_t *jo = json_object_get(obj, "optional");
    if (jo && !json_is_boolean(jo)) {
        rc = bad(s, src, name, "\"optional\" must be true or false");
        goto err;
    }
    e.optional = json_is_true(jo);
    json_t *dup = json_object_get(s->names, name);   /* O(1), not O(n) */
    if (dup) {
        rc = bad(s, src, name, "duplicate entry name (entry %d has it; "
                 "give \"name\" with {placeholders})",
                 (int)json_integer_value(dup) + 1);
        goto err;
    }
    json_object_set_new(s->names, name, json_integer(src));
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 32;
        s->e = realloc(s->e, s->cap * sizeof *s->e);
    }
    s->e[s->n++] = e;
    return 0;
err:
    free(e.name);
    free(e.verb);
    json_decref(e.args);
    return rc;
}

/* The values of one "foreach" key: an array of strings/numbers or
 * "@optimizers" / "@compressors" (the registries of this binary). */
static json_t *foreach_values(struct suite *s, int src, const char *key,
                              json_t *v)
{
    json_t *out = json_array();
    if (json_is_string(v)) {
        const char *const *l =
            !strcmp(json_string_value(v), "@optimizers") ? lbs_optim_names()
            : !strcmp(json_string_value(v), "@compressors")
                ? lbs_compressor_names() : NULL;
        if (!l) {
            bad(s, src, NULL, "foreach \"%s\": '%s' is neither a list nor "
                "@optimizers / @compressors", key, json_string_value(v));
            json_decref(out);
            return NULL;
        }
        for (; *l; l++)
            json_array_append_new(out, json_string(*l));
        return out;
    }
    size_t i;
    json_t *x;
    if (!json_is_array(v) || !json_array_size(v)) {
        bad(s, src, NULL, "foreach \"%s\" must be a non-empty list", key);
        json_decref(out);
        return NULL;
    }
    json_array_foreach(v, i, x) {
        if (!json_is_string(x) && !json_is_number(x)) {
            bad(s, src, NULL, "foreach \"%s\"[%zu] must be a string or a "
                "number", key, i);
            json_decref(out);
            return NULL;
        }
        json_array_append(out, x);
    }
    return out;
}

/* Cartesian product of the foreach keys from position k on. */
static int expand_foreach(struct suite *s, int src, json_t *obj,
                          json_t *keys, json_t *lists, size_t k, json_t *vars)
{
    if (k == json_array_size(keys))
        return add_entry(s, src, obj, vars);
    const char *key = json_string_value(json_array_get(keys, k));
    json_t *l = json_array_get(lists, k);
    size_t i;
    json_t *v;
    json_array_foreach(l, i, v) {
        json_object_set(vars, key, v);
        int rc = expand_foreach(s, src, obj, keys, lists, k + 1, vars);
        if (rc)
            return rc;
    }
    json_object_del(vars, key);
    return 0;
}

static int check_keys(struct suite *s, int src, json_t *obj,
                      const char *const *allowed)
{
    const char *k;
    json_t *v;
    json_object_foreach(obj, k, v)
        if (!in_list(allowed, k)) {
            char list[256] = "";
            for (const char *const *a = allowed; *a; a++)
                snprintf(list + strlen(list), sizeof list - strlen(list),
                         "%s%s", a == allowed ? "" : " ", *a);
            return bad(s, src, NULL, "unknown key \"%s\" (known: %s)", k,
                       list);
        }
    return 0;
}

int suite_parse(struct suite *s)
{
    json_error_t je;
    s->root = json_loads(s->text, JSON_REJECT_DUPLICATES, &je);
    if (!s->root)
        return bad(s, -1, NULL, "line %d column %d: %s", je.line, je.column,
                   je.text);
    if (!json_is_object(s->root))
        return bad(s, -1, NULL, "the top level must be an object with "
                   "\"entries\"");
    static const char *const top[] = {"suite", "description", "vars",
                                      "timeout_s", "interleave", "entries",
                                      NULL};
    if (check_keys(s, -1, s->root, top))
        return -EINVAL;
    json_t *il = json_object_get(s->root, "interleave");
    if (il && !json_is_boolean(il))
        return bad(s, -1, NULL, "\"interleave\" must be true or false");
    s->interleave = !il || json_is_true(il);
    json_t *jn = json_object_get(s->root, "suite");
    if (jn && !json_is_string(jn))
        return bad(s, -1, NULL, "\"suite\" must be a string");
    if (jn)
        snprintf(s->name, sizeof s->name, "%s", json_string_value(jn));
    json_t *gt = json_object_get(s->root, "timeout_s");
    if (gt && (!json_is_number(gt) || json_number_value(gt) < 1))
        return bad(s, -1, NULL, "\"timeout_s\" must be a number >= 1");
    s->vars = json_object();
    json_t *jv = json_object_get(s->root, "vars");
    if (jv && !json_is_object(jv))
        return bad(s, -1, NULL, "\"vars\" must be an object");
    const char *k;
    json_t *v;
    json_object_foreach(jv, k, v) {
        if (!json_is_string(v) && !json_is_number(v))
            return bad(s, -1, NULL, "vars \"%s\" must be a string or a "
                       "number", k);
        json_object_set(s->vars, k, v);
    }
    json_object_foreach(s->o->vars, k, v) {
        if (!json_object_get(s->vars, k))
            return bad(s, -1, NULL, "--set %s: the suite has no var \"%s\" "
                       "(vars: see --dry-run)", k, k);
        json_object_set(s->vars, k, v);
    }
    json_t *ents = json_object_get(s->root, "entries");
    if (!json_is_array(ents) || !json_array_size(ents))
        return bad(s, -1, NULL, "\"entries\" must be a non-empty array");
    static const char *const ekeys[] = {"name", "verb", "args", "ranks",
        "repeat", "timeout_s", "est_s", "foreach", "optional", NULL};
    size_t i, k2;
    json_t *obj;
    s->names = json_object();
    json_array_foreach(ents, i, obj) {
        if (!json_is_object(obj))
            return bad(s, (int)i, NULL, "not an object");
        if (check_keys(s, (int)i, obj, ekeys))
            return -EINVAL;
        json_t *fe = json_object_get(obj, "foreach");
        json_t *keys = json_array(), *lists = json_array();
        int rc = 0;
        if (fe && !json_is_object(fe))
            rc = bad(s, (int)i, NULL, "\"foreach\" must be an object "
                     "{\"key\": [values] | \"@optimizers\"}");
        json_object_foreach(fe, k, v) {
            if (rc)
                break;
            json_t *l = foreach_values(s, (int)i, k, v);
            if (!l) {
                rc = -EINVAL;
                break;
            }
            json_array_append_new(keys, json_string(k));
            json_array_append_new(lists, l);
        }
        size_t runs = 1;
        json_t *l;
        json_array_foreach(lists, k2, l)
            if (!rc && (__builtin_mul_overflow(runs, json_array_size(l),
                                               &runs) ||
                        s->n + runs > MAX_ENTRIES))
                rc = bad(s, (int)i, NULL, "\"foreach\" expands to more "
                         "than the %d entries a suite may hold", MAX_ENTRIES);
        json_t *vars = json_deep_copy(s->vars);
        if (!rc)
            rc = expand_foreach(s, (int)i, obj, keys, lists, 0, vars);
        json_decref(vars);
        json_decref(keys);
        json_decref(lists);
        if (rc)
            return rc;
    }
    return 0;
}

/* Verbs this binary has: the list `lbscale --help` prints. */
int suite_probe_built(struct suite *s)
{
    s->built = json_array();
    char *argv[] = {s->exe, "--help", NULL};
    struct child c;
    suite_child_run(argv, NULL, 30, &c);
    int in = 0;
    for (char *line = c.out.p ? strtok(c.out.p, "\n") : NULL; line;
         line = strtok(NULL, "\n")) {
        if (!strncmp(line, "verbs:", 6)) {
            in = 1;
        } else if (in && line[0] == ' ') {
            char w[64];
            if (sscanf(line, " %63s", w) == 1)
                json_array_append_new(s->built, json_string(w));
        } else if (in) {
            break;
        }
    }
    suite_child_free(&c);
    if (!json_array_size(s->built)) {
        cli_error(s->o->what, "cannot list the verbs of %s", s->exe);
        return -EIO;
    }
    return 0;
}

/* Options the verb's --help mentions ("--foo" words), cached per verb and
 * leading positional words ("sim sweep"); NULL when help fails. */
static json_t *verb_options(struct suite *s, const struct entry *e)
{
    char key[256];
    char *argv[16];
    int n = 0;
    argv[n++] = s->exe;
    argv[n++] = e->verb;
    snprintf(key, sizeof key, "%s", e->verb);
    size_t i;
    json_t *a;
    json_array_foreach(e->args, i, a) {
        const char *t = json_string_value(a);
        if (t[0] == '-' || n >= 13 || strlen(key) + strlen(t) + 2 > sizeof key)
            break;
        argv[n++] = (char *)t;
        snprintf(key + strlen(key), sizeof key - strlen(key), " %s", t);
    }
    argv[n++] = "--help";
    argv[n] = NULL;
    json_t *hit = json_object_get(s->help_cache, key);
    if (hit)
        return json_is_array(hit) ? hit : NULL;
    struct child c;
    suite_child_run(argv, NULL, 30, &c);
    json_t *opts = json_array();
    if (c.exit_code == 0 && c.out.p) {
        for (char *p = c.out.p; (p = strstr(p, "--"));) {
            char *q = p + 2;
            while (*q && (strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOP"
                                 "QRSTUVWXYZ0123456789-", *q)))
                q++;
            if (q > p + 2 && q[-1] != '-') {
                char opt[64];
                snprintf(opt, sizeof opt, "%.*s", (int)(q - p), p);
                if (!in_array(opts, opt))
                    json_array_append_new(opts, json_string(opt));
            }
            p = q;
        }
    }
    int ok = c.exit_code == 0 && json_array_size(opts) > 0;
    suite_child_free(&c);
    json_object_set_new(s->help_cache, key, ok ? opts : json_false());
    if (!ok)
        json_decref(opts);
    return ok ? json_object_get(s->help_cache, key) : NULL;
}

/* Validate one entry against this binary; fills e->skip for an optional
 * entry that cannot run here.  -EINVAL (printed) for bad input. */
int suite_validate_entry(struct suite *s, struct entry *e)
{
    char why[300] = "";
    if (!in_array(s->built, e->verb)) {
        snprintf(why, sizeof why, "verb '%s' is not built into this binary "
                 "(lbscale --help)", e->verb);
    } else if (e->ranks > 1 && !s->mpirun[0]) {
        snprintf(why, sizeof why, "%d ranks need mpirun, which is not on "
                 "PATH%s", e->ranks, LBS_HAVE_MPI ? "" :
                 " (and this build has no MPI)");
    } else if (e->ranks > 1 && !LBS_HAVE_MPI) {
        snprintf(why, sizeof why, "%d ranks need MPI, which this build "
                 "does not have", e->ranks);
    }
    if (!why[0]) {
        json_t *opts = verb_options(s, e);
        size_t i;
        json_t *a;
        json_array_foreach(e->args, i, a) {
            const char *t = json_string_value(a);
            if (opts && !strncmp(t, "--", 2) && strlen(t) > 2 &&
                !in_array(opts, t)) {
                snprintf(why, sizeof why, "'%s' is not an option of '%s' "
                         "(lbscale %s --help)", t, e->verb, e->verb);
                break;
            }
            const char *next = json_string_value(json_array_get(e->args,
                                                                i + 1));
            int is_optim = !strcmp(t, "--optim") &&
                (!strcmp(e->verb, "optim") || !strcmp(e->verb, "train"));
            int is_comp = !strcmp(t, "--compressor") &&
                !strcmp(e->verb, "compress");
            if ((is_optim || is_comp) && !next) {
                snprintf(why, sizeof why, "'%s' needs a value", t);
                break;
            }
            if (!(is_optim || is_comp) || has_runtime(next) ||
                strstr(next, "{{"))
                continue;
            struct lbs_err le;
            int rc;
            rc = is_optim ? lbs_optim_check(next, NULL, &le)
                          : lbs_compressor_check(next, &le);
            if (rc && lbs_err_is_input(rc)) {
                snprintf(why, sizeof why, "%s %s: %s", t, next, le.msg);
                break;
            }
        }
    }
    if (why[0]) {
        if (!e->optional)
            return bad(s, e->src, e->name, "%s", why);
        snprintf(e->skip, sizeof e->skip, "%s", why);
    }
    return 0;
}

void suite_find_mpirun(struct suite *s)
{
    const char *path = getenv("PATH");
    s->mpirun[0] = '\0';
    if (!path)
        return;
    char *dup = strdup(path), *save = NULL;
    for (char *d = strtok_r(dup, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        char p[PATH_MAX];
        snprintf(p, sizeof p, "%s/mpirun", *d ? d : ".");
        if (!access(p, X_OK)) {
            snprintf(s->mpirun, sizeof s->mpirun, "%s", p);
            break;
        }
    }
    free(dup);
    if (!s->mpirun[0])
        return;
    char *argv[] = {s->mpirun, "--version", NULL};
    struct child c;
    suite_child_run(argv, NULL, 30, &c);
    s->openmpi = (c.out.p && strstr(c.out.p, "Open MPI")) ||
                 (c.err.p && strstr(c.err.p, "Open MPI"));
    suite_child_free(&c);
}

void suite_free(struct suite *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->e[i].name);
        free(s->e[i].verb);
        json_decref(s->e[i].args);
    }
    free(s->e);
    free(s->text);
    json_decref(s->root);
    json_decref(s->vars);
    json_decref(s->help_cache);
    json_decref(s->built);
    json_decref(s->names);
    if (s->lock_fd >= 0)
        close(s->lock_fd);
}

int suite_parse_text(const char *text, size_t *entries)
{
    struct suite_opts o = {.file = "suite.json", .what = "suite"};
    struct suite s = {.o = &o, .file = o.file, .text = strdup(text),
                      .lock_fd = -1};
    int rc = s.text ? suite_parse(&s) : -ENOMEM;
    *entries = rc ? 0 : s.n;
    suite_free(&s);
    return rc;
}
