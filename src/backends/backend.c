/* The calls into a backend table (see backend.h). */
#include "backends/backend.h"

#include <stdio.h>
#include <string.h>

#include "core/context.h"

/* Version 2 added compile, run, release_compiled and memory: a version-1
 * table has no such fields, so they are read only from version 2 on. */
static bool has_v2(const seam_backend *b) { return b->abi_version >= 2; }

seam_status backend_check(seam_context *ctx, const seam_backend *b, const char *where) {
    if (!b) return seam_error(ctx, SEAM_STATUS_INVALID_ARGUMENT, "%s: the table is NULL", where);
    if (b->abi_version < 1 || b->abi_version > SEAM_BACKEND_ABI_VERSION)
        return seam_error(ctx, SEAM_STATUS_INVALID_ARGUMENT, "%s: ABI version %u is not one seam knows (1 to %d)",
                          where, b->abi_version, SEAM_BACKEND_ABI_VERSION);
    if (!b->name || !b->name[0])
        return seam_error(ctx, SEAM_STATUS_INVALID_ARGUMENT, "%s: the table has no name", where);
    if (strcmp(b->name, "cpu") == 0 || strcmp(b->name, "constant") == 0)
        return seam_error(ctx, SEAM_STATUS_INVALID_ARGUMENT, "%s: the name '%s' is reserved", where, b->name);
    if (!b->supports)
        return seam_error(ctx, SEAM_STATUS_INVALID_ARGUMENT, "%s: backend '%s' has no supports()", where, b->name);
    if (has_v2(b) && !b->compile != !b->run)
        return seam_error(ctx, SEAM_STATUS_INVALID_ARGUMENT,
                          "%s: backend '%s' has compile without run, or run without compile", where, b->name);
    if (has_v2(b) && b->memory != SEAM_MEMORY_HOST && b->memory != SEAM_MEMORY_DEVICE)
        return seam_error(ctx, SEAM_STATUS_INVALID_ARGUMENT,
                          "%s: backend '%s' has memory %d, neither SEAM_MEMORY_HOST nor SEAM_MEMORY_DEVICE", where,
                          b->name, (int)b->memory);
    return SEAM_STATUS_OK;
}

bool backend_supports(const seam_backend *b, const seam_node_view *node, char *why, size_t why_size) {
    why[0] = 0;
    if (b->supports(b->ctx, node, why, why_size)) return true;
    if (!why[0]) snprintf(why, why_size, "not supported");
    return false;
}

void (*backend_run_team(const seam_backend *b))(void *, int32_t, void (*)(void *, int32_t, int32_t), void *) {
    return b && b->abi_version >= 2 ? b->run_team : NULL;
}

void backend_cost_traits(const seam_backend *b, double *launch_us, double *transfer_gbps) {
    *launch_us = 0;
    *transfer_gbps = 0;
    if (b->abi_version >= 2 && b->cost_traits) b->cost_traits(b->ctx, launch_us, transfer_gbps);
}

double backend_node_cost(const seam_backend *b, const seam_node_view *node) {
    return b->node_cost ? b->node_cost(b->ctx, node) : 1;
}

bool backend_has_cost_with(const seam_backend *b) { return has_v2(b) && b->node_cost_with; }

bool backend_compiles(const seam_backend *b) { return has_v2(b) && b->compile && b->run; }

void *backend_compile(const seam_backend *b, const seam_subgraph_view *subgraph, const char *const *options,
                      int32_t n_options, char *err, size_t err_size) {
    if (!backend_compiles(b)) {
        snprintf(err, err_size, "backend '%s' does not compile subgraphs", b->name);
        return NULL;
    }
    return b->compile(b->ctx, subgraph, options, n_options, err, err_size);
}

seam_status backend_run(const seam_backend *b, void *compiled, const seam_tensor_view *inputs, int32_t n_inputs,
                        seam_buffer *outputs, int32_t n_outputs, char *err, size_t err_size) {
    if (!backend_compiles(b) || !compiled) {
        snprintf(err, err_size, "backend '%s' has no compiled subgraph to run", b->name);
        return SEAM_STATUS_INTERNAL;
    }
    return b->run(b->ctx, compiled, inputs, n_inputs, outputs, n_outputs, err, err_size);
}

void backend_release_compiled(const seam_backend *b, void *compiled) {
    if (compiled && has_v2(b) && b->release_compiled) b->release_compiled(b->ctx, compiled);
}

const char *backend_compile_log(const seam_backend *b, void *compiled) {
    return compiled && has_v2(b) && b->compile_log ? b->compile_log(b->ctx, compiled) : NULL;
}

void backend_release(const seam_backend *b) {
    if (b && b->release) b->release(b->ctx);
}

seam_memory backend_memory(const seam_backend *b) { return has_v2(b) ? b->memory : SEAM_MEMORY_HOST; }
