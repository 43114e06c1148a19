/* CPU kernels: index. */
#include "ops/kernel.h"

const seam_cpu_binding seam_cpu_index[] = {
    {"", "", 0, {NULL, NULL}},
};
const size_t seam_cpu_index_count = 0;
