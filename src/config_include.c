/*
 * config_include.c - the files of a config: the file-trust rule and the
 * read of each file (the main file and every fragment), the main file's
 * `include:` and its fragments, and the read-ahead thread that parses
 * them.
 *
 * `include:` (issue 15): the main file's patterns are matched (glob(3),
 * relative to its folder, sorted) into fragments, read one after the
 * other, each with its own per-file limits, and each one's tree freed
 * once its targets, auth and schedules are read (config.c); a file is
 * read once, however many patterns match it.
 *
 * Invariants:
 *   - Every file read as config passes the file-trust rule (a regular
 *     file only its owner, root or surecron's user, may write), judged
 *     on the open file; `check` makes a refusal a warning.
 *   - Every problem names its file: a fragment's problems carry the
 *     fragment's printed name (config_problems.at_file while it is
 *     read), the main file's print as they always did.
 *   - A fragment holds schedules, targets and auth only, and includes
 *     nothing.
 *   - The read-ahead changes when a fragment is parsed, never what the
 *     load does or says: the second stages run on the loading thread in
 *     file order, and at most AHEAD_TREES trees wait besides the one
 *     being read.
 */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "config_int.h"
#include "thread.h"

/* Records "warning: path: message" at node n among the load's warnings
 * (config_locs_warns: `check` prints them, --strict makes them errors). */
static void warn_at_node(struct config_pc *pc, const struct config_node *n,
			 const char *path, const char *fmt, ...)
	SC_PRINTF(4, 5);

static void warn_at_node(struct config_pc *pc, const struct config_node *n,
			 const char *path, const char *fmt, ...)
{
	struct config_problems *w = config_locs_warns(pc->c->locs);
	char msg[SC_ERR_MSG_MAX - 64];
	va_list ap;

	if (!w)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (config_problem_add(w, n->line, n->col, "warning: %s: %s", path,
			       msg))
		config_oom(pc);
}

/*
 * The file-trust rule (issue 44), one for every file read as config (the
 * main file and each fragment), as cron has for /etc/cron.d: a regular
 * file that no one but its owner can write (no group or other write bit)
 * and whose owner is root or the user running surecron (its effective
 * uid). Whoever can write a config chooses the commands the daemon runs
 * as its user; a file another user owns or may write hands them that.
 * Returns NULL when st passes, else why not (into why, size n).
 */
static const char *untrusted(const struct stat *st, char *why, size_t n)
{
	uid_t me = geteuid();

	if (st->st_mode & (S_IWGRP | S_IWOTH)) {
		snprintf(why, n, "not trusted: writable by %s (mode %04o); "
			 "a config file must be writable by its owner only "
			 "(chmod go-w)", st->st_mode & S_IWOTH ? "any user"
			 : "its group", (unsigned)(st->st_mode & 07777));
		return why;
	}
	if (st->st_uid != 0 && st->st_uid != me) {
		snprintf(why, n, "not trusted: owned by uid %lu, neither root "
			 "nor the user surecron runs as (uid %lu)",
			 (unsigned long)st->st_uid, (unsigned long)me);
		return why;
	}
	return NULL;
}

/* The kind of a file that is not a regular one, for the message. */
static const char *file_kind(mode_t m)
{
	return S_ISDIR(m) ? "a folder" : S_ISFIFO(m) ? "a FIFO"
	       : S_ISSOCK(m) ? "a socket" : S_ISCHR(m) ? "a character device"
	       : S_ISBLK(m) ? "a block device" : "not a regular file";
}

/*
 * Reads the whole file, refusing what is not a regular file, what the
 * file-trust rule refuses (untrusted(); into warns instead, as a warning,
 * when warns is not NULL: `check`) or what is too big. Returns 0 or a
 * negative code after recording a problem.
 *
 * The type is known before the file is opened (stat), so a FIFO, a
 * device or a socket a pattern matched is never opened: opening a FIFO
 * for reading waits for a writer, and opening a device may act on it
 * (issue 44). The open itself is O_NONBLOCK and O_NOCTTY, and the rules
 * are judged again on what fstat says of the open file, so a file
 * swapped in between the stat and the open is judged too: the bytes read
 * are those of the file judged, with no window between.
 */
