/* opt.c - options as data: one getopt_long loop for every verb. */
#include "opt.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "lbscale/param.h"

#define OPT_MAX 128   /* rows per verb, includes flattened */

/* The table with CLI_INCLUDE rows replaced by their rows, in order. */
static int flatten(const struct cli_opt *t, const struct cli_opt **out,
                   int n)
{
    for (; t->type != CLI_END; t++) {
        if (t->type == CLI_INCLUDE) {
            n = flatten(t->dst, out, n);
            if (n < 0)
                return n;
        } else if (n < OPT_MAX) {
            out[n++] = t;
        } else {
            return -1;
        }
    }
    return n;
}

static int has_value(const struct cli_opt *o)
{
    return o->type != CLI_FLAG && o->type != CLI_CLEAR &&
           !(o->type == CLI_CALL && !o->arg);
}

/* Check and store one value; 0, CLI_EXIT or -EINVAL (printed). */
static int store(const struct cli_opt *o, const char *val)
{
    char opt[80];
    snprintf(opt, sizeof opt, "--%s", o->name);
    switch (o->type) {
    case CLI_FLAG:
        *(int *)o->dst = o->set ? o->set : 1;
        return 0;
    case CLI_CLEAR:
        *(int *)o->dst = 0;
        return 0;
    case CLI_STR:
        *(const char **)o->dst = val;
        return 0;
    case CLI_LONG:
        return cli_int(opt, val, (long)o->lo, (long)o->hi, o->dst);
    case CLI_DOUBLE:
        return cli_double(opt, val, o->lo, o->hi, o->dst);
    case CLI_SIZE: {
        size_t *d = o->dst;
        if (cli_size(opt, val, d))
            return -EINVAL;
        if (o->hi > 0 && (double)*d > o->hi) {
            cli_error(opt, "'%s' is more than %.0f", val, o->hi);
            return -EINVAL;
        }
        return 0;
    }
    case CLI_CHOICE:
        for (int i = 0; o->choices[i]; i++)
            if (!strcmp(val, o->choices[i])) {
                *(int *)o->dst = i;
                return 0;
            }
        {
            char list[256] = "";
            for (int i = 0; o->choices[i]; i++)
                snprintf(list + strlen(list), sizeof list - strlen(list),
                         "%s%s", i ? ", " : "", o->choices[i]);
            cli_error(opt, "'%s': use one of %s", val, list);
        }
        return -EINVAL;
    case CLI_CALL:
        return o->fn(opt, val, o->dst);
    default:
        return -EINVAL;
    }
}

/* --help, or --help NAME (the word right after it) on a verb over a
 * registry: that entry's keys; an unknown NAME is bad input. */
static int help(const struct cli_verb *v, int argc, char **argv)
{
    const char *name = optind < argc ? argv[optind] : NULL;
    if (!v->topic_help || !name || name[0] == '-') {
        cli_usage(v, stdout);
        return CLI_EXIT;
    }
    if (v->topic_help(name, stdout)) {
        cli_error(v->name, "unknown %s '%s' (see --list)", v->topic, name);
        return -EINVAL;
    }
    return CLI_EXIT;
}

/* "unknown option '--marign' (did you mean '--margin'?; see --help)". */
static void unknown_long(const struct cli_verb *v, const char *arg,
                         const struct cli_opt *const *rows, int n)
{
    char word[64];
    const char *w = arg + strspn(arg, "-");
    snprintf(word, sizeof word, "%.*s", (int)strcspn(w, "="), w);
    const char *names[OPT_MAX + 1];
    for (int i = 0; i < n; i++)
        names[i] = rows[i]->name;
    names[n] = "help";
    const char *near = lbs_closest(word, names, (size_t)n + 1);
    if (near)
        cli_error(v->name, "unknown option '%s' (did you mean '--%s'? see "
                  "--help)", arg, near);
    else
        cli_error(v->name, "unknown option '%s' (see --help)", arg);
}

