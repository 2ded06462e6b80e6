/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The state file (session_store.h): a header page, then each worker's
 * records at their session indexes, then each worker's port holds.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/adopt.h"
#include "core/rss.h"
#include "persist/session_store.h"
#include "util/log.h"
#include "util/text.h"

#define STORE_MAGIC "QNSWSESS"
/* Bump when struct sp_session, the holds or this header change meaning.
 * Version 1 is version 2 without the port holds: read too, so an upgrade
 * across it keeps the sessions (in learn mode, with the quiet period). */
#define STORE_VERSION 2u
#define STORE_VERSION_NO_HOLDS 1u
#define STORE_HEADER_BYTES 4096u

/* sp_store_put copies a record up to seq, then id: they come last. */
_Static_assert(offsetof(struct sp_session, id) + sizeof(uint32_t) ==
		       sizeof(struct sp_session) &&
	       offsetof(struct sp_session, seq) + sizeof(uint32_t) ==
		       offsetof(struct sp_session, id),
	       "seq and id are a session's last fields");

struct store_header {
	char magic[8];
	uint32_t version;
	uint32_t record_size;
	uint32_t n_workers;
	uint32_t sessions_per_worker;
	/*
	 * A point of the writer's clock (sp_now_ms) and CLOCK_MONOTONIC at the
	 * same moment, taken at start and again at a clean exit: a record's
	 * times are converted to the successor's clock through it.
	 */
	uint32_t sync_ms;
	uint32_t clean;         /* 1 once a clean exit wrote every record */
	uint64_t sync_mono_ns;
	int32_t pid;
	char boot_id[40];       /* /proc/sys/kernel/random/boot_id */
};

_Static_assert(sizeof(struct store_header) <= STORE_HEADER_BYTES,
	       "the header fits its page");
_Static_assert(sizeof(struct sp_store_holds) == 64 &&
		       sizeof(struct sp_store_hold) == 16,
	       "a worker's holds: a cache line, then 16-byte records");

static struct {
	int fd;
	size_t size;
	struct store_header *hdr;
} store = { .fd = -1 };

bool
sp_store_enabled(void)
{
	return store.hdr != NULL;
}

static void
read_boot_id(char *id, size_t len)
{
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");

	memset(id, 0, len);
	if (f == NULL)
		return;
	if (fgets(id, (int)len, f) == NULL)
		id[0] = '\0';
	id[strcspn(id, "\n")] = '\0';
	fclose(f);
}

static uint64_t
mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A worker's holds: as many records as it has session slots (an
 * operator's delete of every session fits; more only build up with deletes
 * repeated within one lease). */
static size_t
holds_size(uint32_t per_worker)
{
	return sizeof(struct sp_store_holds) +
	       (size_t)per_worker * sizeof(struct sp_store_hold);
}

static size_t
store_size(uint32_t version, uint32_t n_workers, uint32_t per_worker)
{
	return STORE_HEADER_BYTES +
	       (size_t)n_workers * per_worker * sizeof(struct sp_session) +
	       (version == STORE_VERSION_NO_HOLDS ?
			0 : (size_t)n_workers * holds_size(per_worker));
}

static struct sp_session *
records(const struct store_header *h, unsigned worker)
{
	return (struct sp_session *)((uint8_t *)h + STORE_HEADER_BYTES) +
	       (size_t)worker * h->sessions_per_worker;
}

static struct sp_store_holds *
holds(const struct store_header *h, unsigned worker)
{
	return (struct sp_store_holds *)((uint8_t *)records(h, h->n_workers) +
					 worker * holds_size(h->sessions_per_worker));
}

void
sp_store_hold(struct sp_worker *w, const struct sp_store_hold *hold,
	      uint32_t now)
{
	struct sp_store_holds *h = w->store_holds;

	if (h == NULL || h->lost)
		return;
	for (uint32_t k = 0; k < h->n; k++) {
		struct sp_store_hold *r = &h->rec[h->next];
		uint32_t seq;

		h->next = h->next + 1 == h->n ? 0 : h->next + 1;
		if (r->proto != 0 && (int32_t)(r->end - now) > 0)
			continue;       /* still held */
		seq = r->seq | 1;
		__atomic_store_n(&r->seq, seq, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_RELEASE);
		r->ext_addr = hold->ext_addr;
		r->ext_port = hold->ext_port;
		r->proto = hold->proto;
		r->end = hold->end;
		__atomic_store_n(&r->seq, seq + 1, __ATOMIC_RELEASE);
		return;
	}
	/* the successor cannot know every held port: it keeps the quiet
	 * period rather than risk handing one out */
	__atomic_store_n(&h->lost, 1, __ATOMIC_RELEASE);
}

/* Clock conversion: a time of the old process's, in ours. */
struct clocks {
	uint32_t old_ms, new_ms;
	uint64_t old_ns, new_ns;
};

