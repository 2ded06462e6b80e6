/* SPDX-License-Identifier: Apache-2.0 */
#include <stdlib.h>
#include <string.h>

#include "qns.h"
#include "qns_compiler.h"
#include "qns_filter.h"

/* Smallest filter: 4 KiB, a page, for the first few hundred rules. */
#define QNS_FILTER_MIN_WORDS 512u
/*
 * Largest filter: 512 MiB. Past 2^26 words the bits that pick the word
 * would include those that pick the bit, and the uint32_t mask ends at 2^32.
 */
#define QNS_FILTER_MAX_WORDS (1u << 26)

/*
 * Density: a rebuilt filter has at least QNS_FILTER_WORDS_PER_KEY words per
 * key and is rebuilt once keys (stale ones included) outnumber its words, so
 * a word holds 1/2 to 1 key on average and a test passes by mistake with a
 * probability of 1/128 to 1/64.
 */
#define QNS_FILTER_WORDS_PER_KEY 2u

/*
 * Blocks per kind: a quarter of the filter's words, between a /8 and a /16
 * block, so the block table costs at most half of the words' memory and a
 * /16 table (512 KiB for both kinds) only from 131,072 words, about 65,000
 * rules, up.
 */
#define QNS_FILTER_MIN_BLOCK_BITS 8u
#define QNS_FILTER_MAX_BLOCK_BITS 16u

static uint32_t
qns_filter_block_bits(uint32_t words)
{
	uint32_t bits = (uint32_t)__builtin_ctz(words) - 2;

	if (bits < QNS_FILTER_MIN_BLOCK_BITS)
		return QNS_FILTER_MIN_BLOCK_BITS;
	return bits > QNS_FILTER_MAX_BLOCK_BITS ? QNS_FILTER_MAX_BLOCK_BITS : bits;
}

/* The bytes of word[]; the block table follows them. */
static size_t
qns_filter_words_size(uint32_t words)
{
	return sizeof(struct qns_filter) + (size_t)words * sizeof(uint64_t);
}

size_t
qns_filter_size(uint32_t words)
{
	/* A multiple of 64: the block table is at least 2 KiB. */
	return qns_filter_words_size(words) +
	       ((size_t)QNS_KINDS << qns_filter_block_bits(words)) *
		       sizeof(uint32_t);
}

uint32_t
qns_filter_words_for(uint32_t keys)
{
	uint64_t words = QNS_FILTER_MIN_WORDS;

	/* Past the largest size, more keys only make the filter denser. */
	while (words < (uint64_t)keys * QNS_FILTER_WORDS_PER_KEY &&
	       words < QNS_FILTER_MAX_WORDS)
		words *= 2;
	return (uint32_t)words;
}

int
qns_filter_full(const struct qns_filter *f)
{
	return f->keys >= qns_filter_words(f) &&
	       qns_filter_words(f) < QNS_FILTER_MAX_WORDS;
}

struct qns_filter *
qns_filter_alloc(uint32_t words)
{
	size_t size = qns_filter_size(words);
	struct qns_filter *f;

	f = aligned_alloc(64, size); /* size is a multiple of 64 */
	if (unlikely(f == NULL))
		return NULL;
	memset(f, 0, size);
	f->mask = words - 1;
	f->block_bits = qns_filter_block_bits(words);
	f->block = (_Atomic uint32_t *)((char *)f + qns_filter_words_size(words));
	return f;
}

void
qns_filter_add(struct qns_filter *f, uint64_t addr_hash, unsigned int port_pos)
{
	_Atomic uint64_t *word =
		&f->word[(addr_hash >> QNS_FILTER_WORD_SHIFT) & f->mask];
	uint64_t bit = qns_filter_key_bits(addr_hash, 1ull << port_pos);

	atomic_store_explicit(word,
			      atomic_load_explicit(word, memory_order_relaxed) | bit,
			      memory_order_relaxed);
	f->keys++;
}

void
qns_filter_add_block(struct qns_filter *f, unsigned int kind, uint32_t prefix,
		     unsigned int plen)
{
	_Atomic uint32_t *block;

	if (plen < f->block_bits)
		return; /* shorter than a block: its length is always visited */
	block = &f->block[(uint64_t)kind << f->block_bits |
			  prefix >> (32 - f->block_bits)];
	atomic_store_explicit(
		block,
		atomic_load_explicit(block, memory_order_relaxed) |
			1u << (QNS_PLEN_MAX - plen),
		memory_order_relaxed);
}
