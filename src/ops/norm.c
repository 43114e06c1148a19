/* Op family: norm. */
#include "ops/infer.h"

const seam_op_def seam_ops_norm[] = {
    {"", "", 0, NULL, NULL},
};
const size_t seam_ops_norm_count = 0;
