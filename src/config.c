/*
 * config.c - surecron.yaml -> struct config (spec.h): the sections, the
 * typed getters of the nodes and the load.
 *
 * Pipeline: read the file (config_include.c: a regular, trusted file of
 * at most CONFIG_MAX_BYTES) -> config_yaml_parse (config_yaml.c: pre-scan
 * of the bytes, libyaml, a tree of nodes that keep their line:column) ->
 * walk the tree section by section into the spec structs, recording
 * problems and key-path positions through config_problem.c -> resolve
 * each schedule once (after its environment override, config_env.c): the
 * parsed expression, the zone, the class and the final retry policy. The
 * lookups of a loaded config are in config_lookup.c.
 *
 * `include:` (issue 15; the patterns, the files and the read-ahead are in
 * config_include.c): each fragment's tree is freed once its targets, auth
 * and schedules are read; what spans files (names defined twice,
 * references, override collisions, renamed_from) is checked when all are
 * read (sections_whole), by sorting or through the name index, never by
 * a scan per item: 100,000 schedules load in linear or n log n time.
 *
 * Invariants:
 *   - Every problem names the key path and the position of the node it is
 *     about; parsing goes on after a problem wherever the rest can still be
 *     read, so one `surecron check` shows them all. Problems are sorted by
 *     position at the end, so the first one is the earliest in the file.
 *   - Unknown keys, duplicate keys and wrong types are errors: a typo must
 *     never silently drop a setting.
 *   - The light load (config_load_light, for status and ledger) is the
 *     one exception to the two rules below: it reads no target, auth,
 *     alert or task and checks no reference, and may leave fragments
 *     unparsed (only_block); what it does read is read as here.
 *   - A config that loads is referentially whole (every target, alert
 *     target and auth it names exists, in any of its files) and every
 *     relative path in it has been resolved against the folder of the
 *     file that holds it (a fragment's own, for a fragment).
 *   - A name is defined once across all the files (config_include.c
 *     keeps the rules of the fragments themselves).
 *   - Every schedule of a config that loads is resolved: its final cron
 *     expression parsed (expr), its zone loaded (zone, never NULL), its
 *     class and policy computed; nobody parses a schedule's cron again.
 *   - No secret is ever read from the file: URLs of webhooks, HMAC secrets,
 *     tokens and client secrets are names of environment variables; the
 *     URLs that are in the file pass the URL rule of url.h (libcurl's
 *     parse, no userinfo; token_url and http tasks with auth need https
 *     or loopback), and a PostgreSQL store URL sets nothing libpq reads
 *     as a password.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <string.h>
#include <strings.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "buf.h"
#include "clock.h"
#include "config.h"
#include "config_int.h"
#include "log.h"
#include "retry.h"
#include "text.h"
#include "url.h"

/* ------------------------------------------------------------------ */
/* Tree walking helpers                                               */
/* ------------------------------------------------------------------ */

/* A memo's slot of pointer p among n (a power of two). */
static size_t memo_slot(const void *p, size_t n)
{
	uintptr_t u = (uintptr_t)p;
	return (size_t)((u >> 3) ^ (u >> 11)) & (n - 1);
}

/* The problems and positions that follow are in file i. */
void config_pc_enter(struct config_pc *pc, size_t i)
{
	pc->probs->at_file = i ? pc->srcs[i].shown : NULL;
	pc->probs->at_file_ix = i;
	pc->dir = pc->srcs[i].dir;
	if (config_locs_file(pc->c->locs, i, pc->srcs[i].shown) && !pc->oom) {
		config_problem_oom(pc->probs);
		pc->oom = true;
	}
}

/* Records "path: message" at node n. */
void config_bad(struct config_pc *pc, const struct config_node *n, const char *path,
		const char *fmt, ...)
{
	char msg[SC_ERR_MSG_MAX - 64];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (config_problem_add(pc->probs, n ? n->line : 0, n ? n->col : 0,
			       "%s%s%s", path, *path ? ": " : "", msg))
		pc->oom = true;
}

static void bad_at(struct config_pc *pc, const char *where, const char *near,
		   const char *path, const char *fmt, ...) SC_PRINTF(5, 6);

/* Records "path: message" at the position recorded for key path `where`
 * (else for `near`, when not NULL), in the file that holds it: for the
 * checks made once every file is read, when the trees are gone. */
static void bad_at(struct config_pc *pc, const char *where, const char *near,
		   const char *path, const char *fmt, ...)
{
	char msg[SC_ERR_MSG_MAX - 64];
	int line, col;
	size_t fx;
	const char *file;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!config_locate_in(pc->c, where, &line, &col, &fx, &file) && near)
		config_locate_in(pc->c, near, &line, &col, &fx, &file);
	if (config_problem_add_in(pc->probs, fx, file, line, col, "%s%s%s",
				  path, *path ? ": " : "", msg))
		pc->oom = true;
}

/* Records a missing key at the position of the object's own key (the
 * schedule or target name, the list item) when known, else at m. */
static void missing(struct config_pc *pc, const struct config_node *m,
		    const char *path, const char *key, const char *why)
{
	struct config_node at = {.line = m ? m->line : 0,
				 .col = m ? m->col : 0};
	int line, col;

	if (config_locate(pc->c, path, &line, &col)) {
		at.line = line;
		at.col = col;
	}
	config_bad(pc, &at, path, "missing required key \"%s\"%s%s%s", key,
	    *why ? " (" : "", why, *why ? ")" : "");
}

void config_oom(struct config_pc *pc)
{
	if (!pc->oom)
		config_problem_oom(pc->probs);
	pc->oom = true;
}

/* A string of the config: interned in its pool (config_pool.c), so
 * that the same zone, expression or name in 100,000 schedules is stored
 * once. Released with config_pool_release, never free. */
static char *xstrdup(struct config_pc *pc, const char *s)
{
	char *d = pc->c->pool ? config_pool_str(pc->c->pool, s) : strdup(s);
	if (!d)
		config_oom(pc);
	return d;
}

/* Key paths are capped at PATH_MAX_KEY; a longer one is cut, which only
 * shortens a message. */
static void pjoin(char *out, size_t n, const char *base, const char *key)
{
	/* By hand: a config of 100,000 schedules joins millions of paths,
	 * and snprintf was a tenth of the load (issue 15). */
	size_t bl = strlen(base), kl = strlen(key), o = 0;

	if (n == 0)
		return;
	if (out != base) {
		o = bl < n - 1 ? bl : n - 1;
		memmove(out, base, o);
	} else {
		o = bl;
	}
	if (bl && o < n - 1)
		out[o++] = '.';
	if (kl > n - 1 - o)
		kl = n - 1 - o;
	memmove(out + o, key, kl);
	out[o + kl] = '\0';
}

void config_pindex(char *out, size_t n, const char *base, size_t i)
{
	/* By hand, as pjoin: once per task of every schedule (issue 45). */
	char d[24];
	size_t k = sizeof(d), bl = strlen(base), o;

	if (n == 0)
		return;
	d[--k] = ']';
	do
		d[--k] = (char)('0' + i % 10);
	while ((i /= 10) != 0);
	d[--k] = '[';
	o = bl < n - 1 ? bl : n - 1;
	if (out != base)
		memmove(out, base, o);
	size_t dl = sizeof(d) - k;
	if (dl > n - 1 - o)
		dl = n - 1 - o;
	memcpy(out + o, d + k, dl);
	out[o + dl] = '\0';
}

bool config_want(struct config_pc *pc, const struct config_node *n, const char *path,
		 enum config_node_kind kind)
{
	if (n->kind == kind && !(kind == NODE_SCALAR && n->is_null))
		return true;
	config_bad(pc, n, path, "expected %s, got %s",
	    kind == NODE_MAP ? "a mapping" : kind == NODE_SEQ ? "a list"
							   : "a value",
	    config_yaml_kind(n));
	return false;
}

/* Levenshtein distance, capped: good enough for "did you mean". */
static size_t edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	size_t row[64];

	if (la >= 63 || lb >= 63)
		return 99;
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t prev = row[0];
		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t cur = row[j];
			size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
			size_t best = prev + cost;
			if (row[j] + 1 < best)
				best = row[j] + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			prev = cur;
		}
	}
	return row[lb];
}

/* Keys people write when they try to put a secret in the file. */
static const char *secret_hint(const char *key)
{
	static const struct {
		const char *key, *hint;
	} hints[] = {
		{"url", "url_env"},          {"webhook_url", "url_env"},
		{"webhook", "url_env"},      {"secret", "secret_env"},
		{"token", "token_env"},      {"api_key", "token_env"},
		{"client_secret", "client_secret_env"},
		{"password", "an environment variable"},
	};
	for (size_t i = 0; i < sizeof(hints) / sizeof(hints[0]); i++)
		if (strcmp(key, hints[i].key) == 0)
			return hints[i].hint;
	return NULL;
}

/*
 * True when an unknown key may be quoted in a message: one that reads as
 * a mistyped setting (lower-case letters, '_' and '-', at most two
 * digits, 32 bytes at most). A file that is not a config at all (a
 * fragment pattern that matched a secret file, a link to one) must not
 * have its lines printed as the keys of errors (issue 44): its keys are
 * then said to be there, not what they are.
 */
static bool key_plausible(const char *k)
{
	size_t n = 0, digits = 0;

	if (!((*k >= 'a' && *k <= 'z') || *k == '_'))
		return false;
	for (; k[n]; n++) {
		char ch = k[n];
		if (ch >= '0' && ch <= '9')
			digits++;
		else if (!((ch >= 'a' && ch <= 'z') || ch == '_' ||
			   ch == '-'))
			return false;
	}
	return n <= 32 && digits <= 2;
}

/* The key path of key k under path, for a message about k: "(key not
 * shown)" instead of a key of a mapping of settings (what is "key") that
 * does not read as one (key_plausible). */
static void key_path(char *kp, size_t n, const char *path, const char *k,
		     const char *what)
{
	bool hide = strcmp(what, "key") == 0 && !key_plausible(k);

	pjoin(kp, n, path, hide ? "(key not shown)" : k);
}

/*
 * Reports every key of mapping n that repeats an earlier key ("duplicate
 * WHAT (first at L:C)"), comparing case-insensitively when nocase (HTTP
 * header names). Sorting makes it O(n log n): a 1 MiB file of keys must
 * not cost a quadratic scan.
 */
struct keyref {
	const struct config_node *k;
	size_t idx;
};

static int keyref_cmp(const void *a, const void *b)
{
	const struct keyref *x = a, *y = b;
	int c = strcmp(x->k->str, y->k->str);
	return c ? c : (x->idx < y->idx ? -1 : x->idx > y->idx);
}

static int keyref_cmp_nocase(const void *a, const void *b)
{
	const struct keyref *x = a, *y = b;
	int c = strcasecmp(x->k->str, y->k->str);
	return c ? c : (x->idx < y->idx ? -1 : x->idx > y->idx);
}

static void dup_keys(struct config_pc *pc, const struct config_node *n,
		     const char *path, const char *what, bool nocase)
{
	size_t cnt = n->n / 2;
	char kp[PATH_MAX_KEY];

	if (cnt < 2)
		return;
	if (cnt <= 16) {
		/* A schedule's or a task's few keys: pairwise, without the
		 * allocation and sort (100,000 schedules have 200,000 such
		 * mappings). Same reports, in the same order. */
		for (size_t i = 1; i < cnt; i++) {
			const struct config_node *k = n->kids[2 * i];
			for (size_t j = 0; j < i; j++) {
				const struct config_node *f = n->kids[2 * j];
				int c = nocase ? strcasecmp(k->str, f->str)
					       : strcmp(k->str, f->str);
				if (c != 0)
					continue;
				key_path(kp, sizeof(kp), path, k->str, what);
				config_bad(pc, k, kp,
				    "duplicate %s (first at %d:%d)",
				    what, f->line, f->col);
				break;
			}
		}
		return;
	}
	struct keyref *v = malloc(cnt * sizeof(*v));
	if (!v) {
		config_oom(pc);
		return;
	}
	for (size_t i = 0; i < cnt; i++)
		v[i] = (struct keyref){n->kids[2 * i], i};
	qsort(v, cnt, sizeof(*v), nocase ? keyref_cmp_nocase : keyref_cmp);
	size_t first = 0;
	for (size_t i = 1; i < cnt; i++) {
		int c = nocase ? strcasecmp(v[i].k->str, v[first].k->str)
			       : strcmp(v[i].k->str, v[first].k->str);
		if (c != 0) {
			first = i;
			continue;
		}
		key_path(kp, sizeof(kp), path, v[i].k->str, what);
		config_bad(pc, v[i].k, kp,
		    "duplicate %s (first at %d:%d)", what,
		    v[first].k->line, v[first].k->col);
	}
	free(v);
}

/*
 * Checks that n is a mapping whose keys are all in `allowed` (NULL-ended)
 * and appear once; records the position of each value under path.key.
 * `what` names the object for messages ("a slack target"). Returns false
 * when n is not a mapping (the caller skips it).
 */
