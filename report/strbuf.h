/* strbuf.h - the growing string of report/ and bench/ (report.c's HTML
 * page, plot.c's gnuplot scripts and data tables, bench/suite.c's
 * captured child output and logs).
 *
 * A struct strbuf starts zeroed ({0}); every append keeps p
 * NUL-terminated once anything was appended.  Running out of memory is
 * sticky and silent: the append is dropped and oom set, so a caller that
 * builds a whole page checks once at the end instead of after each piece.
 *
 * keep > 0 bounds the buffer for output of unknown size: when it grows
 * past keep bytes the oldest part is dropped so the newest keep/2 remain,
 * and dropped is set (suite.c keeps the tail of a child's stderr).
 *
 * Ownership: the caller frees p (strbuf_free). */
#ifndef LBS_STRBUF_H
#define LBS_STRBUF_H

#include <stddef.h>

struct strbuf {
    char *p;
    size_t len, cap;
    size_t keep;    /* 0: unbounded; else keep the newest keep/2 bytes */
    int dropped;    /* the head was dropped to stay under keep */
    int oom;        /* an append failed for memory (and was dropped) */
};

void sb_add(struct strbuf *b, const char *s, size_t n);
void sb_puts(struct strbuf *b, const char *s);
void sb_printf(struct strbuf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* s with < > & " as HTML entities (NULL appends nothing). */
void sb_html(struct strbuf *b, const char *s);
/* n bytes of d as base64 (RFC 4648, with '=' padding). */
void sb_base64(struct strbuf *b, const unsigned char *d, size_t n);
/* Free p and reset b to empty (keep stays). */
void strbuf_free(struct strbuf *b);

#endif
