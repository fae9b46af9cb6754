/*
 * target_email.c - the `email` target: the message's chat text as a
 * plain-text mail, sent with libcurl's SMTP client (cron's MAILTO).
 *
 * Invariants:
 *   - the server URL is read from the target's variable at send time and
 *     passes url.h's URL_MAIL rule (smtp:// or smtps://, no userinfo);
 *     smtp:// to a host that is not loopback requires STARTTLS
 *     (CURLUSESSL_ALL): a server that does not offer it is a failure,
 *     never a mail sent in the clear; certificates are verified;
 *   - the login (username_env, password_env) is read at send time and
 *     never logged; no error holds the URL, the login or an address;
 *   - every copy of one (slot, target) has the same Message-ID, derived
 *     from the idempotency key, so a resent duplicate is visible as one to
 *     the reader's mail client;
 *   - header values come from the config (addresses checked by
 *     config_parse: no CR, LF, space or bracket), schedule names (checked)
 *     and text this file formats: no header can be injected by a task's
 *     output, which only ever reaches the quoted-printable body;
 *   - a copy is ambiguous (err->ambiguous) only when the whole mail was
 *     handed over and the server's final answer did not come back: before
 *     the end of DATA, a server discards the mail.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "buf.h"
#include "clock.h"
#include "err.h"
#include "lazylib_curl.h"
#include "message.h"
#include "target.h"
#include "tz.h"
#include "url.h"

#define MAIL_MAX ((size_t)8 << 20)
#define QP_LINE 75 /* encoded characters before a soft line break */

/* "2026-12-04 17:00 KST": the slot in the schedule's zone. */
static void local_slot(const struct sc_zone *z, int64_t ms, char *out,
		       size_t n)
{
	struct tz_span sp = {0};
	int64_t y;
	int m, d;

	if (!z)
		z = sc_zone_utc();
	tz_span_at(z, ms / 1000 - (ms % 1000 < 0), &sp);
	int64_t secs = ms / 1000 - (ms % 1000 < 0) + sp.off_s;
	int64_t days = secs / 86400 - (secs % 86400 < 0);
	int sod = (int)(secs - days * 86400);
	clock_civil_from_days(days, &y, &m, &d);
	snprintf(out, n, "%04lld-%02d-%02d %02d:%02d %s", (long long)y, m, d,
		 sod / 3600, sod / 60 % 60,
		 sp.abbr && *sp.abbr ? sp.abbr : "UTC");
}

void target_email_subject(const struct target_copy *s, const char *reason,
			  char *out, size_t n)
{
	char when[64], what[48];
	const char *kind = s->kind ? s->kind : MESSAGE_RESULT;

	local_slot(s->zone, s->slot_ms, when, sizeof(when));
	if (strcmp(kind, MESSAGE_ALERT) == 0)
		snprintf(what, sizeof(what), "%s",
			 reason && *reason ? reason : "alert");
	else if (strcmp(kind, MESSAGE_NOTICE) == 0)
		snprintf(what, sizeof(what), "failed (attempt %d)",
			 s->attempt);
	else
		snprintf(what, sizeof(what), "result");
	snprintf(out, n, "[surecron] %s %s: %s", s->schedule ? s->schedule
							      : "-",
		 what, when);
}

/* "Wed, 02 Dec 2026 03:40:00 +0000" (RFC 5322 section 3.3), in UTC. */
static void mail_date(int64_t ms, char *out, size_t n)
{
	static const char *const wd[] = {"Sun", "Mon", "Tue", "Wed", "Thu",
					 "Fri", "Sat"};
	static const char *const mo[] = {"Jan", "Feb", "Mar", "Apr", "May",
					 "Jun", "Jul", "Aug", "Sep", "Oct",
					 "Nov", "Dec"};
	int64_t secs = ms / 1000 - (ms % 1000 < 0);
	int64_t days = secs / 86400 - (secs % 86400 < 0), y;
	int sod = (int)(secs - days * 86400), m, d;

	clock_civil_from_days(days, &y, &m, &d);
	snprintf(out, n, "%s, %02d %s %04lld %02d:%02d:%02d +0000",
		 wd[clock_weekday(days)], d, mo[m - 1], (long long)y,
		 sod / 3600, sod / 60 % 60, sod % 60);
}

/* Appends text as quoted-printable (RFC 2045 section 6.7): LF ends a line
 * (CRLF on the wire), CR is dropped, bytes outside printable ASCII and
 * '=' are =XX, a space or tab before a line end is encoded, and lines are
 * broken softly before QP_LINE. */
