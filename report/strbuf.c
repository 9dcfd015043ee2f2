/* strbuf.c - the growing string of bench/ (see strbuf.h). */
#include "strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Room for n more bytes and the NUL; 0, or -1 (oom set) on failure. */
static int grow(struct strbuf *b, size_t n)
{
    if (b->oom)
        return -1;
    if (b->len + n + 1 <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + n + 1)
        cap *= 2;
    char *t = realloc(b->p, cap);
    if (!t) {
        b->oom = 1;
        return -1;
    }
    b->p = t;
    b->cap = cap;
    return 0;
}

/* Past keep bytes: drop the head so the newest keep/2 remain. */
static void trim(struct strbuf *b)
{
    if (!b->keep || b->len <= b->keep)
        return;
    size_t cut = b->len - b->keep / 2;
    memmove(b->p, b->p + cut, b->len - cut + 1);
    b->len -= cut;
    b->dropped = 1;
}

void sb_add(struct strbuf *b, const char *s, size_t n)
{
    if (grow(b, n))
        return;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
    trim(b);
}

void sb_puts(struct strbuf *b, const char *s) { sb_add(b, s, strlen(s)); }

void sb_printf(struct strbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || grow(b, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    trim(b);
}

void sb_html(struct strbuf *b, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '<': sb_puts(b, "&lt;"); break;
        case '>': sb_puts(b, "&gt;"); break;
        case '&': sb_puts(b, "&amp;"); break;
        case '"': sb_puts(b, "&quot;"); break;
        default: sb_add(b, s, 1);
        }
    }
}

void sb_base64(struct strbuf *b, const unsigned char *d, size_t n)
{
    static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                            "0123456789+/";
    char q[4];
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)d[i] << 16;
        if (i + 1 < n)
            v |= (unsigned)d[i + 1] << 8;
        if (i + 2 < n)
            v |= d[i + 2];
        q[0] = t[v >> 18 & 63];
        q[1] = t[v >> 12 & 63];
        q[2] = i + 1 < n ? t[v >> 6 & 63] : '=';
        q[3] = i + 2 < n ? t[v & 63] : '=';
        sb_add(b, q, 4);
    }
}

void strbuf_free(struct strbuf *b)
{
    free(b->p);
    size_t keep = b->keep;
    *b = (struct strbuf){.keep = keep};
}