int config_read_file(const char *path, char **out, size_t *len,
		     struct config_problems *probs,
		     struct config_problems *warns)
{
	struct stat st;
	char why[200];
	const char *bad_trust;

	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		config_problem_add(probs, 0, 0, "not a regular file but %s "
				   "(not opened)", file_kind(st.st_mode));
		return SC_ECONFIG;
	}
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);

	if (fd < 0) {
		int e = errno;
		config_problem_add(probs, 0, 0, "cannot open: %s",
				   strerror(e));
		return e == ENOENT ? SC_ENOENT : e == EACCES ? SC_EACCES
							      : SC_EIO;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		config_problem_add(probs, 0, 0, "not a regular file");
		return SC_ECONFIG;
	}
	if ((bad_trust = untrusted(&st, why, sizeof(why)))) {
		if (!warns) {
			close(fd);
			config_problem_add(probs, 0, 0, "%s", bad_trust);
			return SC_ECONFIG;
		}
		config_problem_add(warns, 0, 0, "warning: %s (the daemon and "
				   "every other command refuse it)",
				   bad_trust);
	}
	if (st.st_size > CONFIG_MAX_BYTES) {
		close(fd);
		config_problem_add(probs, 1, 1, "file is too large (%lld "
				   "bytes; the limit is %d)",
				   (long long)st.st_size, CONFIG_MAX_BYTES);
		return SC_ECONFIG;
	}
	/* Read up to the cap + 1 in case the file grew since fstat. The
	 * buffer starts at the file's size (and a page, to see it grew):
	 * one of the cap's size per file cost `status NAME` a fresh
	 * mapping and its page faults for every fragment it looks at. */
	size_t room = (size_t)st.st_size + 4096, n = 0;
	if (room > (size_t)CONFIG_MAX_BYTES + 1)
		room = (size_t)CONFIG_MAX_BYTES + 1;
	char *b = malloc(room + 1);
	if (!b) {
		close(fd);
		config_problem_oom(probs);
		return SC_ENOMEM;
	}
	while (n < (size_t)CONFIG_MAX_BYTES + 1) {
		if (n == room) {
			size_t more = room * 2 > (size_t)CONFIG_MAX_BYTES + 1
					      ? (size_t)CONFIG_MAX_BYTES + 1
					      : room * 2;
			char *nb = realloc(b, more + 1);
			if (!nb) {
				free(b);
				close(fd);
				config_problem_oom(probs);
				return SC_ENOMEM;
			}
			b = nb;
			room = more;
		}
		ssize_t r = read(fd, b + n, room - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;
			free(b);
			close(fd);
			config_problem_add(probs, 0, 0, "read error: %s",
					   strerror(e));
			return SC_EIO;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	if (n > CONFIG_MAX_BYTES) {
		free(b);
		config_problem_add(probs, 1, 1, "file is too large (the limit "
				   "is %d bytes)", CONFIG_MAX_BYTES);
		return SC_ECONFIG;
	}
	b[n] = '\0';
	*out = b;
	*len = n;
	return 0;
}

/* The absolute folder of path. NULL when out of memory or unresolvable. */
char *config_folder_of(const char *path)
{
	char *copy = strdup(path);
	if (!copy)
		return NULL;
	char *slash = strrchr(copy, '/');
	const char *d = ".";
	if (slash == copy)
		d = "/";
	else if (slash) {
		*slash = '\0';
		d = copy;
	}
	char *abs = realpath(d, NULL);
	free(copy);
	return abs;
}

/* True when text holds no YAML document: only blank and comment lines
 * (an empty fragment is allowed, like an empty file in /etc/cron.d). */
static bool text_blank(const char *t, size_t len)
{
	bool in_comment = false;

	for (size_t i = 0; i < len; i++) {
		char ch = t[i];
		if (ch == '\n' || ch == '\r')
			in_comment = false;
		else if (in_comment || ch == ' ' || ch == '\t')
			continue;
		else if (ch == '#')
			in_comment = true;
		else
			return false;
	}
	return true;
}

/* The folder part of path as written, with the glob characters escaped,
 * plus "/"; "" when path has no folder. Caller frees. */
static char *glob_prefix(const char *path)
{
	const char *slash = strrchr(path, '/');
	size_t n = slash ? (size_t)(slash - path) + 1 : 0;
	char *out = malloc(2 * n + 1), *o = out;

	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (strchr("*?[]\\", path[i]))
			*o++ = '\\';
		*o++ = path[i];
	}
	*o = '\0';
	return out;
}

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The slot of path in pc->seen: the one that holds it, or the empty one
 * where it would go. cap_seen must be non-zero. */
