/* Op family: rnn. */
#include "ops/infer.h"

const seam_op_def seam_ops_rnn[] = {
    {"", "", 0, NULL, NULL},
};
const size_t seam_ops_rnn_count = 0;