bool config_map_keys(struct config_pc *pc, const struct config_node *n,
		     const char *path, const char *const *allowed,
		     const char *what)
{
	char kp[PATH_MAX_KEY];

	if (!config_want(pc, n, path, NODE_MAP))
		return false;
	dup_keys(pc, n, path, "key", false);
	for (size_t i = 0; i + 1 < n->n; i += 2) {
		const struct config_node *k = n->kids[i];
		bool known = false;
		const char *near = NULL;
		size_t best = 3;

		pjoin(kp, sizeof(kp), path, k->str);
		for (size_t j = 0; allowed[j] && !known; j++)
			known = strcmp(allowed[j], k->str) == 0;
		if (known) {
			config_locs_add(pc->c->locs, kp, n->kids[i + 1]->line,
					n->kids[i + 1]->col);
			continue;
		}
		/* "Did you mean" only for an unknown key: a config of many
		 * schedules must not pay a distance per known key. */
		for (size_t j = 0; allowed[j]; j++) {
			size_t d = edit_distance(allowed[j], k->str);
			if (d < best) {
				best = d;
				near = allowed[j];
			}
		}
		struct buf list;
		buf_init(&list, 400);
		for (size_t j = 0; allowed[j]; j++)
			buf_addf(&list, "%s%s", j ? ", " : "", allowed[j]);
		const char *hint = secret_hint(k->str);
		if (!near && !key_plausible(k->str)) {
			/* Near a known key, a key says nothing of a secret;
			 * otherwise only a plausible one is quoted. */
			pjoin(kp, sizeof(kp), path, "(key not shown)");
			config_bad(pc, k, kp,
			    "an unknown key in %s that does not "
			    "read as a setting (not quoted: is this file a "
			    "surecron config?); expected one of: %s", what,
			    buf_str(&list));
		} else if (hint && strcmp(hint, near ? near : "") != 0)
			config_bad(pc, k, kp,
			    "unknown key in %s (secrets and URLs "
			    "are never written in the file: use %s); "
			    "expected one of: %s", what, hint, buf_str(&list));
		else if (near)
			config_bad(pc, k, kp, "unknown key in %s (did you mean "
			    "%s?); expected one of: %s", what, near,
			    buf_str(&list));
		else
			config_bad(pc, k, kp,
			    "unknown key in %s; expected one of: "
			    "%s", what, buf_str(&list));
		buf_dispose(&list);
	}
	return true;
}

/* A name usable in logs, env variable names and key paths. */
static bool name_valid(const char *s)
{
	size_t len = strlen(s);

	if (len == 0 || len > CONFIG_NAME_MAX)
		return false;
	if (!((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') ||
	      (s[0] >= '0' && s[0] <= '9')))
		return false;
	for (const char *p = s; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '-' || *p == '_'))
			return false;
	return true;
}

static bool check_name(struct config_pc *pc, const struct config_node *n,
		       const char *path, const char *what)
{
	if (name_valid(n->str))
		return true;
	config_bad(pc, n, path, "invalid %s name \"%s\": use 1 to %d letters, "
	    "digits, '-' or '_', starting with a letter or digit", what,
	    n->str, CONFIG_NAME_MAX);
	return false;
}

/*
 * Getters: each looks `key` up in mapping m (whose keys map_keys already
 * vetted), checks its type and range, and stores the value. They return 1
 * when the key was present and valid, 0 when absent, -1 after a problem.
 */
static int get_str(struct config_pc *pc, const struct config_node *m, const char *path,
		   const char *key, bool required, char **out)
{
	char kp[PATH_MAX_KEY];
	const struct config_node *v = config_yaml_get(m, key);

	pjoin(kp, sizeof(kp), path, key);
	if (!v) {
		if (required) {
			missing(pc, m, path, key, "");
			return -1;
		}
		return 0;
	}
	if (!config_want(pc, v, kp, NODE_SCALAR))
		return -1;
	if (!*v->str) {
		config_bad(pc, v, kp, "must not be empty");
		return -1;
	}
	char *s = xstrdup(pc, v->str);
	if (!s)
		return -1;
	config_pool_release(pc->c->pool, *out);
	*out = s;
	return 1;
}

static int get_env_name(struct config_pc *pc, const struct config_node *m,
			const char *path, const char *key, bool required,
			char **out)
{
	int rc = get_str(pc, m, path, key, required, out);
	if (rc == 1 && !config_env_name_valid(*out)) {
		char kp[PATH_MAX_KEY];
		pjoin(kp, sizeof(kp), path, key);
		config_bad(pc, config_yaml_get(m, key), kp, "\"%s\" is not an "
		    "environment variable name (expected the NAME of a "
		    "variable holding the value, like SLACK_WEBHOOK_URL)",
		    *out);
		return -1;
	}
	return rc;
}

static int get_duration(struct config_pc *pc, const struct config_node *m,
			const char *path, const char *key, int64_t min_ms,
			int64_t max_ms, int64_t *out)
{
	char kp[PATH_MAX_KEY];
	const struct config_node *v = config_yaml_get(m, key);
	struct sc_err err = {0};
	int64_t ms;

	if (!v)
		return 0;
	pjoin(kp, sizeof(kp), path, key);
	if (!config_want(pc, v, kp, NODE_SCALAR))
		return -1;
	if (clock_parse_duration(v->str, &ms, &err)) {
		config_bad(pc, v, kp, "%s", err.msg);
		return -1;
	}
	if (ms < min_ms || ms > max_ms) {
		char lo[CLOCK_DUR_MAX], hi[CLOCK_DUR_MAX];
		config_bad(pc, v, kp, "duration %s is out of range (%s to %s)",
		    v->str, clock_format_duration(min_ms, lo, sizeof(lo)),
		    clock_format_duration(max_ms, hi, sizeof(hi)));
		return -1;
	}
	*out = ms;
	return 1;
}

static int get_int(struct config_pc *pc, const struct config_node *m, const char *path,
		   const char *key, long long min, long long max,
		   long long *out)
{
	char kp[PATH_MAX_KEY];
	const struct config_node *v = config_yaml_get(m, key);

	if (!v)
		return 0;
	pjoin(kp, sizeof(kp), path, key);
	if (!config_want(pc, v, kp, NODE_SCALAR))
		return -1;
	char *end;
	errno = 0;
	/* strtoll also takes leading space and '+': the documented form is
	 * digits, with '-' only where negatives are in range (issue 11). */
	const char *d = v->str + (v->str[0] == '-' && min < 0);
	long long x = strtoll(v->str, &end, 10);
	if (!isdigit((unsigned char)*d) || errno || end == v->str || *end) {
		config_bad(pc, v, kp,
		    "expected an integer, got \"%s\"", v->str);
		return -1;
	}
	if (x < min || x > max) {
		config_bad(pc, v, kp,
		    "%lld is out of range (%lld to %lld)", x, min,
		    max);
		return -1;
	}
	*out = x;
	return 1;
}

/*
 * Sizes: bytes, or with a suffix k/K/KiB or M/MiB (powers of 1024), 1 to
 * max. A value above max is reported as "OWNER: VALUE (N bytes) is above
 * the limit of WHAT, MAX bytes", so the message names whose setting it is,
 * the size and the limit.
 */
static int get_size(struct config_pc *pc, const struct config_node *m,
		    const char *path, const char *key, size_t max,
		    const char *owner, const char *what, size_t *out)
{
	char kp[PATH_MAX_KEY];
	const struct config_node *v = config_yaml_get(m, key);

	if (!v)
		return 0;
	pjoin(kp, sizeof(kp), path, key);
	if (!config_want(pc, v, kp, NODE_SCALAR))
		return -1;
	char *end;
	errno = 0;
	/* strtoull takes leading space, '+' and '-' (which wraps): the
	 * documented form starts with a digit (issue 11). */
	if (!isdigit((unsigned char)v->str[0]))
		goto badsize;
	unsigned long long x = strtoull(v->str, &end, 10);
	unsigned long long mult = 1;
	if (errno || end == v->str)
		goto badsize;
	if (strcmp(end, "k") == 0 || strcmp(end, "K") == 0 ||
	    strcmp(end, "KiB") == 0)
		mult = 1024;
	else if (strcmp(end, "M") == 0 || strcmp(end, "MiB") == 0)
		mult = 1024 * 1024;
	else if (*end)
		goto badsize;
	if (x == 0) {
		config_bad(pc, v, kp,
		    "size %s is out of range (1 to %zu bytes)",
		    v->str, max);
		return -1;
	}
	if (x > max / mult) {
		if (x <= ULLONG_MAX / mult)
			config_bad(pc, v, kp,
			    "%s: %s (%llu bytes) is above the limit "
			    "of %s, %zu bytes (%zuMiB)", owner, v->str,
			    x * mult, what, max, max >> 20);
		else
			config_bad(pc, v, kp,
			    "%s: %s is above the limit of %s, %zu "
			    "bytes (%zuMiB)", owner, v->str, what, max,
			    max >> 20);
		return -1;
	}
	*out = (size_t)(x * mult);
	return 1;
badsize:
	config_bad(pc, v, kp, "expected a size in bytes (e.g. 1048576, 512KiB, "
	    "1MiB), got \"%s\"", v->str);
	return -1;
}

/* An enumeration: names[i] maps to i. */
static int get_enum(struct config_pc *pc, const struct config_node *m,
		    const char *path, const char *key,
		    const char *const *names, int *out)
{
	char kp[PATH_MAX_KEY];
	const struct config_node *v = config_yaml_get(m, key);

	if (!v)
		return 0;
	pjoin(kp, sizeof(kp), path, key);
	if (!config_want(pc, v, kp, NODE_SCALAR))
		return -1;
	for (int i = 0; names[i]; i++) {
		if (strcmp(names[i], v->str) == 0) {
			*out = i;
			return 1;
		}
	}
	struct buf list;
	buf_init(&list, 200);
	for (int i = 0; names[i]; i++)
		buf_addf(&list, "%s%s", i ? (names[i + 1] ? ", " : " or ")
					  : "", names[i]);
	config_bad(pc, v, kp, "unknown value \"%s\" (expected %s)", v->str,
	    buf_str(&list));
	buf_dispose(&list);
	return -1;
}

/* A vector and its strings, any of them possibly pooled (pool may be
 * NULL: a config made by hand). A pooled vector is shared: left alone. */
static void strv_free(const struct config_pool *pool, char **v)
{
	if (!v || config_pool_owns(pool, v))
		return;
	for (char **p = v; *p; p++)
		config_pool_release(pool, *p);
	free(v);
}

/*
 * A list of non-empty strings into a NULL-terminated array (an empty array
 * when the key is absent, so consumers never meet NULL). Records the
 * position of each item under path.key[i].
 */
static int get_strv(struct config_pc *pc, const struct config_node *m,
		    const char *path, const char *key, bool nonempty,
		    char ***out, size_t *n_out)
{
	char kp[PATH_MAX_KEY], ip[PATH_MAX_KEY];
	const struct config_node *v = config_yaml_get(m, key);
	size_t n = v && v->kind == NODE_SEQ ? v->n : 0;
	char **arr = calloc(n + 1, sizeof(*arr));
	int rc = v ? 1 : 0;

	if (!arr) {
		config_oom(pc);
		return -1;
	}
	pjoin(kp, sizeof(kp), path, key);
	if (v && !config_want(pc, v, kp, NODE_SEQ)) {
		rc = -1;
	} else if (v && nonempty && n == 0) {
		config_bad(pc, v, kp, "must not be empty");
		rc = -1;
	}
	for (size_t i = 0; rc == 1 && i < n; i++) {
		const struct config_node *it = v->kids[i];
		config_pindex(ip, sizeof(ip), kp, i);
		config_locs_add(pc->c->locs, ip, it->line, it->col);
		bool ok = config_want(pc, it, ip, NODE_SCALAR);
		if (ok && !*it->str) {
			config_bad(pc, it, ip, "must not be empty");
			ok = false;
		}
		if (ok)
			arr[i] = xstrdup(pc, it->str);
		if (!ok || !arr[i])
			rc = -1;
	}
	if (rc < 0) {
		/* arr is this call's own (never pooled): its items may be. */
		for (char **q = arr; *q; q++)
			config_pool_release(pc->c->pool, *q);
		free(arr);
		return rc;
	}
	strv_free(pc->c->pool, *out);
	*out = arr;
	if (n_out)
		*n_out = n;
	return rc;
}

/* dir + "/" + p unless p is absolute; "./" prefixes are dropped. dir is
 * the folder of the file being read (a fragment's own, for what it
 * holds). */
/* Always malloc'd, never pooled, absolute or not: a caller may replace
 * the path and free() the old one (simulate does), and config_free's
 * config_pool_release frees it either way. */
static char *resolve(struct config_pc *pc, const char *p)
{
	if (p[0] == '/') {
		char *r = strdup(p);
		if (!r)
			config_oom(pc);
		return r;
	}
	while (p[0] == '.' && p[1] == '/')
		p += 2;
	size_t len = strlen(pc->dir) + strlen(p) + 2;
	char *r = malloc(len);
	if (!r) {
		config_oom(pc);
		return NULL;
	}
	if (*p)
		snprintf(r, len, "%s/%s", pc->dir, p);
	else
		snprintf(r, len, "%s", pc->dir);
	return r;
}

/* A program: paths with a '/' are resolved against the config's folder;
 * bare names are left for PATH at run time. */
static void resolve_program(struct config_pc *pc, char **argv)
{
	if (!argv || !argv[0] || !strchr(argv[0], '/') || argv[0][0] == '/')
		return;
	char *r = resolve(pc, argv[0]);
	if (r) {
		config_pool_release(pc->c->pool, argv[0]);
		argv[0] = r;
	}
}

/* ------------------------------------------------------------------ */
/* Sections                                                           */
/* ------------------------------------------------------------------ */