static size_t seen_slot(const struct config_pc *pc, const char *path)
{
	size_t mask = pc->cap_seen - 1, i = config_name_hash(path) & mask;

	while (pc->seen[i] &&
	       strcmp(pc->c->files[pc->seen[i] - 1].path, path) != 0)
		i = (i + 1) & mask;
	return i;
}

/* Records file ix (its path resolved, not NULL) as in the config.
 * False when out of memory. */
static bool seen_add(struct config_pc *pc, size_t ix)
{
	if (2 * (pc->n_seen + 1) > pc->cap_seen) {
		size_t cap = pc->cap_seen ? 2 * pc->cap_seen : 64;
		size_t *old = pc->seen, old_cap = pc->cap_seen;
		if (!(pc->seen = calloc(cap, sizeof(*pc->seen)))) {
			pc->seen = old;
			return false;
		}
		pc->cap_seen = cap;
		for (size_t i = 0; i < old_cap; i++)
			if (old[i])
				pc->seen[seen_slot(pc, pc->c->files[old[i] -
						   1].path)] = old[i];
		free(old);
	}
	size_t at = seen_slot(pc, pc->c->files[ix].path);
	if (!pc->seen[at]) {
		pc->seen[at] = ix + 1;
		pc->n_seen++;
	}
	return true;
}

/* Adds the fragment at `shown` (a path to open) unless that file is
 * already in the config (the main file, or matched by an earlier
 * pattern): a file is read once. The lookup is a hash table of the
 * files' resolved paths (O(1) a fragment; a compare with every earlier
 * file made 20,000 fragments cost seconds: issue 44). */
static void add_fragment(struct config_pc *pc, const char *shown)
{
	char *real = realpath(shown, NULL);
	char *dir = config_folder_of(shown);

	/* files[i].path is each file's resolved path (the main file's
	 * folder resolved, its own name as given). The main file joins
	 * the table with the first fragment. */
	if (pc->n_seen == 0 && pc->n_srcs && pc->c->files[0].path &&
	    !seen_add(pc, 0)) {
		free(real);
		free(dir);
		config_oom(pc);
		return;
	}
	if (real && pc->cap_seen && pc->seen[seen_slot(pc, real)]) {
		free(real);
		free(dir);
		return;
	}
	if (pc->n_srcs == pc->cap_srcs) {
		/* Doubling: one realloc a fragment copied both arrays
		 * each time. */
		size_t cap = pc->cap_srcs < 8 ? 8 : 2 * pc->cap_srcs;
		struct config_src *v = realloc(pc->srcs, cap * sizeof(*v));
		if (v)
			pc->srcs = v;
		struct config_file *f = realloc(pc->c->files, cap *
						sizeof(*f));
		if (f)
			pc->c->files = f;
		if (!v || !f) {
			free(real);
			free(dir);
			config_oom(pc);
			return;
		}
		pc->cap_srcs = cap;
	}
	struct config_src *v = pc->srcs;
	struct config_file *f = pc->c->files;
	char *sh = strdup(shown);
	if (!sh || !dir) {
		free(sh);
		free(real);
		free(dir);
		config_oom(pc);
		return;
	}
	v[pc->n_srcs] = (struct config_src){.shown = sh, .dir = dir};
	f[pc->n_srcs] = (struct config_file){.path = real};
	if (!real) {
		/* Vanished since the glob: read_file says so. */
		const char *base = strrchr(shown, '/');
		base = base ? base + 1 : shown;
		size_t len = strlen(dir) + strlen(base) + 2;
		if ((f[pc->n_srcs].path = malloc(len)))
			snprintf(f[pc->n_srcs].path, len, "%s/%s", dir, base);
	}
	pc->n_srcs++;
	pc->c->n_files = pc->n_srcs;
	if (real && !seen_add(pc, pc->n_srcs - 1))
		config_oom(pc);
}

