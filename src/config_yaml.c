/*
 * config_yaml.c - the bytes of surecron.yaml -> a tree of positioned nodes.
 *
 * Two steps: a pre-scan of the raw bytes (UTF-8, control characters, tabs
 * in indentation), then libyaml's events built into struct config_node
 * (config_int.h), each node keeping the line:column where it starts. The
 * tree knows nothing of surecron's keys: config.c walks it.
 *
 * Invariants:
 *   - Positions are libyaml's, 1-based, lines counted at every break YAML
 *     knows (LF, CRLF, CR, NEL, LS, PS) and columns in characters, so the
 *     pre-scan and the parser agree; a position is never past the end of
 *     the file (libyaml's implied final line break is pulled back).
 *   - Aliases are refused (no sharing, no "billion laughs" expansion);
 *     the tree is bounded in depth (CONFIG_MAX_DEPTH) and node count
 *     (CONFIG_MAX_NODES), so a 1 MiB file cannot cost more than a bounded
 *     amount of memory and stack.
 *   - Exactly one document; keys are scalars; no value holds a NUL.
 *   - NEL, LS and PS (U+0085, U+2028, U+2029) appear only inside quoted
 *     scalars: YAML ends a line at each, so anywhere else one would end a
 *     comment or a value where no reader of the file sees a line end
 *     (issue 44: a crontab line injected keys that way). The pre-scan
 *     notes where they are, the tree builder checks each against the
 *     quoted scalars libyaml reports.
 *   - Every failure appends a problem before returning NULL, and a
 *     partial tree is freed: the caller never gets half a document.
 *   - A tree lives in one arena (chunks of at least 64 KiB) that its root
 *     owns: nodes, strings and kids arrays are carved from it and freed
 *     together, so parsing and freeing 100,000 schedules costs a few
 *     hundred allocations, not millions (issue 15).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "config.h"
#include "config_int.h"

/* ------------------------------------------------------------------ */
/* Pre-scan of the raw bytes                                          */
/* ------------------------------------------------------------------ */

/*
 * YAML wants UTF-8 (or UTF-16, which we do not accept), no control
 * characters but tab, LF and CR, and spaces for indentation. libyaml
 * reports some of these without a usable position, so we find them first
 * and say where they are. Columns count characters and lines count line
 * breaks, both as libyaml's do. *end_line and *end_col get the position
 * after the last character.
 */
/* Where one NEL, LS or PS is, and which. */
struct ubreak {
	int line, col;
	uint32_t cp;
};

/* The NEL, LS and PS of a file, in file order. */
struct ubreaks {
	struct ubreak *v;
	size_t n, cap, next;    /* next: the first not yet seen by build */
};

static int ubreak_add(struct ubreaks *u, int line, int col, uint32_t cp)
{
	if (u->n == u->cap) {
		size_t ncap = u->cap ? u->cap * 2 : 8;
		struct ubreak *v = realloc(u->v, ncap * sizeof(*v));
		if (!v)
			return -1;
		u->v = v;
		u->cap = ncap;
	}
	u->v[u->n++] = (struct ubreak){line, col, cp};
	return 0;
}

