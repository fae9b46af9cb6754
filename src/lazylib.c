/*
 * lazylib.c - the one-time loader of libcurl, libpq, libcrypto and
 * libmicrohttpd (see lazylib.h): one table of libraries, one load path.
 *
 * Invariants:
 *   - Each library is dlopen'ed at most once per process (pthread_once);
 *     its table is written only inside that once and read-only after, so
 *     callers need no lock once the load function returned 0.
 *   - Either every function of a table resolved, or the load failed, the
 *     handle is closed and every later load returns the same SC_EIO with
 *     the reason (dlerror) and the package to install. Never a crash.
 *   - curl_global_init runs exactly once, before any other curl call.
 *   - The handles are never closed: the libraries stay for the process.
 */
#define LAZYLIB_IMPL
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>

#include "lazylib_crypto.h"
#include "lazylib_curl.h"
#include "lazylib_mhd.h"
#include "lazylib_pq.h"

struct dl_curl_table dl_curl;
struct dl_pq_table dl_pq;
struct dl_crypto_table dl_crypto;
struct dl_mhd_table dl_mhd;

/*
 * One row per library: where it is, which Debian package has it, how its
 * table is filled and what runs once after (curl_global_init). The load
 * state lives in the row; pthread_once needs a plain function per row,
 * which LAZY_ONCE writes.
 */
struct lazy_lib {
	const char *soname;
	const char *package;
	void (*resolve)(void *h, bool *ok);
	int (*init)(char *msg, size_t n); /* after resolve; NULL: none */
	pthread_once_t once;
	int rc;
	char msg[256];
};

/* dlsym, clearing dlerror first: NULL means the symbol is missing. */
static void *lazy_sym(void *h, const char *name, bool *ok)
{
	void *p;

	if (!*ok)
		return NULL;
	(void)dlerror();
	p = dlsym(h, name);
	if (!p)
		*ok = false;
	return p;
}

/* The casts from void * to function pointers are what POSIX dlsym
 * guarantees to work. */
#define LAZY_RESOLVE(tbl, f) (tbl).f = (__typeof__((tbl).f))lazy_sym(h, #f, ok);

static void curl_resolve(void *h, bool *ok)
{
#define CURL_RESOLVE(f) LAZY_RESOLVE(dl_curl, f)
	DL_CURL_FUNCS(CURL_RESOLVE)
#undef CURL_RESOLVE
}

static void pq_resolve(void *h, bool *ok)
{
#define PQ_RESOLVE(f) LAZY_RESOLVE(dl_pq, f)
	DL_PQ_FUNCS(PQ_RESOLVE)
#undef PQ_RESOLVE
}

static void crypto_resolve(void *h, bool *ok)
{
#define CRYPTO_RESOLVE(f) LAZY_RESOLVE(dl_crypto, f)
	DL_CRYPTO_FUNCS(CRYPTO_RESOLVE)
#undef CRYPTO_RESOLVE
}

static void mhd_resolve(void *h, bool *ok)
{
#define MHD_RESOLVE(f) LAZY_RESOLVE(dl_mhd, f)
	DL_MHD_FUNCS(MHD_RESOLVE)
#undef MHD_RESOLVE
}

/* curl_global_init is not thread-safe itself: it runs inside the once. */
static int curl_init(char *msg, size_t n)
{
	CURLcode cc = dl_curl.curl_global_init(CURL_GLOBAL_DEFAULT);

	if (cc == CURLE_OK)
		return 0;
	snprintf(msg, n, "curl_global_init failed: %s",
		 dl_curl.curl_easy_strerror(cc));
	return SC_EIO;
}

static struct lazy_lib libs[LAZYLIB_N] = {
	[LAZYLIB_CURL] = {"libcurl.so.4", "libcurl4", curl_resolve, curl_init,
			  PTHREAD_ONCE_INIT, 0, ""},
	[LAZYLIB_PQ] = {"libpq.so.5", "libpq5", pq_resolve, NULL,
			PTHREAD_ONCE_INIT, 0, ""},
	[LAZYLIB_CRYPTO] = {"libcrypto.so.3", "libssl3", crypto_resolve, NULL,
			    PTHREAD_ONCE_INIT, 0, ""},
	[LAZYLIB_MHD] = {"libmicrohttpd.so.12", "libmicrohttpd12",
			 mhd_resolve, NULL, PTHREAD_ONCE_INIT, 0, ""},
};

static void lazy_fail(struct lazy_lib *l)
{
	const char *why = dlerror();

	snprintf(l->msg, sizeof(l->msg), "%s could not be loaded: %s; "
		 "install %s", l->soname, why ? why : "unknown error",
		 l->package);
	l->rc = SC_EIO;
}

static void lazy_load(struct lazy_lib *l)
{
	bool ok = true;
	void *h = dlopen(l->soname, RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		lazy_fail(l);
		return;
	}
	l->resolve(h, &ok);
	if (!ok) {
		lazy_fail(l);
		dlclose(h);
		return;
	}
	if (l->init)
		l->rc = l->init(l->msg, sizeof(l->msg));
}

#define LAZY_ONCE(id)                                                       \
	static void once_##id(void) { lazy_load(&libs[id]); }
LAZY_ONCE(LAZYLIB_CURL)
LAZY_ONCE(LAZYLIB_PQ)
LAZY_ONCE(LAZYLIB_CRYPTO)
LAZY_ONCE(LAZYLIB_MHD)

static void (*const once_fn[LAZYLIB_N])(void) = {
	[LAZYLIB_CURL] = once_LAZYLIB_CURL,
	[LAZYLIB_PQ] = once_LAZYLIB_PQ,
	[LAZYLIB_CRYPTO] = once_LAZYLIB_CRYPTO,
	[LAZYLIB_MHD] = once_LAZYLIB_MHD,
};

int lazylib_load(enum lazylib_id id, struct sc_err *err)
{
	struct lazy_lib *l;

	if ((unsigned)id >= LAZYLIB_N)
		return sc_err_set(err, SC_EINVAL, "lazylib: no library %d",
				  (int)id);
	l = &libs[id];
	pthread_once(&l->once, once_fn[id]);
	if (l->rc)
		return sc_err_set(err, l->rc, "%s", l->msg);
	return 0;
}
