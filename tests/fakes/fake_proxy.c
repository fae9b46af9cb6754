/*
 * fake_proxy.c - the flow-losing TCP proxy of fake_proxy.h.
 *
 * Invariants: only the proxy thread touches the sockets; the mode and the
 * counters are read and written under mu. A stranded pair is never read,
 * written or closed before fake_proxy_stop, so its peer sees neither data
 * nor a FIN nor a reset: exactly a flow that vanished in the network.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "fake_proxy.h"

#define PAIRS_MAX 256

struct pair {
	int c, u;        /* client side, upstream side; -1: closed */
	bool stranded;
};

struct fake_proxy {
	pthread_mutex_t mu;
	pthread_t thread;
	int lfd, port, upstream;
	enum proxy_mode mode;
	int delay_ms;
	bool stop;
	int n_stranded, n_accepted;
	struct pair pairs[PAIRS_MAX];
	int n;
};

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

static int connect_up(int port)
{
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons((unsigned short)port)};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		close(fd);
		return -1;
	}
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static bool write_all(int fd, const char *b, size_t n)
{
	while (n > 0) {
		ssize_t w = send(fd, b, n, MSG_NOSIGNAL);
		if (w <= 0)
			return false;
		b += w;
		n -= (size_t)w;
	}
	return true;
}

static void close_pair(struct pair *pr)
{
	if (pr->c >= 0)
		close(pr->c);
	if (pr->u >= 0)
		close(pr->u);
	pr->c = pr->u = -1;
}

static void *proxy_main(void *arg)
{
	struct fake_proxy *p = arg;
	struct pollfd fds[1 + 2 * PAIRS_MAX];
	int who[1 + 2 * PAIRS_MAX]; /* pair index * 2 + side */
	char buf[16384];

	for (;;) {
		pthread_mutex_lock(&p->mu);
		bool stop = p->stop;
		enum proxy_mode mode = p->mode;
		int delay = p->delay_ms;
		if (mode == PROXY_STRAND || mode == PROXY_BLACKHOLE)
			for (int i = 0; i < p->n; i++)
				if (!p->pairs[i].stranded &&
				    p->pairs[i].c >= 0) {
					p->pairs[i].stranded = true;
					p->n_stranded++;
				}
		if (mode == PROXY_STRAND)
			p->mode = PROXY_PASS; /* the next ones pass */
		pthread_mutex_unlock(&p->mu);
		if (stop)
			break;
		int nf = 0;
		fds[nf] = (struct pollfd){p->lfd, POLLIN, 0};
		who[nf++] = -1;
		for (int i = 0; i < p->n; i++) {
			struct pair *pr = &p->pairs[i];
			if (pr->c < 0 || pr->stranded)
				continue;
			fds[nf] = (struct pollfd){pr->c, POLLIN, 0};
			who[nf++] = i * 2;
			fds[nf] = (struct pollfd){pr->u, POLLIN, 0};
			who[nf++] = i * 2 + 1;
		}
		if (poll(fds, (nfds_t)nf, 50) <= 0)
			continue;
		if (fds[0].revents & POLLIN) {
			int c = accept4(p->lfd, NULL, NULL, SOCK_CLOEXEC);
			if (c >= 0) {
				pthread_mutex_lock(&p->mu);
				bool hole = p->mode == PROXY_BLACKHOLE;
				p->n_accepted++;
				if (hole)
					p->n_stranded++;
				pthread_mutex_unlock(&p->mu);
				int u = hole ? -1 : connect_up(p->upstream);
				int at = 0; /* a closed pair's place, or a new one */
				while (at < p->n && (p->pairs[at].c >= 0 ||
						     p->pairs[at].u >= 0))
					at++;
				if ((!hole && u < 0) || at >= PAIRS_MAX) {
					close(c);
					if (u >= 0)
						close(u);
				} else {
					p->pairs[at] = (struct pair){c, u, hole};
					if (at == p->n)
						p->n++;
				}
			}
		}
		for (int k = 1; k < nf; k++) {
			if (!(fds[k].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			struct pair *pr = &p->pairs[who[k] / 2];
			int from = who[k] % 2 ? pr->u : pr->c;
			int to = who[k] % 2 ? pr->c : pr->u;
			if (from < 0 || pr->stranded)
				continue;
			ssize_t r = recv(from, buf, sizeof(buf), 0);
			if (r <= 0) {
				close_pair(pr);
				continue;
			}
			if (mode == PROXY_DELAY && delay > 0)
				sleep_ms(delay);
			if (!write_all(to, buf, (size_t)r))
				close_pair(pr);
		}
	}
	for (int i = 0; i < p->n; i++)
		close_pair(&p->pairs[i]);
	return NULL;
}

struct fake_proxy *fake_proxy_start(int upstream_port)
{
	struct fake_proxy *p = calloc(1, sizeof(*p));
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t len = sizeof(a);

	if (!p)
		return NULL;
	pthread_mutex_init(&p->mu, NULL);
	p->upstream = upstream_port;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	p->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (p->lfd < 0 || bind(p->lfd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
	    listen(p->lfd, 64) != 0 ||
	    getsockname(p->lfd, (struct sockaddr *)&a, &len) != 0)
		goto fail;
	p->port = ntohs(a.sin_port);
	if (pthread_create(&p->thread, NULL, proxy_main, p) != 0)
		goto fail;
	return p;
fail:
	if (p->lfd >= 0)
		close(p->lfd);
	pthread_mutex_destroy(&p->mu);
	free(p);
	return NULL;
}

int fake_proxy_port(const struct fake_proxy *p)
{
	return p->port;
}

void fake_proxy_set(struct fake_proxy *p, enum proxy_mode mode, int delay_ms)
{
	pthread_mutex_lock(&p->mu);
	p->mode = mode;
	p->delay_ms = delay_ms;
	pthread_mutex_unlock(&p->mu);
}

int fake_proxy_stranded(struct fake_proxy *p)
{
	pthread_mutex_lock(&p->mu);
	int n = p->n_stranded;
	pthread_mutex_unlock(&p->mu);
	return n;
}

int fake_proxy_accepted(struct fake_proxy *p)
{
	pthread_mutex_lock(&p->mu);
	int n = p->n_accepted;
	pthread_mutex_unlock(&p->mu);
	return n;
}

void fake_proxy_stop(struct fake_proxy *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stop = true;
	pthread_mutex_unlock(&p->mu);
	pthread_join(p->thread, NULL);
	close(p->lfd);
	pthread_mutex_destroy(&p->mu);
	free(p);
}
