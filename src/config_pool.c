/*
 * config_pool.c - the string pool of a loaded config (issue 15: 100,000
 * schedules in bounded memory).
 *
 * A config of 100,000 schedules repeats the same few strings (zone names,
 * cron expressions, target names, task names, programs) and the same few
 * vectors (targets: [log], command: [/bin/true], an empty renamed_from)
 * in every schedule. One malloc per copy costs 32 bytes or more each; the
 * pool stores each distinct string and vector once, bump-allocated in
 * chunks, and frees them all at once with config_pool_free.
 *
 * Invariants:
 *   - a pooled string or vector is never written after it is returned
 *     (it may be shared by many fields); code that must change a field
 *     replaces the pointer, releasing the old one with
 *     config_pool_release, which frees it only when it is not pooled;
 *   - chunks never move, so pointers stay valid until config_pool_free;
 *   - the hash tables hold at most half their slots (open addressing,
 *     linear probing), and are the only per-entry overhead.
 * Not thread-safe: a pool is filled by one loader, then only read.
 */
#include "config_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define POOL_CHUNK_MIN 4096
#define POOL_CHUNK_MAX ((size_t)1 << 20)

struct pool_chunk {
	struct pool_chunk *next;
	size_t used, size;
	_Alignas(max_align_t) unsigned char data[];
};

struct config_pool {
	struct pool_chunk *head;    /* the chunk being filled, then older */
	size_t next_size;           /* the size of the next chunk's data */
	const char **strs;          /* interned strings, NULL: free slot */
	size_t strs_cap, strs_n;
	char ***vecs;               /* interned vectors (of pooled strings) */
	size_t vecs_cap, vecs_n;
	void **blobs;               /* interned blobs, each after its size */
	size_t blobs_cap, blobs_n;
};

struct config_pool *config_pool_new(void)
{
	struct config_pool *p = calloc(1, sizeof(*p));
	if (p)
		p->next_size = POOL_CHUNK_MIN;
	return p;
}

void config_pool_free(struct config_pool *p)
{
	if (!p)
		return;
	for (struct pool_chunk *k = p->head, *nx; k; k = nx) {
		nx = k->next;
		free(k);
	}
	free(p->strs);
	free(p->vecs);
	free(p->blobs);
	free(p);
}

bool config_pool_owns(const struct config_pool *p, const void *ptr)
{
	if (!p || !ptr)
		return false;
	uintptr_t a = (uintptr_t)ptr;
	for (const struct pool_chunk *k = p->head; k; k = k->next) {
		uintptr_t b = (uintptr_t)k->data;
		if (a >= b && a < b + k->size)
			return true;
	}
	return false;
}

void config_pool_release(const struct config_pool *p, void *ptr)
{
	if (!config_pool_owns(p, ptr))
		free(ptr);
}

/* n bytes in the current chunk (aligned to max_align_t when align). */
static void *pool_alloc(struct config_pool *p, size_t n, bool align)
{
	struct pool_chunk *k = p->head;
	size_t off = k ? k->used : 0;
	const size_t al = _Alignof(max_align_t);

	if (k && align)
		off = (off + al - 1) / al * al;
	if (!k || off > k->size || k->size - off < n) {
		size_t sz = p->next_size;
		if (sz < n)
			sz = n;
		k = malloc(sizeof(*k) + sz);
		if (!k)
			return NULL;
		k->size = sz;
		k->used = 0;
		k->next = p->head;
		p->head = k;
		off = 0;
		if (p->next_size < POOL_CHUNK_MAX)
			p->next_size *= 2;
	}
	k->used = off + n;
	return k->data + off;
}

static size_t hash_bytes(const void *s, size_t n)
{
	const unsigned char *b = s;
	uint64_t h = UINT64_C(14695981039346656037);

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * UINT64_C(1099511628211);
	h ^= h >> 33;
	h *= UINT64_C(0xff51afd7ed558ccd);
	h ^= h >> 33;
	return (size_t)h;
}

/* Grows a table of pointers (keyed by hash(entry)) to hold one more. */
static bool table_room(void ***tab, size_t *cap, size_t n,
		       size_t (*hash)(const void *))
{
	if ((n + 1) * 2 <= *cap)
		return true;
	size_t nc = *cap ? *cap * 2 : 256;
	void **nt = calloc(nc, sizeof(*nt));
	if (!nt)
		return false;
	for (size_t i = 0; i < *cap; i++) {
		void *e = (*tab)[i];
		if (!e)
			continue;
		size_t j = hash(e) & (nc - 1);
		while (nt[j])
			j = (j + 1) & (nc - 1);
		nt[j] = e;
	}
	free(*tab);
	*tab = nt;
	*cap = nc;
	return true;
}

