/*
 * test_target_email.c - the email target (issue 18) against a real SMTP
 * server on 127.0.0.1 (tests/fakes/smtp_server.py, Debian's
 * python3-aiosmtpd), and a whole slot mailed by `surecron run --once`.
 *
 * What arrives is read back from the server's folder and checked: the
 * envelope, the subject (schedule, kind, the slot in its zone), the
 * Message-ID (the idempotency key: the same for a resend), the body
 * (quoted-printable, task text never reaching the headers). Failures are
 * checked for what the outbox needs: a sure failure (rejected recipient,
 * refused login, nothing listening, no STARTTLS off loopback) is not
 * ambiguous; a server that took the whole mail and never answered is.
 * The suite is skipped when the server cannot run (no python3-aiosmtpd).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <jansson.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config.h"
#include "daemon_util.h"
#include "message.h"
#include "target.h"
#include "testutil.h"

#define PY "/usr/bin/python3"
#define SERVER "tests/fakes/smtp_server.py"
#define SLOT_MS INT64_C(1796371200000) /* 2026-12-04T08:00:00Z */

static char dir[256];
static pid_t srv_pid;
static int srv_port;

static bool server_available(void)
{
	return access(PY, X_OK) == 0 && access(SERVER, R_OK) == 0 &&
	       system(PY " -c 'import aiosmtpd' >/dev/null 2>&1") == 0;
}

/* Starts the server on host with up to two extra arguments (NULL: none);
 * its port in srv_port. Mails go to dir/mail. */
static void start_server(const char *host, const char *opt, const char *arg)
{
	char mail[300], *argv[12];
	int fd[2], n = 0;

	snprintf(mail, sizeof(mail), "%s/mail", dir);
	mkdir(mail, 0700);
	argv[n++] = PY;
	argv[n++] = SERVER;
	argv[n++] = mail;
	argv[n++] = "--host";
	argv[n++] = (char *)host;
	if (opt)
		argv[n++] = (char *)opt;
	if (arg)
		argv[n++] = (char *)arg;
	argv[n] = NULL;
	assert_int_equal(pipe(fd), 0);
	srv_pid = fork();
	assert_true(srv_pid >= 0);
	if (srv_pid == 0) {
		dup2(fd[1], 1);
		close(fd[0]);
		execv(PY, argv);
		_exit(127);
	}
	close(fd[1]);
	char line[64] = "";
	size_t got = 0;
	struct pollfd p = {.fd = fd[0], .events = POLLIN};
	/* The port line, within 20 s (python's start on a loaded host). */
	while (!strchr(line, '\n') && poll(&p, 1, 20000) == 1) {
		ssize_t k = read(fd[0], line + got, sizeof(line) - 1 - got);
		if (k <= 0)
			break;
		got += (size_t)k;
		line[got] = '\0';
	}
	close(fd[0]);
	assert_int_equal(sscanf(line, "port %d", &srv_port), 1);
}

static void stop_server(void)
{
	if (srv_pid > 0) {
		kill(srv_pid, SIGTERM);
		if (tu_wait_exit(srv_pid, 5000) == -1) {
			kill(srv_pid, SIGKILL);
			waitpid(srv_pid, NULL, 0);
		}
	}
	srv_pid = 0;
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "%s", tu_tmpdir());
	srv_pid = 0;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	stop_server();
	unsetenv("SC_T_SMTP");
	unsetenv("SC_T_USER");
	unsetenv("SC_T_PASS");
	tu_rmrf(dir);
	return 0;
}

/* Waits for dir/mail/NNN.eml and reads it into buf. */
static bool read_mail(int n, char *buf, size_t size)
{
	char p[320];

	snprintf(p, sizeof(p), "%s/mail/%03d.eml", dir, n);
	for (int i = 0; i < 2000 && access(p, R_OK) != 0; i++)
		usleep(5000);
	if (access(p, R_OK) != 0)
		return false;
	tu_slurp(p, buf, size);
	return true;
}

static int mail_count(void)
{
	char p[320];
	int n = 0;

	for (;; n++) {
		snprintf(p, sizeof(p), "%s/mail/%03d.eml", dir, n + 1);
		if (access(p, F_OK) != 0)
			return n;
	}
}

static char *to_list[] = {"ops@example.test", "lead@example.test", NULL};

