/*
 * daemon_auth.c - the daemon's auth providers: one per `auths:` block of a
 * loaded config, shared by every worker for that config's life, over one
 * token cache kept in the store.
 *
 * Why shared: a provider is where the single-flight token fetch and the
 * "a 401 refreshes the token once" rule live (http_auth.c). Built per run,
 * each run would see only its own fetches: two schedules due together
 * would each fetch a token, and a token a run got 401 with would be
 * dropped by that run alone. Shared, a token is fetched once and every
 * run uses it until it expires or a server refuses it.
 *
 * Invariants:
 *   - the providers of a config generation live as long as its cfg_ref
 *     (daemon.c): a run keeps the config, and so the providers, it
 *     started with; a reload makes new providers, which read the token
 *     the old ones stored (no fetch at a reload);
 *   - the token cache is one store handle of its own (store.h: a handle
 *     is one thread's), opened at the first call and used under `mu`,
 *     because providers call it from whichever worker needs a token; a
 *     failed call closes it, so the next call reconnects;
 *   - a block whose provider cannot be made (its secret's variable is
 *     unset) is left out, with a warning naming the block and the
 *     variable: its tasks build a provider per run as before, and each
 *     such run fails with that message. Nothing here logs a secret.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "daemon.h"
#include "err.h"
#include "http.h"
#include "log.h"
#include "store.h"

struct daemon_tokens {
	pthread_mutex_t mu;
	char *store_url;
	struct sc_clock *clock; /* borrowed: the daemon's */
	struct store *s;        /* under mu; NULL until used or after a fault */
	struct http_token_store cache; /* what the providers are given */
};

/* Runs one token call on the shared handle, opening it first if needed;
 * op is 0 get, 1 put, 2 drop. */
static int tokens_call(struct daemon_tokens *t, int op, const char *provider,
		       char **token, const char *put_token, int64_t *expires_ms,
		       int64_t put_expires_ms)
{
	int rc = 0;

	pthread_mutex_lock(&t->mu);
	if (!t->s)
		rc = store_open(t->store_url, t->clock, &t->s, NULL);
	if (!rc) {
		if (op == 0)
			rc = store_token_get(t->s, provider, token, expires_ms,
					     NULL);
		else if (op == 1)
			rc = store_token_put(t->s, provider, put_token,
					     put_expires_ms, NULL);
		else
			rc = store_token_drop(t->s, provider, NULL);
		if (rc && rc != SC_ENOENT) {
			store_close(t->s);
			t->s = NULL;
		}
	}
	pthread_mutex_unlock(&t->mu);
	return rc;
}

static int tokens_get(void *ud, const char *provider, char **token,
		      int64_t *expires_at_ms)
{
	return tokens_call(ud, 0, provider, token, NULL, expires_at_ms, 0);
}

static int tokens_put(void *ud, const char *provider, const char *token,
		      int64_t expires_at_ms)
{
	return tokens_call(ud, 1, provider, NULL, token, NULL, expires_at_ms);
}

static int tokens_drop(void *ud, const char *provider)
{
	return tokens_call(ud, 2, provider, NULL, NULL, NULL, 0);
}

struct daemon_tokens *daemon_tokens_new(const char *store_url,
					struct sc_clock *clock)
{
	struct daemon_tokens *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->store_url = strdup(store_url);
	if (!t->store_url) {
		free(t);
		return NULL;
	}
	pthread_mutex_init(&t->mu, NULL);
	t->clock = clock;
	t->cache = (struct http_token_store){
		.ud = t,
		.get = tokens_get,
		.put = tokens_put,
		.drop = tokens_drop,
	};
	return t;
}

void daemon_tokens_free(struct daemon_tokens *t)
{
	if (!t)
		return;
	store_close(t->s);
	pthread_mutex_destroy(&t->mu);
	free(t->store_url);
	free(t);
}

size_t daemon_auths_new(const struct config *cfg, struct daemon_tokens *t,
			struct http_auth ***out)
{
	struct http_auth **a;
	size_t n = 0;

	*out = NULL;
	if (!cfg->n_auths || !t)
		return 0;
	a = calloc(cfg->n_auths, sizeof(struct http_auth *));
	if (!a)
		return 0; /* every run builds its own, as without this */
	for (size_t i = 0; i < cfg->n_auths; i++) {
		struct sc_err e = {0};
		char q[2 * SC_ERR_MSG_MAX];

		a[n] = http_auth_new(&cfg->auths[i], t->clock, &t->cache, &e);
		if (a[n]) {
			n++;
			continue;
		}
		LOG(SC_LOG_WARN, "daemon",
		    "event=auth_unavailable auth=%s code=%s msg=%s",
		    cfg->auths[i].name, sc_strerror(e.code),
		    log_quote(q, sizeof(q), e.msg));
	}
	if (!n) {
		free(a);
		return 0;
	}
	*out = a;
	return n;
}

void daemon_auths_free(struct http_auth **a, size_t n)
{
	for (size_t i = 0; i < n; i++)
		http_auth_free(a[i]);
	free(a);
}
