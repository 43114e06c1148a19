/*
 * The op registry: one entry per op, holding its type/shape inference and
 * (later) its CPU kernel. Entries live in one table per op family
 * (elementwise.c, conv.c, ...) and registry.c joins the tables.
 *
 * Adding an op is a local change: write its infer function next to its
 * family's others and add one line to that family's table, e.g.
 *
 *     static void infer_relu(seam_infer *ic) { infer_same_as_input(ic); }
 *     static const seam_kernel_def relu_cpu = {relu_run, relu_check};
 *     const seam_op_def seam_ops_activation[] = {
 *         {"", "Relu", 1, infer_relu, &relu_cpu},
 *         ...
 *     };
 */
#ifndef SEAM_OPS_H
#define SEAM_OPS_H

#include "ir/ir.h"

typedef struct seam_infer seam_infer;
typedef void (*seam_infer_fn)(seam_infer *ic);
typedef struct seam_kernel seam_kernel;
typedef struct seam_check seam_check;
typedef seam_status (*seam_kernel_fn)(seam_kernel *k);
typedef seam_status (*seam_check_fn)(seam_check *c);

/* An op's CPU implementation (see ops/kernel.h). */
typedef struct seam_kernel_def {
    seam_kernel_fn run;
    seam_check_fn check; /* (optional) at session creation; default: accept */
} seam_kernel_def;

struct seam_op_def {
    const char *domain;   /* "" for ai.onnx */
    const char *op_type;
    int32_t since;        /* first opset version this entry describes */
    seam_infer_fn infer;  /* NULL: outputs stay unknown */
    const seam_kernel_def *kernel; /* the CPU kernel, or NULL */
};

/* Each family file defines one table and its length. */
#define SEAM_OP_FAMILY(fam)                          \
    extern const seam_op_def seam_ops_##fam[];       \
    extern const size_t seam_ops_##fam##_count;

SEAM_OP_FAMILY(elementwise)
SEAM_OP_FAMILY(activation)
SEAM_OP_FAMILY(linalg)
SEAM_OP_FAMILY(pool)
SEAM_OP_FAMILY(norm)
SEAM_OP_FAMILY(reduce)
SEAM_OP_FAMILY(tensor)
SEAM_OP_FAMILY(index)
SEAM_OP_FAMILY(rnn)
SEAM_OP_FAMILY(control)
SEAM_OP_FAMILY(quant)
SEAM_OP_FAMILY(cast)
SEAM_OP_FAMILY(algebra)
SEAM_OP_FAMILY(signal)
SEAM_OP_FAMILY(spatial)
SEAM_OP_FAMILY(text)
SEAM_OP_FAMILY(training)

/* The CPU backend's kernels live in src/backends/cpu/, one file per op
 * family, each with a table of bindings. The registry joins every binding
 * into the op's entry when it builds its index, so at run time an op has
 * one entry holding both its inference and its kernel. A binding applies to
 * the op's entries with since >= its own since (the newest such binding). */
typedef struct seam_cpu_binding {
    const char *domain;
    const char *op_type;
    int32_t since;
    seam_kernel_def kernel;
} seam_cpu_binding;

#define SEAM_CPU_FAMILY(fam)                           \
    extern const seam_cpu_binding seam_cpu_##fam[];     \
    extern const size_t seam_cpu_##fam##_count;

SEAM_CPU_FAMILY(elementwise)
SEAM_CPU_FAMILY(activation)
SEAM_CPU_FAMILY(linalg)
SEAM_CPU_FAMILY(pool)
SEAM_CPU_FAMILY(norm)
SEAM_CPU_FAMILY(reduce)
SEAM_CPU_FAMILY(tensor)
SEAM_CPU_FAMILY(index)
SEAM_CPU_FAMILY(rnn)
SEAM_CPU_FAMILY(control)
SEAM_CPU_FAMILY(quant)
SEAM_CPU_FAMILY(cast)
SEAM_CPU_FAMILY(algebra)
SEAM_CPU_FAMILY(signal)
SEAM_CPU_FAMILY(spatial)
SEAM_CPU_FAMILY(text)
SEAM_CPU_FAMILY(training)

/* The entry for (domain, op) with the highest `since` <= opset; NULL if
 * seam does not know the op. Domain "ai.onnx" is the same as "". */
const seam_op_def *seam_op_find(const char *domain, const char *op_type, int64_t opset);

/* The version of `domain` the model imports ("" and "ai.onnx" are one
 * domain); -1 if it does not import it. */
int64_t seam_op_opset(const struct seam_model *m, const char *domain);

#endif