static struct target_spec email_target(void)
{
	struct target_spec t = {
		.name = "ops-mail", .kind = TARGET_EMAIL,
		.url_env = "SC_T_SMTP", .mail_from = "surecron@example.test",
		.mail_to = to_list, .connect_timeout_ms = 5000,
		.timeout_ms = 10000};
	return t;
}

static void set_url(const char *host)
{
	char url[128];

	snprintf(url, sizeof(url), "smtp://%s:%d", host, srv_port);
	setenv("SC_T_SMTP", url, 1);
}

/* A result message with a summary that has '=', a non-ASCII character,
 * a long line and lines that look like headers. */
static char *result_body(void)
{
	char long_line[400], summary[1024];
	struct message m = {.kind = MESSAGE_RESULT,
			    .schedule = "weekly-summary", .slot_ms = SLOT_MS};
	char *out = NULL;
	struct sc_err err = {0};

	memset(long_line, 'x', sizeof(long_line) - 1);
	long_line[sizeof(long_line) - 1] = '\0';
	snprintf(summary, sizeof(summary), "revenue 2+2=4 \xce\x94 up\n"
		 "\r\nBcc: intruder@example.test\n%s\nend", long_line);
	m.summary = summary;
	assert_int_equal(message_compose(&m, &out, &err), 0);
	return out;
}

static const struct sc_zone *seoul(void)
{
	const struct sc_zone *z = NULL;
	struct sc_err err = {0};

	assert_int_equal(sc_zone_load("Asia/Seoul", &z, &err), 0);
	return z;
}

/* The value of header name in the mail's header block, into out. */
static bool header(const char *mail, const char *name, char *out, size_t n)
{
	const char *end = strstr(mail, "\r\n\r\n");
	size_t ln = strlen(name);

	for (const char *p = mail; p && p < end; ) {
		if (strncmp(p, name, ln) == 0 && p[ln] == ':') {
			const char *v = p + ln + 2, *e = strstr(v, "\r\n");
			snprintf(out, n, "%.*s", (int)(e - v), v);
			return true;
		}
		p = strstr(p, "\r\n");
		if (p)
			p += 2;
	}
	return false;
}

static void delivers_a_mail_with_its_key_and_local_slot(void **state)
{
	(void)state;
	if (!server_available())
		skip();
	start_server("127.0.0.1", NULL, NULL);
	set_url("127.0.0.1");
	struct target_spec t = email_target();
	char *body = result_body();
	struct target_copy c = {.target = &t, .body = body,
				.kind = MESSAGE_RESULT,
				.schedule = "weekly-summary",
				.slot_ms = SLOT_MS, .zone = seoul()};
	struct sc_err err = {0};
	assert_int_equal(target_send(&c, &err), 0);

	static char mail[16384];
	char v[512], key[MESSAGE_KEY_MAX], want[600];
	assert_true(read_mail(1, mail, sizeof(mail)));
	assert_true(header(mail, "Subject", v, sizeof(v)));
	assert_string_equal(v, "[surecron] weekly-summary result: "
			    "2026-12-04 17:00 KST");
	assert_int_equal(message_idempotency_key(MESSAGE_RESULT,
						 "weekly-summary", SLOT_MS,
						 "ops-mail", 0, key, &err), 0);
	snprintf(want, sizeof(want), "<%s@surecron>", key);
	assert_true(header(mail, "Message-ID", v, sizeof(v)));
	assert_string_equal(v, want);
	assert_true(header(mail, "To", v, sizeof(v)));
	assert_string_equal(v, "<ops@example.test>, <lead@example.test>");
	assert_true(header(mail, "Content-Transfer-Encoding", v, sizeof(v)));
	assert_string_equal(v, "quoted-printable");
	/* The task's text is in the body only, encoded: '=' and the
	 * non-ASCII bytes escaped, the header-like line inert. */
	const char *sep = strstr(mail, "\r\n\r\n");
	assert_non_null(sep);
	assert_false(header(mail, "Bcc", v, sizeof(v)));
	assert_non_null(strstr(sep, "2+2=3D4 =CE=94 up"));
	assert_non_null(strstr(sep, "Bcc: intruder@example.test"));
	/* No encoded line is longer than 76 characters. */
	for (const char *p = sep + 4; *p;) {
		const char *e = strstr(p, "\r\n");
		size_t len = e ? (size_t)(e - p) : strlen(p);
		assert_true(len <= 76);
		p = e ? e + 2 : p + len;
	}
	char meta[512], mp[320];
	snprintf(mp, sizeof(mp), "%s/mail/001.json", dir);
	tu_slurp(mp, meta, sizeof(meta));
	json_t *j = json_loads(meta, 0, NULL);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "from")),
			    "surecron@example.test");
	assert_int_equal(json_array_size(json_object_get(j, "to")), 2);
	json_decref(j);

	/* A resend of the same copy carries the same Message-ID. */
	assert_int_equal(target_send(&c, &err), 0);
	static char again[16384];
	assert_true(read_mail(2, again, sizeof(again)));
	assert_true(header(again, "Message-ID", v, sizeof(v)));
	assert_string_equal(v, want);
	free(body);
}

