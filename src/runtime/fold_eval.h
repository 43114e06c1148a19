/* Folding with a choice (fold_eval.c): seam_model_fold makes shape
 * arithmetic on symbolic dims DimExpr nodes (ops/symdim.c), for the
 * partitioner; a model written for other runtimes (seam quantize's) keeps
 * standard ops only. */
#ifndef SEAM_RUNTIME_FOLD_EVAL_H
#define SEAM_RUNTIME_FOLD_EVAL_H

#include <stdbool.h>

#include "seam.h"

seam_status runtime_fold(seam_model *m, bool dimexpr, int32_t *folded_out);

#endif