/*
 * The URL rule of url.h for the URL at path.key. When libcurl cannot be
 * loaded the check waits for `check` (config_check reports the missing
 * library) and for the send, which refuses before connecting: a config
 * must stay loadable by commands that never send (status, ledger).
 */
static void check_url(struct config_pc *pc, const struct config_node *m,
		      const char *path, const char *key, const char *url,
		      enum url_use use)
{
	struct sc_err err = {0};
	char kp[PATH_MAX_KEY];
	int rc = url_check(url, use, &err);

	if (rc == SC_ENOMEM) {
		config_oom(pc);
	} else if (rc == SC_EINVAL) {
		pjoin(kp, sizeof(kp), path, key);
		config_bad(pc, config_yaml_get(m, key), kp, "%s", err.msg);
	}
}

static void parse_store(struct config_pc *pc, const struct config_node *root)
{
	const struct config_node *v = config_yaml_get(root, "store");
	struct config *c = pc->c;

	if (!v) {
		size_t len = strlen(c->dir) + 32;
		c->store_url = malloc(len);
		if (!c->store_url) {
			config_oom(pc);
			return;
		}
		snprintf(c->store_url, len, "sqlite:%s/surecron.db", c->dir);
		return;
	}
	if (!config_want(pc, v, "store", NODE_SCALAR))
		return;
	const char *s = v->str;
	if (strncmp(s, "sqlite:", 7) == 0) {
		const char *p = s + 7;
		if (!*p) {
			config_bad(pc, v,
			    "store", "sqlite: needs a file path, e.g. "
			    "sqlite:./surecron.db");
			return;
		}
		char *abs = resolve(pc, p);
		if (!abs)
			return;
		size_t len = strlen(abs) + 8;
		c->store_url = malloc(len);
		if (c->store_url)
			snprintf(c->store_url, len, "sqlite:%s", abs);
		else
			config_oom(pc);
		config_pool_release(pc->c->pool, abs);
		return;
	}
	if (url_is_pg(s)) {
		/* libpq's own parse judges (url.h); without libpq the store
		 * cannot open, and `check` says so (config_check). Not in the
		 * light load: loading libpq costs `status NAME` more than
		 * its answer through the daemon (status_socket.h), and the
		 * store's open judges the URL the same way before any use. */
		struct sc_err err = {0};
		int rc = pc->light ? 0 : url_check_store(s, &err);
		if (rc == SC_ENOMEM) {
			config_oom(pc);
			return;
		}
		if (rc == SC_EINVAL) {
			config_bad(pc, v, "store", "%s", err.msg);
			return;
		}
		c->store_url = xstrdup(pc, s);
		return;
	}
	config_bad(pc, v,
	    "store", "unknown store \"%s\" (expected sqlite:PATH or "
	    "postgres://HOST/DB)", s);
}

static void parse_worker(struct config_pc *pc, const struct config_node *root)
{
	static const char *const keys[] = {"concurrency", "lease", "grace",
					   "skew_grace", "clock_tolerance",
					   NULL};
	const struct config_node *w = config_yaml_get(root, "worker");
	long long conc;

	if (!w || !config_map_keys(pc, w, "worker", keys, "worker"))
		return;
	if (get_int(pc, w, "worker", "concurrency", 1, 1024, &conc) == 1)
		pc->c->concurrency = (int)conc;
	get_duration(pc, w, "worker", "lease", 1000, INT64_C(86400000) * 7,
		     &pc->c->lease_ms);
	get_duration(pc, w, "worker", "grace", 0, INT64_C(86400000),
		     &pc->c->grace_ms);
	get_duration(pc, w, "worker", "skew_grace", 1000,
		     INT64_C(86400000) * 7, &pc->c->skew_grace_ms);
	/* Under 500 ms an NTP slew or a slow round trip to the database
	 * would read as a step; from 30 s on a step would be taken (60 s)
	 * before it is ever seen. */
	get_duration(pc, w, "worker", "clock_tolerance", 500, 30000,
		     &pc->c->clock_tolerance_ms);
}

/*
 * One item of a named map: k is the name's node, v the object's, item the
 * element of the section's array to fill (zeroed; freed by config_free
 * whatever the item leaves in it).
 */
typedef void named_item_fn(struct config_pc *pc, const struct config_node *k,
			   const struct config_node *v, void *item);

static int nref_cmp(const void *a, const void *b)
{
	const struct config_nref *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	if (c)
		return c;
	if (x->file != y->file)
		return x->file < y->file ? -1 : 1;
	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	return (x->col > y->col) - (x->col < y->col);
}

/* The printed name of file f. */
static const char *src_name(const struct config_pc *pc, size_t f)
{
	const char *n = f ? pc->srcs[f].shown : pc->probs->file;

	return n ? n : "config";
}

/*
 * A name defined in two files: reported in the later file, naming the
 * first file and position ("also defined at FILE:LINE:COL"). Repeats in
 * one file are dup_keys' (reported per file). Sorted: O(n log n).
 */
static void dup_across(struct config_pc *pc, enum section_count w,
		       const char *section, const char *what, size_t n)
{
	char kp[PATH_MAX_KEY];
	const struct config_nref *refs = pc->refs[w];

	if (pc->n_srcs < 2 || n < 2 || !refs)
		return;
	struct config_nref *v = malloc(n * sizeof(*v));
	if (!v) {
		config_oom(pc);
		return;
	}
	size_t m = 0;
	for (size_t i = 0; i < n; i++)
		if (refs[i].name)
			v[m++] = refs[i];
	qsort(v, m, sizeof(*v), nref_cmp);
	size_t first = 0;
	for (size_t i = 1; i < m; i++) {
		if (strcmp(v[i].name, v[first].name) != 0) {
			first = i;
			continue;
		}
		if (v[i].file == v[first].file)
			continue;
		pjoin(kp, sizeof(kp), section, v[i].name);
		if (config_problem_add_in(
			    pc->probs, v[i].file,
			    v[i].file ? pc->srcs[v[i].file].shown : NULL,
			    v[i].line, v[i].col, "%s: duplicate %s \"%s\": "
			    "also defined at %s:%d:%d", kp, what, v[i].name,
			    src_name(pc, v[first].file), v[first].line,
			    v[first].col))
			pc->oom = true;
	}
	free(v);
}

_Static_assert(offsetof(struct target_spec, name) == 0 &&
		       offsetof(struct auth_spec, name) == 0 &&
		       offsetof(struct schedule_spec, name) == 0,
	       "named_section reads an item's name as its first member");

static size_t *file_count(struct config *c, size_t i, enum section_count w)
{
	struct config_file *f = &c->files[i];

	return w == COUNT_TARGETS ? &f->n_targets
	       : w == COUNT_AUTHS ? &f->n_auths : &f->n_schedules;
}

/* Room for `more` items (and the spare) in a section's array and its
 * origins. The new room is not zeroed here (named_section zeroes each
 * item as it fills it, and the spare): room never filled is then never
 * touched, so the pages of a large array's unused tail stay unmapped
 * (issue 45: the doubling of 100,000 schedules left 31,072 spare). */
static bool section_grow(struct config_pc *pc, enum section_count w, void **items,
			 size_t count, size_t more, size_t size)
{
	size_t need = count + more + 1, cap = pc->cap[w];

	if (need <= cap && *items)
		return true;
	size_t ncap = cap ? cap : 8;
	while (ncap < need)
		ncap *= 2;
	char *v = realloc(*items, ncap * size);
	if (!v) {
		config_oom(pc);
		return false;
	}
	*items = v;
	struct config_nref *r = realloc(pc->refs[w], ncap * sizeof(*r));
	if (!r) {
		config_oom(pc);
		return false;
	}
	pc->refs[w] = r;
	pc->cap[w] = ncap;
	return true;
}

/*
 * A mapping of name -> object (targets, auth, schedules) in file f, the
 * same checks for each: checks the names ("invalid WHAT name"), refuses
 * duplicates in the file ("duplicate WHAT"; across files: dup_across,
 * once all are read), records each name's position under section.name,
 * then calls fn for every item, in file order, appending to the
 * section's array *items (elements of `size` bytes, one spare, zeroed;
 * files are read main file first, then each fragment). *count counts
 * the items filled so far, so config_free frees exactly those; the
 * file's counter (struct config_file) gets its own.
 */
static void named_section(struct config_pc *pc, size_t f, const char *section,
			  const char *what, size_t size, named_item_fn *fn,
			  void **items, size_t *count, enum section_count w)
{
	char kp[PATH_MAX_KEY];
	const struct config_node *n =
		config_yaml_get(pc->srcs[f].root, section);

	if (!n)
		return;
	pc->present[w] = true;
	if (w == COUNT_SCHEDULES && !pc->sched_line) {
		pc->sched_file = f;
		pc->sched_line = n->kind == NODE_MAP ? n->line : -1;
		pc->sched_col = n->col;
	}
	if (!config_want(pc, n, section, NODE_MAP))
		return;
	dup_keys(pc, n, section, what, false);
	for (size_t i = 0; i + 1 < n->n; i += 2) {
		const struct config_node *k = n->kids[i];
		pjoin(kp, sizeof(kp), section, k->str);
		check_name(pc, k, kp, what);
		config_locs_add(pc->c->locs, kp, k->line, k->col);
	}
	if (!section_grow(pc, w, items, *count, n->n / 2, size))
		return;
	memset((char *)*items + *count * size, 0, size); /* the spare */
	for (size_t i = 0; i + 1 < n->n; i += 2) {
		const struct config_node *k = n->kids[i];
		size_t ix = (*count)++;
		memset((char *)*items + ix * size, 0, 2 * size); /* + spare */
		fn(pc, k, n->kids[i + 1], (char *)*items + ix * size);
		(*file_count(pc->c, f, w))++;
		/* name is the first member of the three specs (asserted
		 * below): the item's own string, which no realloc moves. */
		const char *nm;
		memcpy(&nm, (char *)*items + ix * size, sizeof(nm));
		pc->refs[w][ix] = (struct config_nref){nm, f, k->line, k->col};
	}
}

static const char *const target_kinds[] = {"slack", "webhook", "file",
					   "command", "email", NULL};
static const char *const ambiguous_names[] = {"resend", "hold", NULL};
/* In the order of enum notice_policy. */
static const char *const notice_names[] = {"every", "final", "none", NULL};

/* Anything but config.h's form of a mail address could not travel in a
 * header or an SMTP command as it is, and a CR or LF would inject one. */
bool config_mail_address_ok(const char *a)
{
	const char *at = strchr(a, '@');

	if (!at || at == a || !at[1] || strchr(at + 1, '@') ||
	    strlen(a) > 254)
		return false;
	for (const char *p = a; *p; p++)
		if (*p <= ' ' || *p >= 127 || strchr("<>,;\"()[]\\", *p))
			return false;
	return true;
}

static void parse_email(struct config_pc *pc, const struct config_node *v,
			const char *path, struct target_spec *t)
{
	char kp[PATH_MAX_KEY], ip[PATH_MAX_KEY];

	get_env_name(pc, v, path, "url_env", true, &t->url_env);
	get_env_name(pc, v, path, "username_env", false, &t->username_env);
	get_env_name(pc, v, path, "password_env", false, &t->password_env);
	if (!t->username_env != !t->password_env)
		config_bad(pc, v, path,
		    "username_env and password_env go together "
		    "(both, or neither for a server with no login)");
	if (get_str(pc, v, path, "from", true, &t->mail_from) == 1 &&
	    !config_mail_address_ok(t->mail_from)) {
		pjoin(kp, sizeof(kp), path, "from");
		config_bad(pc, config_yaml_get(v,
		    "from"), kp, "not a mail address "
		    "(local@domain, no spaces or brackets)");
	}
	const struct config_node *to = config_yaml_get(v, "to");
	if (!to) {
		missing(pc, v, path, "to", "a list of mail addresses");
		return;
	}
	pjoin(kp, sizeof(kp), path, "to");
	if (get_strv(pc, v, path, "to", true, &t->mail_to, NULL) != 1)
		return;
	for (size_t i = 0; t->mail_to[i]; i++)
		if (!config_mail_address_ok(t->mail_to[i])) {
			config_pindex(ip, sizeof(ip), kp, i);
			config_bad(pc, to->kids[i], ip, "not a mail address "
			    "(local@domain, no spaces or brackets)");
		}
}

