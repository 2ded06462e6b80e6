/* SPDX-License-Identifier: Apache-2.0 */
#ifndef SP_WORKER_H
#define SP_WORKER_H

/* The lcore function of every worker (arg: its struct sp_worker). */
int sp_worker_main(void *arg);

#endif /* SP_WORKER_H */
