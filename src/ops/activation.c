/* Op family: activation. */
#include "ops/infer.h"

const seam_op_def seam_ops_activation[] = {
    {"", "", 0, NULL, NULL},
};
const size_t seam_ops_activation_count = 0;
