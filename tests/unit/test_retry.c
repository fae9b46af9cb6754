/*
 * test_retry.c - DESIGN.md's retry policy: classes, exponential delays,
 * hints that delay but never advance.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "retry.h"

#define MIN (60 * 1000LL)

static void class_policies(void **state)
{
	struct sc_retry_policy d = sc_retry_policy_for(SC_FREQ_DEFAULT);
	struct sc_retry_policy l = sc_retry_policy_for(SC_FREQ_LOW);

	assert_int_equal(d.attempts, 2);
	assert_int_equal(d.backoff, SC_BACKOFF_EXPONENTIAL);
	assert_int_equal(d.delay_ms, 60 * 1000);
	assert_int_equal(l.attempts, 4);
	assert_int_equal(l.backoff, SC_BACKOFF_EXPONENTIAL);
	assert_int_equal(l.delay_ms, 30 * MIN);
}

static void exponential_timeline_of_low_class(void **state)
{
	/* 17:00 fails -> 17:30 -> 18:30 -> 20:30: the seed incident's
	 * recovery window of 3 h 30 min. */
	struct sc_retry_policy l = sc_retry_policy_for(SC_FREQ_LOW);
	int64_t t = 0;
	static const int64_t want[] = {30 * MIN, 90 * MIN, 210 * MIN};

	for (int k = 1; k <= 3; k++) {
		t = sc_retry_next_ms(&l, k, t, 0);
		assert_int_equal(t, want[k - 1]);
	}
}

static void fixed_backoff_and_saturation(void **state)
{
	struct sc_retry_policy f = {5, SC_BACKOFF_FIXED, 1000};
	struct sc_retry_policy e = {100, SC_BACKOFF_EXPONENTIAL, 1000};

	assert_int_equal(sc_retry_delay_ms(&f, 4), 1000);
	assert_int_equal(sc_retry_delay_ms(&e, 3), 4000);
	assert_true(sc_retry_delay_ms(&e, 99) > 0);
}

static void hint_delays_never_advances(void **state)
{
	struct sc_retry_policy d = sc_retry_policy_for(SC_FREQ_DEFAULT);

	assert_int_equal(sc_retry_next_ms(&d, 1, 0, 5 * MIN), 5 * MIN);
	assert_int_equal(sc_retry_next_ms(&d, 1, 0, 1000), MIN);
	assert_int_equal(sc_retry_next_ms(&d, 1, 0, 0), MIN);
}

static void validity(void **state)
{
	struct sc_retry_policy ok = {4, SC_BACKOFF_EXPONENTIAL, 1000};
	struct sc_retry_policy zero = {0, SC_BACKOFF_EXPONENTIAL, 1000};
	struct sc_retry_policy neg = {2, SC_BACKOFF_FIXED, -1};

	assert_true(retry_policy_valid(&ok));
	assert_false(retry_policy_valid(&zero));
	assert_false(retry_policy_valid(&neg));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(class_policies),
		cmocka_unit_test(exponential_timeline_of_low_class),
		cmocka_unit_test(fixed_backoff_and_saturation),
		cmocka_unit_test(hint_delays_never_advances),
		cmocka_unit_test(validity),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
