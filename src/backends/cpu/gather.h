/*
 * The tensor family's Gather and Scatter kernels (gather.c), bound in
 * tensor.c's table with check_fixed_size:
 *
 *     {"", "GatherND", 11, {cpu_gather_nd_run, check_fixed_size}},
 *
 * Each takes the data (any dtype of a fixed size) and integer indices
 * (int32 or int64, negative ones counting from the end of their axis);
 * the Scatter ops take the updates too, and ONNX's reduction attribute.
 */
#ifndef SEAM_CPU_GATHER_H
#define SEAM_CPU_GATHER_H

#include "backends/kernel.h"

seam_status cpu_gather_run(seam_kernel *k);
seam_status cpu_gather_elements_run(seam_kernel *k);
seam_status cpu_gather_nd_run(seam_kernel *k);
/* Scatter (opset 9) and ScatterElements. */
seam_status cpu_scatter_elements_run(seam_kernel *k);
seam_status cpu_scatter_nd_run(seam_kernel *k);

#endif
