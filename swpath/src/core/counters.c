/* SPDX-License-Identifier: Apache-2.0 */
/* The counters' names and help texts, from the one X-macro list. */
#include "core/counters.h"

const char *const sp_counter_names[SP_CNT_MAX] = {
#define SP_X_NAME(name, help) #name,
	SP_COUNTERS(SP_X_NAME)
#undef SP_X_NAME
};

const char *const sp_counter_help[SP_CNT_MAX] = {
#define SP_X_HELP(name, help) help,
	SP_COUNTERS(SP_X_HELP)
#undef SP_X_HELP
};
