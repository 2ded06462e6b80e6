/* SPDX-License-Identifier: Apache-2.0 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_log.h>

#include "control/control.h"
#include "control/routes.h"
#include "control/routing.h"
#include "control/publish.h"
#include "control/setup.h"
#include "sp_harness.h"

static char prefix[64];

/* libFuzzer leaves with exit(): the runtime directory goes then too. */
static void
remove_runtime_dir(void)
{
	char dir[128];

	snprintf(dir, sizeof(dir), "/var/run/dpdk/%s", prefix);
	rmdir(dir);
}

static int
apply_text(const char *commands, bool interfaces)
{
	const char *p = commands;

	while (*p != '\0') {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		char line[512], err[512];
		struct sp_buf out = { 0 };
		struct sp_cmd cmd;

		snprintf(line, sizeof(line), "%.*s", (int)len, p);
		p += len + (nl != NULL);
		if (sp_cmd_parse(line, &cmd, err, sizeof(err)) < 0) {
			fprintf(stderr, "harness: %s: %s\n", line, err);
			return -1;
		}
		if (cmd.verb == SP_CMD_NONE ||
		    (cmd.verb == SP_CMD_INTERFACE) != interfaces)
			continue;
		if (sp_apply(&cmd, &out, err, sizeof(err)) < 0) {
			fprintf(stderr, "harness: %s: %s\n", line, err);
			sp_buf_free(&out);
			return -1;
		}
		sp_buf_free(&out);
	}
	return 0;
}

int
sp_harness_init(const char *prog, const char *commands, unsigned n_workers,
		uint32_t sessions, const char *mem_mb)
{
	char lcores[64];
	/* hugepages: --in-memory takes them from a memfd as it needs them */
	char *argv[] = {
		(char *)prog, "--no-pci", "--no-shconf", "--no-telemetry",
		lcores, "--log-level=*:error", "--file-prefix", prefix,
		"--vdev", "net_null0", "--vdev", "net_null1",
		mem_mb != NULL ? "--no-huge" : "--in-memory",
		mem_mb != NULL ? "-m" : NULL, (char *)mem_mb, NULL,
	};
	int argc = mem_mb != NULL ? 15 : 13;
	char err[512];

	/* all lcores float on all CPUs, as quicknat-swpath does by default */
	snprintf(lcores, sizeof(lcores), "--lcores=(0-%u)@(0-%ld)", n_workers,
		 sysconf(_SC_NPROCESSORS_ONLN) - 1);
	snprintf(prefix, sizeof(prefix), "sp-harness-%d", (int)getpid());
	sp_setup_defaults();
	sp.n_workers = n_workers;
	sp.sessions_per_worker = sessions;
	sp.port_reuse_ms = 120000;
	if (rte_eal_init(argc, argv) < 0) {
		fprintf(stderr, "harness: EAL: %s\n", rte_strerror(rte_errno));
		return -1;
	}
	atexit(remove_runtime_dir);
	sp.tsc_hz = rte_get_tsc_hz();
	sp.tsc0 = rte_rdtsc();
	sp_open_hist_init(sp.open_hist_bound_tsc, sp.tsc_hz);
	rte_srand(1);
	if (apply_text(commands, true) < 0)
		return -1;
	if (sp_setup_dispatch(err, sizeof(err)) < 0 ||
	    sp_setup_core(err, sizeof(err)) < 0)
		goto fail;
	if (apply_text(commands, false) < 0)
		return -1;
	if (sp_routes_build(err, sizeof(err)) < 0 ||
	    sp_setup_mempool(err, sizeof(err)) < 0 ||
	    sp_setup_workers(err, sizeof(err)) < 0 ||
	    sp_setup_ports(err, sizeof(err)) < 0 ||
	    sp_runtime_publish() < 0)
		goto fail;
	return 0;
fail:
	fprintf(stderr, "harness: %s\n", err);
	return -1;
}

void
sp_harness_control(void)
{
	struct rte_mbuf *m;

	sp_neigh_messages();
	/* ARP requests the control thread queued for worker 0: not sent */
	while (rte_ring_sc_dequeue(sp.workers[0]->ctl_ring, (void **)&m) == 0)
		rte_pktmbuf_free(m);
	sp_rcu_reclaim(false);
}

void
sp_harness_fini(void)
{
	sp_harness_control();
	sp_teardown();
	rte_eal_cleanup();
}
