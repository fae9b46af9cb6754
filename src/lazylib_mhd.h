/*
 * lazylib_mhd.h - libmicrohttpd through the lazily loaded table (see
 * lazylib.h). Include this instead of <microhttpd.h>; call dl_mhd_load
 * before the first call. Only the daemon's web surface (web.c, `http:`
 * in the config) needs it, and libmicrohttpd brings gnutls and eight more
 * libraries whose start-up took about 4 ms of every command's 6 ms
 * (`surecron --version`, `status NAME`): the CLI never maps them now.
 */
#ifndef SURECRON_LAZYLIB_MHD_H
#define SURECRON_LAZYLIB_MHD_H

#include <microhttpd.h>

#include "lazylib.h"

/* Every libmicrohttpd function the library calls; add a row to use
 * another. */
#define DL_MHD_FUNCS(X)                                                     \
	X(MHD_add_response_header)                                          \
	X(MHD_create_response_from_buffer)                                  \
	X(MHD_destroy_response)                                             \
	X(MHD_get_connection_info)                                          \
	X(MHD_get_connection_values)                                        \
	X(MHD_get_daemon_info)                                              \
	X(MHD_lookup_connection_value)                                      \
	X(MHD_queue_response)                                               \
	X(MHD_start_daemon)                                                 \
	X(MHD_stop_daemon)

struct dl_mhd_table {
#define DL_MHD_SLOT(f) __typeof__(f) *f;
	DL_MHD_FUNCS(DL_MHD_SLOT)
#undef DL_MHD_SLOT
};

/* Filled once by dl_mhd_load; read-only afterwards. */
extern struct dl_mhd_table dl_mhd;

#ifndef LAZYLIB_IMPL
#define MHD_add_response_header (dl_mhd.MHD_add_response_header)
#define MHD_create_response_from_buffer (dl_mhd.MHD_create_response_from_buffer)
#define MHD_destroy_response (dl_mhd.MHD_destroy_response)
#define MHD_get_connection_info (dl_mhd.MHD_get_connection_info)
#define MHD_get_connection_values (dl_mhd.MHD_get_connection_values)
#define MHD_get_daemon_info (dl_mhd.MHD_get_daemon_info)
#define MHD_lookup_connection_value (dl_mhd.MHD_lookup_connection_value)
#define MHD_queue_response (dl_mhd.MHD_queue_response)
#define MHD_start_daemon (dl_mhd.MHD_start_daemon)
#define MHD_stop_daemon (dl_mhd.MHD_stop_daemon)
#endif

#endif
