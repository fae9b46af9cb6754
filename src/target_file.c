/*
 * target_file.c - the `file` target: appends the message object as one
 * JSON line.
 *
 * Invariants: the file is opened O_APPEND (several writers never
 * interleave inside a line written by one write()) and created 0600
 * (messages may hold private report text); a send succeeds only after the
 * line is fsync'd, so a send guard written afterwards never claims a line
 * that a power cut could take back.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "delivery.h"
#include "err.h"

int target_file_send(const struct delivery_send *s, struct sc_err *err)
{
	const struct target_spec *t = s->target;
	size_t len = strlen(s->body);
	char *line;
	int fd, rc = 0;

	if (!t->path || !*t->path)
		return sc_err_set(err, SC_ECONFIG, "target %s: no path", t->name);
	line = malloc(len + 1);
	if (!line)
		return sc_err_set(err, SC_ENOMEM, "out of memory");
	memcpy(line, s->body, len);
	line[len] = '\n';
	fd = open(t->path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		rc = sc_err_set(err, SC_EDELIVERY, "target %s: open %s: %s",
				t->name, t->path, strerror(errno));
		goto done;
	}
	/* One write() for the whole line when the kernel takes it; a short
	 * write continues where it stopped. */
	for (size_t off = 0; off < len + 1;) {
		ssize_t n = write(fd, line + off, len + 1 - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			rc = sc_err_set(err, SC_EDELIVERY,
					"target %s: write %s: %s", t->name,
					t->path, strerror(errno));
			goto done;
		}
		off += (size_t)n;
	}
	if (fsync(fd) != 0)
		rc = sc_err_set(err, SC_EDELIVERY, "target %s: fsync %s: %s",
				t->name, t->path, strerror(errno));
done:
	if (fd >= 0 && close(fd) != 0 && !rc)
		rc = sc_err_set(err, SC_EDELIVERY, "target %s: close %s: %s",
				t->name, t->path, strerror(errno));
	free(line);
	return rc;
}
