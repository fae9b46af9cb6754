/*
 * test_metrics.c - the in-process registry of metrics.h: label values
 * escaped per the text format, counters by schedule and outcome, the
 * histograms' buckets cumulative, lost runs counted as lost slots; the
 * missed, delivery and alert counters; declared schedules at 0; many
 * series (the hash table) each counted apart, in creation order.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
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

static void counts_missed_deliveries_alerts(void **state)
{
	char *buf = NULL;
	size_t len = 0;
	(void)state;

	metrics_reset();
	metrics_declare("quiet");
	metrics_missed("m", 3);
	metrics_missed("m", 2);
	metrics_missed("z", 0); /* nothing: no series */
	metrics_delivery("hook", "sent");
	metrics_delivery("hook", "sent");
	metrics_delivery("hook", "unknown");
	metrics_delivery("fi\\le", "failed");
	metrics_alert("lost");
	metrics_alert("missed");
	metrics_alert("lost");
	assert_int_equal(metrics_render(&buf, &len), 0);
	static const char *const want[] = {
		"surecron_slots_lost_total{schedule=\"quiet\"} 0\n",
		"surecron_slots_missed_total{schedule=\"quiet\"} 0\n",
		"surecron_slots_missed_total{schedule=\"m\"} 5\n",
		"# TYPE surecron_slots_missed_total counter\n",
		"surecron_deliveries_total{target=\"hook\",state=\"sent\"} 2\n",
		"surecron_deliveries_total{target=\"hook\",state=\"unknown\"} "
		"1\n",
		"surecron_deliveries_total{target=\"fi\\\\le\",state=\"failed\"} "
		"1\n",
		"# TYPE surecron_deliveries_total counter\n",
		"surecron_alerts_total{reason=\"lost\"} 2\n",
		"surecron_alerts_total{reason=\"missed\"} 1\n",
		"# TYPE surecron_alerts_total counter\n"};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (!strstr(buf, want[i]))
			fail_msg("no %s in:\n%s", want[i], buf);
	assert_null(strstr(buf, "schedule=\"z\""));
	/* Lost and missed are apart: declaring does not count. */
	assert_null(strstr(buf, "surecron_runs_total{schedule=\"quiet\""));
	free(buf);
	metrics_reset();
}

/* Enough series to grow the table several times: each keeps its own
 * count, and the output keeps creation order. */
static void many_series_stay_apart(void **state)
{
	char *buf = NULL, name[32], line[128];
	size_t len = 0;
	enum { N = 3000 };
	(void)state;

	metrics_reset();
	for (int round = 0; round < 3; round++)
		for (int i = 0; i < N; i++) {
			snprintf(name, sizeof(name), "s%d", i);
			if (round <= i % 3)
				metrics_run(name, "success", 0, 0);
			metrics_delivery(name, i % 2 ? "sent" : "failed");
		}
	assert_int_equal(metrics_render(&buf, &len), 0);
	/* Each family in creation order: one pass over the output each. */
	const char *run_at = buf, *del_at = buf;
	for (int i = 0; i < N; i++) {
		snprintf(line, sizeof(line), "surecron_runs_total{schedule="
			 "\"s%d\",outcome=\"success\"} %d\n", i, i % 3 + 1);
		if (!(run_at = strstr(run_at, line)))
			fail_msg("no (or out of order) %s", line);
		snprintf(line, sizeof(line), "surecron_deliveries_total{target="
			 "\"s%d\",state=\"%s\"} 3\n", i,
			 i % 2 ? "sent" : "failed");
		if (!(del_at = strstr(del_at, line)))
			fail_msg("no (or out of order) %s", line);
	}
	/* ("ab","c") and ("a","bc") are two series. */
	metrics_reset();
	metrics_delivery("ab", "c");
	metrics_delivery("a", "bc");
	free(buf);
	buf = NULL;
	assert_int_equal(metrics_render(&buf, &len), 0);
	assert_non_null(strstr(buf, "{target=\"ab\",state=\"c\"} 1\n"));
	assert_non_null(strstr(buf, "{target=\"a\",state=\"bc\"} 1\n"));
	free(buf);
	metrics_reset();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(escapes_label_values),
		cmocka_unit_test(counts_runs_and_buckets),
		cmocka_unit_test(counts_missed_deliveries_alerts),
		cmocka_unit_test(many_series_stay_apart),
	};
	return cmocka_run_group_tests_name("metrics", tests, NULL, NULL);
}
