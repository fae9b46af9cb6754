/*
 * config_int.h - what the three layers of the config loader share, and
 * nothing the rest of the tree may use (config.h is the public face).
 *
 *   config_yaml.c     the bytes of the file -> a tree of positioned nodes
 *                     (pre-scan, then libyaml events);
 *   config_problem.c  the problem list and the key path -> line:column
 *                     table (struct config_locs);
 *   config.c          the node tree -> struct config (sections, typed
 *                     getters, load), using the two above;
 *   config_include.c  the files: reading one (the file-trust rule), the
 *                     main file's `include:` and the read-ahead that
 *                     parses the fragments;
 *   config_lookup.c   the name index and the lookups of a loaded config.
 *   config_pool.c     the config's interned strings and vectors
 *                     (struct config_pool), freed by config_free.
 * config_check.c includes it too, for the problem sort.
 *
 * Ownership: config_yaml_parse returns a tree the caller frees with
 * config_yaml_free (on the root); every node, string and kids array of the
 * tree is in one arena the root owns, so a 170,000-node fragment is freed
 * at once, not node by node.
 * A struct config_locs is created by config_locs_new and freed by
 * config_locs_free (config_free does it for the config's own).
 * struct config_pc, the load's context, lives on config_parse's stack (config.c)
 * for one load; the helpers that take it are the load's own, never called
 * once config_parse returns.
 * Thread-safety: none of these touch global state.
 */
#ifndef SURECRON_CONFIG_INT_H
#define SURECRON_CONFIG_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "config.h"

/* ---- config_yaml.c: the positioned node tree ---- */

/* Deepest nesting and most nodes one file may have (the tree is bounded;
 * each fragment of an `include:` has its own bound, the total has none
 * but memory: 400,000 nodes is some 20,000 schedules in block style). */
#define CONFIG_MAX_DEPTH 32
#define CONFIG_MAX_NODES 400000

enum config_node_kind { NODE_SCALAR, NODE_SEQ, NODE_MAP };

/* Laid out without padding (32 bytes): a fragment of 10,000 schedules is
 * some 170,000 of these, and a fragment's tree is the largest part of a
 * load's peak (issue 45). The arena that holds a tree is found from its
 * root (config_yaml.c), so no node carries a pointer to it. */
struct config_node {
	char *str;                  /* scalar value, NUL-terminated */
	struct config_node **kids;  /* seq: items; map: key, value, key, ...
				       (exactly n: the array is made once
				       the collection ends) */
	uint32_t n;                 /* at most CONFIG_MAX_NODES */
	int line, col;              /* 1-based, where libyaml saw it start */
	unsigned char kind;         /* enum config_node_kind */
	bool is_null;               /* plain "", "~" or "null" */
};

/*
 * Pre-scans text (len bytes: UTF-8, no control characters, no tab in
 * indentation) and parses it as one YAML document into a node tree.
 * Aliases, anchors used as aliases, non-scalar keys, NUL in values, more
 * than CONFIG_MAX_NODES nodes or CONFIG_MAX_DEPTH levels are refused.
 * Returns the root (free with config_yaml_free), or NULL after appending
 * at least one problem to probs (with its position when it has one; "out
 * of memory" when it ran out). The mapping keys are not checked for
 * duplicates: that is the sections' business.
 */
struct config_node *config_yaml_parse(const char *text, size_t len,
				      struct config_problems *probs);

/* Frees a tree, given its root (the one config_yaml_parse returned, never
 * another node nor a copy of it). NULL is ignored. */
void config_yaml_free(struct config_node *n);

/* The value of `key` in mapping m (the first one, when a key repeats);
 * NULL when m is NULL, not a mapping, or has no such key. */
const struct config_node *config_yaml_get(const struct config_node *m,
					  const char *key);

/* "a mapping", "a list", "nothing (null)" or "a string", for messages. */
const char *config_yaml_kind(const struct config_node *n);

/* ---- config_problem.c: problem order and positions by key path ---- */

/* config_problem_add with an explicit file (index and printed name, NULL:
 * the main file) instead of p->at_file: for findings located after the
 * load (config_check), whose file comes from the position table. */
int config_problem_add_in(struct config_problems *p, size_t file_ix,
			  const char *file, int line, int col,
			  const char *fmt, ...) SC_PRINTF(6, 7);

/*
 * Moves every problem of from to the end of to (to's cap holds: what is
 * past CONFIG_MAX_PROBLEMS is counted in n_dropped), with from's dropped
 * count and oom; from is left empty (its file and at_file untouched).
 */
void config_problems_move(struct config_problems *to,
			  struct config_problems *from);

/*
 * Sorts the problems p->items[from..n) by file (index), then position
 * (line, then column),
 * keeping the order of problems at the same position, so that the first
 * problem is the earliest in the file. O(n^2) worst case on the range,
 * which is at most CONFIG_MAX_PROBLEMS long.
 */
void config_problems_sort(struct config_problems *p, size_t from);