static uint32_t
convert(const struct clocks *c, uint32_t t)
{
	int64_t ns = (int64_t)c->old_ns +
		     (int64_t)(int32_t)(t - c->old_ms) * 1000000 -
		     (int64_t)c->new_ns;

	return c->new_ms + (uint32_t)(int32_t)(ns / 1000000);
}

/* Why an old file's header is not ours to read, or NULL. */
static const char *
header_problem(const struct store_header *h, size_t size, const char *boot)
{
	if (size < sizeof(*h) || memcmp(h->magic, STORE_MAGIC, 8) != 0)
		return "not a swpath state file";
	if ((h->version != STORE_VERSION &&
	     h->version != STORE_VERSION_NO_HOLDS) ||
	    h->record_size != sizeof(struct sp_session))
		return "written by an incompatible version";
	if (h->n_workers == 0 || h->n_workers > SP_MAX_WORKERS ||
	    size != store_size(h->version, h->n_workers, h->sessions_per_worker))
		return "truncated or corrupt";
	if (strncmp(h->boot_id, boot, sizeof(h->boot_id)) != 0)
		return "written before the machine last booted";
	return NULL;
}

/* What a predecessor's file gave: how many records, and why each that was
 * not taken over was not. */
struct adoption {
	uint32_t reasons[SP_ADOPT_MAX];
	uint32_t torn;
	uint32_t total;
	/* port holds: taken over (on their owner, to be written again),
	 * not a port of this configuration, torn; and why some may be
	 * missing (NULL: none is) */
	uint32_t holds_kept, holds_elsewhere, holds_torn;
	const char *holds_lost;
};

/* The holds taken over, in this process's clock, for its own file. */
static struct kept_hold {
	struct sp_store_hold hold;
	uint16_t worker;
} *kept;
static uint32_t n_kept;         /* its length, once the holds are read */

/* One record of the predecessor's: on the worker that owns it now (its
 * inside host's, rss.h), in this process's clock. */
static void
adopt_record(struct sp_session rec, const struct store_header *h,
	     const struct clocks *clk, struct adoption *a)
{
	const struct sp_runtime *rt = sp_runtime_get();
	unsigned owner = 0;
	enum sp_adopt r;
	uint32_t sidx;

	if (rec.proto == 0 && !(rec.seq & 1))
		return;
	a->total++;
	if (rec.seq & 1) {
		/* killed while writing it */
		a->torn++;
		SP_COUNT_ADD(sp.workers[0]->cnt[SP_CNT_sessions_discarded], 1);
		return;
	}
	rec.created = convert(clk, rec.created);
	/* after a crash last_seen may be old: a full timeout */
	rec.last_seen = h->clean ? convert(clk, rec.last_seen) : clk->new_ms;
	if (sp.n_workers > 1)
		owner = sp_owner_inside(&sp.rss, be32toh(rec.int_addr));
	r = sp_nat_adopt(&sp.workers[owner]->nat, rt, &rec, &sidx);
	a->reasons[r]++;
	SP_COUNT_ADD(sp.workers[owner]->cnt[r == SP_ADOPT_OK ?
					    SP_CNT_sessions_adopted :
					    SP_CNT_sessions_discarded], 1);
}

/* One port hold of the predecessor's: on the worker that owns the port
 * now (its replies', rss.h), in this process's clock. After the sessions,
 * so that a hold of a port an adopted session keeps goes on its mapping. */
static void
adopt_hold(const struct sp_store_hold *r, const struct clocks *clk,
	   struct adoption *a)
{
	unsigned owner = 0;
	uint32_t end;

	if (r->seq & 1) {
		a->holds_torn++;
		return;
	}
	end = convert(clk, r->end);
	if (r->proto == 0 || (int32_t)(end - clk->new_ms) <= 0)
		return;         /* never written, or its lease is over */
	if (sp.n_workers > 1)
		owner = sp_owner_outside(&sp.rss, r->ext_addr, r->ext_port);
	if (sp_nat_adopt_hold(&sp.workers[owner]->nat, r->proto, r->ext_addr,
			      r->ext_port, end, clk->new_ms) != SP_ADOPT_OK) {
		a->holds_elsewhere++;
		return;
	}
	kept[a->holds_kept] = (struct kept_hold){ .hold = *r,
						  .worker = (uint16_t)owner };
	kept[a->holds_kept++].hold.end = end;
}

static void
adopt_holds(const struct store_header *h, const struct clocks *clk,
	    struct adoption *a)
{
	size_t n = (size_t)h->n_workers * h->sessions_per_worker;

