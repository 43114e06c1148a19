/* CPU kernels: quant. */
#include "ops/kernel.h"

const seam_cpu_binding seam_cpu_quant[] = {
    {"", "", 0, {NULL, NULL}},
};
const size_t seam_cpu_quant_count = 0;
