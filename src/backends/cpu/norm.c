/* CPU kernels: norm. */
#include "ops/kernel.h"

const seam_cpu_binding seam_cpu_norm[] = {
    {"", "", 0, {NULL, NULL}},
};
const size_t seam_cpu_norm_count = 0;
