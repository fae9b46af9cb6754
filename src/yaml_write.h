/*
 * yaml_write.h - the one writer of YAML text that surecron prints for a
 * config file (`import-crontab`; issue 44).
 *
 * What it writes is pure printable ASCII (plus the caller's own line
 * breaks), so no byte of a value can end a comment or a scalar early or
 * start a key: YAML ends a line at LF, CR, NEL (U+0085), LS (U+2028) and
 * PS (U+2029), folds them inside quotes, and the config loader refuses
 * DEL and the C1 controls anywhere in the file.
 *
 *   yaml_write_str      a double-quoted scalar with the same value:
 *                       '"' and '\' escaped, every other byte outside
 *                       0x20-0x7E as \t \n \r or \xNN, every non-ASCII
 *                       character as \uNNNN or \UNNNNNNNN. Text that is
 *                       not valid UTF-8 has no YAML form (a YAML string
 *                       is Unicode text): SC_EINVAL, nothing written.
 *   yaml_write_comment  "PREFIX TEXT\n" for a person to read: the text
 *                       with '\' doubled, tab kept, every other byte
 *                       outside 0x20-0x7E as \xNN and every valid UTF-8
 *                       character above U+007F as \uNNNN (\UNNNNNNNN), so
 *                       any bytes at all can be shown.
 *
 * Pure functions, no state: thread-safe. On failure b may hold part of
 * what was being written (its cap was reached: SC_ETOOBIG) except where
 * said otherwise.
 */
#ifndef SURECRON_YAML_WRITE_H
#define SURECRON_YAML_WRITE_H

#include "buf.h"

/*
 * Appends s (a C string) to b as a YAML double-quoted scalar whose value
 * is exactly s. Returns 0; SC_EINVAL when s is not valid UTF-8 (b is
 * unchanged); SC_ENOMEM or SC_ETOOBIG.
 */
int yaml_write_str(struct buf *b, const char *s);

/*
 * Appends prefix (the caller's ASCII text, e.g. "  # line 3: ", which must
 * hold no line break), then s escaped as above, then "\n". Any bytes in s
 * are fine. Returns 0, SC_ENOMEM or SC_ETOOBIG.
 */
int yaml_write_comment(struct buf *b, const char *prefix, const char *s);

#endif