	if (h->version == STORE_VERSION_NO_HOLDS) {
		a->holds_lost = "the file's version keeps none";
		return;
	}
	kept = calloc(n == 0 ? 1 : n, sizeof(*kept));
	if (kept == NULL) {
		a->holds_lost = "no memory to read them";
		return;
	}
	for (unsigned w = 0; w < h->n_workers; w++) {
		const struct sp_store_holds *hs = holds(h, w);

		if (hs->lost)
			a->holds_lost = "more holds than records";
		for (uint32_t i = 0; i < hs->n && i < h->sessions_per_worker; i++)
			adopt_hold(&hs->rec[i], clk, a);
	}
}

/* New ids above every adopted one, on every worker (core/adopt.c). */
static void
ids_above_adopted(void)
{
	uint32_t next_id = 0;

	for (unsigned w = 0; w < sp.n_workers; w++)
		if (sp.workers[w]->nat.next_id > next_id)
			next_id = sp.workers[w]->nat.next_id;
	for (unsigned w = 0; w < sp.n_workers; w++)
		sp.workers[w]->nat.next_id = next_id;
}

static void
log_adoption(const char *path, const struct store_header *h,
	     const struct adoption *a)
{
	sp_log("info", "state %s: took over %u of %u sessions of pid %d (%s)",
	       path, a->reasons[SP_ADOPT_OK], a->total, h->pid,
	       h->clean ? "stopped cleanly" :
			  "it did not stop cleanly: idle timers restart now");
	if (a->torn != 0)
		sp_log("warning", "state %s: %u sessions discarded: torn by the crash",
		       path, a->torn);
	for (unsigned r = SP_ADOPT_OK + 1; r < SP_ADOPT_MAX; r++)
		if (a->reasons[r] != 0)
			sp_log("warning", "state %s: %u sessions discarded: %s",
			       path, a->reasons[r], sp_adopt_reasons[r]);
	if (a->holds_kept != 0)
		sp_log("info", "state %s: %u ports stay held until the switch's lease of a deleted session ends",
		       path, a->holds_kept);
	if (a->holds_elsewhere != 0)
		sp_log("info", "state %s: %u held ports are not in this configuration's pools",
		       path, a->holds_elsewhere);
	/* only learn mode holds ports under a lease */
	if ((a->holds_torn != 0 || a->holds_lost != NULL) &&
	    sp_runtime_get()->learn)
		sp_log("warning", "state %s: not every port held under the switch's lease is known (%s)",
		       path, a->holds_lost != NULL ? a->holds_lost :
						     "torn by the crash");
}

/* The predecessor's file fd mapped, if its header is one this process
 * reads (else why not is logged); *size its size. */
static struct store_header *
map_previous(int fd, const char *path, size_t *size)
{
	struct store_header *h;
	const char *why;
	char boot[40];
	struct stat st;

	if (fstat(fd, &st) < 0 || st.st_size == 0)
		return NULL;
	*size = (size_t)st.st_size;
	h = mmap(NULL, *size, PROT_READ, MAP_SHARED, fd, 0);
	if (h == MAP_FAILED) {
		sp_log("warning", "state %s: cannot read it (%s); starting with no sessions",
		       path, strerror(errno));
		return NULL;
	}
	read_boot_id(boot, sizeof(boot));
	why = header_problem(h, *size, boot);
	if (why != NULL) {
		sp_log("warning", "state %s: %s; starting with no sessions",
		       path, why);
		munmap(h, *size);
		return NULL;
	}
	return h;
}

/* Adopts the sessions of the predecessor's file fd (locked by us). */
static void
adopt_from(int fd, const char *path, uint32_t now)
{
	struct adoption a = { 0 };
	struct store_header *h;
	struct clocks clk;
	size_t size;

	h = map_previous(fd, path, &size);
	if (h == NULL)
		return;
	clk = (struct clocks){ .old_ms = h->sync_ms, .old_ns = h->sync_mono_ns,
			       .new_ms = now, .new_ns = mono_ns() };
	for (unsigned w = 0; w < h->n_workers; w++)
		for (uint32_t i = 0; i < h->sessions_per_worker; i++)
			adopt_record(records(h, w)[i], h, &clk, &a);
	adopt_holds(h, &clk, &a);
	ids_above_adopted();
	/* learn mode's quiet period is skipped only when nothing was lost:
	 * every session, and every port held under a lease */
	sp.state_whole = a.torn == 0 && a.reasons[SP_ADOPT_OK] == a.total &&
			 a.holds_torn == 0 && a.holds_lost == NULL;
	n_kept = a.holds_kept;
	log_adoption(path, h, &a);
	munmap(h, size);
}

