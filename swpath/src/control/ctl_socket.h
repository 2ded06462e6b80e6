/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The control socket: a Unix stream socket served by the control thread
 * (docs/swpath.md, "Control socket"), and the control thread's round.
 */
#ifndef SP_CTL_SOCKET_H
#define SP_CTL_SOCKET_H

#include <stddef.h>

int sp_control_listen(const char *path, char *err, size_t errlen);
/* One round of control work: socket, worker messages, mapping events, the
 * session stream, RCU reclaim; waits up to timeout_ms for a client. */
void sp_control_poll(int timeout_ms);
void sp_control_close(void);

#endif /* SP_CTL_SOCKET_H */