static int prescan(const unsigned char *s, size_t n,
		   struct config_problems *probs, struct ubreaks *ub,
		   int *end_line, int *end_col)
{
	int line = 1, col = 1;
	bool at_indent = true;
	int tab_col = 0;
	size_t i = 0;

	if (n >= 3 && s[0] == 0xEF && s[1] == 0xBB && s[2] == 0xBF)
		i = 3; /* a UTF-8 byte order mark is allowed at the start */
	while (i < n) {
		unsigned char ch = s[i];
		uint32_t cp;
		size_t len;

		if (ch < 0x80) {
			cp = ch;
			len = 1;
		} else if (ch >= 0xC2 && ch <= 0xDF) {
			cp = ch & 0x1F;
			len = 2;
		} else if (ch >= 0xE0 && ch <= 0xEF) {
			cp = ch & 0x0F;
			len = 3;
		} else if (ch >= 0xF0 && ch <= 0xF4) {
			cp = ch & 0x07;
			len = 4;
		} else {
			goto bad_utf8;
		}
		if (i + len > n)
			goto bad_utf8;
		for (size_t k = 1; k < len; k++) {
			if ((s[i + k] & 0xC0) != 0x80)
				goto bad_utf8;
			cp = (cp << 6) | (s[i + k] & 0x3F);
		}
		if ((len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
		    (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
			goto bad_utf8;
		if ((cp < 0x20 && cp != '\t' && cp != '\n' && cp != '\r') ||
		    cp == 0x7F || (cp >= 0x80 && cp <= 0x9F && cp != 0x85) ||
		    cp == 0xFFFE || cp == 0xFFFF) {
			config_problem_add(probs, line, col,
					   "control character U+%04X is not "
					   "allowed in YAML", (unsigned)cp);
			return -1;
		}
		if (cp == '\n' || cp == '\r' || cp == 0x85 || cp == 0x2028 ||
		    cp == 0x2029) {
			/* Lines end where libyaml ends them (LF, CRLF, CR
			 * alone, NEL, LS, PS), so our positions and its
			 * agree, and a CR-only file gets its tab check
			 * (issue 11). A tab on a blank line is harmless. */
			if (cp == '\r' && i + 1 < n && s[i + 1] == '\n')
				len = 2;
			if (cp > 0x7F && ubreak_add(ub, line, col, cp)) {
				config_problem_oom(probs);
				return -1;
			}
			line++;
			col = 1;
			at_indent = true;
			tab_col = 0;
			i += len;
			continue;
		}
		if (at_indent) {
			if (cp == '\t') {
				if (!tab_col)
					tab_col = col;
			} else if (cp != ' ') {
				at_indent = false;
				if (tab_col && cp != '#') {
					config_problem_add(
						probs, line, tab_col,
						"tab character in indentation "
						"(YAML indents with spaces)");
					return -1;
				}
			}
		}
		col++;
		i += len;
	}
	*end_line = line;
	*end_col = col;
	return 0;
bad_utf8:
	config_problem_add(probs, line, col,
			   "invalid UTF-8 byte 0x%02X (the file must be "
			   "UTF-8 text)", s[i]);
	return -1;
}

/* ------------------------------------------------------------------ */
/* YAML events -> node tree                                           */
/* ------------------------------------------------------------------ */

#define ARENA_CHUNK ((size_t)64 * 1024)

struct arena_chunk {
	struct arena_chunk *next;
	size_t used, cap;
	max_align_t data[];
};

/* The root node lives in the arena's own header, so that the tree's
 * owner finds the arena from the root it holds (config_yaml_free) and no
 * node carries a pointer to it. */
struct config_arena {
	struct config_node root; /* first: a root's address is its arena's */
	struct arena_chunk *head;
};

static void arena_free(struct config_arena *a)
{
	if (!a)
		return;
	while (a->head) {
		struct arena_chunk *c = a->head;
		a->head = c->next;
		free(c);
	}
	free(a);
}

/* n bytes aligned to al (a power of two, at most max_align_t's: 1 for
 * strings, a pointer's for nodes and kids arrays); NULL when out of
 * memory. */
static void *arena_alloc(struct config_arena *a, size_t n, size_t al)
{
	struct arena_chunk *c = a->head;
	size_t off = c ? (c->used + al - 1) & ~(al - 1) : 0;

	if (!c || off > c->cap || c->cap - off < n) {
		size_t cap = n > ARENA_CHUNK ? n : ARENA_CHUNK;
		c = malloc(sizeof(*c) + cap);
		if (!c)
			return NULL;
		c->cap = cap;
		c->used = 0;
		off = 0;
		if (a->head && n > ARENA_CHUNK) {
			/* A big one goes behind the current chunk, whose
			 * room stays in use. */
			c->next = a->head->next;
			a->head->next = c;
		} else {
			c->next = a->head;
			a->head = c;
		}
	}
	void *p = (char *)c->data + off;
	c->used = off + n;
	return p;
}

void config_yaml_free(struct config_node *n)
{
	/* n is the root, the first member of its arena (parse_tree). */
	if (n)
		arena_free((struct config_arena *)(void *)n);
}

struct ybuild {
	yaml_parser_t parser;
	struct config_arena *arena;
	/* The kids of the collections being built, innermost last: each
	 * collection's are copied into an array of their exact count when
	 * it ends (a doubling array per collection left its old copies in
	 * the arena: about a third of a tree). Malloc'd, freed at the end. */
	struct config_node **stk;
	size_t stk_n, stk_cap;
	int end_line, end_col; /* the position after the last character */
	struct config_problems *probs;
	struct ubreaks *ub;
	size_t n_nodes;
	bool oom;
};

/* True when position a comes before b. */
static bool pos_before(int la, int ca, int lb, int cb)
{
	return la < lb || (la == lb && ca < cb);
}

/*
 * Refuses the first NEL, LS or PS not yet seen when it comes before
 * (line, col), the start of the next thing the parser read: the scalars
 * that may hold one are passed over by skip_quoted. Returns -1 after
 * recording the problem, 0 when there is none.
 */
static int ubreak_check(struct ybuild *b, int line, int col)
{
	struct ubreaks *u = b->ub;

	if (u->next >= u->n ||
	    !pos_before(u->v[u->next].line, u->v[u->next].col, line, col))
		return 0;
	const struct ubreak *k = &u->v[u->next];
	const char *esc = k->cp == 0x85 ? "\\N" : k->cp == 0x2028 ? "\\L"
								: "\\P";
	config_problem_add(b->probs, k->line, k->col,
			   "line break U+%04X outside a quoted string: YAML "
			   "ends a line there that a reader of the file does "
			   "not see (inside double quotes, write it as %s)",
			   (unsigned)k->cp, esc);
	return -1;
}

/* Passes over the breaks inside a quoted scalar that ends before (line,
 * col): they are part of its value. */
static void skip_quoted(struct ybuild *b, int line, int col)
{
	struct ubreaks *u = b->ub;

	while (u->next < u->n &&
	       pos_before(u->v[u->next].line, u->v[u->next].col, line, col))
		u->next++;
}

/*
 * libyaml's mark as a 1-based position inside the file. At the end of a
 * file without a final line break libyaml counts an implied one, so its
 * mark can be the start of a line that is not in the file: that is the
 * end of the last line instead (found by fuzzing, for errors and for the
 * empty value of a last key such as "  ?").
 */
static void mark_pos(const struct ybuild *b, const yaml_mark_t *m, int *line,
		     int *col)
{
	*line = (int)m->line + 1;
	*col = (int)m->column + 1;
	if (*line > b->end_line || (*line == b->end_line && *col > b->end_col)) {
		*line = b->end_line;
		*col = b->end_col;
	}
}

/* Reports libyaml's error with its position. */
static void yaml_problem(struct ybuild *b)
{
	const yaml_parser_t *p = &b->parser;
	int line, col;
	const char *problem = p->problem ? p->problem : "malformed YAML";

	mark_pos(b, &p->problem_mark, &line, &col);

	/* A NEL, LS or PS before the error is the likelier cause, and the
	 * one a reader cannot see. */
	if (p->error != YAML_MEMORY_ERROR && ubreak_check(b, line, col + 1))
		return;
	if (p->error == YAML_MEMORY_ERROR) {
		b->oom = true;
		config_problem_oom(b->probs);
		return;
	}
	if (p->error == YAML_READER_ERROR) {
		config_problem_add(b->probs, 0, 0, "YAML reader error: %s",
				   problem);
		return;
	}
	const char *ctx = p->context ? p->context : "";
	if (strstr(problem, "alias") || strstr(problem, "anchor") ||
	    strstr(ctx, "alias") || strstr(ctx, "anchor"))
		config_problem_add(b->probs, line, col,
				   "YAML syntax error: %s%s%s (quote values "
				   "that start with '*' or '&', like cron "
				   "expressions)", problem,
				   p->context ? " " : "",
				   p->context ? p->context : "");
	else
		config_problem_add(b->probs, line, col,
				   "YAML syntax error: %s%s%s", problem,
				   p->context ? " " : "",
				   p->context ? p->context : "");
}

static int next_event(struct ybuild *b, yaml_event_t *ev)
{
	if (!yaml_parser_parse(&b->parser, ev)) {
		yaml_problem(b);
		return -1;
	}
	return 0;
}

static struct config_node *node_new(struct ybuild *b,
				    enum config_node_kind kind,
				    const yaml_mark_t *m)
{
	int line, col;

	mark_pos(b, m, &line, &col);
	if (++b->n_nodes > CONFIG_MAX_NODES) {
		config_problem_add(b->probs, line, col,
				   "too many YAML nodes (more than %d)",
				   CONFIG_MAX_NODES);
		return NULL;
	}
	struct config_node *n = arena_alloc(b->arena, sizeof(*n),
					    _Alignof(struct config_node));
	if (n)
		memset(n, 0, sizeof(*n));
	if (!n) {
		b->oom = true;
		config_problem_oom(b->probs);
		return NULL;
	}
	n->kind = kind;
	n->line = line;
	n->col = col;
	return n;
}

static int node_push(struct ybuild *b, struct config_node *kid)
{
	if (b->stk_n == b->stk_cap) {
		size_t ncap = b->stk_cap ? b->stk_cap * 2 : 64;
		struct config_node **v =
			realloc(b->stk, ncap * sizeof(struct config_node *));
		if (!v) {
			b->oom = true;
			config_problem_oom(b->probs);
			return -1;
		}
		b->stk = v;
		b->stk_cap = ncap;
	}
	b->stk[b->stk_n++] = kid;
	return 0;
}

/* The kids pushed since base become n's exact array. */
static int node_close(struct ybuild *b, struct config_node *n, size_t base)
{
	size_t k = b->stk_n - base;

	if (k) {
		n->kids = arena_alloc(b->arena,
				      k * sizeof(struct config_node *),
				      _Alignof(struct config_node *));
		if (!n->kids) {
			b->oom = true;
			config_problem_oom(b->probs);
			return -1;
		}
		memcpy(n->kids, b->stk + base,
		       k * sizeof(struct config_node *));
	}
	n->n = k;
	b->stk_n = base;
	return 0;
}

/*
 * Builds the node that starts with event *ev (consumed here) and, for
 * collections, reads the events up to its end. Returns the node or NULL
 * after recording a problem.
 */
static struct config_node *build(struct ybuild *b, yaml_event_t *ev, int depth)
{
	struct config_node *n = NULL;
	int sl, sc;

	mark_pos(b, &ev->start_mark, &sl, &sc);
	if (ubreak_check(b, sl, sc))
		goto fail;
	if (depth > CONFIG_MAX_DEPTH) {
		config_problem_add(b->probs, (int)ev->start_mark.line + 1,
				   (int)ev->start_mark.column + 1,
				   "nesting deeper than %d levels",
				   CONFIG_MAX_DEPTH);
		goto fail;
	}
	switch (ev->type) {
	case YAML_SCALAR_EVENT: {
		n = node_new(b, NODE_SCALAR, &ev->start_mark);
		if (!n)
			goto fail;
		size_t len = ev->data.scalar.length;
		const char *v = (const char *)ev->data.scalar.value;
		if (memchr(v, '\0', len)) {
			config_problem_add(b->probs, n->line, n->col,
					   "a NUL character is not allowed in "
					   "a value");
			goto fail;
		}
		n->str = arena_alloc(b->arena, len + 1, 1);
		if (n->str) {
			memcpy(n->str, v, len);
			n->str[len] = '\0';
		}
		if (!n->str) {
			b->oom = true;
			config_problem_oom(b->probs);
			goto fail;
		}
		if (ev->data.scalar.style == YAML_SINGLE_QUOTED_SCALAR_STYLE ||
		    ev->data.scalar.style == YAML_DOUBLE_QUOTED_SCALAR_STYLE) {
			int el, ec;
			mark_pos(b, &ev->end_mark, &el, &ec);
			skip_quoted(b, el, ec);
		}
		n->is_null = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
			     (len == 0 || strcmp(n->str, "~") == 0 ||
			      strcmp(n->str, "null") == 0 ||
			      strcmp(n->str, "Null") == 0 ||
			      strcmp(n->str, "NULL") == 0);
		yaml_event_delete(ev);
		return n;
	}
	case YAML_SEQUENCE_START_EVENT:
	case YAML_MAPPING_START_EVENT: {
		bool is_map = ev->type == YAML_MAPPING_START_EVENT;
		yaml_event_type_t end = is_map ? YAML_MAPPING_END_EVENT
					       : YAML_SEQUENCE_END_EVENT;
		n = node_new(b, is_map ? NODE_MAP : NODE_SEQ, &ev->start_mark);
		if (!n)
			goto fail;
		yaml_event_delete(ev);
		size_t base = b->stk_n;
		for (;;) {
			yaml_event_t kev;
			if (next_event(b, &kev))
				goto fail_kids;
			if (kev.type == end) {
				yaml_event_delete(&kev);
				if (node_close(b, n, base))
					goto fail_kids;
				return n;
			}
			if (is_map && ((b->stk_n - base) % 2) == 0 &&
			    kev.type != YAML_SCALAR_EVENT &&
			    kev.type != YAML_ALIAS_EVENT) {
				config_problem_add(
					b->probs, (int)kev.start_mark.line + 1,
					(int)kev.start_mark.column + 1,
					"a key must be a plain string, not a "
					"%s", kev.type == YAML_MAPPING_START_EVENT
						      ? "mapping" : "list");
				yaml_event_delete(&kev);
				goto fail_kids;
			}
			struct config_node *kid = build(b, &kev, depth + 1);
			if (!kid || node_push(b, kid))
				goto fail_kids;
		}
	fail_kids:
		b->stk_n = base;
		goto fail_node;
	}
	case YAML_ALIAS_EVENT:
		config_problem_add(b->probs, (int)ev->start_mark.line + 1,
				   (int)ev->start_mark.column + 1,
				   "YAML aliases (*%s) are not supported; "
				   "write the value out (quote values that "
				   "start with '*', like cron expressions)",
				   (const char *)ev->data.alias.anchor);
		goto fail;
	default:
		config_problem_add(b->probs, (int)ev->start_mark.line + 1,
				   (int)ev->start_mark.column + 1,
				   "unexpected YAML event");
		goto fail;
	}
fail_node:
	return NULL; /* n and its kids are the arena's, freed with it */
fail:
	yaml_event_delete(ev);
	return NULL;
}

/* Parses the text into one document's root node. NULL after a problem. */
static struct config_node *parse_tree(const char *text, size_t len,
				      int end_line, int end_col,
				      struct ubreaks *ub,
				      struct config_problems *probs)
{
	struct ybuild b = {.probs = probs, .end_line = end_line,
			   .end_col = end_col, .ub = ub};
	struct config_node *root = NULL;
	yaml_event_t ev;

	b.arena = calloc(1, sizeof(*b.arena));
	if (!b.arena) {
		config_problem_oom(probs);
		return NULL;
	}
	if (!yaml_parser_initialize(&b.parser)) {
		config_problem_oom(probs);
		free(b.arena);
		return NULL;
	}
	yaml_parser_set_input_string(&b.parser, (const unsigned char *)text,
				     len);
	yaml_parser_set_encoding(&b.parser, YAML_UTF8_ENCODING);

	if (next_event(&b, &ev))
		goto done;
	yaml_event_delete(&ev); /* stream start */
	if (next_event(&b, &ev))
		goto done;
	if (ev.type == YAML_STREAM_END_EVENT) {
		yaml_event_delete(&ev);
		config_problem_add(probs, 1, 1, "empty configuration (expected "
				   "a mapping with at least `schedules:`)");
		goto done;
	}
	yaml_event_delete(&ev); /* document start */
	if (next_event(&b, &ev))
		goto done;
	root = build(&b, &ev, 0);
	if (!root)
		goto done;
	if (next_event(&b, &ev)) /* document end */
		goto fail;
	yaml_event_delete(&ev);
	if (next_event(&b, &ev))
		goto fail;
	if (ev.type != YAML_STREAM_END_EVENT) {
		config_problem_add(probs, (int)ev.start_mark.line + 1,
				   (int)ev.start_mark.column + 1,
				   "only one YAML document is allowed");
		yaml_event_delete(&ev);
		goto fail;
	}
	yaml_event_delete(&ev);
	/* One after the last value (in a comment at the end, say). */
	if (ubreak_check(&b, INT32_MAX, INT32_MAX))
		goto fail;
	goto done;
fail:
	root = NULL;
done:
	yaml_parser_delete(&b.parser);
	free(b.stk);
	if (root) {
		/* The tree owns the arena from here: its root moves into the
		 * arena's header (nothing points to a root). */
		b.arena->root = *root;
		root = &b.arena->root;
	} else {
		arena_free(b.arena);
	}
	return root;
}

struct config_node *config_yaml_parse(const char *text, size_t len,
				      struct config_problems *probs)
{
	int end_line, end_col;
	struct ubreaks ub = {0};
	struct config_node *root = NULL;

	if (prescan((const unsigned char *)text, len, probs, &ub, &end_line,
		    &end_col) == 0)
		root = parse_tree(text, len, end_line, end_col, &ub, probs);
	free(ub.v);
	return root;
}

/* ------------------------------------------------------------------ */
/* Reading the tree                                                   */
/* ------------------------------------------------------------------ */

const struct config_node *config_yaml_get(const struct config_node *m,
					  const char *key)
{
	if (!m || m->kind != NODE_MAP)
		return NULL;
	for (size_t i = 0; i + 1 < m->n; i += 2)
		if (m->kids[i]->kind == NODE_SCALAR &&
		    strcmp(m->kids[i]->str, key) == 0)
			return m->kids[i + 1];
	return NULL;
}

const char *config_yaml_kind(const struct config_node *n)
{
	if (n->kind == NODE_MAP)
		return "a mapping";
	if (n->kind == NODE_SEQ)
		return "a list";
	return n->is_null ? "nothing (null)" : "a string";
}