static bool has_glob(const char *s)
{
	return strpbrk(s, "*?[") != NULL;
}

/*
 * `include: [PATTERN, ...]` of the main file: each pattern, relative to
 * the main file's folder (as written, so the fragments print as
 * "conf.d/teams.yaml" when the main file is "surecron.yaml"), matched by
 * glob(3) and sorted; a pattern matching nothing, or a folder, is a
 * load-time warning (a folder is passed over); a plain path (no glob
 * character) must exist and be a file.
 */
void config_parse_include(struct config_pc *pc, const char *path,
			  const struct config_node *root)
{
	const struct config_node *v = config_yaml_get(root, "include");
	char ip[PATH_MAX_KEY];

	if (!v)
		return;
	if (v->kind == NODE_SCALAR && !v->is_null) {
		config_bad(pc, v,
		    "include", "expected a list of file patterns, "
		    "e.g. include: [\"conf.d/*.yaml\"]");
		return;
	}
	if (!config_want(pc, v, "include", NODE_SEQ))
		return;
	char *prefix = glob_prefix(path);
	if (!prefix) {
		config_oom(pc);
		return;
	}
	for (size_t i = 0; i < v->n; i++) {
		const struct config_node *it = v->kids[i];
		config_pindex(ip, sizeof(ip), "include", i);
		config_locs_add(pc->c->locs, ip, it->line, it->col);
		if (!config_want(pc, it, ip, NODE_SCALAR))
			continue;
		if (!it->str[0]) {
			config_bad(pc, it, ip,
			    "an empty pattern; expected a file or "
			    "a glob pattern, e.g. \"conf.d/*.yaml\"");
			continue;
		}
		bool abs = it->str[0] == '/';
		size_t len = strlen(prefix) + strlen(it->str) + 1;
		char *pat = malloc(len);
		if (!pat) {
			config_oom(pc);
			break;
		}
		snprintf(pat, len, "%s%s", abs ? "" : prefix, it->str);
		if (!has_glob(it->str)) {
			struct stat st;
			/* The prefix is escaped for glob only: a plain path
			 * uses the folder as written. */
			const char *slash = strrchr(path, '/');
			size_t pl = slash ? (size_t)(slash - path) + 1 : 0;
			snprintf(pat, len, "%.*s%s", abs ? 0 : (int)pl, path,
				 it->str);
			if (stat(pat, &st) != 0)
				config_bad(pc, it, ip, "%s: %s", it->str,
				    strerror(errno));
			else if (!S_ISREG(st.st_mode))
				config_bad(pc, it, ip,
				    "%s is not a regular file",
				    it->str);
			else
				add_fragment(pc, pat);
			free(pat);
			continue;
		}
		glob_t g;
		int grc = glob(pat, 0, NULL, &g);
		free(pat);
		if (grc == GLOB_NOMATCH) {
			warn_at_node(pc, it, ip, "\"%s\" matches no file",
				     it->str);
			continue;
		}
		if (grc == GLOB_NOSPACE) {
			config_oom(pc);
			break;
		}
		if (grc) {
			config_bad(pc, it, ip,
			    "cannot read the folder of \"%s\"",
			    it->str);
			globfree(&g);
			continue;
		}
		/* glob sorts by strcoll; the order is the bytes' order,
		 * whatever the locale. */
		qsort(g.gl_pathv, g.gl_pathc, sizeof(char *), str_cmp);
		for (size_t k = 0; k < g.gl_pathc; k++) {
			struct stat st;
			/* A folder the pattern matched is passed over, as
			 * cron.d does, but said: a "teams.yaml/" made by
			 * mistake would otherwise hide its schedules. */
			if (stat(g.gl_pathv[k], &st) == 0 &&
			    S_ISDIR(st.st_mode))
				warn_at_node(pc, it, ip, "\"%s\" matches the "
					     "folder %s, passed over", it->str,
					     g.gl_pathv[k]);
			else
				add_fragment(pc, g.gl_pathv[k]);
		}
		globfree(&g);
	}
	free(prefix);
}