/* A new, empty position table; NULL when out of memory. */
struct config_locs *config_locs_new(void);

/* Frees a position table. NULL is ignored. */
void config_locs_free(struct config_locs *l);

/*
 * Records that the value at key path `path` starts at line:col. l may be
 * NULL (nothing is recorded); running out of memory only loses the
 * position, so it is not an error (messages then carry the object's
 * position instead). The first record of a path wins in config_locate.
 */
void config_locs_add(struct config_locs *l, const char *path, int line,
		     int col);

/* The records that follow are in file ix (0: the main file), printed as
 * name (copied; ignored for 0 or when already known). Returns 0 or
 * SC_ENOMEM. l may be NULL. */
int config_locs_file(struct config_locs *l, size_t ix, const char *name);

/* config_locate, also giving the file of the position: its index and
 * printed name (NULL: the main file). Either out pointer may be NULL. */
bool config_locate_in(const struct config *c, const char *path, int *line,
		      int *col, size_t *file_ix, const char **file);

/* The warnings found while loading (an include pattern matching no
 * file), kept with the config for config_check_warnings; owned by l. */
struct config_problems *config_locs_warns(struct config_locs *l);

/* ---- config_pool.c: the config's shared strings and vectors ---- */

/*
 * A config's pool (struct config's `pool`): each distinct string and
 * NULL-terminated string vector once, freed all at once by
 * config_pool_free (config_free does it). Pooled memory is read-only and
 * may be shared by many fields: a field is replaced, never written, and
 * its old value goes through config_pool_release. NULL on out of memory.
 */
struct config_pool *config_pool_new(void);
void config_pool_free(struct config_pool *p);

/* s interned: the pooled copy equal to s (made on first use). */
char *config_pool_str(struct config_pool *p, const char *s);
/* s copied into the pool, not interned (for strings seen once). */
char *config_pool_dup(struct config_pool *p, const char *s);
/* n bytes of src copied into the pool, aligned for any type. */
void *config_pool_copy(struct config_pool *p, const void *src, size_t n);
/* Replaces the malloc'd vector *v (and its malloc'd items) by the pooled
 * vector equal to it, freeing what it replaced. NULL and pooled vectors
 * are left alone. Returns 0 or SC_ENOMEM (*v then unchanged, still
 * valid, possibly with some items pooled). */
int config_pool_strv(struct config_pool *p, char ***v);
/* The pooled copy of the n bytes at src, interned: equal bytes give the
 * same pointer (a schedule's tasks, whose strings and vectors are pooled
 * already, are then one array for every schedule that runs the same
 * ones; issue 45). Aligned for any type; never written once returned.
 * NULL: out of memory. */
void *config_pool_blob(struct config_pool *p, const void *src, size_t n);

/* Whether ptr lies in p's memory (false for NULL p or ptr). */
bool config_pool_owns(const struct config_pool *p, const void *ptr);
/* free(ptr) unless p owns it. */
void config_pool_release(const struct config_pool *p, void *ptr);
/* Bytes the pool holds (chunks and tables), for the docs' figures. */
size_t config_pool_bytes(const struct config_pool *p);

/* ---- config.c, config_lookup.c, config_include.c: the load ---- */

/* Key paths are cut at this length (only a message is shortened). */
#define PATH_MAX_KEY 512

/* One file of the config being read: [0] the main file, then each
 * fragment `include:` names, in load order. */
struct config_src {
	char *shown;               /* printed name: the main file's path as
				      given, a fragment's as matched */
	char *dir;                 /* its folder, absolute */
	char *text;
	struct config_node *root;  /* NULL: not read, or empty */
	/* A fragment's first stage (parse_fragment): its status and its
	 * problems, moved to the load's list in file order by
	 * read_fragment; parsed is set (under the read-ahead's lock when
	 * two threads parse) once the stage is over. */
	int rc;
	struct config_problems probs;
	struct config_problems warns; /* its file-trust warning (check) */
	bool unread;               /* read_file refused it */
	bool parsed;
};

/* Where each named item came from: its name (the item's own string),
 * file (index into pc.srcs) and the name's position, by index in the
 * section's array. Kept after the file's tree is freed. */
struct config_nref {
	const char *name;
	size_t file;
	int line, col;
};

/* Which section (and per-file counter of struct config_file). */
enum section_count { COUNT_TARGETS, COUNT_AUTHS, COUNT_SCHEDULES };

