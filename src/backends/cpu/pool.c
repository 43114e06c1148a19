/* CPU kernels: pool. */
#include "ops/kernel.h"

const seam_cpu_binding seam_cpu_pool[] = {
    {"", "", 0, {NULL, NULL}},
};
const size_t seam_cpu_pool_count = 0;
