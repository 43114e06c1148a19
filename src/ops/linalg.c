/* Op family: linalg. */
#include "ops/infer.h"

const seam_op_def seam_ops_linalg[] = {
    {"", "", 0, NULL, NULL},
};
const size_t seam_ops_linalg_count = 0;