struct config_pc {
	struct config *c;
	struct config_problems *probs;
	bool oom;
	const char *dir;           /* the current file's folder: relative
				      paths resolve against it */
	struct config_src *srcs;
	size_t n_srcs;
	size_t cap_srcs;           /* room in srcs and c->files */
	/* The files already in the config, by resolved path: an open
	 * addressing table of indexes into c->files, plus one (0: empty),
	 * n_seen of cap_seen (a power of two) used. add_fragment. */
	size_t *seen;
	size_t cap_seen, n_seen;
	/* The sections' arrays grow file by file (a file's tree is freed
	 * once read, so a config of many fragments never holds more than
	 * one fragment's tree): capacity and origins, by section. */
	size_t cap[3];
	struct config_nref *refs[3];
	bool present[3];           /* some file has the section */
	bool defer_refs;           /* names of targets and auth providers
				      are checked once every file is read */
	size_t sched_file;         /* first file with `schedules:`, */
	int sched_line, sched_col; /* its position, for "no schedule" */
	/* The light load (config_load_light): light skips what the
	 * read-only commands never print (targets, auth, alerts, tasks and
	 * the references between them); no_schedules reads no schedule
	 * (and parses no fragment), only (non-NULL) parses only the
	 * fragments whose text holds it. */
	bool light;
	bool no_schedules;
	const char *only;
	/* Some fragment could not be read (read_file refused it): what
	 * spans the files is not judged (sections_whole), since its
	 * findings (a target "not defined", "no schedule") would be about
	 * the missing file and hide the reason. */
	bool unread;
	/* `check` (config_parse): a file the file-trust rule refuses is a
	 * warning, not an error (read_file). */
	bool trust_warns;
	/* resolve_schedule's memo (issue 45): an expression and a zone name
	 * are pooled strings, one pointer for every schedule that writes
	 * them, and no string a schedule holds is freed during the load,
	 * so the last results are kept by pointer (direct-mapped). */
	struct {
		const char *cron;
		const struct sc_cron *expr; /* the pool's */
		enum sc_freq_class cls;
	} memo_cron[64];
	struct {
		const char *tz;
		const struct sc_zone *zone;
	} memo_tz[16];
};

/* config.c: the load's problem helpers and tree walkers. */

/* The problems and positions that follow are in file i. */
void config_pc_enter(struct config_pc *pc, size_t i);
/* Records "path: message" at node n (n may be NULL: no position). */
void config_bad(struct config_pc *pc, const struct config_node *n, const char *path,
		const char *fmt, ...) SC_PRINTF(4, 5);
/* Records "out of memory" once and sets pc->oom. */
void config_oom(struct config_pc *pc);
/* out = base + "[i]", cut at n bytes; out may be base. */
void config_pindex(char *out, size_t n, const char *base, size_t i);
/* Whether n is of kind (a null scalar is no value); else records why. */
bool config_want(struct config_pc *pc, const struct config_node *n, const char *path,
		 enum config_node_kind kind);
/*
 * Checks that n is a mapping whose keys are all in `allowed` (NULL-ended)
 * and appear once; records the position of each value under path.key.
 * `what` names the object for messages. False when n is not a mapping.
 */
bool config_map_keys(struct config_pc *pc, const struct config_node *n,
		     const char *path, const char *const *allowed,
		     const char *what);

/* config_lookup.c: the name index. */

/* FNV-1a with a finalizer: the hash of the name tables and of the
 * include's table of files. */
size_t config_name_hash(const char *s);
/* (Re)builds section w's name table of pc->c; out of memory is recorded
 * (config_oom) and leaves the section searched linearly. */
void config_index_build(struct config_pc *pc, enum section_count w);
/* Frees an index (config_free does it). NULL is ignored. */
void config_index_free(struct config_index *x);

/* config_include.c: the files, `include:` and the read-ahead. */

/*
 * Reads the whole regular file path into *out (malloc'd, NUL-terminated,
 * *len bytes), judged by the file-trust rule (refused, or a warning into
 * warns when warns is not NULL). Returns 0 or a negative code after
 * recording a problem in probs.
 */
int config_read_file(const char *path, char **out, size_t *len,
		     struct config_problems *probs,
		     struct config_problems *warns);
/* The absolute folder of path (malloc'd). NULL when out of memory or
 * unresolvable (errno says). */
char *config_folder_of(const char *path);
/* The main file's `include:` (root's) into pc->srcs and c->files: the
 * fragments, matched and in load order; path is the main file's. */
void config_parse_include(struct config_pc *pc, const char *path,
			  const struct config_node *root);
/* Fragment i's second stage, on the loading thread (after
 * config_ahead_wait): its problems join the load's, its top level is
 * judged. Returns 0, its read's code, SC_ECONFIG or SC_ENOMEM. */
int config_read_fragment(struct config_pc *pc, size_t i);

/* The read-ahead of the fragments' first stages (config_include.c). */
struct config_ahead {
	struct config_pc *pc;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	size_t next;   /* the next fragment to parse */
	size_t at;     /* the fragment the load is at */
	bool helper;   /* the helper thread runs, */
	pthread_t th_id;  /* as this thread */
};

/* Starts the read-ahead over pc's fragments; helper false (or a start
 * that fails) parses every fragment on the loading thread. */
void config_ahead_start(struct config_ahead *a, struct config_pc *pc, bool helper);
/* Returns once fragment i (1 <= i < n_srcs, in order) is parsed. */
void config_ahead_wait(struct config_ahead *a, size_t i);
/* Joins the helper and frees a's lock; every fragment was waited for. */
void config_ahead_stop(struct config_ahead *a);

#endif
