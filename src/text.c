/*
 * text.c - the one cleaner of text printed for a person, the UTF-8
 * repair of text that is kept, and body excerpts (see text.h).
 *
 * Invariants: the output of text_clean / text_clean_buf is valid UTF-8
 * with no C0 or C1 control character (but '\n' under TEXT_KEEP_NL) and
 * no bidirectional or zero-width format character; escapes are plain
 * ASCII, so cleaning is idempotent; a cut never splits a character or an
 * escape. The output of text_utf8_clean is valid UTF-8 without NUL and
 * never longer than its input; both cleaners judge UTF-8 by the one
 * function text_utf8_seq, so they agree on what is valid.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "surecron.h"
#include "text.h"

/*
 * Length of the valid UTF-8 sequence at s (at most len bytes) and its code
 * point in *cp; 0 when s does not start one (RFC 3629: no overlong form,
 * no surrogate, nothing above U+10FFFF).
 */
size_t text_utf8_seq(const unsigned char *s, size_t len, uint32_t *cp)
{
	unsigned char c = s[0];
	size_t n;
	uint32_t v;

	if (c < 0x80) {
		*cp = c;
		return 1;
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
		return 0;
	}
	if (n > len)
		return 0;
	for (size_t k = 1; k < n; k++) {
		if ((s[k] & 0xC0) != 0x80)
			return 0;
		v = (v << 6) | (s[k] & 0x3Fu);
	}
	if ((n == 3 && (v < 0x800 || (v >= 0xD800 && v <= 0xDFFF))) ||
	    (n == 4 && (v < 0x10000 || v > 0x10FFFF)))
		return 0;
	*cp = v;
	return n;
}

/* Format characters that reorder or hide text on a terminal. */
static bool is_format(uint32_t cp)
{
	return (cp >= 0x200B && cp <= 0x200F) ||
	       (cp >= 0x2028 && cp <= 0x202E) ||
	       (cp >= 0x2066 && cp <= 0x2069) || cp == 0xFEFF;
}

/*
 * The next piece of s (len > 0 bytes): returns how many input bytes it
 * takes. When it must be shown as an escape, the escape is written to esc
 * (NUL-terminated) and *esc_len set; otherwise *esc_len is 0 and the input
 * bytes are copied as they are.
 */
static size_t piece(const unsigned char *s, size_t len, unsigned flags,
		    char esc[8], size_t *esc_len)
{
	uint32_t cp;
	size_t n = text_utf8_seq(s, len, &cp);

	*esc_len = 0;
	if (n == 0) {
		*esc_len = (size_t)snprintf(esc, 8, "\\x%02x", s[0]);
		return 1;
	}
	if (cp < 0x20 || cp == 0x7F) {
		if (cp == '\n' && (flags & TEXT_KEEP_NL))
			return 1;
		if (cp == '\n')
			memcpy(esc, "\\n", 3);
		else if (cp == '\t')
			memcpy(esc, "\\t", 3);
		else if (cp == '\r')
			memcpy(esc, "\\r", 3);
		else
			snprintf(esc, 8, "\\x%02x", (unsigned)cp);
		*esc_len = strlen(esc);
		return 1;
	}
	if ((cp >= 0x80 && cp <= 0x9F) || is_format(cp))
		*esc_len = (size_t)snprintf(esc, 8, "\\u%04x", (unsigned)cp);
	return n;
}

char *text_clean(char *out, size_t n, const char *s, unsigned flags)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t len = strlen(s), o = 0;
	char esc[8];
	size_t el;

	if (n == 0)
		return out;
	while (len > 0) {
		size_t take = piece(p, len, flags, esc, &el);
		const char *src = el ? esc : (const char *)p;
		size_t w = el ? el : take;
		if (o + w >= n)
			break;
		memcpy(out + o, src, w);
		o += w;
		p += take;
		len -= take;
	}
	out[o] = '\0';
	return out;
}

int text_clean_buf(struct buf *b, const char *s, size_t len, unsigned flags)
{
	const unsigned char *p = (const unsigned char *)s;
	char esc[8];
	size_t el;

	while (len > 0) {
		/* Copy the longest run that needs no escape in one append. */
		size_t run = 0;
		while (run < len) {
			/* Printable ASCII, nearly all of it: no decoding. */
			if (p[run] >= 0x20 && p[run] < 0x7F) {
				run++;
				continue;
			}
			size_t take = p[run] == 0
					      ? 0
					      : piece(p + run, len - run,
						      flags, esc, &el);
			if (take == 0 || el)
				break;
			run += take;
		}
		if (run) {
			int rc = buf_add(b, p, run);
			if (rc)
				return rc;
			p += run;
			len -= run;
			continue;
		}
		size_t take = 1;
		if (p[0] == 0) {
			memcpy(esc, "\\x00", 5);
			el = 4;
		} else {
			take = piece(p, len, flags, esc, &el);
		}
		int rc = buf_add(b, esc, el);
		if (rc)
			return rc;
		p += take;
		len -= take;
	}
	return 0;
}

bool text_printable(const char *s, unsigned flags)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t len = strlen(s);
	char esc[8];
	size_t el;

	while (len > 0) {
		if (*p >= 0x20 && *p < 0x7F) {
			p++;
			len--;
			continue;
		}
		size_t take = piece(p, len, flags, esc, &el);
		if (el)
			return false;
		p += take;
		len -= take;
	}
	return true;
}

char *text_utf8_clean(const char *p, size_t n)
{
	/* Zeroed, so that clang-tidy sees the bytes callers read as set. */
	char *o = calloc(n + 1, 1);
	const unsigned char *s = (const unsigned char *)p;
	size_t j = 0;
	uint32_t cp;

	if (!o)
		return NULL;
	for (size_t i = 0; i < n;) {
		size_t len = text_utf8_seq(s + i, n - i, &cp);
		if (len == 0) {
			o[j++] = '?';
			i++;
			continue;
		}
		if (cp == 0) {
			i++;
			continue;
		}
		memcpy(o + j, s + i, len);
		j += len;
		i += len;
	}
	o[j] = '\0';
	return o;
}

char *text_excerpt(char *out, size_t n, const char *body, size_t len)
{
	size_t take = len < TEXT_EXCERPT_MAX ? len : TEXT_EXCERPT_MAX;
	char *c = text_utf8_clean(body ? body : "", body ? take : 0);

	if (n == 0) {
		free(c);
		return out;
	}
	snprintf(out, n, "%s%s", c ? c : "", len > take ? "..." : "");
	for (char *p = out; *p; p++)
		if ((unsigned char)*p < 0x20)
			*p = ' ';
	free(c);
	return out;
}
