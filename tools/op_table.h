/* The op table that `replay inspect` prints (and `replay BUNDLE` until the engine runs ops). */
#ifndef XR_TOOLS_OP_TABLE_H
#define XR_TOOLS_OP_TABLE_H

#include <stdio.h>

#include "formats/bundle.h"

/* One line per op: index, name, count, recorded GPU time, arguments (name=value). */
xr_status_t xr_print_op_table(FILE *out, const xr_bundle_t *bundle);

#endif