static int add_qp(struct buf *b, const char *text)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t col = 0;
	int rc = 0;

	for (const unsigned char *p = (const unsigned char *)text; *p && !rc;
	     p++) {
		char tmp[4];
		size_t k;

		if (*p == '\r')
			continue;
		if (*p == '\n') {
			rc = buf_add(b, "\r\n", 2);
			col = 0;
			continue;
		}
		bool at_end = p[1] == '\n' || p[1] == '\0' ||
			       (p[1] == '\r' && (p[2] == '\n' || !p[2]));
		bool lit = (*p >= 33 && *p <= 126 && *p != '=') ||
			   ((*p == ' ' || *p == '\t') && !at_end);
		if (lit) {
			tmp[0] = (char)*p;
			k = 1;
		} else {
			tmp[0] = '=';
			tmp[1] = hex[*p >> 4];
			tmp[2] = hex[*p & 15];
			k = 3;
		}
		if (col + k > QP_LINE) {
			rc = buf_add(b, "=\r\n", 3);
			col = 0;
		}
		if (!rc)
			rc = buf_add(b, tmp, k);
		col += k;
	}
	return rc;
}

int target_email_render(const struct target_copy *s, const char *key,
			char **out, size_t *len, struct sc_err *err)
{
	const struct target_spec *t = s->target;
	char *text = NULL, subject[256], date[64], iso[CLOCK_ISO_MAX];
	const char *reason = NULL;
	struct buf b;
	int rc = message_render_text(s->body, &text, err);

	if (rc)
		return rc;
	json_t *m = json_loads(s->body, 0, NULL);
	if (m)
		reason = json_string_value(json_object_get(m, "reason"));
	target_email_subject(s, reason, subject, sizeof(subject));
	json_decref(m);
	mail_date(sc_clock_now_ms(s->clock ? s->clock : sc_clock_real()), date,
		  sizeof(date));
	buf_init(&b, MAIL_MAX);
	rc = buf_addf(&b, "Date: %s\r\nFrom: <%s>\r\nTo: ", date,
		      t->mail_from);
	for (size_t i = 0; !rc && t->mail_to && t->mail_to[i]; i++)
		rc = buf_addf(&b, "%s<%s>", i ? ", " : "", t->mail_to[i]);
	if (!rc)
		rc = buf_addf(&b, "\r\nSubject: %s\r\n"
			      "Message-ID: <%s@surecron>\r\n"
			      "MIME-Version: 1.0\r\n"
			      "Content-Type: text/plain; charset=utf-8\r\n"
			      "Content-Transfer-Encoding: quoted-printable\r\n"
			      "Auto-Submitted: auto-generated\r\n"
			      "X-Surecron-Schedule: %s\r\n"
			      "X-Surecron-Slot: %s\r\n\r\n",
			      subject, *key ? key : "none",
			      s->schedule ? s->schedule : "-",
			      clock_format_utc(s->slot_ms, iso));
	if (!rc)
		rc = add_qp(&b, text);
	if (!rc)
		rc = buf_add(&b, "\r\n", 2);
	free(text);
	if (rc) {
		buf_dispose(&b);
		return sc_err_set(err, rc, "target %s: the mail is too large",
				  t->name);
	}
	*len = b.len;
	*out = buf_take(&b);
	return *out ? 0 : sc_err_set(err, SC_ENOMEM, "out of memory");
}

/* libcurl reads the mail from here; done says it was all handed over. */
struct upload {
	const char *p;
	size_t left;
	bool done;
};

static size_t read_mail(char *dst, size_t size, size_t nmemb, void *ud)
{
	struct upload *u = ud;
	size_t n = size * nmemb < u->left ? size * nmemb : u->left;

	memcpy(dst, u->p, n);
	u->p += n;
	u->left -= n;
	if (n == 0)
		u->done = true;
	return n;
}

/* The variable's value, or NULL with err set (the name, never the value). */
static const char *env_value(const struct target_spec *t, const char *var,
			     struct sc_err *err)
{
	const char *v = var ? getenv(var) : NULL;

	if (var && (!v || !*v))
		sc_err_set(err, SC_ECONFIG, "target %s: environment variable "
			   "%s is %s", t->name, var, v ? "empty" : "not set");
	return v && *v ? v : NULL;
}