/*
 * Reads and parses fragment i into pc->srcs[i].root (NULL when empty),
 * checking its top-level keys: schedules, targets and auth only.
 */
/* The indentation of line t (spaces), or -1 when it is blank, a comment
 * or holds a tab before its content (then only the full parse may judge). */
static long line_indent(const char *t, const char *end, bool *tab)
{
	const char *p = t;

	while (p < end && *p == ' ')
		p++;
	if (p < end && *p == '\t')
		*tab = true;
	if (p == end || *p == '\n' || *p == '\r' || *p == '#')
		return -1;
	return p - t;
}

/*
 * The light load of `status NAME` (config_load_light's only): the part of
 * a fragment that defines the schedule name, as a text of its own whose
 * lines keep their numbers (blank lines, then "schedules:" on the line
 * above the name's), so its problems point where they are in the file.
 * Only for plain block style: a `schedules:` key at the top, the name a
 * plain key at the indentation of its siblings, once, no tab, no
 * directive. NULL (malloc'd otherwise, *out_len set): anything else, and
 * the caller parses the whole fragment.
 */
static char *only_block(const char *t, size_t len, const char *name,
			size_t *out_len)
{
	const char *end = t + len, *from = NULL, *to = end;
	size_t nlen = strlen(name), line = 1, at_line = 0;
	bool in_sched = false, tab = false;
	long ci = -1;

	for (const char *p = t; p < end; line++) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;
		long ind = line_indent(p, eol, &tab);
		if (tab)
			return NULL;
		if (ind == 0) {
			if (*p == '%' || *p == '-' || *p == '.' || *p == '"' ||
			    *p == '\'' || *p == '{' || *p == '?')
				return NULL;
			if (from && to == end)
				to = p;
			in_sched = false;
			if (eol - p >= 10 && memcmp(p, "schedules:", 10) == 0) {
				const char *q = p + 10;
				while (q < eol && (*q == ' ' || *q == '\r'))
					q++;
				if (q < eol && *q != '#')
					return NULL; /* flow style */
				in_sched = true;
				ci = -1;
			}
		} else if (ind > 0 && in_sched) {
			if (ci < 0)
				ci = ind;
			if (ind < ci)
				return NULL;
			if (ind == ci && from && to == end)
				to = p;
			const char *k = p + ind;
			if (ind == ci && (size_t)(eol - k) > nlen &&
			    memcmp(k, name, nlen) == 0 && k[nlen] == ':' &&
			    (k + nlen + 1 == eol || k[nlen + 1] == ' ' ||
			     k[nlen + 1] == '\r')) {
				if (from)
					return NULL; /* twice: the full parse */
				from = p;
				to = end;
				at_line = line;
			}
		}
		p = nl ? nl + 1 : end;
	}
	if (!from || at_line < 2)
		return NULL;
	size_t pad = at_line - 2, body = (size_t)(to - from);
	char *out = malloc(pad + 11 + body + 1);
	if (!out)
		return NULL;
	memset(out, '\n', pad);
	memcpy(out + pad, "schedules:\n", 11);
	memcpy(out + pad + 11, from, body);
	out[pad + 11 + body] = '\0';
	*out_len = pad + 11 + body;
	return out;
}

