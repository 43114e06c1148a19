/* Folding's last step (fold.c): every node whose outputs' contents are
 * known becomes a Constant, and Identities of initializers are bypassed.
 * seam_model_fold (runtime/fold_eval.c) computes what inference left
 * unknown first, then calls this. */
#ifndef SEAM_PARTITION_FOLD_H
#define SEAM_PARTITION_FOLD_H

#include "seam.h"

seam_status partition_fold_known(seam_model *m, int32_t *folded_out);

#endif
