/*
 * The calls into a backend table (backends/backend.h): a bad table is
 * refused where it enters seam (a partition target, a session's backend),
 * the message naming where it came from; optional slots get their
 * defaults; a version-1 table's version-2 fields are never read.
 */
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "check.h"
#include "tiny_model.h"

static bool yes(void *ctx, const seam_node_view *n, char *why, size_t why_size) { return true; }
static bool no_reason(void *ctx, const seam_node_view *n, char *why, size_t why_size) { return false; }
static void *compile_nothing(void *ctx, const seam_subgraph_view *sg, const char *const *options, int32_t n_options,
                             char *err, size_t err_size) {
    return NULL;
}

static seam_backend good(void) {
    seam_backend b;
    memset(&b, 0, sizeof(b));
    b.abi_version = SEAM_BACKEND_ABI_VERSION;
    b.name = "npu";
    b.supports = yes;
    return b;
}

/* Partitioning with one target b fails with a message containing want. */
static void partition_refuses(seam_model *m, seam_context *ctx, const seam_backend *b, const char *want) {
    const seam_backend *targets[1] = {b};
    seam_partition_options po = seam_partition_defaults();
    po.targets = targets;
    po.n_targets = 1;
    seam_plan *plan = NULL;
    CHECK(seam_partition(m, &po, &plan) == SEAM_STATUS_INVALID_ARGUMENT);
    CHECK(plan == NULL);
    CHECK_CONTAINS(seam_context_last_error(ctx), want);
}

int main(void) {
    seam_context *ctx = NULL;
    seam_model *m = NULL;
    size_t n = 0;
    uint8_t *bytes = tiny_model_bytes(&n);
    CHECK(seam_context_create(&ctx) == SEAM_STATUS_OK);
    CHECK(bytes && seam_model_load_buffer(ctx, bytes, n, NULL, &m) == SEAM_STATUS_OK);
    free(bytes);
    if (!m) CHECK_DONE();

    /* backend_check, one message per fault, each naming the origin */
    seam_backend b = good();
    CHECK(backend_check(ctx, &b, "target 0") == SEAM_STATUS_OK);
    CHECK(backend_check(ctx, NULL, "target 3") == SEAM_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(seam_context_last_error(ctx), "target 3: the table is NULL");
    b.abi_version = 0;
    partition_refuses(m, ctx, &b, "target 0: ABI version 0 is not one seam knows (1 to 2)");
    b.abi_version = SEAM_BACKEND_ABI_VERSION + 1;
    partition_refuses(m, ctx, &b, "target 0: ABI version 3 is not one seam knows");
    b = good(), b.name = "";
    partition_refuses(m, ctx, &b, "target 0: the table has no name");
    b = good(), b.name = "cpu";
    partition_refuses(m, ctx, &b, "target 0: the name 'cpu' is reserved");
    b = good(), b.name = "constant";
    partition_refuses(m, ctx, &b, "target 0: the name 'constant' is reserved");
    b = good(), b.supports = NULL;
    partition_refuses(m, ctx, &b, "target 0: backend 'npu' has no supports()");
    b = good(), b.compile = compile_nothing;
    partition_refuses(m, ctx, &b, "target 0: backend 'npu' has compile without run, or run without compile");
    b = good(), b.memory = (seam_memory)7;
    partition_refuses(m, ctx, &b,
                      "target 0: backend 'npu' has memory 7, neither SEAM_MEMORY_HOST nor SEAM_MEMORY_DEVICE");

    /* a version-1 table ends before compile: whatever follows it in
     * memory is not a slot (here: a compile without run, a bad memory) */
    b = good(), b.abi_version = 1, b.compile = compile_nothing, b.memory = (seam_memory)7;
    CHECK(backend_check(ctx, &b, "target 0") == SEAM_STATUS_OK);
    CHECK(!backend_compiles(&b));
    CHECK(backend_memory(&b) == SEAM_MEMORY_HOST);
    char err[128] = "";
    CHECK(backend_compile(&b, NULL, NULL, 0, err, sizeof(err)) == NULL);
    CHECK_CONTAINS(err, "does not compile");
    backend_release_compiled(&b, (void *)&b); /* no slot: nothing happens */

    /* defaults: node_cost 1, a refusal without a reason says so */
    b = good(), b.supports = no_reason;
    char why[64];
    CHECK(!backend_supports(&b, NULL, why, sizeof(why)));
    CHECK(strcmp(why, "not supported") == 0);
    CHECK(backend_node_cost(&b, NULL) == 1);
    backend_release(&b); /* no release slot */
    backend_release(NULL);

    /* the backends a session is given are checked at creation */
    seam_backend bad = good();
    bad.run = NULL, bad.compile = compile_nothing;
    const seam_backend *list[2] = {seam_backend_dnnl(), &bad};
    seam_session_options so = {0};
    so.targets = list;
    so.n_targets = 2;
    seam_session *s = NULL;
    CHECK(seam_session_create(m, &so, &s) == SEAM_STATUS_INVALID_ARGUMENT && s == NULL);
    CHECK_CONTAINS(seam_context_last_error(ctx),
                   "seam_session_options.targets[1]: backend 'npu' has compile without run");
    list[1] = NULL;
    CHECK(seam_session_create(m, &so, &s) == SEAM_STATUS_INVALID_ARGUMENT && s == NULL);
    CHECK_CONTAINS(seam_context_last_error(ctx), "seam_session_options.targets[1]: the table is NULL");
    so.targets = NULL;
    CHECK(seam_session_create(m, &so, &s) == SEAM_STATUS_INVALID_ARGUMENT && s == NULL);
    CHECK_CONTAINS(seam_context_last_error(ctx), "n_targets is 2 and targets is NULL");
    so.n_targets = 1, so.targets = list; /* dnnl alone is fine */
    CHECK(seam_session_create(m, &so, &s) == SEAM_STATUS_OK && s != NULL);
    seam_session_free(s);

    seam_model_free(m);
    seam_context_free(ctx);
    CHECK_DONE();
}
