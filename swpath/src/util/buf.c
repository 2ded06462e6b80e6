/* SPDX-License-Identifier: Apache-2.0 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"

void
sp_buf_printf(struct sp_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		size_t room = b->cap - b->len;

		va_start(ap, fmt);
		/* an empty buffer has no p: NULL + 0 is undefined (C11 6.5.6),
		 * and vsnprintf(NULL, 0, ...) only measures */
		n = vsnprintf(b->p != NULL ? b->p + b->len : NULL, room, fmt, ap);
		va_end(ap);
		if (n < 0)
			return;
		if ((size_t)n < room) {
			b->len += (size_t)n;
			if (b->sink != NULL && b->len >= 65536)
				sp_buf_drain(b);
			return;
		}
		size_t cap = b->cap ? b->cap * 2 : 4096;
		while (cap - b->len <= (size_t)n)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (p == NULL)
			return;
		b->p = p;
		b->cap = cap;
	}
}

void
sp_buf_drain(struct sp_buf *b)
{
	if (b->sink == NULL || b->len == 0)
		return;
	b->sink(b, b->sink_arg);
	b->len = 0;
}

void
sp_buf_json_string(struct sp_buf *b, const char *s)
{
	sp_buf_printf(b, "\"");
	for (; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			sp_buf_printf(b, "\\%c", c);
		else if (c < 0x20)
			sp_buf_printf(b, "\\u%04x", c);
		else
			sp_buf_printf(b, "%c", c);
	}
	sp_buf_printf(b, "\"");
}

void
sp_buf_free(struct sp_buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}
