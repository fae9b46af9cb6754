/*
 * buf.h - a growable byte buffer with a hard cap (like curl's dynbuf).
 *
 * The content is always NUL-terminated, so buf_str() can be used as a C
 * string. Every buffer has a cap: an append that would pass it fails with
 * SC_ETOOBIG and leaves the buffer unchanged. Ownership of the bytes leaves
 * the buffer only through buf_take(). Not thread-safe.
 */
#ifndef SURECRON_BUF_H
#define SURECRON_BUF_H

#include <stddef.h>

#include "surecron.h"

struct buf {
	char *p;    /* NULL until the first append */
	size_t len; /* bytes used, excluding the terminating NUL */
	size_t cap; /* bytes allocated */
	size_t max; /* hard cap on len */
};

/* Prepares an empty buffer that may hold up to max bytes. */
void buf_init(struct buf *b, size_t max);

/* Frees the content; the buffer is empty and reusable afterwards. */
void buf_dispose(struct buf *b);

/* Empties the buffer, keeping its allocation. */
void buf_reset(struct buf *b);

/* Appends n bytes. Returns 0, SC_ENOMEM or SC_ETOOBIG. */
int buf_add(struct buf *b, const void *data, size_t n);

/* Appends a C string. Returns 0, SC_ENOMEM or SC_ETOOBIG. */
int buf_adds(struct buf *b, const char *s);

/* Appends printf-formatted text. Returns 0, SC_ENOMEM or SC_ETOOBIG. */
int buf_addf(struct buf *b, const char *fmt, ...) SC_PRINTF(2, 3);

/* The content as a C string ("" when empty); valid until the next change. */
const char *buf_str(const struct buf *b);

/* Hands the content to the caller (free with free()/sc_free()) and empties
 * the buffer. Returns an allocated "" for an empty buffer; NULL only when
 * out of memory. */
char *buf_take(struct buf *b);

#endif
