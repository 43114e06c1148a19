/* CPU kernels: linalg. */
#include "ops/kernel.h"

const seam_cpu_binding seam_cpu_linalg[] = {
    {"", "", 0, {NULL, NULL}},
};
const size_t seam_cpu_linalg_count = 0;
