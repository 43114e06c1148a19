/* Op family: index. */
#include "ops/infer.h"

const seam_op_def seam_ops_index[] = {
    {"", "", 0, NULL, NULL},
};
const size_t seam_ops_index_count = 0;
