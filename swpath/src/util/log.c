/* SPDX-License-Identifier: Apache-2.0 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "util/buf.h"
#include "util/log.h"

#define PROG "quicknat-swpath"

static bool log_json;

void
sp_log_set_json(bool json)
{
	log_json = json;
}

static void
emit(const char *level, const char *message)
{
	struct sp_buf b = { 0 };
	struct timeval tv;
	struct tm tm;
	char when[32];

	if (!log_json) {
		if (strcmp(level, "warning") == 0)
			fprintf(stderr, PROG ": warning: %s\n", message);
		else if (strcmp(level, "dpdk") == 0)
			fprintf(stderr, "%s\n", message);
		else
			fprintf(stderr, PROG ": %s\n", message);
		return;
	}
	gettimeofday(&tv, NULL);
	gmtime_r(&tv.tv_sec, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
	sp_buf_printf(&b, "{\"time\": \"%s.%03ldZ\", \"level\": \"%s\", "
		      "\"process\": \"" PROG "\", \"message\": ",
		      when, (long)(tv.tv_usec / 1000), level);
	sp_buf_json_string(&b, message);
	sp_buf_printf(&b, "}\n");
	fwrite(b.p, 1, b.len, stderr);
	sp_buf_free(&b);
}

void
sp_log(const char *level, const char *fmt, ...)
{
	char message[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(message, sizeof(message), fmt, ap);
	va_end(ap);
	emit(level, message);
}

/* DPDK writes pieces of lines: whole lines become records. */
static char dpdk_line[1024];
static size_t dpdk_len;

static ssize_t
dpdk_write(void *cookie, const char *buf, size_t size)
{
	(void)cookie;
	for (size_t i = 0; i < size; i++) {
		if (buf[i] == '\n' || dpdk_len == sizeof(dpdk_line) - 1) {
			dpdk_line[dpdk_len] = '\0';
			if (dpdk_len > 0)
				emit("dpdk", dpdk_line);
			dpdk_len = 0;
			if (buf[i] == '\n')
				continue;
		}
		dpdk_line[dpdk_len++] = buf[i];
	}
	return (ssize_t)size;
}

FILE *
sp_log_dpdk_stream(void)
{
	static FILE *stream;

	if (!log_json)
		return stderr;
	if (stream == NULL) {
		stream = fopencookie(NULL, "w",
				     (cookie_io_functions_t){ .write = dpdk_write });
		if (stream == NULL)
			return stderr;
		setvbuf(stream, NULL, _IOLBF, 0);
	}
	return stream;
}
