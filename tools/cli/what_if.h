/* seam analyze --what-if (what_if.c). */
#ifndef SEAM_CLI_WHAT_IF_H
#define SEAM_CLI_WHAT_IF_H

#include <stdbool.h>

#include "seam_partition.h"
#include "targets.h"

/* For each form the first target of o refuses in plan: the model
 * partitioned again with that form supported, and what changed. */
int analyze_what_if(seam_context *ctx, seam_model *m, const seam_plan *plan, const seam_partition_options *o, bool as_json);
/* The same over every .onnx file of folder dir, summed per form (op and
 * reason): the models it occurs in, its nodes, and the change in device
 * subgraphs, nodes on the target, boundary bytes and estimated time;
 * ranked by the subgraphs it removes. A model that cannot be loaded or
 * partitioned is named, left out, and makes the exit status 1. */
int analyze_what_if_dir(const char *dir, cli_targets *t, bool as_json);

#endif