static void subjects_name_the_kind(void **state)
{
	(void)state;
	struct target_spec t = email_target();
	struct target_copy c = {.target = &t, .kind = MESSAGE_ALERT,
				.schedule = "weekly-summary",
				.slot_ms = SLOT_MS, .zone = seoul()};
	char s[256];

	target_email_subject(&c, "lost", s, sizeof(s));
	assert_string_equal(s, "[surecron] weekly-summary lost: "
			    "2026-12-04 17:00 KST");
	c.kind = MESSAGE_NOTICE;
	c.attempt = 2;
	c.zone = NULL;
	target_email_subject(&c, NULL, s, sizeof(s));
	assert_string_equal(s, "[surecron] weekly-summary failed (attempt "
			    "2): 2026-12-04 08:00 UTC");
}

static void login_from_the_environment(void **state)
{
	(void)state;
	if (!server_available())
		skip();
	start_server("127.0.0.1", "--auth", "mailer:s3cret-canary");
	set_url("127.0.0.1");
	struct target_spec t = email_target();
	t.username_env = "SC_T_USER";
	t.password_env = "SC_T_PASS";
	char *body = result_body();
	struct target_copy c = {.target = &t, .body = body,
				.kind = MESSAGE_RESULT,
				.schedule = "weekly-summary",
				.slot_ms = SLOT_MS};
	struct sc_err err = {0};

	/* Unset: a config error naming the variable. */
	assert_int_equal(target_send(&c, &err), SC_ECONFIG);
	assert_non_null(strstr(err.msg, "SC_T_USER"));
	setenv("SC_T_USER", "mailer", 1);
	setenv("SC_T_PASS", "wrong-canary", 1);
	sc_err_clear(&err);
	assert_int_equal(target_send(&c, &err), SC_EDELIVERY);
	assert_false(err.ambiguous);
	assert_null(strstr(err.msg, "canary"));
	assert_int_equal(mail_count(), 0);
	setenv("SC_T_PASS", "s3cret-canary", 1);
	sc_err_clear(&err);
	assert_int_equal(target_send(&c, &err), 0);
	char meta[512], mp[320];
	snprintf(mp, sizeof(mp), "%s/mail/001.json", dir);
	for (int i = 0; i < 2000 && access(mp, R_OK) != 0; i++)
		usleep(5000);
	tu_slurp(mp, meta, sizeof(meta));
	assert_non_null(strstr(meta, "\"login\": \"mailer\""));
	free(body);
}

static void a_rejected_recipient_is_a_sure_failure(void **state)
{
	(void)state;
	if (!server_available())
		skip();
	start_server("127.0.0.1", "--reject-rcpt", "lead@example.test");
	set_url("127.0.0.1");
	struct target_spec t = email_target();
	char *body = result_body();
	struct target_copy c = {.target = &t, .body = body,
				.kind = MESSAGE_RESULT,
				.schedule = "weekly-summary",
				.slot_ms = SLOT_MS};
	struct sc_err err = {0};

	assert_int_equal(target_send(&c, &err), SC_EDELIVERY);
	assert_false(err.ambiguous);
	assert_non_null(strstr(err.msg, "ops-mail"));
	assert_null(strstr(err.msg, "example.test"));
	assert_int_equal(mail_count(), 0);
	free(body);
}

