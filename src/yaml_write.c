/*
 * yaml_write.c - YAML scalars and comments as pure printable ASCII (see
 * yaml_write.h).
 *
 * Invariants:
 *   - Every byte appended by these functions is 0x20-0x7E, or a tab in a
 *     comment, or the one '\n' that ends a comment: no line break of any
 *     kind YAML knows (LF, CR, NEL, LS, PS) and no control character can
 *     come from the caller's text.
 *   - A scalar reads back, through libyaml, as exactly the bytes given:
 *     the escapes used (\" \\ \t \n \r \xNN \uNNNN \UNNNNNNNN) are YAML
 *     1.1 double-quoted escapes, each standing for one code point, and a
 *     text that is not valid UTF-8 is refused rather than changed.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "yaml_write.h"

/*
 * The code point of the UTF-8 sequence at s (strict: no overlong form, no
 * surrogate, nothing above U+10FFFF, not cut short), its length in *len.
 * Returns false when s does not start with such a sequence.
 */
static bool utf8_next(const unsigned char *s, uint32_t *cp, size_t *len)
{
	unsigned char c = s[0];
	size_t n;
	uint32_t v;

	if (c < 0x80) {
		*cp = c;
		*len = 1;
		return true;
	}
	if (c >= 0xC2 && c <= 0xDF) {
		n = 2;
		v = c & 0x1Fu;
	} else if (c >= 0xE0 && c <= 0xEF) {
		n = 3;
		v = c & 0x0Fu;
	} else if (c >= 0xF0 && c <= 0xF4) {
		n = 4;
		v = c & 0x07u;
	} else {
		return false;
	}
	for (size_t k = 1; k < n; k++) {
		/* A NUL ends the string: it is no continuation byte. */
		if ((s[k] & 0xC0) != 0x80)
			return false;
		v = (v << 6) | (s[k] & 0x3Fu);
	}
	if ((n == 3 && (v < 0x800 || (v >= 0xD800 && v <= 0xDFFF))) ||
	    (n == 4 && (v < 0x10000 || v > 0x10FFFF)))
		return false;
	*cp = v;
	*len = n;
	return true;
}

/* \uNNNN or \UNNNNNNNN for a code point above U+007F. */
static int add_unicode(struct buf *b, uint32_t cp)
{
	return cp <= 0xFFFF ? buf_addf(b, "\\u%04X", (unsigned)cp)
			    : buf_addf(b, "\\U%08X", (unsigned)cp);
}

int yaml_write_str(struct buf *b, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t mark = b->len;
	uint32_t cp;
	size_t len;
	int rc;

	/* Refuse before writing anything, so that b stays unchanged. */
	for (const unsigned char *q = p; *q; q += len)
		if (!utf8_next(q, &cp, &len))
			return SC_EINVAL;
	rc = buf_add(b, "\"", 1);
	for (; !rc && *p; p += len) {
		utf8_next(p, &cp, &len);
		if (cp == '"' || cp == '\\')
			rc = buf_addf(b, "\\%c", (char)cp);
		else if (cp == '\t')
			rc = buf_adds(b, "\\t");
		else if (cp == '\n')
			rc = buf_adds(b, "\\n");
		else if (cp == '\r')
			rc = buf_adds(b, "\\r");
		else if (cp < 0x20 || cp == 0x7F)
			rc = buf_addf(b, "\\x%02X", (unsigned)cp);
		else if (cp < 0x7F)
			rc = buf_add(b, p, 1);
		else
			rc = add_unicode(b, cp);
	}
	if (!rc)
		rc = buf_add(b, "\"", 1);
	if (rc && b->len > mark) {
		/* Half a scalar is worse than none: cut it off again. */
		b->len = mark;
		b->p[mark] = '\0';
	}
	return rc;
}

int yaml_write_comment(struct buf *b, const char *prefix, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	int rc = buf_adds(b, prefix);

	while (!rc && *p) {
		uint32_t cp;
		size_t len;

		if (!utf8_next(p, &cp, &len)) {
			rc = buf_addf(b, "\\x%02X", (unsigned)*p);
			p++;
			continue;
		}
		if (cp == '\\')
			rc = buf_adds(b, "\\\\");
		else if (cp == '\t' || (cp >= 0x20 && cp < 0x7F))
			rc = buf_add(b, p, 1);
		else if (cp < 0x80)
			rc = buf_addf(b, "\\x%02X", (unsigned)cp);
		else
			rc = add_unicode(b, cp);
		p += len;
	}
	return rc ? rc : buf_add(b, "\n", 1);
}
