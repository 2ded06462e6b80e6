/* SPDX-License-Identifier: Apache-2.0 */
/* Virtual reassembly of IPv4 fragments: see frag.h. */
#include <string.h>

#include <rte_branch_prediction.h>
#include <rte_common.h>
#include <rte_hash_crc.h>

#include "core/counters.h"
#include "dataplane/frag.h"

static inline uint32_t
key_hash(const struct sp_frag_key *k)
{
	return rte_hash_crc(k, sizeof(*k), 0x5bd1e995);
}

static inline int
key_eq(const struct sp_frag_key *a, const struct sp_frag_key *b)
{
	return a->src == b->src && a->dst == b->dst && a->id == b->id &&
	       a->proto == b->proto;
}

static inline int
expired(const struct sp_frag_dgram *d, uint32_t now)
{
	return d->expire != 0 && (int32_t)(now - d->expire) >= 0;
}

/* Frees a datagram's slot and what it held. */
static unsigned
release(struct sp_frag *f, struct sp_frag_dgram *d, uint64_t *cnt)
{
	unsigned n = d->n_held;

	for (unsigned i = 0; i < n; i++)
		rte_pktmbuf_free(d->held[i]);
	SP_COUNT_ADD(cnt[SP_CNT_drop_frag_timeout], n);
	f->n_held -= n;
	if (d->counted)
		f->waiting[d->src_slot]--;
	d->counted = 0;
	d->n_held = 0;
	d->expire = 0;
	f->n_live--;
	return n;
}

/*
 * The datagram of k, or NULL. With create, a free slot on its probe path
 * is taken for it (NULL: none free). Expired datagrams met on the way are
 * released, so a slot is never held past its time by a lookup miss.
 */
static struct sp_frag_dgram *
find(struct sp_frag *f, const struct sp_frag_key *k, uint32_t now, int create,
     uint64_t *cnt)
{
	uint32_t base = key_hash(k);
	struct sp_frag_dgram *free_d = NULL;

	for (unsigned i = 0; i < SP_FRAG_PROBE; i++) {
		struct sp_frag_dgram *d = &f->d[(base + i) & (SP_FRAG_SLOTS - 1)];

		if (expired(d, now))
			release(f, d, cnt);
		if (d->expire == 0) {
			if (free_d == NULL)
				free_d = d;
			continue;
		}
		if (key_eq(&d->key, k))
			return d;
	}
	if (!create || free_d == NULL)
		return NULL;
	memset(free_d, 0, offsetof(struct sp_frag_dgram, held));
	f->n_live++;
	free_d->key = *k;
	free_d->expire = (now + SP_FRAG_TIMEOUT_MS) | 1; /* never 0: free */
	return free_d;
}

static inline uint16_t
source_slot(rte_be32_t src)
{
	return (uint16_t)(rte_hash_crc_4byte(src, 0) & (SP_FRAG_SRC_SLOTS - 1));
}

/* What record() found: */
#define SEEN_NEW 0                      /* recorded */
#define SEEN_DUPLICATE 1                /* wholly inside bytes seen */
#define SEEN_OVERLAP 2                  /* partly over them, or a wrong end */
#define SEEN_FULL 3                     /* no room for another run */

/* Whether s contradicts the datagram's end: a last fragment (MF clear)
 * ending before bytes already seen or elsewhere than an earlier last one,
 * or any fragment past the last one's end (the teardrop pair; Linux
 * ip_frag_queue's checks). */
static inline int
bad_end(const struct sp_frag_dgram *d, const struct sp_frag_span *s)
{
	if (s->last)
		return (d->last_end != 0 && s->end != d->last_end) ||
		       s->end < d->max_end;
	return d->last_end != 0 && s->end > d->last_end;
}

/*
 * Records s among the runs of bytes the datagram has seen, merging the runs
 * it touches (fragments in order stay one run). An empty fragment carries
 * nothing: a duplicate.
 */
static int
record(struct sp_frag_dgram *d, const struct sp_frag_span *s)
{
	uint16_t start = s->start, end = s->end;
	unsigned n = d->n_ranges;

	if (bad_end(d, s))
		return SEEN_OVERLAP;
	if (end <= start)
		return SEEN_DUPLICATE;
	for (unsigned i = 0; i < n; i++) {
		const struct sp_frag_range *r = &d->seen[i];

		if (start >= r->start && end <= r->end)
			return SEEN_DUPLICATE;
		if (start < r->end && r->start < end)
			return SEEN_OVERLAP;
	}
	for (unsigned i = 0; i < n;) {
		struct sp_frag_range *r = &d->seen[i];

		if (r->end != start && r->start != end) {
			i++;
			continue;
		}
		start = RTE_MIN(start, r->start);
		end = RTE_MAX(end, r->end);
		*r = d->seen[--n];      /* merged: its slot takes the last run */
	}
	if (n == SP_FRAG_RANGES)
		return SEEN_FULL;       /* nothing merged, nothing changed */
	d->seen[n].start = start;
	d->seen[n].end = end;
	d->n_ranges = (uint8_t)(n + 1);
	d->max_end = RTE_MAX(d->max_end, s->end);
	if (s->last)
		d->last_end = s->end;
	return SEEN_NEW;
}

