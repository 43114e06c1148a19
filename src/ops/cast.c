/* Op family: cast. */
#include "ops/infer.h"

const seam_op_def seam_ops_cast[] = {
    {"", "", 0, NULL, NULL},
};
const size_t seam_ops_cast_count = 0;
