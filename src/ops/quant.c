/* Op family: quant. */
#include "ops/infer.h"

const seam_op_def seam_ops_quant[] = {
    {"", "", 0, NULL, NULL},
};
const size_t seam_ops_quant_count = 0;