int cli_parse(const struct cli_verb *v, int argc, char **argv, char ***pos,
              int *npos)
{
    const struct cli_opt *rows[OPT_MAX];
    int n = flatten(v->opts, rows, 0);
    if (n < 0) {
        cli_error(v->name, "more than %d options", OPT_MAX);
        return -EINVAL;
    }
    struct option lo[OPT_MAX + 3];   /* + help, list, the terminator */
    char shorts[2 * OPT_MAX + 4] = ":";   /* ':' reports a missing value */
    size_t ns = 1;
    int own_help = 0;
    for (int i = 0; i < n; i++) {
        lo[i] = (struct option){.name = rows[i]->name,
                                .has_arg = has_value(rows[i]) ? 1 : 0,
                                .val = 256 + i};
        own_help |= !strcmp(rows[i]->name, "help");
        if (rows[i]->short_name) {
            shorts[ns++] = rows[i]->short_name;
            if (has_value(rows[i]))
                shorts[ns++] = ':';
        }
    }
    int nrows = n;   /* n grows by --help and --list below */
    int help_val = 256 + n, list_val = 256 + n + 1;
    if (!own_help) {
        lo[n++] = (struct option){.name = "help", .val = help_val};
        shorts[ns++] = 'h';
    }
    if (v->topic_help)
        lo[n++] = (struct option){.name = "list", .val = list_val};
    lo[n] = (struct option){0};
    shorts[ns] = '\0';

    opterr = 0;
    optind = 0;   /* glibc: 0 also resets its internal state */
    for (;;) {
        int idx = -1;
        int c = getopt_long(argc, argv, shorts, lo, &idx);
        if (c == -1)
            break;
        if (c == '?') {   /* optopt: the short letter, 0 for a long one */
            if (optopt && optopt < 256)
                cli_error(v->name, "unknown option '-%c' (see --help)",
                          optopt);
            else
                unknown_long(v, argv[optind - 1], rows, nrows);
            return -EINVAL;
        }
        if (c == ':') {   /* optopt: the option's val */
            char name[80];
            if (optopt >= 256 && optopt < 256 + n)
                snprintf(name, sizeof name, "--%s", rows[optopt - 256]->name);
            else
                snprintf(name, sizeof name, "-%c", optopt);
            cli_error(name, "missing value");
            return -EINVAL;
        }
        if (c == 'h' && !own_help)
            c = help_val;
        if (c == help_val)
            return help(v, argc, argv);
        if (c == list_val) {
            v->topic_help(NULL, stdout);
            return CLI_EXIT;
        }
        const struct cli_opt *o = NULL;
        if (c >= 256)
            o = rows[c - 256];
        else
            for (int i = 0; i < n && !o; i++)
                if (rows[i]->short_name == c)
                    o = rows[i];
        int rc = store(o, optarg);
        if (rc)
            return rc < 0 ? -EINVAL : rc;
    }
    if (npos) {
        *pos = argv + optind;
        *npos = argc - optind;
    } else if (optind < argc) {
        cli_error(v->name, "unexpected argument '%s' (see --help)",
                  argv[optind]);
        return -EINVAL;
    }
    return 0;
}

/* "  --name ARG" padded to the help column, or on a line of its own when
 * longer; continued help lines start at the same column. */
#define HELP_COL 20

static void print_row(FILE *f, const struct cli_opt *o)
{
    char head[96];
    int w = snprintf(head, sizeof head, "  %s%s--%s%s%s",
                     o->short_name ? (char[]){'-', o->short_name, '\0'} : "",
                     o->short_name ? ", " : "", o->name, o->arg ? " " : "",
                     o->arg ? o->arg : "");
    fputs(head, f);
    const char *h = o->help;
    if (w >= HELP_COL - 1)
        fprintf(f, "\n%*s", HELP_COL, "");
    else
        fprintf(f, "%*s", HELP_COL - w, "");
    for (const char *nl; (nl = strchr(h, '\n')); h = nl + 1)
        fprintf(f, "%.*s\n%*s", (int)(nl - h), h, HELP_COL, "");
    fprintf(f, "%s\n", h);
}

void cli_usage(const struct cli_verb *v, FILE *f)
{
    const struct cli_opt *rows[OPT_MAX];
    int n = flatten(v->opts, rows, 0);
    fprintf(f, "%s\n", v->usage);
    if (v->about)
        fprintf(f, "\n%s\n", v->about);
    fputs("\noptions:\n", f);
    int help = 0;
    for (int i = 0; i < n; i++) {
        help |= !strcmp(rows[i]->name, "help");
        if (rows[i]->help)
            print_row(f, rows[i]);
    }
    if (v->topic_help)
        fprintf(f, "  --list%*severy %s and its keys\n"
                   "  -h, --help [NAME]\n%*sthis help, or one %s's keys\n",
                HELP_COL - 8, "", v->topic, HELP_COL, "", v->topic);
    else if (!help)
        fprintf(f, "  -h, --help%*sthis help\n", HELP_COL - 12, "");
    if (v->epilog)
        fprintf(f, "\n%s\n", v->epilog);
}

int cli_isa_opt(const char *opt, const char *value, void *unused)
{
    (void)unused;
    return cli_isa(opt, value) ? -EINVAL : 0;
}
