/* CPU kernels: cast. */
#include "ops/kernel.h"

const seam_cpu_binding seam_cpu_cast[] = {
    {"", "", 0, {NULL, NULL}},
};
const size_t seam_cpu_cast_count = 0;