/*
 * A fragment's first stage: read and, unless the light load skips it,
 * parsed into sr->root (NULL: blank, skipped or null), its problems in
 * sr->probs and its status in sr->rc. It reads the load's settings and
 * writes srcs[i] only, so two fragments' stages may run at once
 * (read-ahead below); read_fragment takes the result in file order.
 */
static void parse_fragment(const struct config_pc *pc, size_t i)
{
	struct config_src *sr = &pc->srcs[i];
	struct config_problems *probs = &sr->probs;
	size_t len = 0;

	probs->at_file = sr->warns.at_file = sr->shown;
	probs->at_file_ix = sr->warns.at_file_ix = i;
	sr->rc = config_read_file(sr->shown, &sr->text, &len, probs,
			   pc->trust_warns ? &sr->warns : NULL);
	sr->unread = sr->rc != 0;
	if (sr->rc || text_blank(sr->text, len))
		return;
	/* The light load: a fragment that cannot define the schedule asked
	 * for (its bytes do not hold the name) is read, never parsed. (A
	 * mapping instead of the read was slower here: the map and unmap
	 * cost more than the copy of a fragment of 1,000 schedules.) */
	if (pc->no_schedules ||
	    (pc->only && !memmem(sr->text, len, pc->only, strlen(pc->only))))
		return;
	struct config_node *root = NULL;
	size_t ml = 0;
	char *mini = pc->only ? only_block(sr->text, len, pc->only, &ml)
			      : NULL;
	if (mini) {
		/* Only the name's block; when it does not parse on its own
		 * (a construct only_block misjudged), the whole fragment is
		 * parsed, and its problems are the ones said. */
		struct config_problems scratch = {
			.at_file = probs->at_file,
			.at_file_ix = probs->at_file_ix};
		root = config_yaml_parse(mini, ml, &scratch);
		config_problems_dispose(&scratch);
		if (root) {
			free(sr->text);
			sr->text = mini;
			len = ml;
		} else {
			free(mini);
		}
	}
	if (!root)
		root = config_yaml_parse(sr->text, len, probs);
	if (!root) {
		sr->rc = SC_ECONFIG;
		return;
	}
	if (root->kind == NODE_SCALAR && root->is_null) {
		config_yaml_free(root);
		return;
	}
	sr->root = root;
}

/* The second stage of fragment i, on the loading thread: its first
 * stage's problems join the load's, then its top level is judged. */
int config_read_fragment(struct config_pc *pc, size_t i)
{
	static const char *const frag[] = {"schedules", "targets", "auth",
					   NULL};
	static const char *const main_only[] = {
		"store", "worker", "alerts", "heartbeat", "retention", "http",
		"status_socket", NULL};
	struct config_src *sr = &pc->srcs[i];
	struct config_node *root = sr->root;

	config_pc_enter(pc, i);
	config_problems_move(pc->probs, &sr->probs);
	if (sr->warns.n) {
		struct config_problems *w = config_locs_warns(pc->c->locs);
		if (w)
			config_problems_move(w, &sr->warns);
		config_problems_dispose(&sr->warns);
	}
	if (sr->rc || !root)
		return sr->rc;
	if (root->kind != NODE_MAP) {
		config_problem_add(pc->probs, root->line, root->col,
				   "expected a mapping at the top level, got "
				   "%s", config_yaml_kind(root));
		config_yaml_free(root);
		sr->root = NULL;
		return SC_ECONFIG;
	}
	for (size_t k = 0; k + 1 < root->n; k += 2) {
		const struct config_node *key = root->kids[k];
		if (strcmp(key->str, "include") == 0) {
			config_bad(pc, key,
			    "include", "an included file cannot "
			    "include others (only the main file's include: "
			    "is read)");
			continue;
		}
		for (size_t m = 0; main_only[m]; m++)
			if (strcmp(key->str, main_only[m]) == 0)
				config_bad(pc, key, key->str,
				    "only the main file may "
				    "set %s (an included file holds "
				    "schedules, targets and auth only)",
				    key->str);
	}
	/* Unknown keys and repeats, with the usual "did you mean", over the
	 * keys not reported above (a shallow copy that borrows the kids). */
	struct config_node rest = *root;
	rest.kids = malloc((root->n + 1) * sizeof(struct config_node *));
	if (!rest.kids)
		return SC_ENOMEM;
	rest.n = 0;
	for (size_t k = 0; k + 1 < root->n; k += 2) {
		bool reported = strcmp(root->kids[k]->str, "include") == 0;
		for (size_t m = 0; main_only[m]; m++)
			reported |= strcmp(root->kids[k]->str, main_only[m]) ==
				    0;
		if (reported)
			continue;
		rest.kids[rest.n++] = root->kids[k];
		rest.kids[rest.n++] = root->kids[k + 1];
	}
	config_map_keys(pc, &rest, "", frag, "an included file");
	free(rest.kids);
	return 0;
}

