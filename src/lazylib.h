/*
 * lazylib.h - libcurl, libpq, libcrypto and libmicrohttpd are loaded with
 * dlopen the first time they are needed, so a daemon that never makes an
 * HTTP request, never opens a PostgreSQL store, never sends to a webhook
 * and serves no web surface never maps them (nor their ~30 dependencies:
 * krb5, ldap, gnutls, ...), which is most of the daemon's resident memory,
 * and a command starts without them (about 4 ms of gnutls and p11-kit
 * start-up that `status NAME` used to pay).
 *
 * Use: include "lazylib_curl.h", "lazylib_pq.h", "lazylib_crypto.h" or
 * "lazylib_mhd.h" instead of <curl/curl.h>, <libpq-fe.h>, <openssl/evp.h>
 * or <microhttpd.h>; the functions keep their usual names (macros onto a
 * table of pointers). Call dl_curl_load / dl_pq_load / dl_crypto_load /
 * dl_mhd_load (lazylib_load of that row) before the first call. Another library is one lazylib_*.h header and one row in lazylib.c.
 *
 * Thread-safety: the load functions may be called from any thread, any
 * number of times; the work is done once (pthread_once) and the tables are
 * read-only afterwards. A failed load stays failed for the process life.
 */
#ifndef SURECRON_LAZYLIB_H
#define SURECRON_LAZYLIB_H

#include "err.h"

/* The libraries, a row each in lazylib.c's table. */
enum lazylib_id {
	LAZYLIB_CURL,   /* libcurl.so.4: every function http.c and url.c use;
			   curl_global_init runs inside the once */
	LAZYLIB_PQ,     /* libpq.so.5: every function store_pg.c uses */
	LAZYLIB_CRYPTO, /* libcrypto.so.3: the idempotency key's SHA-256 and
			   the webhook HMAC */
	LAZYLIB_MHD,    /* libmicrohttpd.so.12: the web surface (web.c) */
	LAZYLIB_N
};

/*
 * Loads library id and resolves every function its lazylib_*.h header lists.
 * 0, or SC_EIO with "libcurl.so.4 could not be loaded: ...; install
 * libcurl4" (the soname and package of that row) in err; the same answer
 * for the life of the process.
 */
int lazylib_load(enum lazylib_id id, struct sc_err *err);

/* The names the callers use, one per header. */
static inline int dl_curl_load(struct sc_err *err)
{
	return lazylib_load(LAZYLIB_CURL, err);
}

static inline int dl_pq_load(struct sc_err *err)
{
	return lazylib_load(LAZYLIB_PQ, err);
}

static inline int dl_crypto_load(struct sc_err *err)
{
	return lazylib_load(LAZYLIB_CRYPTO, err);
}

static inline int dl_mhd_load(struct sc_err *err)
{
	return lazylib_load(LAZYLIB_MHD, err);
}

#endif