static void no_answer_after_the_mail_is_ambiguous(void **state)
{
	(void)state;
	if (!server_available())
		skip();
	start_server("127.0.0.1", "--hang-after-data", NULL);
	set_url("127.0.0.1");
	struct target_spec t = email_target();
	t.timeout_ms = 1500;
	char *body = result_body();
	struct target_copy c = {.target = &t, .body = body,
				.kind = MESSAGE_RESULT,
				.schedule = "weekly-summary",
				.slot_ms = SLOT_MS};
	struct sc_err err = {0};

	assert_int_equal(target_send(&c, &err), SC_EDELIVERY);
	if (!err.ambiguous)
		fail_msg("not ambiguous: %s", err.msg);
	free(body);

	/* Nothing listening: refused before anything was sent. */
	stop_server();
	sc_err_clear(&err);
	body = result_body();
	c.body = body;
	assert_int_equal(target_send(&c, &err), SC_EDELIVERY);
	assert_false(err.ambiguous);
	free(body);
}

/* An IPv4 address of this host that is not loopback, or false. Traffic
 * to it still stays in the host (the kernel routes it locally). */
static bool own_address(char *out, size_t n)
{
	struct ifaddrs *ifs = NULL;
	bool found = false;

	if (getifaddrs(&ifs) != 0)
		return false;
	for (struct ifaddrs *i = ifs; i && !found; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET)
			continue;
		struct in_addr a = ((struct sockaddr_in *)i->ifa_addr)->sin_addr;
		if ((ntohl(a.s_addr) >> 24) == 127)
			continue;
		found = inet_ntop(AF_INET, &a, out, (socklen_t)n) != NULL;
	}
	freeifaddrs(ifs);
	return found;
}

static void starttls_is_required_off_loopback(void **state)
{
	(void)state;
	char ip[64];

	if (!server_available() || !own_address(ip, sizeof(ip)))
		skip();
	/* The server offers no STARTTLS: a send to it off loopback must
	 * fail rather than go in the clear. */
	start_server(ip, NULL, NULL);
	set_url(ip);
	struct target_spec t = email_target();
	char *body = result_body();
	struct target_copy c = {.target = &t, .body = body,
				.kind = MESSAGE_RESULT,
				.schedule = "weekly-summary",
				.slot_ms = SLOT_MS};
	struct sc_err err = {0};

	assert_int_equal(target_send(&c, &err), SC_EDELIVERY);
	assert_false(err.ambiguous);
	assert_int_equal(mail_count(), 0);
	free(body);
}

static void url_rules(void **state)
{
	(void)state;
	struct target_spec t = email_target();
	char *body = result_body();
	struct target_copy c = {.target = &t, .body = body,
				.kind = MESSAGE_RESULT,
				.schedule = "weekly-summary",
				.slot_ms = SLOT_MS};
	struct sc_err err = {0};

	assert_int_equal(target_send(&c, &err), SC_ECONFIG);
	assert_non_null(strstr(err.msg, "SC_T_SMTP"));
	setenv("SC_T_SMTP", "https://127.0.0.1:1/", 1);
	sc_err_clear(&err);
	assert_int_equal(target_send(&c, &err), SC_ECONFIG);
	assert_non_null(strstr(err.msg, "smtp://"));
	setenv("SC_T_SMTP", "smtp://u:pw-canary@127.0.0.1:1/", 1);
	sc_err_clear(&err);
	assert_int_equal(target_send(&c, &err), SC_ECONFIG);
	assert_null(strstr(err.msg, "canary"));
	free(body);
}

static const char *write_config(const char *name, const char *text)
{
	static char p[320];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	return p;
}

