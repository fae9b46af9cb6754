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

#include "text.h"
#include "yaml_write.h"

/* The code point of the UTF-8 sequence at s, end its string's end (a
 * NUL there), its length in *len; false when s does not start a valid
 * sequence (text_utf8_seq judges, as for every text surecron keeps). */
static bool utf8_next(const unsigned char *s, const unsigned char *end,
		      uint32_t *cp, size_t *len)
{
	*len = text_utf8_seq(s, (size_t)(end - s), cp);
	return *len > 0;
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
	const unsigned char *end = p + strlen(s);
	size_t mark = b->len;
	uint32_t cp;
	size_t len;
	int rc;

	/* Refuse before writing anything, so that b stays unchanged. */
	for (const unsigned char *q = p; *q; q += len)
		if (!utf8_next(q, end, &cp, &len))
			return SC_EINVAL;
	rc = buf_add(b, "\"", 1);
	for (; !rc && *p; p += len) {
		utf8_next(p, end, &cp, &len);
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
	const unsigned char *end = p + strlen(s);
	int rc = buf_adds(b, prefix);

	while (!rc && *p) {
		uint32_t cp;
		size_t len;

		if (!utf8_next(p, end, &cp, &len)) {
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
