/*
 * cmd_http.c - `surecron http [--auth NAME] [--config FILE] METHOD URL
 * [--data BODY]`: one HTTP request through the library's client, for
 * scripts that command tasks run.
 *
 * The exit status carries the API's verdict so a shell task can hand it
 * straight to the queue:
 *   0   2xx; the body is printed to stdout as is
 *   75  429, 5xx or a transport failure (retry later); when the response
 *       gave a hint, stdout gets one JSON line
 *       {"retry_after": SECONDS, "error": "..."} a command task can pass on
 *   78  403 (retrying cannot help), or the auth provider is unusable
 *       (its secret variable is not set)
 *   1   any other failure
 *   2   bad command line, unknown auth name, unreadable config
 * Errors go to stderr as "surecron: METHOD URL: HTTP 429"; the server's
 * error body, when there is one, follows on stderr (capped).
 *
 * --auth NAME takes the provider NAME from the config (--config FILE,
 * default ./surecron.yaml). Without --config, a variable
 * SURECRON_AUTH_<NAME>_TOKEN (NAME upper-cased, other characters than
 * A-Z and 0-9 as '_') is used as a bearer token when it is set.
 */
#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "clock.h"
#include "config.h"
#include "http.h"

#define MAX_HEADERS 32
#define ERROR_BODY_SHOWN 2048

/* "model-api" -> "SURECRON_AUTH_MODEL_API_TOKEN". */
static void env_token_var(const char *name, char *out, size_t n)
{
	size_t o = (size_t)snprintf(out, n, "SURECRON_AUTH_");
	for (const char *p = name; *p && o + 7 < n; p++)
		out[o++] = isalnum((unsigned char)*p)
				   ? (char)toupper((unsigned char)*p)
				   : '_';
	snprintf(out + o, n - o, "_TOKEN");
}

static int exit_for(int rc, const struct sc_err *err)
{
	int s = err->http_status;

	if (rc == SC_EINVAL)
		return EXIT_USAGE;
	if (rc == SC_ECONFIG)
		return EXIT_CONFIG;
	if (s == 0)
		return rc == SC_EHTTP || rc == SC_ETIMEDOUT ? EXIT_TEMPFAIL
							    : EXIT_FAIL;
	if (s == 429 || (s >= 500 && s <= 599))
		return EXIT_TEMPFAIL;
	if (s == 403)
		return EXIT_CONFIG;
	return EXIT_FAIL;
}

/* Prints {"retry_after": S, "error": "..."} on stdout. */
static void print_hint(const struct sc_err *err)
{
	json_int_t secs = (json_int_t)((err->retry_after_ms + 999) / 1000);
	json_t *o = json_pack("{s:I,s:s}", "retry_after", secs, "error",
			      err->msg);
	char *s = o ? json_dumps(o, JSON_PRESERVE_ORDER) : NULL;
	if (s) {
		printf("%s\n", s);
		free(s);
	}
	json_decref(o);
}

