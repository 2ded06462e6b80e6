/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The control socket: a Unix stream socket served by the control thread with
 * poll(), up to SP_MAX_CLIENTS at a time. Each line goes through the command
 * parser and sp_apply, as the --commands file does. `sessions` and `stats`
 * answer one JSON document and close (the controller's status-socket form);
 * other commands answer result lines and `ok` or `error: MESSAGE`.
 * `subscribe sessions` turns the connection into the session event stream
 * (session_stream.h): from then on it only receives JSON lines, written
 * without blocking from its own buffer; a subscriber that falls more than
 * SP_STREAM_BACKLOG bytes behind is cut off (it resubscribes and gets a
 * fresh snapshot) rather than stalling the control thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "control/control.h"
#include "control/ctl_socket.h"
#include "control/routing.h"
#include "control/publish.h"
#include "control/format.h"
#include "dataplane/sp.h"
#include "persist/events.h"
#include "persist/session_stream.h"
#include "util/log.h"

#define SP_MAX_CLIENTS 8
#define SP_CLIENT_BUF 4096
/* ~100 k lines: a subscriber this far behind is not keeping up */
#define SP_STREAM_BACKLOG (16u << 20)

struct client {
	int fd;
	bool subscriber;
	size_t len;
	char buf[SP_CLIENT_BUF];
	struct sp_buf out;              /* a subscriber's unsent lines */
};

static int listen_fd = -1;
static char listen_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
static struct client clients[SP_MAX_CLIENTS];

/*
 * Makes the socket's path free: a socket nobody answers on (its process died;
 * the file of a Unix socket outlives it) is removed, a live one belongs to a
 * running instance and is refused, and so is a file that is no socket.
 * Connecting is the only test of liveness; only ECONNREFUSED means stale
 * (another error, e.g. a full backlog, means something is there). The
 * controller's status socket does the same (controller/quicknat/controller/
 * status.py, claim_socket).
 */
static int
claim_path(const struct sockaddr_un *sa, char *err, size_t errlen)
{
	struct stat st;
	int probe, rc, e;

	if (lstat(sa->sun_path, &st) < 0)
		return errno == ENOENT ? 0 :
		       sp_fail(err, errlen, "control socket %s: %s", sa->sun_path,
			       strerror(errno));
	if (!S_ISSOCK(st.st_mode))
		return sp_fail(err, errlen,
			       "control socket %s exists and is not a socket; remove it or choose another with --control",
			       sa->sun_path);
	probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (probe < 0)
		return sp_fail(err, errlen, "control socket: %s", strerror(errno));
	rc = connect(probe, (const struct sockaddr *)sa, sizeof(*sa));
	e = errno;
	close(probe);
	if (rc == 0 || e != ECONNREFUSED)
		return sp_fail(err, errlen,
			       "control socket %s is in use (another quicknat-swpath?%s%s); choose one with --control",
			       sa->sun_path, rc == 0 ? "" : " ",
			       rc == 0 ? "" : strerror(e));
	if (unlink(sa->sun_path) < 0 && errno != ENOENT)
		return sp_fail(err, errlen, "cannot remove the stale socket %s: %s",
			       sa->sun_path, strerror(errno));
	return 0;
}

int
sp_control_listen(const char *path, char *err, size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	for (unsigned i = 0; i < SP_MAX_CLIENTS; i++)
		clients[i].fd = -1;
	if (strlen(path) >= sizeof(sa.sun_path))
		return sp_fail(err, errlen, "control socket path too long: %s", path);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (listen_fd < 0)
		return sp_fail(err, errlen, "control socket: %s", strerror(errno));
	if (claim_path(&sa, err, errlen) < 0) {
		close(listen_fd);
		listen_fd = -1;
		return -1;
	}
	if (bind(listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(listen_fd, 16) < 0) {
		int e = errno;

		close(listen_fd);
		listen_fd = -1;
		return sp_fail(err, errlen, "cannot listen on %s: %s", path,
			    strerror(e));
	}
	snprintf(listen_path, sizeof(listen_path), "%s", path);
	return 0;
}

static void
client_close(struct client *c)
{
	if (c->subscriber)
		sp_stream_unsubscribe();
	c->subscriber = false;
	sp_buf_free(&c->out);
	close(c->fd);
	c->fd = -1;
	c->len = 0;
}

/* Sends what the subscriber's buffer holds, as much as the socket takes. */
static void
stream_flush(struct client *c)
{
	size_t sent = 0;

	while (sent < c->out.len) {
		ssize_t n = send(c->fd, c->out.p + sent, c->out.len - sent,
				 MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n <= 0) {
			client_close(c);
			return;
		}
		sent += (size_t)n;
	}
	memmove(c->out.p, c->out.p + sent, c->out.len - sent);
	c->out.len -= sent;
	if (c->out.len > SP_STREAM_BACKLOG) {
		sp_log("warning", "control socket: a session subscriber is %zu bytes behind; disconnected (it resubscribes for a new snapshot)",
		       c->out.len);
		client_close(c);
	}
}

static void
stream_start(struct client *c)
{
	int flags = fcntl(c->fd, F_GETFL);

	fcntl(c->fd, F_SETFL, flags | O_NONBLOCK);
	c->subscriber = true;
	sp_stream_subscribe(&c->out);
	stream_flush(c);
}

static void
client_write(struct client *c, const char *p, size_t len)
{
	while (len > 0) {
		ssize_t n = write(c->fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return; /* the timeout set at accept gave up */
		p += n;
		len -= (size_t)n;
	}
}

static void
client_sink(struct sp_buf *b, void *arg)
{
	client_write(arg, b->p, b->len);
}

/* An operator's change, applied: one log line, the command as the table
 * writes it back (the journal's record of what changed and when; the
 * controller logs its own `reconfigured`). */
static void
audit(const struct sp_cmd *cmd)
{
	struct sp_buf line = { 0 };

	sp_cmd_format(cmd, &line);
	sp_log("info", "applied: %.*s", (int)line.len, line.p);
	sp_buf_free(&line);
}

/* Runs one line; returns whether the connection should close. */
static bool
client_line(struct client *c, const char *line)
{
	struct sp_cmd cmd;
	struct sp_buf out = { 0 };
	char err[512];
	bool json;
	int rc;

	if (c->subscriber)
		return false; /* a stream takes no commands; EOF ends it */
	rc = sp_cmd_parse(line, &cmd, err, sizeof(err));
	if (rc == 0 && cmd.verb == SP_CMD_NONE)
		return false;
	if (rc == 0 && cmd.verb == SP_CMD_SUBSCRIBE && sp.running) {
		stream_start(c);
		return false;
	}
	/* a status command answers JSON, its errors too (cmd is zeroed first,
	 * and the verb is set before its arguments are read) */
	json = sp_verb_is_json(cmd.verb);
	if (json && sp.running) {
		/* a long session list goes out in chunks as it is made */
		out.sink = client_sink;
		out.sink_arg = c;
	}
	if (rc == 0)
		rc = sp_apply(&cmd, &out, err, sizeof(err));
	if (rc == 0 && sp.running && sp_verb_is_audited(cmd.verb))
		audit(&cmd);
	if (json && rc == 0) {
		client_write(c, out.p, out.len);
	} else if (rc == 0) {
		if (out.len > 0)
			client_write(c, out.p, out.len);
		client_write(c, "ok\n", 3);
	} else if (json) {
		/* the status-socket form of an error */
		struct sp_buf e = { 0 };

		sp_buf_printf(&e, "{\"error\": ");
		sp_buf_json_string(&e, err);
		sp_buf_printf(&e, "}\n");
		client_write(c, e.p, e.len);
		sp_buf_free(&e);
	} else {
		client_write(c, "error: ", 7);
		client_write(c, err, strlen(err));
		client_write(c, "\n", 1);
	}
	sp_buf_free(&out);
	/* JSON answers end at EOF, as the controller's status socket does */
	return json;
}

static void
client_read(struct client *c)
{
	ssize_t n = read(c->fd, c->buf + c->len, sizeof(c->buf) - 1 - c->len);
	char *nl;

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	/* a client that never sends a whole line is cut off at buffer size */
	if (n <= 0) {
		/* EOF: a last line without a newline still counts */
		if (c->len > 0) {
			c->buf[c->len] = '\0';
			client_line(c, c->buf);
		}
		client_close(c);
		return;
	}
	c->len += (size_t)n;
	c->buf[c->len] = '\0';
	while ((nl = memchr(c->buf, '\n', c->len)) != NULL) {
		size_t used = (size_t)(nl - c->buf) + 1;

		*nl = '\0';
		if (client_line(c, c->buf)) {
			client_close(c);
			return;
		}
		if (c->fd < 0)
			return;
		memmove(c->buf, c->buf + used, c->len - used);
		c->len -= used;
	}
	if (c->len == sizeof(c->buf) - 1) {
		client_write(c, "error: line too long\n", 21);
		client_close(c);
	}
}

static void
accept_clients(void)
{
	for (;;) {
		struct timeval tv = { .tv_sec = 5 };
		int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
		unsigned i;

		if (fd < 0)
			return;
		for (i = 0; i < SP_MAX_CLIENTS; i++)
			if (clients[i].fd < 0)
				break;
		if (i == SP_MAX_CLIENTS) {
			close(fd);
			continue;
		}
		/* blocking, with a send timeout, so long answers go out whole;
		 * reads happen only when poll() says the socket is readable */
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		clients[i].fd = fd;
		clients[i].len = 0;
		clients[i].subscriber = false;
	}
}

/* The workers' session records, to every subscriber (one format, copies). */
static void
stream_drain(void)
{
	struct sp_buf lines = { 0 };

	if (__atomic_load_n(&sp_stream_subscribers, __ATOMIC_RELAXED) == 0)
		return;
	if (sp_stream_drain(&lines) > 0 || lines.len > 0)
		for (unsigned i = 0; i < SP_MAX_CLIENTS; i++) {
			struct client *c = &clients[i];

			if (c->fd < 0 || !c->subscriber)
				continue;
			sp_buf_printf(&c->out, "%.*s", (int)lines.len, lines.p);
			stream_flush(c);
		}
	sp_buf_free(&lines);
}

void
sp_control_poll(int timeout_ms)
{
	struct pollfd pfd[SP_MAX_CLIENTS + 1];
	struct client *who[SP_MAX_CLIENTS + 1];
	nfds_t n = 0;

	sp_neigh_messages();
	sp_neigh_age(sp_now_ms());
	sp_events_drain();
	stream_drain();
	sp_rcu_reclaim(false);
	if (listen_fd < 0) {
		if (timeout_ms > 0)
			usleep((useconds_t)timeout_ms * 1000);
		return;
	}
	pfd[n].fd = listen_fd;
	pfd[n].events = POLLIN;
	who[n++] = NULL;
	for (unsigned i = 0; i < SP_MAX_CLIENTS; i++) {
		if (clients[i].fd < 0)
			continue;
		pfd[n].fd = clients[i].fd;
		pfd[n].events = POLLIN |
				(clients[i].out.len > 0 ? POLLOUT : 0);
		who[n++] = &clients[i];
	}
	if (poll(pfd, n, timeout_ms) <= 0)
		return;
	for (nfds_t i = 1; i < n; i++) {
		if ((pfd[i].revents & POLLOUT) && who[i]->fd >= 0)
			stream_flush(who[i]);
		if ((pfd[i].revents & (POLLIN | POLLHUP | POLLERR)) &&
		    who[i]->fd >= 0)
			client_read(who[i]);
	}
	if (pfd[0].revents & POLLIN)
		accept_clients();
}

void
sp_control_close(void)
{
	for (unsigned i = 0; i < SP_MAX_CLIENTS; i++)
		if (clients[i].fd >= 0)
			client_close(&clients[i]);
	if (listen_fd >= 0) {
		close(listen_fd);
		unlink(listen_path);
		listen_fd = -1;
	}
}
