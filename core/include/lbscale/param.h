/* lbscale/param.h - spec strings: "name:key=value,key=value".
 *
 * Each optimizer (and later each compressor) declares its keys as data: a
 * table of struct lbs_param_spec ending with a {NULL} entry.  One parser
 * validates every spec against such a table and one printer writes every
 * --help from it, so a key can never be accepted in one place and
 * rejected in another.  Values are stored as doubles at `offset` inside a
 * caller-provided config struct.
 */
#ifndef LBSCALE_PARAM_H
#define LBSCALE_PARAM_H

#include <stddef.h>
#include <stdio.h>
#include "lbscale/error.h"

#ifdef __cplusplus
extern "C" {
#endif

enum lbs_param_type {
    LBS_P_REAL,  /* any finite number in range */
    LBS_P_INT,   /* integral value in range */
    LBS_P_BOOL,  /* 0/1, also accepts true/false/on/off/yes/no */
    LBS_P_ENUM,  /* one of the names in choices (stored as its index) */
};

/* Range flags: open bounds exclude the bound itself. */
#define LBS_P_MIN_OPEN 1u
#define LBS_P_MAX_OPEN 2u

struct lbs_param_spec {
    const char *key;
    enum lbs_param_type type;
    double def;
    double min, max;
    unsigned flags;
    size_t offset;              /* offsetof(config struct, field); a double */
    const char *help;
    const char *const *choices; /* LBS_P_ENUM only, NULL-terminated */
};

/* Split "name:k=v,..." into name (copied into name, at most namelen-1
 * chars) and a pointer to the argument part inside spec ("" if none). */
int lbs_spec_split(const char *spec, char *name, size_t namelen,
                   const char **args, struct lbs_err *err);

/* Set defaults from table into cfg, then apply args ("k=v,k=v").  `what`
 * names the object in messages (e.g. "lamb").  Duplicate keys, unknown
 * keys, malformed numbers ("1e", "abc", "10Q"), NaN/Inf and out-of-range
 * values are -EINVAL (unknown key: -ENOENT) with a message naming the key. */
int lbs_params_parse(const struct lbs_param_spec *table, const char *what,
                     const char *args, void *cfg, struct lbs_err *err);

/* Parse one strict number: the whole string must be a finite number. */
int lbs_parse_double(const char *s, double *out);
/* Sizes with optional K/M/G suffix (powers of 1000 and, with "i", 1024):
 * "100M" = 1e8, "4Ki" = 4096.  Rejects negatives and garbage. */
int lbs_parse_size(const char *s, size_t *out);

/* Write the table as "  key=default  [range]  help" lines. */
void lbs_params_print(const struct lbs_param_spec *table, FILE *f);

/* Format the effective config as "key=value,..." into buf (for results):
 * integers as digits, reals in the shortest form that reads back to the
 * same double, so parsing the string again gives every value bit for bit.
 * Returns the length the whole string needs (like snprintf; >= len means
 * it was cut). */
size_t lbs_params_format(const struct lbs_param_spec *table,
                         const void *cfg, char *buf, size_t len);

/* Read key's value from cfg (parsed with table) into *value: 0, or
 * -ENOENT when the table has no such key (cfg NULL: only that answer). */
int lbs_params_get(const struct lbs_param_spec *table, const void *cfg,
                   const char *key, double *value);

/* lbs_params_format into buf, or -EINVAL with "WHAT: effective parameters
 * longer than ..." when the whole string does not fit. */
int lbs_params_effective(const struct lbs_param_spec *table,
                         const char *what, const void *cfg, char *buf,
                         size_t len, struct lbs_err *err);

/* A registry of named ops tables (core's optimizers, its compressors),
 * seen through functions of an entry's index, so one set of calls finds
 * a spec's entry, lists the names and prints --help for every kind. */
struct lbs_spec_registry {
    const char *what;                 /* "optimizer": in messages */
    const char *verb;                 /* "optim": "see lbscale optim --list" */
    const char *(*name)(size_t i);    /* entry i's name, NULL past the last */
    int (*device)(size_t i);          /* does entry i have GPU kernels? */
    void (*help)(size_t i, FILE *f);  /* entry i's --help paragraph */
};

/* The index of the entry called name: 0, or -ENOENT. */
int lbs_registry_index(const struct lbs_spec_registry *r, const char *name,
                       size_t *i);
/* The candidate closest to word by edit distance (insertions, deletions,
 * substitutions, swaps of neighbours) when it is close enough to be a
 * typo - at most 1 edit for words up to 4 letters, 2 up to 8, else 3 -
 * for "did you mean X?"; NULL when none is, or word is one of them.  NULL
 * entries of cands are skipped. */
const char *lbs_closest(const char *word, const char *const *cands,
                        size_t n);

/* Fill names (cap slots, the caller's static array, filled once) with the
 * entries' names, NULL-terminated; returns names. */
const char *const *lbs_registry_names(const struct lbs_spec_registry *r,
                                      const char **names, size_t cap);
/* Split spec (lbs_spec_split) and find its entry: *i, *args; -ENOENT
 * "unknown WHAT 'x' (see lbscale VERB --list)". */
int lbs_registry_find(const struct lbs_spec_registry *r, const char *spec,
                      size_t *i, const char **args, struct lbs_err *err);
/* --help of the entry called name (-ENOENT if none), or of all (NULL). */
int lbs_registry_help(const struct lbs_spec_registry *r, const char *name,
                      FILE *f);
/* "a, b, ...": the entries with GPU kernels, into buf (len bytes). */
void lbs_registry_device_names(const struct lbs_spec_registry *r, char *buf,
                               size_t len);

#ifdef __cplusplus
}
#endif
#endif
