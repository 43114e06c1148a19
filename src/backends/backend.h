/*
 * Every call seam makes into a backend table (seam_backend.h) goes through
 * these, as ggml's go through ggml_backend_supports_op and friends: the
 * table is checked once, where it enters seam (backend_check), and the
 * optional slots get their defaults here, so callers never test a slot.
 *
 *     if ((st = backend_check(ctx, b, "target 2"))) return st;
 *     if (backend_supports(b, view, why, sizeof(why))) ...
 *     void *c = backend_compiles(b) ? backend_compile(b, sg, opts, n, err, sizeof(err)) : NULL;
 *     st = backend_run(b, c, ins, n_in, outs, n_out, err, sizeof(err));
 *     backend_release_compiled(b, c);
 *
 * A version-1 table ends before compile: its compile, run,
 * release_compiled and memory are never read (they are absent, and the
 * memory is SEAM_MEMORY_HOST).
 */
#ifndef SEAM_BACKENDS_BACKEND_H
#define SEAM_BACKENDS_BACKEND_H

#include "seam_backend.h"

/* Checks a table where it enters seam: not NULL, an ABI version seam
 * knows (1 to SEAM_BACKEND_ABI_VERSION), a name that is not empty and not
 * reserved ("cpu", "constant"), supports() present, compile and run both
 * or neither, a valid memory. `where` names the table's origin and starts
 * the message ("backend library ./toy.so", "target 2",
 * "seam_session_options.backends[1]"). Returns SEAM_STATUS_OK, or
 * SEAM_STATUS_INVALID_ARGUMENT with the message set on ctx. */
seam_status backend_check(seam_context *ctx, const seam_backend *b, const char *where);

/* supports(); on no, why holds the backend's reason, or "not supported"
 * when it gave none. */
bool backend_supports(const seam_backend *b, const seam_node_view *node, char *why, size_t why_size);
/* node_cost(); default 1. */
double backend_node_cost(const seam_backend *b, const seam_node_view *node);
/* Whether b has node_cost_with (a version-2 table). */
bool backend_has_cost_with(const seam_backend *b);
/* cost_traits() (a version-2 slot); default 0 and 0. The values are the
 * backend's as given: the caller keeps what is finite and positive. */
void backend_cost_traits(const seam_backend *b, double *launch_us, double *transfer_gbps);
/* run_team (a version-2 slot), or NULL. */
void (*backend_run_team(const seam_backend *b))(void *, int32_t, void (*)(void *, int32_t, int32_t), void *);
/* Whether the backend compiles its subgraphs (compile and run present). */
bool backend_compiles(const seam_backend *b);
/* compile(); NULL with err set on failure, or when the backend does not
 * compile. */
void *backend_compile(const seam_backend *b, const seam_subgraph_view *subgraph, const char *const *options,
                      int32_t n_options, char *err, size_t err_size);
/* run() on a handle from backend_compile. */
seam_status backend_run(const seam_backend *b, void *compiled, const seam_tensor_view *inputs, int32_t n_inputs,
                        seam_buffer *outputs, int32_t n_outputs, char *err, size_t err_size);
/* release_compiled(); nothing when the slot is absent or compiled is NULL. */
void backend_release_compiled(const seam_backend *b, void *compiled);
/* compile_log() of a compiled handle; NULL when the slot is absent. */
const char *backend_compile_log(const seam_backend *b, void *compiled);
/* release(ctx); nothing when the slot is absent or b is NULL. */
void backend_release(const seam_backend *b);
/* Where the backend keeps tensors; SEAM_MEMORY_HOST for a version-1 table. */
seam_memory backend_memory(const seam_backend *b);

/* Instances (instance.c, seam_backend_instance): the backend an instance
 * forwards to (b itself when it is none), and the options it gives every
 * compile before the session's (NULL, *n 0, when none). */
const seam_backend *backend_instance_base(const seam_backend *b);
const char *const *backend_instance_options(const seam_backend *b, int32_t *n);

#endif
