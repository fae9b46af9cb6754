/*
 * http_auth.c - auth providers (placeholder: not implemented yet).
 */
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "http.h"

struct http_auth {
	int unused;
};

struct http_auth *http_auth_new(const struct auth_spec *spec,
				struct sc_clock *clock,
				const struct http_token_store *store,
				struct sc_err *err)
{
	(void)spec;
	(void)clock;
	(void)store;
	sc_err_set(err, SC_ECONFIG, "auth providers are not implemented yet");
	return NULL;
}

void http_auth_free(struct http_auth *a)
{
	free(a);
}

const char *http_auth_name(const struct http_auth *a)
{
	(void)a;
	return "";
}

int http_auth_token(struct http_auth *a, struct http_client *c,
		    const char *failed, char **token, struct sc_err *err)
{
	(void)a;
	(void)c;
	(void)failed;
	(void)token;
	return sc_err_set(err, SC_ECONFIG, "not implemented");
}

bool http_auth_can_refresh(const struct http_auth *a)
{
	(void)a;
	return false;
}

const char *http_auth_reset_header(const struct http_auth *a)
{
	(void)a;
	return NULL;
}

void http_secret_free(char *s)
{
	if (s) {
		explicit_bzero(s, strlen(s));
		free(s);
	}
}
