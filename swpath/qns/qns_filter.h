/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The QNS filter: a Bloom filter over (sub-table, masked address, port or no
 * port) of every stored rule, so that a lookup passes over a sub-table that
 * cannot match with one load from a small, cache-resident array, without
 * touching the sub-table. A packet aimed at one rule meets a dozen
 * sub-tables on the way; without the filter each would cost up to four
 * hash probes.
 *
 * A filter key sets one bit: the hash of (sub-table, masked address) picks a
 * 64-bit word by bits 32 and up, and the bit by its top 6 bits plus (mod
 * 64) a number from the hash of the port part (the port for rules with a
 * port, a constant for rules without). A lookup tests two bits of one word
 * per sub-table, its port's and the no-port one, with one AND: adding the
 * address's number to both positions is rotating the pair of bits by it.
 * The protocol is left out so that two tests cover the four probe forms.
 *
 * The filter also holds a block table per kind: the address space is cut
 * into 2^block_bits blocks (/8 for the smallest filter, up to /16 for the
 * biggest), and a block's 32-bit word has bit 32 - plen set when a rule of
 * that prefix length lies inside the block (plen >= block_bits). A lookup
 * ANDs its block's word into the bitmap of non-empty sub-tables before it
 * visits any, so that of the long prefix lengths it visits only those with
 * a rule near the address; rules shorter than a block are always visited.
 * Each visit costs a hash and a filter load, so this cuts the lookup's main
 * cost when rules are spread over many lengths and many addresses.
 *
 * Concurrency: one writer sets bits (before publishing the slot they stand
 * for) and never clears them; deleted rules leave bits behind, which only
 * cost a probe. Rebuilding (to grow, shrink or drop stale bits) fills a new
 * filter from the live rules and publishes it with one release store; the old
 * one goes to the reclaim callback like any retired memory.
 */
#ifndef QUICKNAT_QNS_FILTER_H
#define QUICKNAT_QNS_FILTER_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct qns_filter {
	uint32_t mask;       /* words - 1, words a power of two */
	uint32_t keys;       /* keys added since this filter was built (writer) */
	uint32_t block_bits; /* log2 of the blocks per kind */
	uint32_t reserved32;
	/* [kind << block_bits | block], after word[] in the same allocation */
	_Atomic uint32_t *block;
	uint64_t reserved[5]; /* word[] starts on its own cache line */
	_Atomic uint64_t word[];
};

_Static_assert(sizeof(struct qns_filter) == 64, "word[] is line aligned");

/*
 * Address hash bits from here up pick the word (the top 6 of them, which
 * also pick the bit, only for filters of 2^26 words or more).
 */
#define QNS_FILTER_WORD_SHIFT 32

static inline uint32_t
qns_filter_words(const struct qns_filter *f)
{
	return f->mask + 1;
}

/* The number a port part adds to its keys' bit positions. */
static inline unsigned int
qns_filter_port_pos(uint64_t port_hash)
{
	return (unsigned int)(port_hash >> 58);
}

/* The number an address adds: the top 6 bits of its hash. */
static inline unsigned int
qns_filter_addr_pos(uint64_t addr_hash)
{
	return (unsigned int)(addr_hash >> 58);
}

static inline uint64_t
qns_rotl64(uint64_t x, unsigned int n)
{
	return x << (n & 63) | x >> (-n & 63);
}

/*
 * Reader side: what a lookup keeps in registers, since the compiler may not
 * reload plain fields across the atomic loads of the words.
 */
struct qns_filter_view {
	const _Atomic uint64_t *word;
	const _Atomic uint32_t *block;
	uint32_t mask;
	uint32_t block_bits;
};

static inline struct qns_filter_view
qns_filter_view(const struct qns_filter *f)
{
	return (struct qns_filter_view){ f->word, f->block, f->mask,
					 f->block_bits };
}

/*
 * The ranks (32 - plen) that may hold a rule of this kind matching addr:
 * those the address's block has bits for, and all ranks of prefixes
 * shorter than a block.
 */
static inline uint64_t
qns_filter_ranks(struct qns_filter_view v, unsigned int kind, uint32_t addr)
{
	/* Ranks 0 .. 32 - block_bits are those of prefixes a block holds. */
	uint64_t short_ranks = ~0ull << (33 - v.block_bits);
	uint32_t block = atomic_load_explicit(
		&v.block[(uint64_t)kind << v.block_bits |
			 addr >> (32 - v.block_bits)],
		memory_order_relaxed);

	return block | short_ranks;
}

/* The word for a sub-table address hash. */
static inline uint64_t
qns_filter_word(struct qns_filter_view v, uint64_t addr_hash)
{
	return atomic_load_explicit(
		&v.word[(addr_hash >> QNS_FILTER_WORD_SHIFT) & v.mask],
		memory_order_relaxed);
}

/*
 * The bits that keys of this address and of the port parts whose numbers
 * are set in port_pos_bits occupy, e.g. 1 << port_pos | 1 << noport_pos.
 */
static inline uint64_t
qns_filter_key_bits(uint64_t addr_hash, uint64_t port_pos_bits)
{
	return qns_rotl64(port_pos_bits, qns_filter_addr_pos(addr_hash));
}

/* Writer side, in qns_filter.c. */

size_t qns_filter_size(uint32_t words);

/* The number of words to build a filter for this many keys with. */
uint32_t qns_filter_words_for(uint32_t keys);

/* True when one more key would make the filter too dense. */
int qns_filter_full(const struct qns_filter *f);

/* A cleared filter, or NULL. Free it with free(). */
struct qns_filter *qns_filter_alloc(uint32_t words);

/* Sets the bit of a key; only the writer calls this. */
void qns_filter_add(struct qns_filter *f, uint64_t addr_hash,
		    unsigned int port_pos);

/* Sets the block table bit of a rule; only the writer calls this. */
void qns_filter_add_block(struct qns_filter *f, unsigned int kind,
			  uint32_t prefix, unsigned int plen);

#endif /* QUICKNAT_QNS_FILTER_H */
