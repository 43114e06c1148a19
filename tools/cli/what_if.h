/* seam analyze --what-if (what_if.c). */
#ifndef SEAM_CLI_WHAT_IF_H
#define SEAM_CLI_WHAT_IF_H

#include <stdbool.h>

#include "seam_partition.h"

/* For each form the first target of o refuses in plan: the model
 * partitioned again with that form supported, and what changed. */
int analyze_what_if(seam_context *ctx, seam_model *m, const seam_plan *plan, const seam_partition_options *o, bool as_json);

#endif
