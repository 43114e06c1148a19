/*
 * The CPU backend's kernels, by op. Each family file (elementwise.c,
 * linalg.c, ...) defines one table of bindings, e.g.
 *
 *     const seam_cpu_binding seam_cpu_activation[] = {
 *         {"", "Relu", 1, {run_relu, check_float_input}},
 *         ...
 *     };
 *
 * and kernels.c joins the tables into one index, built once per process,
 * that says which kernel runs a node:
 *
 *     const seam_kernel_def *kd = cpu_kernel_find(n->domain, n->op_type, n->opset);
 *
 * The kernels are written against the executor's kernel contract
 * (backends/kernel.h).
 */
#ifndef SEAM_CPU_KERNELS_H
#define SEAM_CPU_KERNELS_H

#include "backends/kernel.h"

/* A kernel for an op from opset `since` on. */
typedef struct seam_cpu_binding {
    const char *domain;   /* "" for ai.onnx */
    const char *op_type;
    int32_t since;
    seam_kernel_def kernel;
} seam_cpu_binding;

/* Each family file defines one table and its length. */
#define SEAM_CPU_FAMILY(fam)                        \
    extern const seam_cpu_binding seam_cpu_##fam[]; \
    extern const size_t seam_cpu_##fam##_count;
SEAM_OP_FAMILIES(SEAM_CPU_FAMILY)

/* The kernel that runs a node of (domain, op) at the model's opset for
 * the domain; NULL if the CPU backend has none. Domain "ai.onnx" is the
 * same as "".
 *
 * The op registry (ops/ops.h) says which version of the op the node is:
 * its entry for the opset. A binding applies to the op's entries with
 * since >= its own since, the newest such binding; an entry older than
 * every binding takes the oldest one (whose check refuses what it cannot
 * run, e.g. Scan before opset 9). An opset older than every entry of a
 * known op has no kernel. A kernel for an op with no registry entry (no
 * inference yet) still runs: the newest binding with since <= opset, the
 * newest for an unknown opset (-1), else the oldest. */
const seam_kernel_def *cpu_kernel_find(const char *domain, const char *op_type, int64_t opset);

/* Whether the kernel takes sequence and optional values (core/tensor.h):
 * the sequence family's kernels (sequence.c), If, Loop and SequenceMap. The executor
 * refuses such values to every other kernel. */
bool cpu_kernel_takes_values(const seam_kernel_def *kd);

/* The two above as the lookup an executor is made with. */
const seam_kernel_lookup *cpu_host_kernels(void);

#endif
