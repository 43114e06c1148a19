/* CPU kernels: control. */
#include "ops/kernel.h"

const seam_cpu_binding seam_cpu_control[] = {
    {"", "", 0, {NULL, NULL}},
};
const size_t seam_cpu_control_count = 0;
