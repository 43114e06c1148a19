/* Op family: tensor. */
#include "ops/infer.h"

const seam_op_def seam_ops_tensor[] = {
    {"", "", 0, NULL, NULL},
};
const size_t seam_ops_tensor_count = 0;