static void parse_target(struct config_pc *pc, const struct config_node *k,
			 const struct config_node *v, void *item)
{
	static const char *const slack_keys[] = {
		"kind", "url_env", "on_ambiguous", "timeout",
		"connect_timeout", "notices", NULL};
	static const char *const webhook_keys[] = {
		"kind", "url_env", "secret_env", "signature_header",
		"on_ambiguous", "timeout", "connect_timeout", "notices", NULL};
	static const char *const file_keys[] = {"kind", "path",
						"on_ambiguous", "notices",
						NULL};
	static const char *const command_keys[] = {
		"kind", "command", "on_ambiguous", "timeout", "notices",
		NULL};
	static const char *const email_keys[] = {
		"kind", "url_env", "from", "to", "username_env",
		"password_env", "on_ambiguous", "timeout", "connect_timeout",
		"notices", NULL};
	static const char *const *const keys_by_kind[] = {
		slack_keys, webhook_keys, file_keys, command_keys, email_keys};
	static const char *const what_by_kind[] = {
		"a slack target", "a webhook target", "a file target",
		"a command target", "an email target"};
	struct target_spec *t = item;
	char path[PATH_MAX_KEY], kp[PATH_MAX_KEY];
	int kind = 0, amb = 0, nt = 0;

	pjoin(path, sizeof(path), "targets", k->str);
	t->name = xstrdup(pc, k->str);
	t->connect_timeout_ms = 10000;
	t->timeout_ms = 30000;
	if (!config_want(pc, v, path, NODE_MAP))
		return;
	const struct config_node *kn = config_yaml_get(v, "kind");
	pjoin(kp, sizeof(kp), path, "kind");
	if (!kn) {
		missing(pc, v, path, "kind",
			"slack, webhook, file, command or email");
		return;
	}
	if (get_enum(pc, v, path, "kind", target_kinds, &kind) != 1)
		return;
	t->kind = (enum target_kind)kind;
	if (!config_map_keys(pc, v, path, keys_by_kind[kind],
	    what_by_kind[kind]))
		return;
	if (get_enum(pc, v, path, "on_ambiguous", ambiguous_names, &amb) == 1)
		t->on_ambiguous = (enum on_ambiguous)amb;
	if (get_enum(pc, v, path, "notices", notice_names, &nt) == 1) {
		t->has_notices = true;
		t->notices = (enum notice_policy)nt;
	}
	get_duration(pc, v, path, "timeout", 1, INT64_C(3600000),
		     &t->timeout_ms);
	get_duration(pc, v, path, "connect_timeout", 1, INT64_C(600000),
		     &t->connect_timeout_ms);
	switch (t->kind) {
	case TARGET_WEBHOOK:
		get_env_name(pc, v, path, "secret_env", false, &t->secret_env);
		if (get_str(pc, v, path, "signature_header", false,
			    &t->signature_header) == 0)
			t->signature_header = xstrdup(pc, "X-Surecron-"
							  "Signature");
		/* fall through */
	case TARGET_SLACK:
		get_env_name(pc, v, path, "url_env", true, &t->url_env);
		break;
	case TARGET_FILE:
		if (get_str(pc, v, path, "path", true, &t->path) == 1) {
			char *r = resolve(pc, t->path);
			config_pool_release(pc->c->pool, t->path);
			t->path = r;
		}
		break;
	case TARGET_COMMAND: {
		const struct config_node *cmd = config_yaml_get(v, "command");
		if (!cmd) {
			missing(pc, v, path, "command",
				"the program and its arguments, as a list");
			break;
		}
		if (get_strv(pc, v, path, "command", true, &t->argv, NULL) ==
		    1)
			resolve_program(pc, t->argv);
		break;
	}
	case TARGET_EMAIL:
		parse_email(pc, v, path, t);
		break;
	}
}

static void parse_targets(struct config_pc *pc, size_t f)
{
	void *v = pc->c->targets;

	named_section(pc, f, "targets", "target", sizeof(struct target_spec),
		      parse_target, &v, &pc->c->n_targets, COUNT_TARGETS);
	pc->c->targets = v;
}

static void parse_auth(struct config_pc *pc, const struct config_node *k,
		       const struct config_node *v, void *item)
{
	static const char *const oauth2_keys[] = {
		"kind", "token_url", "client_id", "client_secret_env",
		"scope", "client_auth", "reset_header", NULL};
	static const char *const bearer_keys[] = {"kind", "token_env",
						  "reset_header", NULL};
	static const char *const kinds[] = {"oauth2", "bearer", NULL};
	static const char *const client_auths[] = {"basic", "body", NULL};
	struct auth_spec *a = item;
	char path[PATH_MAX_KEY];
	int kind = 0, ca = 0;

	pjoin(path, sizeof(path), "auth", k->str);
	a->name = xstrdup(pc, k->str);
	if (!config_want(pc, v, path, NODE_MAP))
		return;
	if (!config_yaml_get(v, "kind")) {
		missing(pc, v, path, "kind", "oauth2 or bearer");
		return;
	}
	if (get_enum(pc, v, path, "kind", kinds, &kind) != 1)
		return;
	a->kind = (enum auth_kind)kind;
	if (!config_map_keys(pc, v, path, kind == AUTH_OAUTH2 ? oauth2_keys
						       : bearer_keys,
		      kind == AUTH_OAUTH2 ? "an oauth2 provider"
					  : "a bearer provider"))
		return;
	get_str(pc, v, path, "reset_header", false, &a->reset_header);
	if (a->kind == AUTH_BEARER) {
		get_env_name(pc, v, path, "token_env", true, &a->token_env);
		return;
	}
	/* The client secret goes to token_url. */
	if (get_str(pc, v, path, "token_url", true, &a->token_url) == 1)
		check_url(pc, v, path, "token_url", a->token_url, URL_SECRET);
	get_str(pc, v, path, "client_id", true, &a->client_id);
	get_env_name(pc, v, path, "client_secret_env", true,
		     &a->client_secret_env);
	get_str(pc, v, path, "scope", false, &a->scope);
	if (get_enum(pc, v, path, "client_auth", client_auths, &ca) == 1)
		a->client_auth_body = ca == 1;
}

static void parse_auths(struct config_pc *pc, size_t f)
{
	void *v = pc->c->auths;

	named_section(pc, f, "auth", "auth provider", sizeof(struct auth_spec),
		      parse_auth, &v, &pc->c->n_auths, COUNT_AUTHS);
	pc->c->auths = v;
}

/* Every item of the list at path.key names an existing target, once. */
static void check_target_refs(struct config_pc *pc, const struct config_node *m,
			      const char *path, const char *key, char **names)
{
	char kp[PATH_MAX_KEY], ip[PATH_MAX_KEY];
	const struct config_node *v = config_yaml_get(m, key);

	if (!v || v->kind != NODE_SEQ || !names)
		return;
	pjoin(kp, sizeof(kp), path, key);
	for (size_t i = 0; i < v->n && names[i]; i++) {
		config_pindex(ip, sizeof(ip), kp, i);
		/* While files are read, the check waits for every file's
		 * targets (refs_whole; get_strv kept the position). */
		if (!pc->defer_refs && !config_target(pc->c, names[i]))
			config_bad(pc, v->kids[i], ip,
			    "unknown target \"%s\" (not "
			    "defined under targets:)", names[i]);
		for (size_t j = 0; j < i; j++)
			if (strcmp(names[j], names[i]) == 0)
				config_bad(pc, v->kids[i], ip,
				    "target \"%s\" is "
				    "listed twice", names[i]);
	}
}

/*
 * `alerts: on`: the reasons that raise an alert, as CONFIG_ALERT_ON_*
 * bits. An empty list is allowed (no alert is sent; the ledger still
 * records every loss); an unknown word is refused, naming the allowed
 * ones, so that a typo never silences a reason.
 */
static void parse_alert_on(struct config_pc *pc, const struct config_node *a)
{
	static const struct {
		const char *word;
		unsigned bit;
	} reasons[] = {{"lost", CONFIG_ALERT_ON_LOST},
		       {"missed", CONFIG_ALERT_ON_MISSED},
		       {"late", CONFIG_ALERT_ON_LATE},
		       {"overrun", CONFIG_ALERT_ON_OVERRUN},
		       {"stale", CONFIG_ALERT_ON_STALE}};
	const struct config_node *v = config_yaml_get(a, "on");
	char ip[PATH_MAX_KEY];
	unsigned on = 0;
	bool ok = true;

	if (!v || !config_want(pc, v, "alerts.on", NODE_SEQ))
		return;
	for (size_t i = 0; i < v->n; i++) {
		const struct config_node *it = v->kids[i];
		size_t j = 0;

		config_pindex(ip, sizeof(ip), "alerts.on", i);
		config_locs_add(pc->c->locs, ip, it->line, it->col);
		if (!config_want(pc, it, ip, NODE_SCALAR)) {
			ok = false;
			continue;
		}
		while (j < sizeof(reasons) / sizeof(reasons[0]) &&
		       strcmp(reasons[j].word, it->str) != 0)
			j++;
		if (j == sizeof(reasons) / sizeof(reasons[0])) {
			config_bad(pc, it, ip, "unknown alert reason \"%s\" "
			    "(expected lost, missed, late, overrun or "
			    "stale)", it->str);
			ok = false;
			continue;
		}
		on |= reasons[j].bit;
	}
	if (ok)
		pc->c->alert_on = on;
}

/*
 * SURECRON_ALERT_TARGETS, when set and non-empty, replaces alerts.targets
 * (issue 43): resolved here, once, by config_env_names' rule, so that
 * `check`, the daemon (at start and at each reload, which keeps the old
 * config when this fails) and every command agree. A name that is not a
 * target, or a value that names none, is a problem of the load: an alert
 * that would go nowhere is refused, never a warning in a log.
 */
static void alert_targets_env(struct config_pc *pc)
{
	const char *v = getenv("SURECRON_ALERT_TARGETS");
	struct config *c = pc->c;
	char shown[CONFIG_NAME_MAX * 4 + 16];
	char **names = NULL;
	size_t n = 0;
	bool ok = true;

	if (!v || !*v)
		return;
	if (config_env_names(v, &names, &n) != 0) {
		config_oom(pc);
		return;
	}
	if (n == 0) {
		bad_at(pc, "alerts.targets", "alerts", "alerts.targets",
		       "SURECRON_ALERT_TARGETS names no target (give target "
		       "names separated by commas or spaces, or unset it)");
		ok = false;
	}
	for (size_t i = 0; i < n; i++) {
		if (config_target(c, names[i]))
			continue;
		/* The value is the operator's, not a secret; cleaned, since
		 * it may hold anything. */
		text_clean(shown, sizeof(shown), names[i], 0);
		bad_at(pc, "alerts.targets", "alerts", "alerts.targets",
		       "SURECRON_ALERT_TARGETS names unknown target \"%s\" "
		       "(names are separated by commas or spaces)", shown);
		ok = false;
	}
	if (!ok) {
		for (size_t i = 0; i < n; i++)
			free(names[i]);
		free(names);
		return;
	}
	strv_free(c->pool, c->alert_targets);
	c->alert_targets = names;
	c->n_alert_targets = n;
}

static void parse_alerts(struct config_pc *pc, const struct config_node *root)
{
	static const char *const keys[] = {"targets", "on", "realert", NULL};
	const struct config_node *a = config_yaml_get(root, "alerts");
	struct config *c = pc->c;

	c->alert_on = CONFIG_ALERT_ON_DEFAULT;
	if (a && !pc->light &&
	    config_map_keys(pc, a, "alerts", keys, "alerts")) {
		if (get_strv(pc, a, "alerts", "targets", false,
			     &c->alert_targets, &c->n_alert_targets) == 1)
			check_target_refs(pc, a, "alerts", "targets",
					  c->alert_targets);
		parse_alert_on(pc, a);
		/* At least a second: a repeat faster than that is a flood,
		 * not a reminder. */
		get_duration(pc, a, "alerts", "realert", 1000,
			     INT64_C(30) * 86400000, &c->alert_realert_ms);
	}
	if (!c->alert_targets && !(c->alert_targets = calloc(1, sizeof(char *))))
		config_oom(pc);
	if (!pc->light)
		alert_targets_env(pc);
}

/* `retention: {ledger, jobs, outbox}` (issue 15): ages after which
 * prune may remove rows; each absent one keeps its rows forever. A day at
 * least: a shorter one would prune what an operator is still reading. */
static void parse_retention(struct config_pc *pc, const struct config_node *root)
{
	static const char *const keys[] = {"ledger", "jobs", "outbox", NULL};
	const struct config_node *r = config_yaml_get(root, "retention");
	const int64_t day = INT64_C(86400000), most = INT64_C(36500) * day;

	if (!r || !config_map_keys(pc, r, "retention", keys, "retention"))
		return;
	get_duration(pc, r, "retention", "ledger", day, most,
		     &pc->c->retention_ledger_ms);
	get_duration(pc, r, "retention", "jobs", day, most,
		     &pc->c->retention_jobs_ms);
	get_duration(pc, r, "retention", "outbox", day, most,
		     &pc->c->retention_outbox_ms);
}

int config_http_addr(const char *listen, struct sockaddr_storage *ss,
		     socklen_t *len, bool *loopback)
{
	char host[64];
	const char *colon;
	size_t hl;
	bool v6 = listen && listen[0] == '[';

	if (!listen)
		return -1;
	if (v6) {
		const char *close = strchr(listen, ']');
		if (!close || close[1] != ':')
			return -1;
		hl = (size_t)(close - listen - 1);
		if (hl >= sizeof(host))
			return -1;
		memcpy(host, listen + 1, hl);
		colon = close + 1;
	} else {
		colon = strrchr(listen, ':');
		if (!colon || colon == listen || memchr(listen, ':',
			(size_t)(colon - listen)))
			return -1;
		hl = (size_t)(colon - listen);
		if (hl >= sizeof(host))
			return -1;
		memcpy(host, listen, hl);
	}
	host[hl] = '\0';
	const char *ps = colon + 1;
	long port = 0;
	if (!*ps || strlen(ps) > 5)
		return -1;
	for (const char *q = ps; *q; q++) {
		if (*q < '0' || *q > '9')
			return -1;
		port = port * 10 + (*q - '0');
	}
	if (port < 1 || port > 65535)
		return -1;
	memset(ss, 0, sizeof(*ss));
	if (!v6 && strcmp(host, "localhost") == 0)
		snprintf(host, sizeof(host), "127.0.0.1");
	if (v6) {
		struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
		if (inet_pton(AF_INET6, host, &a6->sin6_addr) != 1)
			return -1;
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons((uint16_t)port);
		*len = sizeof(*a6);
		*loopback = IN6_IS_ADDR_LOOPBACK(&a6->sin6_addr);
	} else {
		struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
		if (inet_pton(AF_INET, host, &a4->sin_addr) != 1)
			return -1;
		a4->sin_family = AF_INET;
		a4->sin_port = htons((uint16_t)port);
		*len = sizeof(*a4);
		*loopback = (ntohl(a4->sin_addr.s_addr) >> 24) == 127;
	}
	return 0;
}

