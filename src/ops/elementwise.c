/* Op family: elementwise. */
#include "ops/infer.h"

const seam_op_def seam_ops_elementwise[] = {
    {"", "", 0, NULL, NULL},
};
const size_t seam_ops_elementwise_count = 0;