static void config_reads_and_refuses(void **state)
{
	(void)state;
	struct config *cfg = NULL;
	struct sc_err err = {0};
	const char *ok = write_config("ok.yaml",
		"store: sqlite:./s.db\n"
		"targets:\n"
		"  mail: {kind: email, url_env: SC_T_SMTP, from: a@x.test,\n"
		"         to: [b@x.test, c@x.test], username_env: U,\n"
		"         password_env: P}\n"
		"schedules:\n"
		"  s: {cron: '0 * * * *', targets: [mail],\n"
		"      tasks: [{name: t, command: [/bin/true]}]}\n");
	assert_int_equal(config_load(ok, &cfg, &err), 0);
	const struct target_spec *t = config_target(cfg, "mail");
	assert_non_null(t);
	assert_int_equal(t->kind, TARGET_EMAIL);
	assert_string_equal(t->mail_from, "a@x.test");
	assert_string_equal(t->mail_to[1], "c@x.test");
	assert_null(t->mail_to[2]);
	assert_string_equal(t->password_env, "P");
	config_free(cfg);

	static const struct {
		const char *target, *want;
	} bad[] = {
		{"{kind: email, url_env: V, from: a@x.test, to: ['b c@x']}",
		 "targets.mail.to[0]: not a mail address"},
		{"{kind: email, url_env: V, from: 'a@x.test\\r\\nBcc: e@x', "
		 "to: [b@x.test]}", "targets.mail.from: not a mail address"},
		{"{kind: email, url_env: V, from: a@x.test}", "to"},
		{"{kind: email, url_env: V, from: a@x.test, to: []}",
		 "must not be empty"},
		{"{kind: email, url_env: V, from: a@x.test, to: [b@x.test], "
		 "username_env: U}", "go together"},
		{"{kind: email, url: 'smtp://h', from: a@x.test, "
		 "to: [b@x.test]}", "url"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char text[1024];
		snprintf(text, sizeof(text),
			 "store: sqlite:./s.db\ntargets:\n  mail: %s\n"
			 "schedules:\n  s: {cron: '0 * * * *', targets: "
			 "[mail], tasks: [{name: t, command: [/bin/true]}]}\n",
			 bad[i].target);
		const char *p = write_config("bad.yaml", text);
		cfg = NULL;
		sc_err_clear(&err);
		assert_int_not_equal(config_load(p, &cfg, &err), 0);
		if (!strstr(err.msg, bad[i].want))
			fail_msg("case %zu: '%s' lacks '%s'", i, err.msg,
				 bad[i].want);
		assert_null(cfg);
	}
}

/* A whole slot: `surecron run --once` mails the result, and `check`
 * applies the URL rule to the variable. */
static void run_once_mails_the_result(void **state)
{
	(void)state;
	if (!server_available())
		skip();
	start_server("127.0.0.1", NULL, NULL);
	char url[128], out[4096], errb[4096];
	snprintf(url, sizeof(url), "SC_T_SMTP=smtp://127.0.0.1:%d", srv_port);
	const char *cfgp = write_config("run.yaml",
		"store: sqlite:./s.db\n"
		"targets:\n"
		"  mail: {kind: email, url_env: SC_T_SMTP, "
		"from: cron@x.test, to: [me@x.test]}\n"
		"schedules:\n"
		"  nightly:\n"
		"    cron: '0 3 * * *'\n"
		"    tz: Asia/Seoul\n"
		"    targets: [mail]\n"
		"    tasks: [{name: t, shell: 'echo backup done'}]\n");
	const char *env[] = {url, NULL};
	const char *chk[] = {"check", "--config", cfgp, NULL};
	assert_int_equal(tu_run_bin(dir, dir, env, chk, out, sizeof(out), errb,
				    sizeof(errb)), 0);
	const char *bad_env[] = {"SC_T_SMTP=http://127.0.0.1:1/", NULL};
	assert_int_not_equal(tu_run_bin(dir, dir, bad_env, chk, out,
					sizeof(out), errb, sizeof(errb)), 0);
	assert_non_null(strstr(errb, "targets.mail.url_env"));

	const char *trig[] = {"trigger", "--config", cfgp, "--slot",
			      "2026-12-03T18:00:00Z", "nightly", NULL};
	assert_int_equal(tu_run_bin(dir, dir, env, trig, out, sizeof(out),
				    errb, sizeof(errb)), 0);
	const char *run[] = {"run", "--once", "--config", cfgp, NULL};
	int rc = tu_run_bin(dir, dir, env, run, out, sizeof(out), errb,
			    sizeof(errb));
	if (rc != 0)
		fail_msg("run --once: %d: %s", rc, errb);
	static char mail[16384];
	char v[256];
	assert_true(read_mail(1, mail, sizeof(mail)));
	assert_true(header(mail, "Subject", v, sizeof(v)));
	assert_string_equal(v, "[surecron] nightly result: 2026-12-04 03:00 "
			    "KST");
	assert_non_null(strstr(mail, "backup done"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			delivers_a_mail_with_its_key_and_local_slot, setup,
			teardown),
		cmocka_unit_test_setup_teardown(subjects_name_the_kind, setup,
						teardown),
		cmocka_unit_test_setup_teardown(login_from_the_environment,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			a_rejected_recipient_is_a_sure_failure, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			no_answer_after_the_mail_is_ambiguous, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			starttls_is_required_off_loopback, setup, teardown),
		cmocka_unit_test_setup_teardown(url_rules, setup, teardown),
		cmocka_unit_test_setup_teardown(config_reads_and_refuses,
						setup, teardown),
		cmocka_unit_test_setup_teardown(run_once_mails_the_result,
						setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