/* `http: {listen, token_env}` (issue 16): the web surface. A listen
 * address off loopback without a token is refused here, so `check` and
 * `run` both refuse it: anyone on the network could read the page. */
static void parse_http_listen(struct config_pc *pc, const struct config_node *root)
{
	static const char *const keys[] = {"listen", "token_env", NULL};
	const struct config_node *h = config_yaml_get(root, "http");
	struct config *c = pc->c;
	struct sockaddr_storage ss;
	socklen_t len;
	bool loopback = true;

	if (!h || !config_map_keys(pc, h, "http", keys, "http"))
		return;
	if (get_str(pc, h, "http", "listen", true, &c->http_listen) != 1)
		return;
	const struct config_node *lv = config_yaml_get(h, "listen");
	if (config_http_addr(c->http_listen, &ss, &len, &loopback) != 0) {
		config_bad(pc, lv,
		    "http.listen", "\"%s\" is not host:port (an IP "
		    "address or localhost, [::1]:8077 for IPv6, a port from "
		    "1 to 65535)", c->http_listen);
		return;
	}
	const struct config_node *tv = config_yaml_get(h, "token_env");
	if (get_str(pc, h, "http", "token_env", false,
		    &c->http_token_env) == 1 &&
	    !config_env_name_valid(c->http_token_env)) {
		config_bad(pc, tv,
		    "http.token_env", "\"%s\" is not a variable name",
		    c->http_token_env);
		return;
	}
	if (!loopback && !c->http_token_env)
		config_bad(pc, lv,
		    "http.listen", "\"%s\" is not a loopback address: "
		    "it needs http.token_env (the token every request must "
		    "carry)", c->http_listen);
}

/* `status_socket: PATH` (issue 15): where the daemon answers `status
 * NAME` (status_socket.h); relative to the config's folder. */
static void parse_status_socket(struct config_pc *pc, const struct config_node *root)
{
	const struct config_node *v = config_yaml_get(root, "status_socket");
	struct config *c = pc->c;

	if (!v || !config_want(pc, v, "status_socket", NODE_SCALAR))
		return;
	if (!*v->str) {
		config_bad(pc, v, "status_socket", "needs a file path, e.g. "
		    "/run/surecron/status.sock");
		return;
	}
	char *abs = resolve(pc, v->str);
	if (!abs)
		return;
	if (strlen(abs) >= CONFIG_SOCKET_PATH_MAX) {
		config_bad(pc, v,
		    "status_socket", "\"%s\" is %zu bytes long: a "
		    "socket path holds at most %d", abs, strlen(abs),
		    CONFIG_SOCKET_PATH_MAX - 1);
		config_pool_release(c->pool, abs);
		return;
	}
	c->status_socket = abs;
}

static void parse_http(struct config_pc *pc, const struct config_node *h,
		       const char *path, struct task_spec *t)
{
	static const char *const keys[] = {"method", "url", "headers", "body",
					   "auth", "expect_status", NULL};
	char kp[PATH_MAX_KEY], hp[PATH_MAX_KEY];
	long long st;

	if (!config_map_keys(pc, h, path, keys, "an http task"))
		return;
	if (get_str(pc, h, path, "method", false, &t->method) == 1) {
		for (const char *p = t->method; *p; p++) {
			if (!(*p >= 'A' && *p <= 'Z')) {
				pjoin(kp, sizeof(kp), path, "method");
				config_bad(pc, config_yaml_get(h, "method"), kp,
				    "invalid method \"%s\" (expected GET, "
				    "POST, PUT, PATCH or DELETE...)",
				    t->method);
				break;
			}
		}
	} else if (!t->method) {
		t->method = xstrdup(pc, "GET");
	}
	bool has_url = get_str(pc, h, path, "url", true, &t->url) == 1;
	const struct config_node *b = config_yaml_get(h, "body");
	if (b) {
		pjoin(kp, sizeof(kp), path, "body");
		if (b->kind != NODE_SCALAR)
			config_bad(pc, b, kp,
			    "expected a string (write JSON bodies "
			    "as a quoted or block string), got %s",
			    config_yaml_kind(b));
		else
			t->body = xstrdup(pc, b->str);
	}
	if (get_int(pc, h, path, "expect_status", 100, 599, &st) == 1)
		t->expect_status = (int)st;
	/* While files are read, the check waits for every file's auth
	 * (refs_whole). */
	if (get_str(pc, h, path, "auth", false, &t->auth) == 1 &&
	    !pc->defer_refs && !config_auth(pc->c, t->auth)) {
		pjoin(kp, sizeof(kp), path, "auth");
		config_bad(pc, config_yaml_get(h, "auth"), kp, "unknown auth "
		    "provider \"%s\" (not defined under auth:)", t->auth);
	}
	/* After auth: a request with auth carries a token, so its URL
	 * needs the rule for secrets. */
	if (has_url)
		check_url(pc, h, path, "url", t->url,
			  t->auth ? URL_SECRET : URL_PLAIN);
	const struct config_node *hd = config_yaml_get(h, "headers");
	pjoin(kp, sizeof(kp), path, "headers");
	if (hd && config_want(pc, hd, kp, NODE_MAP)) {
		dup_keys(pc, hd, kp, "header", true);
		size_t n = hd->n / 2;
		t->headers = calloc(n + 1, sizeof(char *));
		if (!t->headers) {
			config_oom(pc);
			return;
		}
		size_t out = 0;
		for (size_t i = 0; i + 1 < hd->n; i += 2) {
			const struct config_node *k = hd->kids[i];
			const struct config_node *v = hd->kids[i + 1];
			pjoin(hp, sizeof(hp), kp, k->str);
			bool ok = *k->str != '\0';
			for (const char *p = k->str; *p; p++)
				if (!(*p == '-' || *p == '_' ||
				      (*p >= 'a' && *p <= 'z') ||
				      (*p >= 'A' && *p <= 'Z') ||
				      (*p >= '0' && *p <= '9')))
					ok = false;
			if (!ok) {
				config_bad(pc, k, hp, "invalid header name");
				continue;
			}
			if (strcasecmp(k->str, "Authorization") == 0 ||
			    strcasecmp(k->str, "Proxy-Authorization") == 0) {
				config_bad(pc, k, hp,
				    "credentials are never written "
				    "in the file: name an auth provider with "
				    "`auth:`");
				continue;
			}
			if (!config_want(pc, v, hp, NODE_SCALAR))
				continue;
			if (strpbrk(v->str, "\r\n")) {
				config_bad(pc, v, hp,
				    "a header value must be one "
				    "line");
				continue;
			}
			size_t len = strlen(k->str) + strlen(v->str) + 3;
			char *line = malloc(len);
			if (!line) {
				config_oom(pc);
				return;
			}
			snprintf(line, len, "%s: %s", k->str, v->str);
			t->headers[out++] = line;
		}
	}
}

static void parse_task_env(struct config_pc *pc, const struct config_node *e,
			   const char *path, struct task_spec *t)
{
	char kp[PATH_MAX_KEY];

	if (!config_want(pc, e, path, NODE_MAP))
		return;
	dup_keys(pc, e, path, "key", false);
	t->env = calloc(e->n / 2 + 1, sizeof(char *));
	if (!t->env) {
		config_oom(pc);
		return;
	}
	size_t out = 0;
	for (size_t i = 0; i + 1 < e->n; i += 2) {
		const struct config_node *k = e->kids[i], *v = e->kids[i + 1];
		pjoin(kp, sizeof(kp), path, k->str);
		if (!config_env_name_valid(k->str)) {
			config_bad(pc, k, kp,
			    "invalid environment variable name");
			continue;
		}
		if (strncmp(k->str, "SURECRON_", 9) == 0) {
			config_bad(pc, k, kp, "SURECRON_* variables are set by "
			    "surecron itself");
			continue;
		}
		/* An empty value is a valid environment value. */
		if (v->kind != NODE_SCALAR) {
			config_bad(pc, v, kp, "expected a string, got %s",
			    config_yaml_kind(v));
			continue;
		}
		const char *val = v->is_null ? "" : v->str;
		size_t len = strlen(k->str) + strlen(val) + 2;
		char *kv = malloc(len);
		if (!kv) {
			config_oom(pc);
			return;
		}
		snprintf(kv, len, "%s=%s", k->str, val);
		t->env[out++] = kv;
	}
}

static void parse_task(struct config_pc *pc, const struct config_node *v,
		       const char *path, struct task_spec *t)
{
	static const char *const keys[] = {
		"name", "kind", "command", "shell", "cwd", "env", "timeout",
		"grace", "max_output", "http", NULL};
	static const char *const kinds[] = {"command", "http", NULL};
	char kp[PATH_MAX_KEY];
	int kind = -1;

	t->timeout_ms = 10 * 60 * 1000;
	t->grace_ms = 5000;
	t->max_output = SPEC_DEFAULT_MAX_OUTPUT;
	if (!config_map_keys(pc, v, path, keys, "a task"))
		return;
	if (get_str(pc, v, path, "name", true, &t->name) == 1) {
		pjoin(kp, sizeof(kp), path, "name");
		check_name(pc, config_yaml_get(v, "name"), kp, "task");
	}
	const struct config_node *cmd = config_yaml_get(v, "command");
	const struct config_node *sh = config_yaml_get(v, "shell");
	const struct config_node *http = config_yaml_get(v, "http");
	int n_bodies = (cmd != NULL) + (sh != NULL) + (http != NULL);
	if (n_bodies == 0) {
		config_bad(pc, v, path,
		    "a task needs one of command: [argv], shell: "
		    "\"...\" or http: {...}");
		return;
	}
	if (n_bodies > 1) {
		const struct config_node *second = cmd && sh ? sh : http;
		config_bad(pc, second, path,
		    "command, shell and http are exclusive: "
		    "give only one");
		return;
	}
	t->kind = http ? TASK_HTTP : TASK_COMMAND;
	/* One request is not a program: a minute, unless the task says. */
	if (http)
		t->timeout_ms = 60 * 1000;
	if (get_enum(pc, v, path, "kind", kinds, &kind) == 1 &&
	    kind != (int)t->kind) {
		pjoin(kp, sizeof(kp), path, "kind");
		config_bad(pc, config_yaml_get(v,
		    "kind"), kp, "kind %s does not "
		    "match the task's %s", kinds[kind],
		    http ? "http:" : "command");
	}
	get_duration(pc, v, path, "timeout", 1, INT64_C(86400000),
		     &t->timeout_ms);
	get_duration(pc, v, path, "grace", 0, INT64_C(3600000), &t->grace_ms);
	/* Output a result cannot carry would fail the same way on every
	 * retry: refused here, with the task, the size and the limit. */
	/* Named in a message only: written when the key is there. */
	if (config_yaml_get(v, "max_output")) {
		char owner[CONFIG_NAME_MAX + 16];
		snprintf(owner, sizeof(owner), "task \"%s\"",
			 t->name ? t->name : "?");
		get_size(pc, v, path, "max_output", SPEC_RESULT_MAX, owner,
			 "a result", &t->max_output);
	}
	if (t->kind == TASK_HTTP) {
		static const char *const cmd_only[] = {"cwd", "env", NULL};
		for (size_t i = 0; cmd_only[i]; i++) {
			const struct config_node *x =
				config_yaml_get(v, cmd_only[i]);
			if (x) {
				pjoin(kp, sizeof(kp), path, cmd_only[i]);
				config_bad(pc, x, kp,
				    "applies to command tasks only");
			}
		}
		pjoin(kp, sizeof(kp), path, "http");
		parse_http(pc, http, kp, t);
		return;
	}
	if (cmd) {
		if (get_strv(pc, v, path, "command", true, &t->argv, NULL) == 1)
			resolve_program(pc, t->argv);
	} else {
		get_str(pc, v, path, "shell", true, &t->shell);
	}
	if (get_str(pc, v, path, "cwd", false, &t->cwd) == 1) {
		char *r = resolve(pc, t->cwd);
		config_pool_release(pc->c->pool, t->cwd);
		t->cwd = r;
	}
	const struct config_node *e = config_yaml_get(v, "env");
	if (e) {
		pjoin(kp, sizeof(kp), path, "env");
		parse_task_env(pc, e, kp, t);
	}
}

static void parse_retry(struct config_pc *pc, const struct config_node *r,
			const char *path, struct schedule_spec *s,
			struct schedule_extra *x)
{
	static const char *const keys[] = {"attempts", "backoff", "delay",
					   NULL};
	static const char *const backoffs[] = {"exponential", "fixed", NULL};
	long long attempts = 0;
	int backoff = SC_BACKOFF_EXPONENTIAL;
	int64_t delay = 0;

