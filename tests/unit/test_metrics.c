/*
 * test_metrics.c - the in-process registry of metrics.h: label values
 * escaped per the text format, counters by schedule and outcome, the
 * histograms' buckets cumulative, lost runs counted as lost slots.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"

static void escapes_label_values(void **state)
{
	char out[64];
	(void)state;

	assert_string_equal(metrics_escape("a\"b\\c\nd", out, sizeof(out)),
			    "a\\\"b\\\\c\\nd");
	assert_string_equal(metrics_escape("plain", out, sizeof(out)),
			    "plain");
	/* Cut short, never past the buffer, never half an escape. */
	assert_true(strlen(metrics_escape("\"\"\"\"\"\"", out, 6)) < 6);
}

static void counts_runs_and_buckets(void **state)
{
	char *buf = NULL;
	size_t len = 0;
	(void)state;

	metrics_reset();
	metrics_run("a\"x", "success", 500, 50);
	metrics_run("a\"x", "success", 2000000, 5000);
	metrics_run("b", "lost", 0, 0);
	assert_int_equal(metrics_render(&buf, &len), 0);
	assert_int_equal(strlen(buf), len);
	static const char *const want[] = {
		"surecron_runs_total{schedule=\"a\\\"x\",outcome=\"success\"} 2\n",
		"surecron_runs_total{schedule=\"b\",outcome=\"lost\"} 1\n",
		"surecron_slots_lost_total{schedule=\"b\"} 1\n",
		"surecron_start_lateness_seconds_bucket{le=\"0.001\"} 2\n",
		"surecron_start_lateness_seconds_bucket{le=\"1\"} 2\n",
		"surecron_start_lateness_seconds_bucket{le=\"5\"} 3\n",
		"surecron_start_lateness_seconds_bucket{le=\"+Inf\"} 3\n",
		"surecron_start_lateness_seconds_count 3\n",
		"surecron_run_duration_seconds_bucket{schedule=\"a\\\"x\","
		"le=\"0.1\"} 1\n",
		"surecron_run_duration_seconds_bucket{schedule=\"a\\\"x\","
		"le=\"10\"} 2\n",
		"surecron_run_duration_seconds_sum{schedule=\"a\\\"x\"} 5.050000\n",
		"# TYPE surecron_runs_total counter\n",
		"# TYPE surecron_run_duration_seconds histogram\n"};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (!strstr(buf, want[i]))
			fail_msg("no %s in:\n%s", want[i], buf);
	assert_null(strstr(buf, "slots_lost_total{schedule=\"a"));
	/* Appends to what the buffer holds. */
	size_t first = len;
	assert_int_equal(metrics_render(&buf, &len), 0);
	assert_int_equal(len, 2 * first);
	free(buf);
	metrics_reset();
	buf = NULL;
	assert_int_equal(metrics_render(&buf, &len), 0);
	assert_null(strstr(buf, "surecron_runs_total{"));
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(escapes_label_values),
		cmocka_unit_test(counts_runs_and_buckets),
	};
	return cmocka_run_group_tests_name("metrics", tests, NULL, NULL);
}
