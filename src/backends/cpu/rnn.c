/* CPU kernels: rnn. */
#include "ops/kernel.h"

const seam_cpu_binding seam_cpu_rnn[] = {
    {"", "", 0, {NULL, NULL}},
};
const size_t seam_cpu_rnn_count = 0;