static size_t str_hash(const void *e)
{
	return hash_bytes(e, strlen(e));
}

static size_t vec_len(char *const *v)
{
	size_t n = 0;
	while (v[n])
		n++;
	return n;
}

static size_t vec_hash(const void *e)
{
	char *const *v = e;
	return hash_bytes(v, vec_len(v) * sizeof(char *));
}

char *config_pool_dup(struct config_pool *p, const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = pool_alloc(p, n, false);
	if (d)
		memcpy(d, s, n);
	return d;
}

char *config_pool_str(struct config_pool *p, const char *s)
{
	if (config_pool_owns(p, s))
		return (char *)s; /* already pooled: never written */
	if (!table_room((void ***)&p->strs, &p->strs_cap, p->strs_n,
			str_hash))
		return NULL;
	size_t m = p->strs_cap - 1, j = str_hash(s) & m;
	for (; p->strs[j]; j = (j + 1) & m)
		if (strcmp(p->strs[j], s) == 0)
			return (char *)p->strs[j];
	char *d = config_pool_dup(p, s);
	if (!d)
		return NULL;
	p->strs[j] = d;
	p->strs_n++;
	return d;
}

void *config_pool_copy(struct config_pool *p, const void *src, size_t n)
{
	void *d = pool_alloc(p, n ? n : 1, true);
	if (d && n)
		memcpy(d, src, n);
	return d;
}

int config_pool_strv(struct config_pool *p, char ***v)
{
	char **in = *v;

	if (!in || config_pool_owns(p, in))
		return 0;
	/* The items first: a vector is interned by its pointers. */
	for (size_t i = 0; in[i]; i++) {
		char *s = config_pool_str(p, in[i]);
		if (!s)
			return SC_ENOMEM;
		if (s != in[i]) {
			config_pool_release(p, in[i]);
			in[i] = s;
		}
	}
	if (!table_room((void ***)&p->vecs, &p->vecs_cap, p->vecs_n,
			vec_hash))
		return SC_ENOMEM;
	size_t n = vec_len(in), m = p->vecs_cap - 1, j = vec_hash(in) & m;
	for (; p->vecs[j]; j = (j + 1) & m) {
		char **e = p->vecs[j];
		if (vec_len(e) == n && memcmp(e, in, n * sizeof(char *)) == 0)
			break;
	}
	char **d = p->vecs[j];
	if (!d) {
		d = config_pool_copy(p, in, (n + 1) * sizeof(char *));
		if (!d)
			return SC_ENOMEM;
		p->vecs[j] = d;
		p->vecs_n++;
	}
	free(in);
	*v = d;
	return 0;
}

/* A blob's size, stored just before it (config_pool_blob). */
static size_t blob_len(const void *e)
{
	size_t n;
	memcpy(&n, (const char *)e - sizeof(n), sizeof(n));
	return n;
}

static size_t blob_hash(const void *e)
{
	return hash_bytes(e, blob_len(e));
}

void *config_pool_blob(struct config_pool *p, const void *src, size_t n)
{
	if (!table_room(&p->blobs, &p->blobs_cap, p->blobs_n, blob_hash))
		return NULL;
	size_t m = p->blobs_cap - 1, j = hash_bytes(src, n) & m;
	for (; p->blobs[j]; j = (j + 1) & m)
		if (blob_len(p->blobs[j]) == n &&
		    memcmp(p->blobs[j], src, n) == 0)
			return p->blobs[j];
	/* The size in the max_align_t before the blob, so the blob itself
	 * stays aligned for any object. */
	const size_t al = _Alignof(max_align_t);
	char *d = pool_alloc(p, al + (n ? n : 1), true);
	if (!d)
		return NULL;
	d += al;
	memcpy(d - sizeof(n), &n, sizeof(n));
	memcpy(d, src, n);
	p->blobs[j] = d;
	p->blobs_n++;
	return d;
}

size_t config_pool_bytes(const struct config_pool *p)
{
	size_t b = 0;
	if (!p)
		return 0;
	for (const struct pool_chunk *k = p->head; k; k = k->next)
		b += sizeof(*k) + k->size;
	return b + (p->strs_cap + p->vecs_cap + p->blobs_cap) * sizeof(void *);
}
