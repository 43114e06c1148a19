/* CPU kernels: tensor. */
#include "ops/kernel.h"

const seam_cpu_binding seam_cpu_tensor[] = {
    {"", "", 0, {NULL, NULL}},
};
const size_t seam_cpu_tensor_count = 0;