/*
 * Read-ahead: the first stages of the fragments (read, libyaml, the tree:
 * most of a large config's load) run on the loading thread and one
 * helper at once, and the second stages on the loading thread, in file
 * order, so what the load does and says does not depend on which thread
 * parsed what. Each thread takes the next fragment not yet taken, but
 * never more than AHEAD_TREES past the one the load is at, so at most
 * that many trees are held besides the one being read. Used for two
 * fragments or more by check (config_parse) and the light load of
 * status, not by config_load (see parse_config); a load that cannot
 * start the helper parses them all on its own thread.
 */
#define AHEAD_TREES 2

/* Takes the next fragment to parse when there is one within reach (its
 * index, mu held), else 0. */
static size_t ahead_take(struct config_ahead *a)
{
	if (a->next < a->pc->n_srcs && a->next < a->at + AHEAD_TREES)
		return a->next++;
	return 0;
}

/* Parses fragment k (mu held on entry and on return). */
static void ahead_parse(struct config_ahead *a, size_t k)
{
	pthread_mutex_unlock(&a->mu);
	parse_fragment(a->pc, k);
	pthread_mutex_lock(&a->mu);
	a->pc->srcs[k].parsed = true;
	pthread_cond_broadcast(&a->cv);
}

static void *ahead_main(void *arg)
{
	struct config_ahead *a = arg;
	size_t k;

	pthread_mutex_lock(&a->mu);
	while (a->next < a->pc->n_srcs) {
		if ((k = ahead_take(a)))
			ahead_parse(a, k);
		else
			pthread_cond_wait(&a->cv, &a->mu);
	}
	pthread_mutex_unlock(&a->mu);
	return NULL;
}

/* helper: false parses every fragment on the loading thread. */
void config_ahead_start(struct config_ahead *a, struct config_pc *pc, bool helper)
{
	pthread_t th;

	*a = (struct config_ahead){.pc = pc, .next = 1, .at = 1};
	pthread_mutex_init(&a->mu, NULL);
	pthread_cond_init(&a->cv, NULL);
	if (!helper || pc->n_srcs < 3 || pc->only || pc->no_schedules)
		return;
	if (thread_start(&th, ahead_main, a) == 0) {
		a->helper = true;
		a->th_id = th;
	}
}

/* Returns once fragment i is parsed, parsing what it can meanwhile. */
void config_ahead_wait(struct config_ahead *a, size_t i)
{
	size_t k;

	pthread_mutex_lock(&a->mu);
	a->at = i;
	pthread_cond_broadcast(&a->cv);
	while (!a->pc->srcs[i].parsed) {
		if ((k = ahead_take(a)))
			ahead_parse(a, k);
		else
			pthread_cond_wait(&a->cv, &a->mu);
	}
	pthread_mutex_unlock(&a->mu);
}

void config_ahead_stop(struct config_ahead *a)
{
	if (a->helper)
		pthread_join(a->th_id, NULL);
	pthread_cond_destroy(&a->cv);
	pthread_mutex_destroy(&a->mu);
}
