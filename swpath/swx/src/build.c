/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rte_swx_pipeline.h>

#include "build.h"

static int
fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

/* FNV-1a, 64 bits: a name for the cache entry. Not trusted alone: the
 * entry keeps its spec, compared byte for byte before its object is used. */
static uint64_t
fnv1a64(const char *s, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < len; i++) {
		h ^= (uint8_t)s[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

static int
write_file(const char *path, const char *text, size_t len)
{
	FILE *f = fopen(path, "w");
	int ok;

	if (f == NULL)
		return -1;
	ok = fwrite(text, 1, len, f) == len;
	return (fclose(f) == 0 && ok) ? 0 : -1;
}

/* Whether path holds exactly text. */
static int
same_file(const char *path, const char *text, size_t len)
{
	FILE *f = fopen(path, "r");
	char buf[4096];
	size_t at = 0, n;
	int same = 1;

	if (f == NULL)
		return 0;
	while (same && (n = fread(buf, 1, sizeof(buf), f)) > 0) {
		same = at + n <= len && memcmp(buf, text + at, n) == 0;
		at += n;
	}
	fclose(f);
	return same && at == len;
}

static int
codegen(const char *spec_path, const char *c_path, char *err, size_t errlen)
{
	FILE *spec = fopen(spec_path, "r"), *code = fopen(c_path, "w");
	const char *msg = NULL;
	uint32_t line = 0;
	int status;

	if (spec == NULL || code == NULL) {
		if (spec)
			fclose(spec);
		if (code)
			fclose(code);
		return fail(err, errlen, "cannot write %s: %s", c_path, strerror(errno));
	}
	status = rte_swx_pipeline_codegen(spec, code, &line, &msg);
	fclose(spec);
	if (fclose(code) != 0 && status == 0)
		return fail(err, errlen, "cannot write %s", c_path);
	if (status)
		return fail(err, errlen, "the spec is not one DPDK's SWX pipeline takes: line %u: %s (%s)",
			    line, msg ? msg : "?", strerror(-status));
	return 0;
}

/* The flags pkg-config gives for libdpdk, as the Makefile saw them. */
#ifndef SWX_DPDK_CFLAGS
#define SWX_DPDK_CFLAGS "-I/usr/include/dpdk"
#endif

#define SWX_CC_ARGS_MAX 64

/* cc ... -o so_path c_path, its output in log_path; no shell. */
static int
compile(const struct swx_build_options *o, const char *c_path, const char *so_path,
	const char *log_path, char *err, size_t errlen)
{
	static const char *const fixed[] = {
		"-O3", "-fpic", "-shared", "-fno-strict-aliasing",
		"-Wno-deprecated-declarations", "-include", "rte_config.h",
	};
	char include[4200], dpdk[1024];
	const char *argv[SWX_CC_ARGS_MAX];
	unsigned n = 0;
	pid_t pid;
	int status;

	argv[n++] = o->cc ? o->cc : "cc";
	for (unsigned i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		argv[n++] = fixed[i];
	snprintf(dpdk, sizeof(dpdk), "%s", SWX_DPDK_CFLAGS);
	for (char *save = NULL, *w = strtok_r(dpdk, " ", &save);
	     w != NULL && n < SWX_CC_ARGS_MAX - 6; w = strtok_r(NULL, " ", &save))
		argv[n++] = w;
	snprintf(include, sizeof(include), "-I%s", o->include_dir);
	argv[n++] = include;
	argv[n++] = "-o";
	argv[n++] = so_path;
	argv[n++] = c_path;
	argv[n] = NULL;

	pid = fork();
	if (pid < 0)
		return fail(err, errlen, "fork: %s", strerror(errno));
	if (pid == 0) {
		if (freopen(log_path, "w", stdout) == NULL || dup2(fileno(stdout), 2) < 0)
			_exit(126);
		execvp(argv[0], (char *const *)(uintptr_t)argv);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0)
		return fail(err, errlen, "waitpid: %s", strerror(errno));
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return fail(err, errlen, "compiling the pipeline failed (exit %d): see %s",
			    WIFEXITED(status) ? WEXITSTATUS(status) : -1, log_path);
	return 0;
}

int
swx_build_lib(const struct swx_build_options *o, const char *spec, size_t len,
	      char *so_path, size_t so_len, char *err, size_t errlen)
{
	char base[4096], spec_path[4200], c_path[4200], log_path[4200], tmp[4200];
	struct stat st;

	if (mkdir(o->cache_dir, 0755) < 0 && errno != EEXIST)
		return fail(err, errlen, "cannot make %s: %s", o->cache_dir, strerror(errno));
	snprintf(base, sizeof(base), "%s/pipeline-%016" PRIx64, o->cache_dir,
		 fnv1a64(spec, len));
	snprintf(spec_path, sizeof(spec_path), "%s.spec", base);
	snprintf(c_path, sizeof(c_path), "%s.c", base);
	snprintf(log_path, sizeof(log_path), "%s.log", base);
	if (snprintf(so_path, so_len, "%s.so", base) >= (int)so_len)
		return fail(err, errlen, "path too long: %s.so", base);
	if (same_file(spec_path, spec, len) && stat(so_path, &st) == 0)
		return 0;

	/* Build under a name of this process, then rename: two switches that
	 * build the same spec at once never load a half-written object. */
	snprintf(tmp, sizeof(tmp), "%s.%d.so", base, (int)getpid());
	if (write_file(spec_path, spec, len) < 0)
		return fail(err, errlen, "cannot write %s: %s", spec_path, strerror(errno));
	if (codegen(spec_path, c_path, err, errlen) < 0 ||
	    compile(o, c_path, tmp, log_path, err, errlen) < 0) {
		unlink(tmp);
		unlink(spec_path);
		return -1;
	}
	if (rename(tmp, so_path) < 0) {
		unlink(tmp);
		return fail(err, errlen, "cannot rename %s: %s", tmp, strerror(errno));
	}
	return 0;
}

int
swx_build_pipeline(struct rte_swx_pipeline **p, const char *name, const char *so_path,
		   const char *iospec, int numa_node, char *err, size_t errlen)
{
	FILE *io = fmemopen((void *)(uintptr_t)iospec, strlen(iospec), "r");
	int status;

	if (io == NULL)
		return fail(err, errlen, "fmemopen: %s", strerror(errno));
	/* DPDK says nothing more than the status: the spec was checked by
	 * codegen, so what fails here is the I/O spec (a port, a ring). */
	status = rte_swx_pipeline_build_from_lib(p, name, so_path, io, numa_node);
	fclose(io);
	if (status)
		return fail(err, errlen, "the pipeline does not build from %s with its ports (%s): "
			    "check the ports and rings the I/O spec names", so_path,
			    strerror(-status));
	return 0;
}
