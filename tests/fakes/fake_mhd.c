/*
 * fake_mhd.c - the helpers of fake_mhd.h that both fake servers use.
 *
 * Invariants:
 *   - Nothing here keeps state: each function works on what its caller
 *     passes, under the caller's own lock where it takes one.
 *   - A wait holds mu only inside pthread_cond_timedwait, so a stop that
 *     broadcasts on cv always gets the lock and ends it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <time.h>

#include "fake_mhd.h"

void fake_mhd_sync_init(pthread_mutex_t *mu, pthread_cond_t *cv)
{
	pthread_condattr_t ca;

	pthread_mutex_init(mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(cv, &ca);
	pthread_condattr_destroy(&ca);
}

void fake_mhd_deadline(struct timespec *dl, int ms)
{
	clock_gettime(CLOCK_MONOTONIC, dl);
	dl->tv_sec += ms / 1000;
	dl->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (dl->tv_nsec >= 1000000000L) {
		dl->tv_sec++;
		dl->tv_nsec -= 1000000000L;
	}
}

void fake_mhd_loopback(struct sockaddr_in *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = 0; /* the OS picks a free port */
	sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
}

bool fake_mhd_wait(pthread_mutex_t *mu, pthread_cond_t *cv,
		   const bool *stopping, int ms)
{
	struct timespec dl;
	bool go_on;

	fake_mhd_deadline(&dl, ms);
	pthread_mutex_lock(mu);
	while (!*stopping && pthread_cond_timedwait(cv, mu, &dl) != ETIMEDOUT)
		;
	go_on = !*stopping;
	pthread_mutex_unlock(mu);
	return go_on;
}

void fake_mhd_add_headers(struct MHD_Response *resp, const char *headers)
{
	const char *p = headers;

	while (p && *p) {
		const char *eol = strchr(p, '\n');
		size_t len = eol ? (size_t)(eol - p) : strlen(p);
		char line[1024];
		if (len >= sizeof(line))
			len = sizeof(line) - 1;
		memcpy(line, p, len);
		line[len] = '\0';
		char *colon = strchr(line, ':');
		if (colon) {
			*colon = '\0';
			char *v = colon + 1;
			while (*v == ' ')
				v++;
			size_t vl = strlen(v);
			while (vl && (v[vl - 1] == '\r' || v[vl - 1] == ' '))
				v[--vl] = '\0';
			MHD_add_response_header(resp, line, v);
		}
		p = eol ? eol + 1 : NULL;
	}
}

enum MHD_Result fake_mhd_send(struct MHD_Connection *conn, int status,
			      const char *headers, const char *body)
{
	struct MHD_Response *resp = MHD_create_response_from_buffer(
		strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
	if (!resp)
		return MHD_NO;
	fake_mhd_add_headers(resp, headers);
	enum MHD_Result rc = MHD_queue_response(conn, (unsigned)status, resp);
	MHD_destroy_response(resp);
	return rc;
}
