/* CPU kernels: activation. */
#include "ops/kernel.h"

const seam_cpu_binding seam_cpu_activation[] = {
    {"", "", 0, {NULL, NULL}},
};
const size_t seam_cpu_activation_count = 0;