	if (!config_map_keys(pc, r, path, keys, "retry"))
		return;
	int a = get_int(pc, r, path, "attempts", 1, 100, &attempts);
	int b = get_enum(pc, r, path, "backoff", backoffs, &backoff);
	int d = get_duration(pc, r, path, "delay", 0,
			     INT64_C(30) * 86400000, &delay);
	if (a == 0)
		missing(pc, r, path, "attempts", "");
	if (d == 0)
		missing(pc, r, path, "delay", "e.g. 30m");
	if (a != 1 || b < 0 || d != 1)
		return;
	struct sc_retry_policy p = {(int)attempts, (enum sc_backoff)backoff,
				    delay};
	if (!retry_policy_valid(&p)) {
		config_bad(pc, r, path, "invalid retry policy");
		return;
	}
	x->retry = p;
	s->has_retry = true;
}

/* A count of `expect:`, 0 to max. A negative one is named as such (the
 * integer getter would only say it is no integer). */
static void get_count(struct config_pc *pc, const struct config_node *m,
		      const char *path, const char *key, long long max,
		      int *out)
{
	const struct config_node *v = config_yaml_get(m, key);
	char kp[PATH_MAX_KEY];
	long long x = 0;

	if (v && v->kind == NODE_SCALAR && !v->is_null && v->str[0] == '-') {
		pjoin(kp, sizeof(kp), path, key);
		config_bad(pc, v, kp, "must not be negative (got %s)", v->str);
		return;
	}
	if (get_int(pc, m, path, key, 0, max, &x) == 1)
		*out = (int)x;
}

/*
 * `expect: {min_previews: N, min_summary_chars: N}`: what a run's
 * deliverables must hold to count as delivered (orchestrator.c). The
 * summary bound is in characters and cannot pass what one result
 * carries.
 */
static void parse_expect(struct config_pc *pc, const struct config_node *e,
			 const char *path, struct schedule_extra *s)
{
	static const char *const keys[] = {"min_previews",
					   "min_summary_chars", NULL};

	if (!config_map_keys(pc, e, path, keys, "expect"))
		return;
	get_count(pc, e, path, "min_previews", 100000, &s->expect_min_previews);
	get_count(pc, e, path, "min_summary_chars", (long long)SPEC_RESULT_MAX,
		  &s->expect_min_summary_chars);
}

/*
 * `heartbeat: {url_env: NAME, every: DUR}`; every only at the top level
 * (a schedule's pings follow its slots).
 */
static void parse_heartbeat(struct config_pc *pc, const struct config_node *h,
			    const char *path, bool top,
			    struct heartbeat_spec *out)
{
	static const char *const top_keys[] = {"url_env", "every", NULL};
	static const char *const sched_keys[] = {"url_env", NULL};

	if (!config_map_keys(pc, h, path, top ? top_keys : sched_keys,
		      top ? "heartbeat" : "a schedule's heartbeat"))
		return;
	get_env_name(pc, h, path, "url_env", true, &out->url_env);
	if (!top)
		return;
	out->every_ms = 60000;
	/* A ping a second at most; a day at most, so that a monitor's
	 * period and grace stay meaningful. */
	get_duration(pc, h, path, "every", 1000, INT64_C(86400000),
		     &out->every_ms);
}

/* `sla: {start_within, max_runtime, success_within}`: at least one. */
static void parse_sla(struct config_pc *pc, const struct config_node *v,
		      const char *path, struct schedule_extra *s)
{
	static const char *const keys[] = {"start_within", "max_runtime",
					   "success_within", NULL};
	const int64_t year = INT64_C(366) * 86400000;

	if (!config_map_keys(pc, v, path, keys, "sla"))
		return;
	s->has_sla = true;
	get_duration(pc, v, path, "start_within", 1000, year,
		     &s->sla.start_within_ms);
	get_duration(pc, v, path, "max_runtime", 1000, year,
		     &s->sla.max_runtime_ms);
	get_duration(pc, v, path, "success_within", 1000, year,
		     &s->sla.success_within_ms);
	if (v->n == 0)
		config_bad(pc, v, path,
		    "must set at least one of start_within, "
		    "max_runtime, success_within");
}

/*
 * Resolves a schedule once, after its environment override: the final
 * expression must parse and the zone must load, through the cron module,
 * so that every loaded schedule can fire; its class and final policy
 * follow from them (`retry:` wins over the class, and an override moves
 * the class). A bad override is located at the file's `cron:` (or the
 * schedule's name) and names the variable it came from.
 */
static void resolve_schedule(struct config_pc *pc, const struct config_node *k,
			     const struct config_node *v, const char *path,
			     struct schedule_spec *s)
{
	char kp[PATH_MAX_KEY];
	struct sc_err err = {0};
	const struct sc_zone *zone;
	struct sc_cron e;
	bool parsed = false;

	size_t mc = s->cron ? memo_slot(s->cron, 64) : 0;
	size_t mz = s->tz ? memo_slot(s->tz, 16) : 0;

	/* The parsed expression is interned in the pool (issue 45): the
	 * schedules that write one expression share its 40 bytes, and hold
	 * a pointer. */
	memset(&e, 0, sizeof(e));
	if (s->cron && pc->memo_cron[mc].cron == s->cron) {
		s->expr = pc->memo_cron[mc].expr;
		parsed = true;
	} else if (s->cron && sc_cron_parse(s->cron, &e, &err) != 0) {
		const struct config_node *at = config_yaml_get(v, "cron");
		pjoin(kp, sizeof(kp), path, "cron");
		if (spec_x(s)->override_var)
			config_bad(pc, at ? at : k, kp, "%s (from %s)", err.msg,
			    spec_x(s)->override_var);
		else
			config_bad(pc, at ? at : k, kp, "%s", err.msg);
	} else if (s->cron) {
		if (!pc->c->pool ||
		    !(s->expr = config_pool_blob(pc->c->pool, &e, sizeof(e))))
			config_oom(pc);
		else
			parsed = true;
	}
	const struct config_node *tz = config_yaml_get(v, "tz");
	sc_err_clear(&err);
	if (!s->tz) {
		s->zone = sc_zone_local();
	} else if (pc->memo_tz[mz].tz == s->tz) {
		s->zone = pc->memo_tz[mz].zone;
	} else if (sc_zone_load(s->tz, &zone, &err) != 0) {
		pjoin(kp, sizeof(kp), path, "tz");
		config_bad(pc, tz ? tz : k, kp, "%s", err.msg);
	} else {
		s->zone = zone;
		pc->memo_tz[mz].tz = s->tz;
		pc->memo_tz[mz].zone = zone;
	}
	if (!parsed)
		return;
	if (pc->memo_cron[mc].cron == s->cron) {
		s->cls = pc->memo_cron[mc].cls;
	} else {
		s->cls = sc_cron_class(s->expr, NULL, 0);
		pc->memo_cron[mc].cron = s->cron;
		pc->memo_cron[mc].expr = s->expr;
		pc->memo_cron[mc].cls = s->cls;
	}
}

/*
 * Moves what a schedule holds in malloc'd vectors and arrays into the
 * config's pool once it is read: identical vectors (targets: [log],
 * command: [/bin/true], the empty renamed_from) are then one copy for
 * every schedule, and the tasks array costs no malloc header. Out of
 * memory leaves the rest where it was (still valid, config_free frees it).
 */
static void schedule_pool(struct config_pc *pc, struct schedule_spec *s)
{
	struct config_pool *pool = pc->c->pool;
	int rc = 0;

	if (!pool)
		return;
	rc |= config_pool_strv(pool, &s->targets);
	rc |= config_pool_strv(pool, &s->renamed_from);
	for (size_t i = 0; i < s->n_tasks; i++) {
		char *cwd = s->tasks[i].cwd ? config_pool_str(pool,
							      s->tasks[i].cwd)
					    : NULL;
		if (cwd && cwd != s->tasks[i].cwd) {
			config_pool_release(pool, s->tasks[i].cwd);
			s->tasks[i].cwd = cwd;
		} else if (s->tasks[i].cwd && !cwd) {
			rc = SC_ENOMEM;
		}
		rc |= config_pool_strv(pool, &s->tasks[i].argv);
		rc |= config_pool_strv(pool, &s->tasks[i].env);
		rc |= config_pool_strv(pool, &s->tasks[i].headers);
	}
	/* n_tasks items, not the array's spare zeroed one (a task_spec is
	 * 120 bytes: 12 MB over 100,000 schedules), interned: their strings
	 * and vectors are pooled, so schedules that run the same tasks have
	 * equal bytes and share one array (issue 45). A task holding a
	 * string of its own (a resolved cwd or program) is equal to no
	 * other, so what config_free releases is never shared. */
	if (s->n_tasks && !config_pool_owns(pool, s->tasks)) {
		struct task_spec *t = config_pool_blob(
			pool, s->tasks, s->n_tasks * sizeof(*s->tasks));
		if (t) {
			free(s->tasks);
			s->tasks = t;
		} else {
			rc = SC_ENOMEM;
		}
	}
	if (rc)
		config_oom(pc);
}

/*
 * Gives s its extras (spec.h): none (x NULL) when x holds only defaults,
 * else the pool's copy of x, interned, so that schedules with the same
 * extras share one (issue 45). x's string is the pool's (xstrdup) and
 * its padding zeroed, so equal extras have equal bytes. A field added to
 * struct schedule_extra is added to the defaults test below.
 */
static void schedule_extra_pool(struct config_pc *pc, struct schedule_spec *s,
				struct schedule_extra *x)
{
	struct config_pool *pool = pc->c->pool;
	char *u = x->heartbeat.url_env;

	s->x = NULL;
	if (!pool) { /* config_parse makes it first: never here */
		free(u);
		config_oom(pc);
		return;
	}
	if (u) { /* pooled already (xstrdup): the same pointer back */
		x->heartbeat.url_env = config_pool_str(pool, u);
		if (x->heartbeat.url_env != u)
			config_pool_release(pool, u);
		if (!x->heartbeat.url_env) {
			config_oom(pc);
			return;
		}
	}
	if (!x->heartbeat.url_env && !x->heartbeat.every_ms &&
	    !x->sla.start_within_ms && !x->sla.max_runtime_ms &&
	    !x->sla.success_within_ms && !x->catchup_window_ms &&
	    !x->jitter_ms && !x->deadline_ms && x->notices == NOTICES_EVERY &&
	    !x->expect_min_previews && !x->expect_min_summary_chars &&
	    !x->has_sla && !x->schedule_env && !x->override_var &&
	    !x->cron_config && !x->retry.attempts && !x->retry.backoff &&
	    !x->retry.delay_ms)
		return; /* every default: spec_x's own */
	if (!(s->x = config_pool_blob(pool, x, sizeof(*x))))
		config_oom(pc);
}

