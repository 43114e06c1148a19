/* CPU kernels: reduce. */
#include "ops/kernel.h"

const seam_cpu_binding seam_cpu_reduce[] = {
    {"", "", 0, {NULL, NULL}},
};
const size_t seam_cpu_reduce_count = 0;