/* The predecessor's file, opened and locked, or -1 (none). */
static int
open_previous(const char *path, char *err, size_t errlen, int *fail)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	*fail = 0;
	if (fd < 0) {
		if (errno != ENOENT)
			sp_log("warning", "state %s: %s; starting with no sessions",
			       path, strerror(errno));
		return -1;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		const struct store_header *h =
			mmap(NULL, sizeof(*h), PROT_READ, MAP_SHARED, fd, 0);
		int pid = h != MAP_FAILED ? h->pid : 0;

		if (h != MAP_FAILED)
			munmap((void *)h, sizeof(*h));
		close(fd);
		*fail = sp_fail(err, errlen,
				"state %s is in use by a running quicknat-swpath (pid %d); stop it first, or give another --state",
				path, pid);
		return -1;
	}
	return fd;
}

/* This process's file at tmp, made, locked, mapped (faulted in now, not
 * on a new flow's path) and its header written: the store. */
static int
store_create(const char *tmp, uint32_t now, char *err, size_t errlen)
{
	size_t size = store_size(STORE_VERSION, sp.n_workers,
				 sp.sessions_per_worker);
	struct store_header *h;
	int fd, e;

	fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) < 0 ||
	    (errno = posix_fallocate(fd, 0, (off_t)size)) != 0) {
		e = errno;
		if (fd >= 0)
			close(fd);
		return sp_fail(err, errlen,
			       "state %s: cannot make a %zu MB file: %s (a tmpfs such as /dev/shm or /run is meant)",
			       tmp, size >> 20, strerror(e ? e : ENOSPC));
	}
	h = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
		 fd, 0);
	if (h == MAP_FAILED) {
		e = errno;
		close(fd);
		return sp_fail(err, errlen, "state %s: cannot map it: %s", tmp,
			       strerror(e));
	}
	memcpy(h->magic, STORE_MAGIC, 8);
	h->version = STORE_VERSION;
	h->record_size = sizeof(struct sp_session);
	h->n_workers = sp.n_workers;
	h->sessions_per_worker = sp.sessions_per_worker;
	h->sync_ms = now;
	h->sync_mono_ns = mono_ns();
	h->pid = (int32_t)getpid();
	read_boot_id(h->boot_id, sizeof(h->boot_id));
	store.fd = fd;
	store.size = size;
	store.hdr = h;
	return 0;
}

/* Each worker writes its sessions and holds to the store from now on;
 * those it has already (adopted) are written now. */
static void
store_attach(uint32_t now)
{
	for (unsigned w = 0; w < sp.n_workers; w++) {
		struct sp_worker *wk = sp.workers[w];

		wk->store = records(store.hdr, w);
		wk->store_holds = holds(store.hdr, w);
		wk->store_holds->n = sp.sessions_per_worker;
		__atomic_fetch_or(&wk->listening, SP_LISTEN_STORE,
				  __ATOMIC_RELEASE);
		for (uint32_t i = 0; i < wk->nat.max_sessions; i++)
			if (wk->nat.sessions[i].proto != 0)
				sp_store_put(wk, i, &wk->nat.sessions[i]);
	}
	for (uint32_t i = 0; i < n_kept; i++)
		sp_store_hold(sp.workers[kept[i].worker], &kept[i].hold, now);
}

int
sp_store_open(const char *path, char *err, size_t errlen)
{
	uint32_t now = sp_now_ms();
	char tmp[PATH_MAX];
	int old, fail, rc = -1;

	old = open_previous(path, err, errlen, &fail);
	if (fail)
		return -1;
	if (old >= 0)
		adopt_from(old, path, now);
	/* ours beside it, complete before it replaces the old one */
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.new", path) >= sizeof(tmp))
		sp_fail(err, errlen, "state %s: path too long", path);
	else if (store_create(tmp, now, err, errlen) == 0) {
		store_attach(now);
		rc = rename(tmp, path);
		if (rc < 0) {
			sp_fail(err, errlen, "state %s: %s", path, strerror(errno));
			sp_store_close();
			unlink(tmp);
		}
	}
	if (old >= 0)
		close(old);
	free(kept);
	kept = NULL;
	n_kept = 0;
	return rc;
}

void
sp_store_close(void)
{
	struct store_header *h = store.hdr;

	if (h == NULL)
		return;
	for (unsigned w = 0; w < sp.n_workers; w++) {
		struct sp_worker *wk = sp.workers[w];

		/* last_seen is not stored per packet: now it is */
		for (uint32_t i = 0; i < wk->nat.max_sessions; i++)
			if (wk->nat.sessions[i].proto != 0)
				sp_store_put(wk, i, &wk->nat.sessions[i]);
		__atomic_fetch_and(&wk->listening, ~SP_LISTEN_STORE,
				   __ATOMIC_RELEASE);
		wk->store = NULL;
		wk->store_holds = NULL;
	}
	h->sync_ms = sp_now_ms();
	h->sync_mono_ns = mono_ns();
	__atomic_store_n(&h->clean, 1, __ATOMIC_RELEASE);
	munmap(h, store.size);
	close(store.fd);
	store.hdr = NULL;
	store.fd = -1;
}
