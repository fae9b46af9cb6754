/*
 * test_http.c - the HTTP client, its auth providers and `surecron http`,
 * against the real fake server of tests/fakes/fake_http.h.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fakes/fake_http.h"
#include "http.h"
#include "testutil.h"

static struct fake_http *srv;

static int setup(void **state)
{
	srv = fake_http_start();
	return srv ? 0 : -1;
}

static int teardown(void **state)
{
	fake_http_stop(srv);
	srv = NULL;
	return 0;
}

static int reset(void **state)
{
	fake_http_reset(srv);
	return 0;
}

static void fake_scripts_fifo_then_default(void **state)
{
	struct http_client *c = http_client_new(NULL, NULL);
	struct http_response r = {0};
	struct sc_err err = {0};
	char url[256];

	assert_non_null(c);
	fake_http_push(srv, "/a", 500, "X-One: 1", "first", 0);
	fake_http_set_default(srv, "/a", 200, NULL, "dflt");
	fake_http_url(srv, "/a?k=v", url, sizeof(url));
	assert_int_equal(http_do(c, &(struct http_request){.url = url}, &r,
				 &err), SC_EHTTP);
	assert_int_equal(err.http_status, 500);
	assert_string_equal(r.body, "first");
	char v[16];
	assert_true(http_response_header(&r, "x-one", v, sizeof(v)));
	assert_string_equal(v, "1");
	sc_err_clear(&err);
	assert_int_equal(http_do(c, &(struct http_request){.url = url,
				 .method = "POST", .body = "hello"}, &r, &err), 0);
	assert_string_equal(r.body, "dflt");
	assert_int_equal(fake_http_count(srv, "/a"), 2);
	struct fake_request q;
	assert_true(fake_http_request(srv, "/a", -1, &q));
	assert_string_equal(q.method, "POST");
	assert_string_equal(q.query, "k=v");
	assert_string_equal(q.body, "hello");
	fake_request_dispose(&q);
	http_response_dispose(&r);
	http_client_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(fake_scripts_fifo_then_default, reset),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
