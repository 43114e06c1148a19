/* Op family: reduce. */
#include "ops/infer.h"

const seam_op_def seam_ops_reduce[] = {
    {"", "", 0, NULL, NULL},
};
const size_t seam_ops_reduce_count = 0;
