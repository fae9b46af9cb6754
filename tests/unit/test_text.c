/*
 * test_text.c - the cleaner of text shown to a person (issue 11, item 7):
 * one table of {input, flags, expected}, then the properties: the output
 * holds no control byte and is valid UTF-8, cleaning is idempotent, a cut
 * never splits a character or an escape, and the three entry points agree.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "text.h"

static const struct row {
	const char *in;
	unsigned flags;
	const char *want;
} rows[] = {
	{"plain text", 0, "plain text"},
	{"", 0, ""},
	{"back\\slash \"quote\"", 0, "back\\slash \"quote\""},
	{"\x1b]0;pwned\x07", 0, "\\x1b]0;pwned\\x07"},
	{"\x1b[2J\x1b[H", 0, "\\x1b[2J\\x1b[H"},
	{"a\tb\r\nc", 0, "a\\tb\\r\\nc"},
	{"a\nb", TEXT_KEEP_NL, "a\nb"},
	{"a\r\nb", TEXT_KEEP_NL, "a\\r\nb"},
	{"del\x7f", 0, "del\\x7f"},
	{"\x01\x1f", 0, "\\x01\\x1f"},
	/* valid UTF-8 passes */
	{"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 0,
	 "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"},
	/* C1 controls (8-bit CSI) and format characters are shown */
	{"\xc2\x9b" "31m", 0, "\\u009b31m"},
	{"\xc2\x85", 0, "\\u0085"},
	{"abc\xe2\x80\xae" "cba", 0, "abc\\u202ecba"},
	{"\xe2\x80\x8b\xef\xbb\xbf", 0, "\\u200b\\ufeff"},
	/* bytes that are not UTF-8, one escape each */
	{"\xc3", 0, "\\xc3"},
	{"\xc3(", 0, "\\xc3("},
	{"\xff\xfe", 0, "\\xff\\xfe"},
	{"\xc0\xaf", 0, "\\xc0\\xaf"},           /* overlong '/' */
	{"\xe0\x80\xaf", 0, "\\xe0\\x80\\xaf"},   /* overlong */
	{"\xed\xa0\x80", 0, "\\xed\\xa0\\x80"},   /* surrogate */
	{"\xf4\x90\x80\x80", 0, "\\xf4\\x90\\x80\\x80"}, /* > U+10FFFF */
	{"\xe2\x82", 0, "\\xe2\\x82"},            /* cut short */
	{"\x80x", 0, "\\x80x"},
};

/* Fails unless s is clean: no control byte but '\n' (with keep_nl), valid
 * UTF-8. */
static void assert_clean_text(const char *s, bool keep_nl)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if ((*p < 0x20 && !(keep_nl && *p == '\n')) || *p == 0x7f)
			fail_msg("control byte 0x%02x in \"%s\"", *p, s);
	assert_true(text_printable(s, keep_nl ? TEXT_KEEP_NL : 0));
}

static void table(void **state)
{
	char out[256], again[256];

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct row *r = &rows[i];
		text_clean(out, sizeof(out), r->in, r->flags);
		if (strcmp(out, r->want) != 0)
			fail_msg("row %zu: got \"%s\", want \"%s\"", i, out,
				 r->want);
		assert_clean_text(out, r->flags & TEXT_KEEP_NL);
		/* Idempotent: a cleaned text is left alone. */
		text_clean(again, sizeof(again), out, r->flags);
		assert_string_equal(again, out);
		assert_int_equal(text_printable(r->in, r->flags),
				 strcmp(r->in, r->want) == 0);
		/* The buffer form gives the same. */
		struct buf b;
		buf_init(&b, 1024);
		assert_int_equal(text_clean_buf(&b, r->in, strlen(r->in),
						r->flags), 0);
		assert_string_equal(buf_str(&b), r->want);
		buf_dispose(&b);
	}
}

/* A cut keeps whole characters and whole escapes. */
static void cuts_are_whole(void **state)
{
	const char *in = "ab\x1b" "c\xc3\xa9" "d";
	static const char *const want[] = {
		"", "", "a", "ab", "ab", "ab", "ab", "ab\\x1b", "ab\\x1bc",
		"ab\\x1bc", "ab\\x1bc\xc3\xa9", "ab\\x1bc\xc3\xa9" "d",
	};
	char out[16];

	for (size_t n = 1; n < sizeof(want) / sizeof(want[0]); n++) {
		memset(out, 'Z', sizeof(out));
		text_clean(out, n, in, 0);
		assert_string_equal(out, want[n]);
	}
}

/* NUL bytes inside a length-given text, and a capped buffer. */
static void buffers(void **state)
{
	struct buf b;

	buf_init(&b, 64);
	assert_int_equal(text_clean_buf(&b, "a\0b\x1b", 4, 0), 0);
	assert_string_equal(buf_str(&b), "a\\x00b\\x1b");
	buf_dispose(&b);
	buf_init(&b, 3);
	assert_int_equal(text_clean_buf(&b, "\x1b\x1b", 2, 0), SC_ETOOBIG);
	buf_dispose(&b);
}

/* Every byte value, alone and after a lead byte: the output is clean. */
static void every_byte(void **state)
{
	char in[4], out[64];

	for (int a = 1; a < 256; a++) {
		for (int c = 0; c < 256; c += 17) {
			in[0] = (char)a;
			in[1] = (char)(c ? c : 'x');
			in[2] = '\0';
			text_clean(out, sizeof(out), in, 0);
			assert_clean_text(out, false);
			char again[64];
			text_clean(again, sizeof(again), out, 0);
			assert_string_equal(again, out);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(table),
		cmocka_unit_test(cuts_are_whole),
		cmocka_unit_test(buffers),
		cmocka_unit_test(every_byte),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
