/*
 * text.h - text meant for a person, made safe to print on a terminal.
 *
 * Task output, HTTP bodies, config values and command-line arguments may
 * hold escape sequences (ESC [2J clears a screen, ESC ] 0; sets a window
 * title, BEL rings) and bytes that are not UTF-8. Everything surecron
 * prints for a person (the CLI's human output, error messages, log lines)
 * passes through text_clean, which makes such bytes visible instead:
 *
 *   C0 controls, DEL        ->  \t \n \r, or \xNN  ("\x1b", "\x07", "\x7f")
 *   C1 controls U+0080-9F   ->  \u0080 .. \u009f   (8-bit CSI and friends)
 *   bidirectional and zero-width format characters (U+200B-200F,
 *   U+2028-202E, U+2066-2069, U+FEFF), which reorder or hide what is shown
 *                           ->  \u202e ...
 *   a byte that is not part of valid UTF-8 (stray continuation, overlong
 *   form, surrogate, above U+10FFFF, a sequence cut short)
 *                           ->  \xNN, one per byte
 *
 * Everything else (printable ASCII and valid UTF-8) is copied unchanged.
 * Backslashes are not escaped, so cleaning is idempotent: the output holds
 * only printable text, and cleaning it again changes nothing. That lets
 * each layer clean what it prints without double escapes.
 *
 * JSON output does not go through here: jansson escapes control characters
 * itself (\u001b), and readers of JSON want the original text.
 *
 * The second cleaner, text_utf8_clean, is for text that is kept, not
 * printed: task results and the messages composed from them must be valid
 * UTF-8 (jansson refuses anything else), so it repairs rather than shows,
 * each bad byte becoming '?', and keeps control characters (JSON escapes
 * them). text_excerpt builds on it: the short, one-line piece of a
 * response body that error messages quote.
 *
 * Pure functions, no global state: thread-safe.
 */
#ifndef SURECRON_TEXT_H
#define SURECRON_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

/* Flag: '\n' passes unchanged (multi-line output such as a report);
 * without it a newline is written as "\n". */
#define TEXT_KEEP_NL 0x1u

/*
 * Cleans the C string s into out (size n > 0; always NUL-terminated).
 * When the result does not fit it is cut before the first character or
 * escape that does not fit whole. Returns out.
 */
char *text_clean(char *out, size_t n, const char *s, unsigned flags);

/*
 * Appends the len bytes at s, cleaned, to b. A NUL byte is shown as \x00.
 * Returns 0, SC_ENOMEM or SC_ETOOBIG (b's cap; b keeps what fitted).
 */
int text_clean_buf(struct buf *b, const char *s, size_t len, unsigned flags);

/*
 * Length of the valid UTF-8 sequence at s (at most len bytes, len >= 1)
 * and its code point in *cp; 0 when s does not start one (RFC 3629: no
 * overlong form, no surrogate, nothing above U+10FFFF, not cut short).
 * The one judge of UTF-8 for every cleaner and writer of text.
 */
size_t text_utf8_seq(const unsigned char *s, size_t len, uint32_t *cp);

/* True when s is already clean: text_clean would copy it unchanged. */
bool text_printable(const char *s, unsigned flags);

/*
 * A copy of p[0..n) that is valid UTF-8 without NUL bytes: each byte that
 * is not part of a valid sequence (RFC 3629, as text_clean judges it)
 * becomes '?', NULs are dropped, everything else is kept. Allocated (free
 * with free()); NULL only when out of memory.
 */
char *text_utf8_clean(const char *p, size_t n);

/* Bytes of a body an excerpt quotes at most; an excerpt needs a buffer of
 * TEXT_EXCERPT_SIZE (the bytes, "..." and the NUL). */
#define TEXT_EXCERPT_MAX 200
#define TEXT_EXCERPT_SIZE (TEXT_EXCERPT_MAX + 8)

/*
 * The excerpt of a response body (len bytes at body; body may be NULL)
 * for an error message, into out (size n): its first TEXT_EXCERPT_MAX
 * bytes through text_utf8_clean, "..." when it was longer, and every
 * control character (below 0x20) turned into a space, so it is one line
 * of valid UTF-8. Out of memory gives an empty excerpt. Returns out.
 */
char *text_excerpt(char *out, size_t n, const char *body, size_t len);

#endif
