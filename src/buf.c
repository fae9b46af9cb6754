/*
 * buf.c - capped growable buffer.
 *
 * Invariants: len <= max; when p != NULL, p[len] == '\0' and len < cap.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"

void buf_init(struct buf *b, size_t max)
{
	b->p = NULL;
	b->len = 0;
	b->cap = 0;
	b->max = max;
}

void buf_dispose(struct buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = 0;
	b->cap = 0;
}

void buf_reset(struct buf *b)
{
	b->len = 0;
	if (b->p)
		b->p[0] = '\0';
}

static int grow(struct buf *b, size_t need)
{
	size_t cap = b->cap ? b->cap : 64;

	while (cap < need + 1)
		cap *= 2;
	if (cap > b->max + 1)
		cap = b->max + 1;
	char *p = realloc(b->p, cap);
	if (!p)
		return SC_ENOMEM;
	b->p = p;
	b->cap = cap;
	return 0;
}

int buf_add(struct buf *b, const void *data, size_t n)
{
	if (n > b->max - b->len)
		return SC_ETOOBIG;
	if (b->len + n + 1 > b->cap) {
		int rc = grow(b, b->len + n);
		if (rc)
			return rc;
	}
	if (n)
		memcpy(b->p + b->len, data, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

int buf_adds(struct buf *b, const char *s)
{
	return buf_add(b, s, strlen(s));
}

int buf_addf(struct buf *b, const char *fmt, ...)
{
	char small[256];
	va_list ap;

	va_start(ap, fmt);
	int n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		return SC_EINVAL;
	if ((size_t)n < sizeof(small))
		return buf_add(b, small, (size_t)n);

	char *big = malloc((size_t)n + 1);
	if (!big)
		return SC_ENOMEM;
	va_start(ap, fmt);
	vsnprintf(big, (size_t)n + 1, fmt, ap);
	va_end(ap);
	int rc = buf_add(b, big, (size_t)n);
	free(big);
	return rc;
}

const char *buf_str(const struct buf *b)
{
	return b->p ? b->p : "";
}

char *buf_take(struct buf *b)
{
	char *p = b->p;

	if (!p)
		p = calloc(1, 1);
	b->p = NULL;
	b->len = 0;
	b->cap = 0;
	return p;
}