int cmd_http(int argc, char **argv)
{
	const char *auth_name = NULL, *config_path = NULL, *data = NULL;
	const char *pos[2] = {NULL, NULL};
	const char *headers[MAX_HEADERS + 1] = {NULL};
	int n_pos = 0, n_headers = 0;
	int64_t timeout_ms = 0;
	struct sc_err err = {0};

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		int r = cli_opt_config("http", argc, argv, &i, &config_path);
		if (r < 0)
			return -r;
		if (r)
			continue;
		const char *v = NULL;
		if ((r = cli_opt_value("http", argc, argv, &i, NULL, "--auth",
					&auth_name)) != 0 ||
		    (r = cli_opt_value("http", argc, argv, &i, "-d", "--data",
					&data)) != 0) {
			if (r < 0)
				return -r;
		} else if ((r = cli_opt_value("http", argc, argv, &i, "-H",
					       "--header", &v)) != 0) {
			if (r < 0)
				return -r;
			if (n_headers == MAX_HEADERS)
				return cli_usage_error("http", "at most %d "
						       "headers", MAX_HEADERS);
			headers[n_headers++] = v;
		} else if ((r = cli_opt_value("http", argc, argv, &i, NULL,
					       "--timeout", &v)) != 0) {
			if (r < 0)
				return -r;
			if (clock_parse_duration(v, &timeout_ms, &err))
				return cli_usage_error("http", "--timeout: %s",
						       err.msg);
		} else if (strcmp(a, "--") == 0) {
			for (i++; i < argc && n_pos < 2; i++)
				pos[n_pos++] = argv[i];
			if (i < argc)
				return cli_usage_error(
					"http", "unexpected argument '%s'",
					argv[i]);
		} else if (a[0] == '-' && a[1]) {
			return cli_usage_error("http", "unknown option '%s'", a);
		} else if (n_pos < 2) {
			pos[n_pos++] = a;
		} else {
			return cli_usage_error("http", "unexpected argument '%s'",
					       a);
		}
	}
	if (n_pos != 2)
		return cli_usage_error("http", "needs METHOD and URL");
	cli_setup_logging(SC_LOG_WARN);

	char method[17];
	size_t mlen = strlen(pos[0]);
	if (mlen == 0 || mlen >= sizeof(method))
		return cli_usage_error("http", "invalid method '%s'", pos[0]);
	for (size_t k = 0; k <= mlen; k++)
		method[k] = (char)toupper((unsigned char)pos[0][k]);

	struct config *cfg = NULL;
	struct http_auth *auth = NULL;
	struct http_client *client = NULL;
	struct http_response resp = {0};
	int code = EXIT_FAIL;
	char var[128];

	if (auth_name) {
		struct auth_spec env_spec = {.name = (char *)auth_name,
					     .kind = AUTH_BEARER, .token_env = var};
		const struct auth_spec *spec = NULL;
		env_token_var(auth_name, var, sizeof(var));
		if (!config_path && getenv(var)) {
			spec = &env_spec;
		} else {
			const char *path = config_path ? config_path
						       : "surecron.yaml";
			if (config_load(path, &cfg, &err) != 0) {
				code = cli_fail(EXIT_USAGE, "%s", err.msg);
				goto done;
			}
			spec = config_auth(cfg, auth_name);
			if (!spec) {
				code = cli_usage_error(
					"http", "no auth provider '%s' in %s",
					auth_name, path);
				goto done;
			}
		}
		auth = http_auth_new(spec, NULL, NULL, &err);
		if (!auth) {
			code = cli_fail(EXIT_CONFIG, "%s", err.msg);
			goto done;
		}
	}

	client = http_client_new(NULL, &err);
	if (!client) {
		code = cli_fail(EXIT_FAIL, "%s", err.msg);
		goto done;
	}
	struct http_request req = {
		.method = method,
		.url = pos[1],
		.headers = headers,
		.body = data,
		.auth = auth,
		.timeout_ms = timeout_ms,
	};
	int rc = http_do(client, &req, &resp, &err);
	if (rc == 0) {
		if (resp.body_len &&
		    fwrite(resp.body, 1, resp.body_len, stdout) != resp.body_len)
			code = cli_fail(EXIT_FAIL, "cannot write the body");
		else
			code = EXIT_OK;
		goto done;
	}
	code = exit_for(rc, &err);
	if (err.retry_after_ms > 0) {
		print_hint(&err);
		cli_fail(code, "%s (retry after %lld s)", err.msg,
			 (long long)((err.retry_after_ms + 999) / 1000));
	} else {
		cli_fail(code, "%s", err.msg);
	}
	if (resp.status && resp.body_len) {
		size_t n = resp.body_len < ERROR_BODY_SHOWN ? resp.body_len
							    : ERROR_BODY_SHOWN;
		fwrite(resp.body, 1, n, stderr);
		fputc('\n', stderr);
	}
done:
	fflush(stdout);
	http_response_dispose(&resp);
	http_client_free(client);
	http_auth_free(auth);
	config_free(cfg);
	return code;
}
