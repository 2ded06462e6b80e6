/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A growable text buffer: the control socket's answers, telemetry, the
 * session stream's lines and the JSON log all build their text in one
 * (control thread only). With a sink, full 64 KB chunks go out as they are
 * made, so a long answer never sits whole in memory.
 */
#ifndef SP_BUF_H
#define SP_BUF_H

#include <stddef.h>

struct sp_buf {
	char *p;
	size_t len;
	size_t cap;
	/* when set, full 64 KB chunks go out through it as they are made */
	void (*sink)(struct sp_buf *b, void *arg);
	void *sink_arg;
};

/* Hands what is buffered to the sink (if any) and empties the buffer. */
void sp_buf_drain(struct sp_buf *b);

void sp_buf_printf(struct sp_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void sp_buf_free(struct sp_buf *b);
/* s as a JSON string, quotes included: ", \\ and control characters
 * escaped (RFC 8259 sec. 7), so an error that quotes user input stays JSON. */
void sp_buf_json_string(struct sp_buf *b, const char *s);

#endif /* SP_BUF_H */
