/* CPU kernels: elementwise. */
#include "ops/kernel.h"

const seam_cpu_binding seam_cpu_elementwise[] = {
    {"", "", 0, {NULL, NULL}},
};
const size_t seam_cpu_elementwise_count = 0;
