/* SPDX-License-Identifier: Apache-2.0 */
#ifndef SP_TELEMETRY_H
#define SP_TELEMETRY_H

void sp_telemetry_register(void);

#endif /* SP_TELEMETRY_H */
