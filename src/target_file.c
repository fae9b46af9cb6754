/*
 * target_file.c - the `file` target: appends the message object as one
 * JSON line.
 *
 * Invariants:
 *   - a line that is in the file is whole: every append is all or
 *     nothing. The size before the append is remembered, and on any
 *     failure (a short or failed write, a full disk, a failed fsync) the
 *     file is truncated back to it before the error is returned, so a
 *     retry never glues its line to half of an earlier one (issue 10);
 *   - appends are serialised by an exclusive flock(2) on the file, held
 *     from the size look to the fsync (or the truncation): several
 *     daemons may share one file (they do on one host; flock is
 *     per-open-file, so two threads of one process serialise too), and a
 *     truncation back must never cut a line another writer appended
 *     after ours;
 *   - a torn tail left by a writer that died inside its write (SIGKILL,
 *     power cut; its send was never guarded, so it is sent again) is cut
 *     back to the last newline before the next line is appended;
 *   - the file is opened O_APPEND and created 0600 (messages may hold
 *     private report text); a send succeeds only after the line is
 *     fsync'd, so a send guard written afterwards never claims a line
 *     that a power cut could take back.
 *
 * If the truncation itself fails (the file system refuses it), the error
 * says so: the partial line is then left, and named.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "err.h"
#include "target.h"

/* Size of the file up to and including its last '\n' (0 when it has
 * none); size when it ends with one. -errno on a read error. */
static off_t whole_lines_end(int fd, off_t size)
{
	char buf[4096];
	off_t end = size;

	while (end > 0) {
		size_t n = end > (off_t)sizeof(buf) ? sizeof(buf) : (size_t)end;
		ssize_t got = pread(fd, buf, n, end - (off_t)n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got != (ssize_t)n)
			return got < 0 ? -errno : -EIO;
		for (size_t i = n; i > 0; i--)
			if (buf[i - 1] == '\n')
				return end - (off_t)n + (off_t)i;
		end -= (off_t)n;
	}
	return 0;
}

/* Writes all of buf at the end of fd (O_APPEND); 0 or -errno (-ENOSPC for
 * a write that made no progress without saying why). */
static int append_all(int fd, const char *buf, size_t len)
{
	for (size_t off = 0; off < len;) {
		ssize_t n = write(fd, buf + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ENOSPC;
		off += (size_t)n;
	}
	return 0;
}

int target_file_send(const struct target_copy *s, const char *key,
		     struct sc_err *err)
{
	const struct target_spec *t = s->target;
	size_t len = strlen(s->body);
	char *line;
	int fd, rc = 0;
	struct stat st;
	off_t before = -1;

	if (!t->path || !*t->path)
		return sc_err_set(err, SC_ECONFIG, "target %s: no path", t->name);
	line = malloc(len + 1);
	if (!line)
		return sc_err_set(err, SC_ENOMEM, "out of memory");
	memcpy(line, s->body, len);
	line[len] = '\n';
	fd = open(t->path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		rc = sc_err_set(err, SC_EDELIVERY, "target %s: open %s: %s",
				t->name, t->path, strerror(errno));
		goto done;
	}
	while (flock(fd, LOCK_EX) != 0) {
		if (errno != EINTR) {
			rc = sc_err_set(err, SC_EDELIVERY,
					"target %s: lock %s: %s", t->name,
					t->path, strerror(errno));
			goto done;
		}
	}
	if (fstat(fd, &st) != 0) {
		rc = sc_err_set(err, SC_EDELIVERY, "target %s: stat %s: %s",
				t->name, t->path, strerror(errno));
		goto done;
	}
	before = whole_lines_end(fd, st.st_size);
	if (before < 0) {
		rc = sc_err_set(err, SC_EDELIVERY, "target %s: read %s: %s",
				t->name, t->path, strerror((int)-before));
		before = -1;
		goto done;
	}
	if (before < st.st_size && ftruncate(fd, before) != 0) {
		rc = sc_err_set(err, SC_EDELIVERY,
				"target %s: cut a torn last line of %s: %s",
				t->name, t->path, strerror(errno));
		before = -1;
		goto done;
	}
	int wrc = append_all(fd, line, len + 1);
	if (wrc) {
		rc = sc_err_set(err, SC_EDELIVERY, "target %s: write %s: %s",
				t->name, t->path, strerror(-wrc));
		goto done;
	}
	if (fsync(fd) != 0)
		rc = sc_err_set(err, SC_EDELIVERY, "target %s: fsync %s: %s",
				t->name, t->path, strerror(errno));
done:
	if (rc && fd >= 0 && before >= 0) {
		/* All or nothing: take back whatever part of the line got
		 * in, still under the lock. */
		if (ftruncate(fd, before) != 0 && err) {
			int e = errno;
			char why[sizeof(err->msg)];
			memcpy(why, err->msg, sizeof(why));
			err->code = 0;
			sc_err_set(err, SC_EDELIVERY,
				   "%s; a partial line is left: truncate %s back "
				   "to %lld bytes failed: %s", why, t->path,
				   (long long)before, strerror(e));
		} else {
			(void)fsync(fd);
		}
	}
	/* Closing releases the lock. A close error after a good fsync
	 * changes nothing: the line is whole and durable, and reporting a
	 * failure would have it sent again. */
	if (fd >= 0)
		close(fd);
	free(line);
	return rc;
}
