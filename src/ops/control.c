/* Op family: control. */
#include "ops/infer.h"

const seam_op_def seam_ops_control[] = {
    {"", "", 0, NULL, NULL},
};
const size_t seam_ops_control_count = 0;
