/*
 * lazylib.h - libcurl, libpq and libcrypto are loaded with dlopen the
 * first time they are needed, so a daemon that never makes an HTTP request,
 * never opens a PostgreSQL store and never sends to a webhook never maps
 * them (nor their ~30 dependencies: krb5, ldap, gnutls, ...), which is
 * most of the daemon's resident memory.
 *
 * Use: include "dl_curl.h", "dl_pq.h" or "dl_crypto.h" instead of
 * <curl/curl.h>, <libpq-fe.h> or <openssl/evp.h>; the functions keep their
 * usual names (macros onto a table of pointers). Call dl_curl_load /
 * dl_pq_load / dl_crypto_load before the first call.
 *
 * Thread-safety: the load functions may be called from any thread, any
 * number of times; the work is done once (pthread_once) and the tables are
 * read-only afterwards. A failed load stays failed for the process life.
 */
#ifndef SURECRON_LAZYLIB_H
#define SURECRON_LAZYLIB_H

#include "err.h"

/* Loads libcurl.so.4, resolves every function http.c uses and runs
 * curl_global_init (not thread-safe itself, hence inside the once).
 * 0, or SC_EIO with "libcurl.so.4 could not be loaded: ...; install
 * libcurl4" in err. */
int dl_curl_load(struct sc_err *err);

/* Loads libpq.so.5 and resolves every function store_pg.c uses. 0, or
 * SC_EIO with "libpq.so.5 could not be loaded: ...; install libpq5". */
int dl_pq_load(struct sc_err *err);

/* Loads libcrypto.so.3 and resolves every function message.c uses (the
 * idempotency key's SHA-256, the webhook HMAC). 0, or SC_EIO with
 * "libcrypto.so.3 could not be loaded: ...; install libssl3". */
int dl_crypto_load(struct sc_err *err);

#endif