/* An overlap: the datagram's held fragments go, and so will the rest of
 * it, until its slot's time is up (frag.h). */
static void
kill_datagram(struct sp_frag *f, struct sp_frag_dgram *d, uint64_t *cnt)
{
	unsigned n = d->n_held;

	for (unsigned i = 0; i < n; i++)
		rte_pktmbuf_free(d->held[i]);
	SP_COUNT_ADD(cnt[SP_CNT_drop_frag_overlap], n);
	f->n_held -= n;
	d->n_held = 0;
	d->dead = 1;
}

/* 0 when s may go on, else minus the counter to drop it under. */
static int
admit(struct sp_frag *f, struct sp_frag_dgram *d, const struct sp_frag_span *s,
      uint64_t *cnt)
{
	if (d->dead)
		return -SP_CNT_drop_frag_overlap;
	switch (record(d, s)) {
	case SEEN_NEW:
		return 0;
	case SEEN_FULL:
		return -SP_CNT_drop_frag_limit;
	case SEEN_OVERLAP:
		kill_datagram(f, d, cnt);
		return -SP_CNT_drop_frag_overlap;
	default:
		return -SP_CNT_drop_frag_overlap;
	}
}

int
sp_frag_first(struct sp_frag *f, const struct sp_frag_key *k,
	      const struct sp_frag_span *span, rte_be16_t sport,
	      rte_be16_t dport, uint32_t now, struct rte_mbuf **out,
	      uint64_t *cnt)
{
	struct sp_frag_dgram *d = find(f, k, now, 1, cnt);
	unsigned n;
	int rc;

	if (d == NULL)
		return 0;
	/* a second first fragment is a duplicate or an overlap: dropped */
	rc = admit(f, d, span, cnt);
	if (rc < 0)
		return rc;
	d->sport = sport;
	d->dport = dport;
	/* the later fragments may follow it for a while yet */
	d->expire = (now + SP_FRAG_TIMEOUT_MS) | 1;
	d->have_first = 1;
	if (d->counted)
		f->waiting[d->src_slot]--;
	d->counted = 0;
	n = d->n_held;
	memcpy(out, d->held, n * sizeof(*out));
	d->n_held = 0;
	f->n_held -= n;
	return (int)n;
}

int
sp_frag_later(struct sp_frag *f, const struct sp_frag_key *k,
	      const struct sp_frag_span *span, struct rte_mbuf *m,
	      uint32_t now, rte_be16_t *sport, rte_be16_t *dport,
	      uint64_t *cnt)
{
	struct sp_frag_dgram *d = find(f, k, now, 0, cnt);
	int rc;

	if (d == NULL) {
		uint16_t slot = source_slot(k->src);

		if (f->waiting[slot] >= SP_FRAG_SRC_MAX)
			return -SP_CNT_drop_frag_limit;
		d = find(f, k, now, 1, cnt);
		if (d == NULL)
			return -SP_CNT_drop_frag_limit;
		d->src_slot = slot;
		d->counted = 1;
		f->waiting[slot]++;
	}
	if (!d->have_first && !d->dead &&
	    (d->n_held >= SP_FRAG_HOLD || f->n_held >= SP_FRAG_HELD_MAX))
		return -SP_CNT_drop_frag_limit;
	rc = admit(f, d, span, cnt);
	if (rc < 0)
		return rc;
	if (d->have_first) {
		*sport = d->sport;
		*dport = d->dport;
		return SP_FRAG_KNOWN;
	}
	d->held[d->n_held++] = m;
	f->n_held++;
	SP_COUNT_ADD(cnt[SP_CNT_frag_held], 1);
	return SP_FRAG_HELD;
}

unsigned
sp_frag_age(struct sp_frag *f, uint32_t now, unsigned budget, uint64_t *cnt)
{
	unsigned freed = 0;

	/* the fast path's loop: nothing to walk without fragments in flight */
	if (likely(f->n_live == 0))
		return 0;
	while (budget-- > 0) {
		struct sp_frag_dgram *d = &f->d[f->sweep];

		f->sweep = (f->sweep + 1) & (SP_FRAG_SLOTS - 1);
		if (expired(d, now))
			freed += release(f, d, cnt);
	}
	return freed;
}

void
sp_frag_flush(struct sp_frag *f, uint64_t *cnt)
{
	for (unsigned i = 0; i < SP_FRAG_SLOTS; i++)
		if (f->d[i].expire != 0)
			release(f, &f->d[i], cnt);
}
