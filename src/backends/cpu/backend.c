/* The built-in `cpu` backend as the partitioner sees it: it supports every
 * node the executor can run on the host, that is every op with a CPU
 * kernel, and ai.seam Subgraph nodes (the runtime runs them: runtime/subgraph.c). It is always the
 * last fallback. */
#include <stdio.h>
#include <string.h>

#include "backends/cpu/kernels.h"
#include "seam_backend.h"

static bool cpu_supports(void *ctx, const seam_node_view *v, char *why, size_t n) {
    const ir_node *node = v->impl;
    if (strcmp(v->domain, "ai.seam") == 0 && strcmp(v->op_type, "Subgraph") == 0) return true; /* the runtime runs it */
    if (cpu_kernel_find(v->domain, v->op_type, v->opset)) return true;
    const seam_op_def *def = node->def ? node->def : seam_op_find(v->domain, v->op_type, v->opset);
    snprintf(why, n, def ? "%s has no CPU kernel" : "%s is an unknown op", v->op_type);
    return false;
}

static const seam_backend cpu_backend = {
    /* .abi_version = */ SEAM_BACKEND_ABI_VERSION,
    /* .name = */ "cpu",
    /* .ctx = */ NULL,
    /* .supports = */ cpu_supports,
    /* .node_cost = */ NULL,
    /* .release = */ NULL,
    /* .compile = */ NULL,
    /* .run = */ NULL,
    /* .release_compiled = */ NULL,
    /* .memory = */ SEAM_MEMORY_HOST,
    /* .compile_log = */ NULL,
    /* .cost_traits = */ NULL,
    /* .run_team = */ NULL,
    /* .reserved = */ {NULL},
};

const seam_backend *seam_backend_cpu(void) { return &cpu_backend; }
