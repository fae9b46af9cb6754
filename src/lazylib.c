/*
 * lazylib.c - the one-time loaders of libcurl, libpq and libcrypto (see
 * lazylib.h).
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

#include "dl_crypto.h"
#include "dl_curl.h"
#include "dl_pq.h"

struct dl_curl_table dl_curl;
struct dl_pq_table dl_pq;
struct dl_crypto_table dl_crypto;

struct lazy_state {
	pthread_once_t once;
	int rc;
	char msg[256];
};

static struct lazy_state curl_state = {.once = PTHREAD_ONCE_INIT};
static struct lazy_state pq_state = {.once = PTHREAD_ONCE_INIT};
static struct lazy_state crypto_state = {.once = PTHREAD_ONCE_INIT};

static void lazy_fail(struct lazy_state *st, const char *soname,
		      const char *package)
{
	const char *why = dlerror();

	snprintf(st->msg, sizeof(st->msg),
		 "%s could not be loaded: %s; install %s", soname,
		 why ? why : "unknown error", package);
	st->rc = SC_EIO;
}

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
#define LAZY_RESOLVE(tbl, f) (tbl).f = (__typeof__((tbl).f))lazy_sym(h, #f, &ok);

static void curl_load_once(void)
{
	static const char soname[] = "libcurl.so.4";
	bool ok = true;
	void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		lazy_fail(&curl_state, soname, "libcurl4");
		return;
	}
#define CURL_RESOLVE(f) LAZY_RESOLVE(dl_curl, f)
	DL_CURL_FUNCS(CURL_RESOLVE)
#undef CURL_RESOLVE
	if (!ok) {
		lazy_fail(&curl_state, soname, "libcurl4");
		dlclose(h);
		return;
	}
	CURLcode cc = dl_curl.curl_global_init(CURL_GLOBAL_DEFAULT);
	if (cc != CURLE_OK) {
		snprintf(curl_state.msg, sizeof(curl_state.msg),
			 "curl_global_init failed: %s",
			 dl_curl.curl_easy_strerror(cc));
		curl_state.rc = SC_EIO;
	}
}

static void pq_load_once(void)
{
	static const char soname[] = "libpq.so.5";
	bool ok = true;
	void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		lazy_fail(&pq_state, soname, "libpq5");
		return;
	}
#define PQ_RESOLVE(f) LAZY_RESOLVE(dl_pq, f)
	DL_PQ_FUNCS(PQ_RESOLVE)
#undef PQ_RESOLVE
	if (!ok) {
		lazy_fail(&pq_state, soname, "libpq5");
		dlclose(h);
	}
}

static void crypto_load_once(void)
{
	static const char soname[] = "libcrypto.so.3";
	bool ok = true;
	void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		lazy_fail(&crypto_state, soname, "libssl3");
		return;
	}
#define CRYPTO_RESOLVE(f) LAZY_RESOLVE(dl_crypto, f)
	DL_CRYPTO_FUNCS(CRYPTO_RESOLVE)
#undef CRYPTO_RESOLVE
	if (!ok) {
		lazy_fail(&crypto_state, soname, "libssl3");
		dlclose(h);
	}
}

static int lazy_result(const struct lazy_state *st, struct sc_err *err)
{
	if (st->rc)
		return sc_err_set(err, st->rc, "%s", st->msg);
	return 0;
}

int dl_curl_load(struct sc_err *err)
{
	pthread_once(&curl_state.once, curl_load_once);
	return lazy_result(&curl_state, err);
}

int dl_pq_load(struct sc_err *err)
{
	pthread_once(&pq_state.once, pq_load_once);
	return lazy_result(&pq_state, err);
}

int dl_crypto_load(struct sc_err *err)
{
	pthread_once(&crypto_state.once, crypto_load_once);
	return lazy_result(&crypto_state, err);
}
