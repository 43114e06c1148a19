/* seam_backend_dnnl() in a build without oneDNN (-DSEAM_WITH_DNNL=OFF): a
 * table named "dnnl" that refuses every node and every compile with the
 * reason, so a plan, a saved model or a run that asks for dnnl says why it
 * cannot have it instead of failing on a missing symbol. */
#include <stdio.h>

#include "seam_backend.h"

#define WHY "this seam was built without oneDNN (-DSEAM_WITH_DNNL=OFF); rebuild with -DSEAM_WITH_DNNL=ON for target dnnl"

static bool off_supports(void *ctx, const seam_node_view *node, char *why, size_t why_size) {
    snprintf(why, why_size, "%s", WHY);
    return false;
}

static void *off_compile(void *ctx, const seam_subgraph_view *sg, const char *const *options, int32_t n_options,
                         char *err, size_t err_size) {
    snprintf(err, err_size, "subgraph '%s': %s", sg->name, WHY);
    return NULL;
}

static seam_status off_run(void *ctx, void *compiled, const seam_tensor_view *inputs, int32_t n_inputs,
                           seam_buffer *outputs, int32_t n_outputs, char *err, size_t err_size) {
    snprintf(err, err_size, "%s", WHY);
    return SEAM_STATUS_UNSUPPORTED;
}

static void off_release_compiled(void *ctx, void *compiled) {}

static const seam_backend dnnl_off = {
    .abi_version = SEAM_BACKEND_ABI_VERSION,
    .name = "dnnl",
    .supports = off_supports,
    .compile = off_compile,
    .run = off_run,
    .release_compiled = off_release_compiled,
    .memory = SEAM_MEMORY_HOST,
};

const seam_backend *seam_backend_dnnl(void) { return &dnnl_off; }

bool seam_backend_dnnl_bf16(void) { return false; }
