/* Instances of a target (seam_backend_instance, include/seam_partition.h):
 * a table that forwards every call to its base backend under a name of its
 * own ("dnnl:1"), with options of its own ("threads=2") that
 * seam_plan_apply writes first into each of its subgraphs' target_options. To placement it is a target like
 * any other, with its own memory budget; two instances of one device are
 * placed jointly by the same search as any two targets. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "core/context.h"

#define INSTANCE_MAX_OPTIONS 16

typedef struct instance {
    seam_backend table; /* first: the table is the instance */
    const seam_backend *base;
    char name[96];
    int32_t n_opts;
    char *opts[INSTANCE_MAX_OPTIONS];
} instance;

static const seam_backend *base_of(void *ctx) { return ((const instance *)ctx)->base; }

static bool inst_supports(void *ctx, const seam_node_view *node, char *why, size_t why_size) {
    return backend_supports(base_of(ctx), node, why, why_size);
}

/* (the base's node_cost_with, given the instance's own options, where it has one) */
static double inst_node_cost(void *ctx, const seam_node_view *node) {
    const instance *in = ctx;
    if (in->n_opts && backend_has_cost_with(in->base))
        return in->base->node_cost_with(in->base->ctx, node, (const char *const *)in->opts, in->n_opts);
    return backend_node_cost(in->base, node);
}

static void inst_release(void *ctx) {
    instance *in = ctx;
    for (int32_t k = 0; k < in->n_opts; k++) free(in->opts[k]);
    free(in);
}

/* (the instance's own options reach compile through the Subgraph node's
 * target_options, where seam_plan_apply puts them first) */
static void *inst_compile(void *ctx, const seam_subgraph_view *sg, const char *const *options, int32_t n_options,
                          char *err, size_t err_size) {
    return backend_compile(base_of(ctx), sg, options, n_options, err, err_size);
}

static seam_status inst_run(void *ctx, void *compiled, const seam_tensor_view *inputs, int32_t n_inputs,
                            seam_buffer *outputs, int32_t n_outputs, char *err, size_t err_size) {
    return backend_run(base_of(ctx), compiled, inputs, n_inputs, outputs, n_outputs, err, err_size);
}

static void inst_release_compiled(void *ctx, void *compiled) { backend_release_compiled(base_of(ctx), compiled); }

static const char *inst_compile_log(void *ctx, void *compiled) { return backend_compile_log(base_of(ctx), compiled); }

static void inst_cost_traits(void *ctx, double *launch_us, double *transfer_gbps) {
    backend_cost_traits(base_of(ctx), launch_us, transfer_gbps);
}

static void inst_run_team(void *ctx, int32_t n_threads, void (*body)(void *, int32_t, int32_t), void *arg) {
    backend_run_team(base_of(ctx))(((const instance *)ctx)->base->ctx, n_threads, body, arg);
}

const seam_backend *backend_instance_base(const seam_backend *b) {
    while (b && b->release == inst_release) b = ((const instance *)b->ctx)->base;
    return b;
}

const char *const *backend_instance_options(const seam_backend *b, int32_t *n) {
    *n = 0;
    if (!b || b->release != inst_release) return NULL;
    const instance *in = b->ctx;
    *n = in->n_opts;
    return (const char *const *)in->opts;
}

seam_status seam_backend_instance(seam_context *ctx, const seam_backend *base, int32_t index,
                                  const char *const *options, int32_t n_options, seam_backend **out) {
    if (!out) return seam_error(ctx, SEAM_STATUS_INVALID_ARGUMENT, "seam_backend_instance: out is NULL");
    *out = NULL;
    seam_status st = backend_check(ctx, base, "seam_backend_instance's base");
    if (st) return st;
    if (n_options < 0 || n_options > INSTANCE_MAX_OPTIONS || (n_options > 0 && !options))
        return seam_error(ctx, SEAM_STATUS_INVALID_ARGUMENT, "seam_backend_instance: %d options (at most %d)", n_options,
                          INSTANCE_MAX_OPTIONS);
    instance *in = calloc(1, sizeof(*in));
    if (!in) return seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    if (index >= 0) snprintf(in->name, sizeof(in->name), "%.80s:%d", base->name, index);
    else snprintf(in->name, sizeof(in->name), "%.80s", base->name);
    for (int32_t k = 0; k < n_options; k++) {
        if (!options[k] || !(in->opts[k] = strdup(options[k]))) {
            in->n_opts = k;
            inst_release(in);
            return seam_error(ctx, options[k] ? SEAM_STATUS_OUT_OF_MEMORY : SEAM_STATUS_INVALID_ARGUMENT,
                              "seam_backend_instance: option %d %s", k, options[k] ? "out of memory" : "is NULL");
        }
        in->n_opts = k + 1;
    }
    in->base = base;
    seam_backend *t = &in->table;
    t->abi_version = SEAM_BACKEND_ABI_VERSION;
    t->name = in->name;
    t->ctx = in;
    t->supports = inst_supports;
    t->node_cost = inst_node_cost;
    t->release = inst_release;
    if (backend_compiles(base)) {
        t->compile = inst_compile, t->run = inst_run;
        t->release_compiled = inst_release_compiled;
        t->compile_log = inst_compile_log;
    }
    t->memory = backend_memory(base);
    t->cost_traits = inst_cost_traits;
    if (backend_run_team(base)) t->run_team = inst_run_team;
    *out = t;
    return SEAM_STATUS_OK;
}