static void parse_schedule(struct config_pc *pc, const struct config_node *k,
			   const struct config_node *v, void *item)
{
	static const char *const keys[] = {"cron",    "tz",    "catchup",
					   "targets", "tasks", "retry",
					   "schedule_env", "notices",
					   "expect", "heartbeat", "sla",
					   "renamed_from", "overlap",
					   "catchup_window", "jitter",
					   "deadline", "enabled", NULL};
	static const char *const catchups[] = {"latest", "all", "none", NULL};
	/* In the order of enum overlap. */
	static const char *const overlaps[] = {"queue", "skip", "allow",
					       "buffer_one", "replace", NULL};
	static const char *const bools[] = {"false", "true", NULL};
	struct schedule_spec *s = item;
	struct schedule_extra x;
	char path[PATH_MAX_KEY], kp[PATH_MAX_KEY], ip[PATH_MAX_KEY];
	int cu = 0, nt = 0, ov = 0, en = 1;

	/* Zeroed whole, padding included: extras are interned by their
	 * bytes (schedule_extra_pool). */
	memset(&x, 0, sizeof(x));

	pjoin(path, sizeof(path), "schedules", k->str);
	/* Unique: copied into the pool, not interned (no table entry). */
	s->name = pc->c->pool ? config_pool_dup(pc->c->pool, k->str)
			      : strdup(k->str);
	if (!s->name)
		config_oom(pc);
	if (!s->name || !config_map_keys(pc, v, path, keys, "a schedule"))
		goto env;
	get_str(pc, v, path, "cron", false, &s->cron); /* as written */
	get_env_name(pc, v, path, "schedule_env", false, &x.schedule_env);
	get_str(pc, v, path, "tz", false, &s->tz);
	if (get_enum(pc, v, path, "catchup", catchups, &cu) == 1)
		s->catchup = (enum catchup)cu;
	if (get_enum(pc, v, path, "notices", notice_names, &nt) == 1)
		x.notices = (enum notice_policy)nt;
	/* Operator controls (issue 17). */
	if (get_enum(pc, v, path, "overlap", overlaps, &ov) == 1)
		s->overlap = (enum overlap)ov;
	get_duration(pc, v, path, "catchup_window", INT64_C(1000),
		     INT64_C(400) * 86400000, &x.catchup_window_ms);
	get_duration(pc, v, path, "jitter", 1, INT64_C(86400000),
		     &x.jitter_ms);
	get_duration(pc, v, path, "deadline", INT64_C(1000),
		     INT64_C(400) * 86400000, &x.deadline_ms);
	if (get_enum(pc, v, path, "enabled", bools, &en) == 1)
		s->disabled = en == 0;
	const struct config_node *ex = config_yaml_get(v, "expect");
	if (ex) {
		pjoin(kp, sizeof(kp), path, "expect");
		parse_expect(pc, ex, kp, &x);
	}
	const struct config_node *hb = config_yaml_get(v, "heartbeat");
	if (hb) {
		pjoin(kp, sizeof(kp), path, "heartbeat");
		parse_heartbeat(pc, hb, kp, false, &x.heartbeat);
	}
	const struct config_node *sl = config_yaml_get(v, "sla");
	if (sl) {
		pjoin(kp, sizeof(kp), path, "sla");
		parse_sla(pc, sl, kp, &x);
	}
	/* The counts are 32 bits (spec.h); a sequence is far shorter
	 * (CONFIG_MAX_NODES). */
	size_t n_seq = 0;
	get_strv(pc, v, path, "renamed_from", false, &s->renamed_from,
		 &n_seq);
	s->n_renamed_from = (uint32_t)n_seq;
	const struct config_node *r = config_yaml_get(v, "retry");
	if (r) {
		pjoin(kp, sizeof(kp), path, "retry");
		parse_retry(pc, r, kp, s, &x);
	}
	/* The light load stops here: targets and tasks are what the
	 * read-only commands never show (check reads them). */
	if (pc->light)
		goto env;
	n_seq = 0;
	if (get_strv(pc, v, path, "targets", false, &s->targets,
		     &n_seq) == 1)
		check_target_refs(pc, v, path, "targets", s->targets);
	s->n_targets = (uint32_t)n_seq;

	const struct config_node *tl = config_yaml_get(v, "tasks");
	pjoin(kp, sizeof(kp), path, "tasks");
	if (!tl) {
		missing(pc, v, path, "tasks",
			"a list of tasks to run in each slot");
	} else if (config_want(pc, tl, kp, NODE_SEQ)) {
		if (tl->n == 0)
			config_bad(pc, tl, kp, "must not be empty");
		s->tasks = calloc(tl->n + 1, sizeof(*s->tasks));
		if (!s->tasks) {
			config_oom(pc);
			goto env;
		}
		for (size_t i = 0; i < tl->n; i++) {
			config_pindex(ip, sizeof(ip), kp, i);
			config_locs_add(pc->c->locs, ip, tl->kids[i]->line,
				 tl->kids[i]->col);
			parse_task(pc, tl->kids[i], ip, &s->tasks[s->n_tasks]);
			const char *nm = s->tasks[s->n_tasks].name;
			s->n_tasks++;
			for (size_t j = 0; nm && j + 1 < s->n_tasks; j++) {
				if (s->tasks[j].name &&
				    strcmp(s->tasks[j].name, nm) == 0) {
					char np[PATH_MAX_KEY];
					pjoin(np, sizeof(np), ip, "name");
					config_bad(pc, config_yaml_get(
					    tl->kids[i], "name"),
					    np, "duplicate task name \"%s\" "
					    "in this schedule", nm);
					break;
				}
			}
		}
	}
env:
	if (!s->targets && !(s->targets = calloc(1, sizeof(char *))))
		config_oom(pc);
	if (!s->renamed_from && !(s->renamed_from = calloc(1, sizeof(char *))))
		config_oom(pc);
	/* The override first: what it leaves in the extras is interned
	 * with them (none: the shared defaults). */
	int rc = s->name ? config_env_apply(pc->c->pool, s, &x) : 0;
	schedule_extra_pool(pc, s, &x);
	schedule_pool(pc, s);
	if (!s->name)
		return;
	if (rc == SC_ENOMEM) {
		config_oom(pc);
	} else if (rc == SC_ENOENT && v->kind == NODE_MAP) {
		char var[CONFIG_NAME_MAX + 32];
		/* A name too long for a variable has none (it is refused
		 * as a name already): never print the unfilled buffer. */
		if (config_env_default_var(s->name, var, sizeof(var)) != 0)
			var[0] = '\0';
		if (!var[0] && !x.schedule_env)
			config_bad(pc, k, path,
			    "missing required key \"cron\" (the "
			    "name is too long for an override variable)");
		else
			config_bad(pc, k, path,
			    "missing required key \"cron\" (or "
			    "set %s%s%s)",
			    x.schedule_env ? x.schedule_env : var,
			    x.schedule_env && var[0] ? " or " : "",
			    x.schedule_env ? var : "");
	}
	if (spec_x(s)->override_var)
		LOG(SC_LOG_INFO, "config", "event=cron_override "
		       "schedule=%s cron_override=%s",
		       s->name, spec_x(s)->override_var);
	resolve_schedule(pc, k, v, path, s);
}

/*
 * Two names that map to one override variable ("a-b", "a_b") would let one
 * variable move two schedules: refused. Sorted, so O(n log n), by the
 * variable each name maps to, compared through the mapping itself
 * (config_env_default_var's) rather than stored: 16 bytes a schedule, not
 * the 112 of a copy of each variable (11 MB at the end of a load of
 * 100,000 schedules, the daemon's peak; issue 45).
 */
struct varref {
	const char *name;           /* NULL: no variable (a name too long,
				       refused already) */
	size_t idx;
	uint64_t h;                 /* var_hash(name): compared first */
};

