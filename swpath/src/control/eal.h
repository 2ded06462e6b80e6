/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Starting DPDK's EAL with swpath's defaults, quietly (eal.c).
 */
#ifndef SP_EAL_H
#define SP_EAL_H

#include <stddef.h>

/* The most EAL arguments, the defaults included. */
#define SP_EAL_ARGS_MAX 128

/*
 * argv[0..argc): the EAL arguments (argv[0] the program). out (at least
 * SP_EAL_ARGS_MAX + 1) gets them with the defaults they lack: memory,
 * shared config, devices, lcores for n_workers workers, log level. Returns
 * the count.
 */
int sp_eal_arguments(int argc, char **argv, unsigned n_workers, char **out);

/* Starts the EAL, its output kept back. 0, or -1 with the cause in err. */
int sp_eal_start(int argc, char **argv, char *err, size_t errlen);

/* The first line DPDK wrote while it started that names a cause, or "". */
void sp_eal_cause(char *line, size_t len);

/* Start-up is over: DPDK's lines are shown if --log-level was given, and
 * its log goes where ours goes (util/log.h). */
void sp_eal_log_end(void);

#endif /* SP_EAL_H */
