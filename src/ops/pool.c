/* Op family: pool. */
#include "ops/infer.h"

const seam_op_def seam_ops_pool[] = {
    {"", "", 0, NULL, NULL},
};
const size_t seam_ops_pool_count = 0;
