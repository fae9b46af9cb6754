/*
 * lazylib_curl.h - libcurl through the lazily loaded table (see lazylib.h).
 * Include this instead of <curl/curl.h>; call dl_curl_load first. The
 * compile-time option type checks of curl's gcc macros are lost: the two
 * variadic functions are plain pointers here.
 */
#ifndef SURECRON_LAZYLIB_CURL_H
#define SURECRON_LAZYLIB_CURL_H

#include <curl/curl.h>

#include "lazylib.h"

/* Every libcurl function the library calls; add a row to use another. */
#define DL_CURL_FUNCS(X)                                                    \
	X(curl_easy_cleanup)                                                \
	X(curl_easy_getinfo)                                                \
	X(curl_easy_init)                                                   \
	X(curl_easy_perform)                                                \
	X(curl_easy_reset)                                                  \
	X(curl_easy_setopt)                                                 \
	X(curl_easy_strerror)                                               \
	X(curl_free)                                                        \
	X(curl_getdate)                                                     \
	X(curl_global_init)                                                 \
	X(curl_slist_append)                                                \
	X(curl_slist_free_all)                                              \
	X(curl_url)                                                         \
	X(curl_url_cleanup)                                                 \
	X(curl_url_get)                                                     \
	X(curl_url_set)

struct dl_curl_table {
#define DL_CURL_SLOT(f) __typeof__(f) *f;
	DL_CURL_FUNCS(DL_CURL_SLOT)
#undef DL_CURL_SLOT
};

/* Filled once by dl_curl_load; read-only afterwards. */
extern struct dl_curl_table dl_curl;

#ifndef LAZYLIB_IMPL
/* curl's type-checking macros of these two would call the real symbols. */
#undef curl_easy_setopt
#undef curl_easy_getinfo
#define curl_easy_cleanup (dl_curl.curl_easy_cleanup)
#define curl_easy_getinfo (dl_curl.curl_easy_getinfo)
#define curl_easy_init (dl_curl.curl_easy_init)
#define curl_easy_perform (dl_curl.curl_easy_perform)
#define curl_easy_reset (dl_curl.curl_easy_reset)
#define curl_easy_setopt (dl_curl.curl_easy_setopt)
#define curl_easy_strerror (dl_curl.curl_easy_strerror)
#define curl_free (dl_curl.curl_free)
#define curl_getdate (dl_curl.curl_getdate)
#define curl_global_init (dl_curl.curl_global_init)
#define curl_slist_append (dl_curl.curl_slist_append)
#define curl_slist_free_all (dl_curl.curl_slist_free_all)
#define curl_url (dl_curl.curl_url)
#define curl_url_cleanup (dl_curl.curl_url_cleanup)
#define curl_url_get (dl_curl.curl_url_get)
#define curl_url_set (dl_curl.curl_url_set)
#endif

#endif