/* libcurl's progress callback: the copy's keep hook; never aborts. */
static int on_progress(void *ud, curl_off_t dltotal, curl_off_t dlnow,
		       curl_off_t ultotal, curl_off_t ulnow)
{
	const struct target_copy *s = ud;

	(void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
	s->keep(s->keep_ud);
	return 0;
}

int target_email_send(const struct target_copy *s, const char *key,
		      struct sc_err *err)
{
	const struct target_spec *t = s->target;
	struct sc_err uerr = {0};
	struct Curl_URL *u = NULL;
	struct curl_slist *rcpt = NULL;
	char *mail = NULL, *host = NULL, from[300];
	size_t mail_len = 0;
	long code = 0;
	int rc;

	if (!t->url_env)
		return sc_err_set(err, SC_ECONFIG, "target %s: no url_env",
				  t->name);
	const char *url = env_value(t, t->url_env, err);
	if (!url)
		return SC_ECONFIG;
	const char *user = env_value(t, t->username_env, err);
	const char *pass = env_value(t, t->password_env, err);
	if ((t->username_env && !user) || (t->password_env && !pass))
		return SC_ECONFIG;
	rc = url_parse(url, URL_MAIL, &u, &uerr);
	if (rc == SC_EINVAL)
		return sc_err_set(err, SC_ECONFIG, "target %s: %s (from %s)",
				  t->name, uerr.msg, t->url_env);
	if (rc)
		return sc_err_set(err, rc, "target %s: %s", t->name, uerr.msg);
	rc = target_email_render(s, key, &mail, &mail_len, err);
	if (rc) {
		url_free(u);
		return rc;
	}
	CURL *h = curl_easy_init();
	if (!h) {
		rc = sc_err_set(err, SC_ENOMEM, "out of memory");
		goto done;
	}
	bool loopback = curl_url_get(u, CURLUPART_HOST, &host, 0) ==
				CURLUE_OK && url_is_loopback_host(host);
	for (size_t i = 0; t->mail_to && t->mail_to[i]; i++) {
		char a[300];
		snprintf(a, sizeof(a), "<%s>", t->mail_to[i]);
		struct curl_slist *nl = curl_slist_append(rcpt, a);
		if (!nl) {
			rc = sc_err_set(err, SC_ENOMEM, "out of memory");
			goto done;
		}
		rcpt = nl;
	}
	snprintf(from, sizeof(from), "<%s>", t->mail_from);
	struct upload up = {.p = mail, .left = mail_len};
	curl_easy_setopt(h, CURLOPT_CURLU, u);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "smtp,smtps");
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
			 (long)(t->connect_timeout_ms > 0
				? t->connect_timeout_ms
				: TARGET_DEFAULT_CONNECT_MS));
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS,
			 (long)(t->timeout_ms > 0 ? t->timeout_ms
						  : TARGET_DEFAULT_TIMEOUT_MS));
	/* Each SMTP answer, and the QUIT that curl_easy_cleanup sends after
	 * a failed transfer, waits at most the target's timeout (libcurl's
	 * own default is two minutes, which would hold a worker). */
	curl_easy_setopt(h, CURLOPT_SERVER_RESPONSE_TIMEOUT,
			 (long)((t->timeout_ms > 0 ? t->timeout_ms
				 : TARGET_DEFAULT_TIMEOUT_MS) + 999) / 1000);
	/* smtps is TLS from the first byte; smtp must upgrade with
	 * STARTTLS, except on loopback, where nothing leaves the host. */
	if (!loopback)
		curl_easy_setopt(h, CURLOPT_USE_SSL, (long)CURLUSESSL_ALL);
	curl_easy_setopt(h, CURLOPT_MAIL_FROM, from);
	curl_easy_setopt(h, CURLOPT_MAIL_RCPT, rcpt);
	curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
	curl_easy_setopt(h, CURLOPT_READFUNCTION, read_mail);
	curl_easy_setopt(h, CURLOPT_READDATA, &up);
	if (s->keep) {
		curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
		curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
		curl_easy_setopt(h, CURLOPT_XFERINFODATA, (void *)s);
	}
	curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)mail_len);
	if (user) {
		curl_easy_setopt(h, CURLOPT_USERNAME, user);
		curl_easy_setopt(h, CURLOPT_PASSWORD, pass);
	}
	CURLcode cc = curl_easy_perform(h);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
	if (cc != CURLE_OK) {
		/* The whole mail went out and then the answer failed: the
		 * server may have queued it. Earlier, it discards it. */
		bool amb = up.left == 0 &&
			   (cc == CURLE_OPERATION_TIMEDOUT ||
			    cc == CURLE_RECV_ERROR || cc == CURLE_GOT_NOTHING ||
			    cc == CURLE_SEND_ERROR);
		struct sc_err out = {0};
		if (code >= 400)
			sc_err_set(&out, SC_EDELIVERY, "target %s: SMTP %ld "
				   "(%s)", t->name, code,
				   curl_easy_strerror(cc));
		else
			sc_err_set(&out, SC_EDELIVERY, "target %s: %s%s",
				   t->name, curl_easy_strerror(cc),
				   amb ? " (the mail may have arrived)" : "");
		out.ambiguous = amb;
		err_copy(err, &out);
		rc = SC_EDELIVERY;
	}
done:
	if (h)
		curl_easy_cleanup(h);
	curl_slist_free_all(rcpt);
	curl_free(host);
	url_free(u);
	free(mail);
	return rc;
}