/* A name's character as config_env_default_var writes it. */
static int var_char(char ch)
{
	if (ch >= 'a' && ch <= 'z')
		return ch - 'a' + 'A';
	if ((ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9'))
		return (unsigned char)ch;
	return '_';
}

/* strcmp of the variables of names a and b (the prefix is common). */
static int var_cmp(const char *a, const char *b)
{
	for (;; a++, b++) {
		int x = *a ? var_char(*a) : 0, y = *b ? var_char(*b) : 0;
		if (x != y || !x)
			return (x > y) - (x < y);
	}
}

/* FNV-1a of the variable's characters: equal variables, equal hashes. */
static uint64_t var_hash(const char *s)
{
	uint64_t h = UINT64_C(14695981039346656037);

	for (; *s; s++)
		h = (h ^ (uint64_t)var_char(*s)) * UINT64_C(1099511628211);
	return h;
}

/* By hash, then variable, then position: equal variables end up side by
 * side, the first written first. */
static int varref_cmp(const void *a, const void *b)
{
	const struct varref *x = a, *y = b;
	int c = !x->name || !y->name ? (x->name != NULL) - (y->name != NULL)
				     : (x->h > y->h) - (x->h < y->h);
	if (!c && x->name && y->name)
		c = var_cmp(x->name, y->name);
	return c ? c : (x->idx < y->idx ? -1 : x->idx > y->idx);
}

static void override_collisions(struct config_pc *pc)
{
	const struct config_nref *refs = pc->refs[COUNT_SCHEDULES];
	size_t cnt = pc->c->n_schedules;
	char kp[PATH_MAX_KEY], var[CONFIG_NAME_MAX + 32];

	if (cnt < 2 || !refs)
		return;
	struct varref *v = calloc(cnt, sizeof(*v));
	if (!v) {
		config_oom(pc);
		return;
	}
	size_t m = 0;
	for (size_t i = 0; i < cnt; i++) {
		if (!refs[i].name)
			continue;
		v[m].idx = i;
		/* too long: already refused */
		if (config_env_default_var(refs[i].name, var, sizeof(var)) == 0) {
			v[m].name = refs[i].name;
			v[m].h = var_hash(refs[i].name);
		}
		m++;
	}
	qsort(v, m, sizeof(*v), varref_cmp);
	size_t first = 0;
	for (size_t i = 1; i < m; i++) {
		if (!v[i].name || !v[first].name ||
		    var_cmp(v[i].name, v[first].name) != 0) {
			first = i;
			continue;
		}
		if (strcmp(v[i].name, v[first].name) == 0)
			continue; /* the same name: a duplicate, reported */
		const struct config_nref *r = &refs[v[i].idx];
		pjoin(kp, sizeof(kp), "schedules", v[i].name);
		if (config_env_default_var(v[i].name, var, sizeof(var)))
			var[0] = '\0';
		if (config_problem_add_in(
			    pc->probs, r->file,
			    r->file ? pc->srcs[r->file].shown : NULL, r->line,
			    r->col, "%s: schedules \"%s\" and \"%s\" share the "
			    "override variable %s; rename one", kp,
			    v[first].name, v[i].name, var))
			pc->oom = true;
	}
	free(v);
}

/* One `renamed_from:` name: which schedule claims it. */
struct rref {
	const char *old;
	size_t sched, j;
	bool own;              /* names a schedule of the config */
};

static int rref_cmp(const void *a, const void *b)
{
	const struct rref *x = a, *y = b;
	int c = strcmp(x->old, y->old);

	if (c)
		return c;
	if (x->sched != y->sched)
		return x->sched < y->sched ? -1 : 1;
	return (x->j > y->j) - (x->j < y->j);
}

/*
 * `renamed_from:` names are earlier names: none may be a schedule of the
 * config (that one would run under two names), and no two schedules may
 * claim the same one (its state would have two heirs). By lookup and
 * sort: O(n log n) in the number of schedules and names (issue 15).
 * Positions come from the table (get_strv kept each name's).
 */
static void renames_whole(struct config_pc *pc)
{
	const struct config *c = pc->c;
	char sp[PATH_MAX_KEY], kp[PATH_MAX_KEY], ip[PATH_MAX_KEY];
	size_t n = 0;

	for (size_t i = 0; i < c->n_schedules; i++)
		n += c->schedules[i].n_renamed_from;
	if (n == 0)
		return;
	struct rref *v = calloc(n, sizeof(*v));
	if (!v) {
		config_oom(pc);
		return;
	}
	n = 0;
	for (size_t i = 0; i < c->n_schedules; i++) {
		const struct schedule_spec *s = &c->schedules[i];
		pjoin(sp, sizeof(sp), "schedules", s->name ? s->name : "");
		pjoin(kp, sizeof(kp), sp, "renamed_from");
		for (size_t j = 0; j < s->n_renamed_from; j++) {
			const char *old = s->renamed_from[j];
			v[n] = (struct rref){old, i, j,
					     config_schedule(c, old) != NULL};
			if (v[n].own) {
				config_pindex(ip, sizeof(ip), kp, j);
				bad_at(pc, ip, kp, ip, "\"%s\" is a schedule "
				       "of this file; renamed_from names "
				       "earlier names only", old);
			}
			n++;
		}
	}
	qsort(v, n, sizeof(*v), rref_cmp);
	size_t first = 0;
	for (size_t i = 1; i < n; i++) {
		if (strcmp(v[i].old, v[first].old) != 0) {
			first = i;
			continue;
		}
		if (v[i].own)
			continue;
		const struct schedule_spec *s = &c->schedules[v[i].sched];
		pjoin(sp, sizeof(sp), "schedules", s->name ? s->name : "");
		pjoin(kp, sizeof(kp), sp, "renamed_from");
		config_pindex(ip, sizeof(ip), kp, v[i].j);
		for (size_t o = first; o < i; o++)
			if (v[o].sched < v[i].sched)
				bad_at(pc, ip, kp, ip, "\"%s\" is claimed by "
				       "schedule %s too", v[i].old,
				       c->schedules[v[o].sched].name);
	}
	free(v);
}

/* The names every file's schedules and alerts use, checked once all files
 * are read (a schedule may deliver to a target of another file). */
static void refs_whole(struct config_pc *pc)
{
	const struct config *c = pc->c;
	char sp[PATH_MAX_KEY], kp[PATH_MAX_KEY], ip[PATH_MAX_KEY];

	for (size_t i = 0; i < c->n_schedules; i++) {
		const struct schedule_spec *s = &c->schedules[i];
		if (!s->name)
			continue;
		pjoin(sp, sizeof(sp), "schedules", s->name);
		for (size_t j = 0; s->targets && s->targets[j]; j++) {
			if (config_target(c, s->targets[j]))
				continue;
			pjoin(kp, sizeof(kp), sp, "targets");
			config_pindex(ip, sizeof(ip), kp, j);
			bad_at(pc, ip, sp, ip, "unknown target \"%s\" (not "
			       "defined under targets:)", s->targets[j]);
		}
		for (size_t j = 0; j < s->n_tasks; j++) {
			const struct task_spec *t = &s->tasks[j];
			if (t->kind != TASK_HTTP || !t->auth ||
			    config_auth(c, t->auth))
				continue;
			pjoin(kp, sizeof(kp), sp, "tasks");
			config_pindex(ip, sizeof(ip), kp, j);
			pjoin(kp, sizeof(kp), ip, "http.auth");
			snprintf(ip, sizeof(ip), "%s", kp);
			bad_at(pc, ip, sp, ip, "unknown auth provider \"%s\" "
			       "(not defined under auth:)", t->auth);
		}
	}
}

static void parse_schedules(struct config_pc *pc, size_t f)
{
	void *v = pc->c->schedules;

	named_section(pc, f, "schedules", "schedule",
		      sizeof(struct schedule_spec), parse_schedule, &v,
		      &pc->c->n_schedules, COUNT_SCHEDULES);
	pc->c->schedules = v;
}

/* What holds across the files' sections, once every file is read: names
 * defined twice, the name indexes, the references, the schedules as a
 * whole. */
static void sections_whole(struct config_pc *pc)
{
	struct config *c = pc->c;

	dup_across(pc, COUNT_TARGETS, "targets", "target", c->n_targets);
	dup_across(pc, COUNT_AUTHS, "auth", "auth provider", c->n_auths);
	dup_across(pc, COUNT_SCHEDULES, "schedules", "schedule",
		   c->n_schedules);
	config_index_build(pc, COUNT_TARGETS);
	config_index_build(pc, COUNT_AUTHS);
	config_index_build(pc, COUNT_SCHEDULES);
	/* The light load read no task or target to refer from, and may have
	 * left fragments unread: no references, and "no schedule" is the
	 * command's to say (`status NAME`: no schedule 'NAME'). A fragment
	 * that could not be read fails the load on its own. */
	if (pc->light || pc->unread)
		goto light;
	refs_whole(pc);
	if (!pc->present[COUNT_SCHEDULES]) {
		config_bad(pc, pc->srcs[0].root, "", "missing required key "
		    "\"schedules\" (nothing to run)");
		return;
	}
	if (c->n_schedules == 0) {
		/* Said at the first (empty) `schedules:` mapping. */
		if (pc->sched_line > 0 &&
		    config_problem_add_in(pc->probs, pc->sched_file,
					  pc->sched_file
						  ? pc->srcs[pc->sched_file]
							    .shown
						  : NULL,
					  pc->sched_line, pc->sched_col,
					  "schedules: no schedule defined "
					  "(nothing to run)"))
			pc->oom = true;
		return;
	}
light:
	override_collisions(pc);
	renames_whole(pc);
}

/* ------------------------------------------------------------------ */
/* Free, load                                                         */
/* ------------------------------------------------------------------ */

static void task_free(const struct config_pool *pool, struct task_spec *t)
{
	config_pool_release(pool, t->name);
	strv_free(pool, t->argv);
	config_pool_release(pool, t->shell);
	config_pool_release(pool, t->cwd);
	strv_free(pool, t->env);
	config_pool_release(pool, t->method);
	config_pool_release(pool, t->url);
	strv_free(pool, t->headers);
	config_pool_release(pool, t->body);
	config_pool_release(pool, t->auth);
}

void config_free(struct config *c)
{
	if (!c)
		return;
	const struct config_pool *pool = c->pool;
	for (size_t i = 0; i < c->n_targets; i++) {
		struct target_spec *t = &c->targets[i];
		config_pool_release(pool, t->name);
		config_pool_release(pool, t->url_env);
		config_pool_release(pool, t->secret_env);
		config_pool_release(pool, t->signature_header);
		config_pool_release(pool, t->path);
		strv_free(pool, t->argv);
		config_pool_release(pool, t->mail_from);
		strv_free(pool, t->mail_to);
		config_pool_release(pool, t->username_env);
		config_pool_release(pool, t->password_env);
	}
	config_pool_release(pool, c->targets);
	for (size_t i = 0; i < c->n_auths; i++) {
		struct auth_spec *a = &c->auths[i];
		config_pool_release(pool, a->name);
		config_pool_release(pool, a->token_url);
		config_pool_release(pool, a->client_id);
		config_pool_release(pool, a->client_secret_env);
		config_pool_release(pool, a->scope);
		config_pool_release(pool, a->reset_header);
		config_pool_release(pool, a->token_env);
	}
	config_pool_release(pool, c->auths);
	for (size_t i = 0; i < c->n_schedules; i++) {
		struct schedule_spec *s = &c->schedules[i];
		config_pool_release(pool, s->name);
		config_pool_release(pool, s->cron);
		config_pool_release(pool, s->tz);
		strv_free(pool, s->targets);
		strv_free(pool, s->renamed_from);
		for (size_t j = 0; j < s->n_tasks; j++)
			task_free(pool, &s->tasks[j]);
		config_pool_release(pool, s->tasks);
	}
	config_pool_release(pool, c->schedules);
	strv_free(pool, c->alert_targets);
	config_pool_release(pool, c->heartbeat.url_env);
	config_pool_release(pool, c->store_url);
	config_pool_release(pool, c->http_listen);
	config_pool_release(pool, c->http_token_env);
	config_pool_release(pool, c->status_socket);
	for (size_t i = 0; i < c->n_files; i++)
		config_pool_release(pool, c->files[i].path);
	config_pool_release(pool, c->files);
	config_pool_release(pool, c->path);
	config_pool_release(pool, c->dir);
	config_locs_free(c->locs);
	config_index_free(c->index);
	config_pool_free(c->pool);
	free(c);
}

/* config_parse; with positions false, no key-path position is recorded
 * (config_load's first pass: less memory, and a failure is parsed again
 * with them, so its problems are the same). */
/* What the light load skips (struct config_pc's light, no_schedules, only). */
struct light {
	bool light;
	bool no_schedules;
	const char *only;
};

/* trust_warns: see struct config_pc's. */
static int parse_config(const char *path, struct config **out,
			struct config_problems *probs, bool positions,
			const struct light *lt, bool trust_warns)
{
	size_t before = probs->n + probs->n_dropped;
	size_t first = probs->n;
	char *text = NULL;
	size_t len = 0;
	struct config_node *root = NULL;
	struct config *c = NULL;
	struct config_pc pc = {.probs = probs, .trust_warns = trust_warns};
	struct config_problems main_warns = {0};
	int rc;

	if (lt) {
		pc.light = lt->light;
		pc.no_schedules = lt->no_schedules;
		pc.only = lt->only;
	}
	if (!probs->file && !(probs->file = strdup(path)))
		return SC_ENOMEM;
	probs->at_file = NULL;
	probs->at_file_ix = 0;
	rc = config_read_file(path, &text, &len, probs,
		       trust_warns ? &main_warns : NULL);
	if (rc)
		return rc;
	rc = SC_ECONFIG;
	root = config_yaml_parse(text, len, probs);
	if (!root)
		goto done;
	if (root->kind != NODE_MAP || root->n == 0) {
		if (root->is_null || (root->kind == NODE_MAP && root->n == 0))
			config_problem_add(probs, root->line, root->col,
					   "empty configuration (expected a "
					   "mapping with at least "
					   "`schedules:`)");
		else
			config_problem_add(probs, root->line, root->col,
					   "expected a mapping at the top "
					   "level, got %s",
					   config_yaml_kind(root));
		goto done;
	}

	c = calloc(1, sizeof(*c));
	struct config_locs *locs = positions ? config_locs_new() : NULL;
	if (!c || (positions && !locs)) {
		config_locs_free(locs);
		rc = SC_ENOMEM;
		config_problem_oom(probs);
		goto done;
	}
	c->locs = locs;
	if (main_warns.n && locs)
		config_problems_move(config_locs_warns(locs), &main_warns);
	if (!(c->pool = config_pool_new())) {
		rc = SC_ENOMEM;
		config_problem_oom(probs);
		goto done;
	}
	c->path = strdup(path);
	c->dir = config_folder_of(path);
	if (!c->path || !c->dir) {
		if (!c->path || errno == ENOMEM)
			config_problem_oom(probs);
		else
			config_problem_add(probs, 0, 0, "cannot resolve the "
					   "folder of the file: %s",
					   strerror(errno));
		goto done;
	}
	c->concurrency = 1;
	c->lease_ms = 5 * 60 * 1000;
	c->grace_ms = 30 * 1000;
	c->skew_grace_ms = 10 * 60 * 1000;
	c->clock_tolerance_ms = CONFIG_CLOCK_TOLERANCE_MS;

	/* The main file is srcs[0] and files[0]; the fragments follow. */
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	size_t flen = strlen(c->dir) + strlen(base) + 2;
	pc.c = c;
	pc.srcs = calloc(1, sizeof(*pc.srcs));
	if (pc.srcs)
		pc.n_srcs = pc.cap_srcs = 1; /* so that `done` frees what
						srcs[0] gets */
	c->files = calloc(1, sizeof(*c->files));
	if (!pc.srcs || !c->files ||
	    !(pc.srcs[0].shown = strdup(path)) ||
	    !(pc.srcs[0].dir = strdup(c->dir)) ||
	    !(c->files[0].path = malloc(flen))) {
		config_problem_oom(probs);
		goto done;
	}
	snprintf(c->files[0].path, flen, "%s/%s", c->dir, base);
	char *real = realpath(path, NULL);
	if (real) {
		/* A main file that is a link: its target, so that a pattern
		 * matching it does not read it again as a fragment. */
		free(c->files[0].path);
		c->files[0].path = real;
	}
	pc.srcs[0].root = root;
	pc.n_srcs = c->n_files = 1;
	pc.dir = c->dir;

	static const char *const top[] = {"store",  "worker", "targets",
					  "alerts", "auth",   "schedules",
					  "heartbeat", "retention",
					  "include", "http", "status_socket",
					  NULL};
	config_map_keys(&pc, root, "", top, "the top level");
	parse_store(&pc, root);
	parse_worker(&pc, root);
	parse_retention(&pc, root);
	parse_http_listen(&pc, root);
	parse_status_socket(&pc, root);
	const struct config_node *hb = config_yaml_get(root, "heartbeat");
	if (hb)
		parse_heartbeat(&pc, hb, "heartbeat", true, &c->heartbeat);
	config_parse_include(&pc, path, root);
	/* File by file, each fragment's tree freed once its sections are
	 * read: the peak is one fragment's tree, not all of them. */
	bool frag_read_failed = false;
	struct config_ahead ahead;
	pc.defer_refs = true;
	/* Not for config_load (the daemon and the commands that run a
	 * config): there one tree at a time keeps the daemon's peak down
	 * (100,000 schedules: 88 MB, against 107-115 MB with the helper),
	 * for a start that was 5 % faster. check and the light load are
	 * short-lived; a person waits for them. */
	config_ahead_start(&ahead, &pc, positions || pc.light);
	for (size_t i = 0; i < pc.n_srcs; i++) {
		if (i) {
			config_ahead_wait(&ahead, i);
			int frc = config_read_fragment(&pc, i);
			pc.unread |= pc.srcs[i].unread;
			if (frc == SC_ENOMEM)
				config_oom(&pc);
			else if (frc)
				frag_read_failed = true;
		}
		config_pc_enter(&pc, i);
		if (!pc.light) {
			parse_targets(&pc, i);
			parse_auths(&pc, i);
		}
		if (!pc.no_schedules)
			parse_schedules(&pc, i);
		if (i) {
			config_yaml_free(pc.srcs[i].root);
			pc.srcs[i].root = NULL;
			free(pc.srcs[i].text);
			pc.srcs[i].text = NULL;
		}
	}
	config_ahead_stop(&ahead);
	config_pc_enter(&pc, 0);
	pc.defer_refs = false;
	sections_whole(&pc);
	parse_alerts(&pc, root);
	/* The schedules' array as long as it is (and its spare): the
	 * doubling leaves up to half again (issue 45). Nothing points into
	 * it yet; the index holds positions. */
	if (c->n_schedules + 1 < pc.cap[COUNT_SCHEDULES]) {
		struct schedule_spec *v = realloc(
			c->schedules, (c->n_schedules + 1) * sizeof(*v));
		if (v)
			c->schedules = v;
	}
	if (pc.oom)
		rc = SC_ENOMEM;
	else if (probs->n + probs->n_dropped == before && !frag_read_failed)
		rc = 0;
done:
	probs->at_file = NULL;
	probs->at_file_ix = 0;
	config_problems_sort(probs, first);
	/* A problem born of a failed allocation is not the file's fault. */
	if (probs->oom)
		rc = SC_ENOMEM;
	if (rc == 0)
		*out = c;
	else
		config_free(c);
	for (size_t i = 0; i < pc.n_srcs; i++) {
		free(pc.srcs[i].shown);
		free(pc.srcs[i].dir);
		free(pc.srcs[i].text);
		config_problems_dispose(&pc.srcs[i].probs);
		config_problems_dispose(&pc.srcs[i].warns);
		if (i)
			config_yaml_free(pc.srcs[i].root);
	}
	free(pc.srcs);
	free(pc.seen);
	for (size_t i = 0; i < 3; i++)
		free(pc.refs[i]);
	config_yaml_free(root);
	config_problems_dispose(&main_warns);
	free(text);
	return rc;
}

int config_parse(const char *path, struct config **out,
		 struct config_problems *probs)
{
	return parse_config(path, out, probs, true, NULL, true);
}

static int load(const char *path, const struct light *lt,
		struct config **out, struct sc_err *err)
{
	struct config_problems probs = {0};
	char line[SC_ERR_MSG_MAX];

	/* Nobody checks a config loaded this way (check uses config_parse):
	 * it is read without the key-path positions, a third of a large
	 * config's memory (issue 15). A config that fails is read again
	 * with them, for the same first problem config_parse gives. */
	int rc = parse_config(path, out, &probs, false, lt, false);
	if (rc != 0 && rc != SC_ENOMEM) {
		config_problems_dispose(&probs);
		rc = parse_config(path, out, &probs, true, lt, false);
		if (rc == 0) {
			config_locs_free((*out)->locs);
			(*out)->locs = NULL;
		}
	}
	if (rc) {
		if (probs.n)
			config_problem_format(&probs, 0, line, sizeof(line));
		else
			snprintf(line, sizeof(line), "%s: %s", path,
				 sc_strerror(rc));
		sc_err_set(err, rc, "%s", line);
	}
	config_problems_dispose(&probs);
#ifdef __GLIBC__
	/* A load frees a fragment's tree after each fragment: the pages of
	 * those frees stay with the process until trimmed, some 20 MB of
	 * a 100,000-schedule config (docs/internals/config.md). */
	malloc_trim(0);
#endif
	return rc;
}

int config_load(const char *path, struct config **out, struct sc_err *err)
{
	return load(path, NULL, out, err);
}

int config_load_light(const char *path, bool schedules, const char *only,
		      struct config **out, struct sc_err *err)
{
	struct light lt = {.light = true, .no_schedules = !schedules,
			   .only = schedules ? only : NULL};

	return load(path, &lt, out, err);
}
