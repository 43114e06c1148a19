/*
 * The executor's own pieces, shared by its files:
 *
 *   exec.c          create, run, reset, free
 *   fuse.c          Constant binding, Identity aliases, activation fusion
 *   plan_memory.c   the activation slab, planned from lifetimes
 *   kernel.c        the kernel contract's helpers (backends/kernel.h)
 *   subgraph.c      the ai.seam Subgraph runner
 */
#ifndef SEAM_EXEC_IMPL_H
#define SEAM_EXEC_IMPL_H

#include "runtime/exec.h"

/* Bytes of one element as the executor stores it (an ir_bytes per string
 * element); 0 for an unknown dtype. */
size_t exec_elem_bytes(int32_t dtype);

/* t views the IR tensor's data (no copy). */
void exec_tensor_from_ir(seam_tensor *t, const ir_tensor *x);

/* Binds Constant nodes, makes Identity outputs aliases and fuses
 * activations into their producers (after every node's check, before
 * planning). */
void exec_fuse(seam_exec *e);

/* Places every value whose size is known before the run in one slab.
 * SEAM_STATUS_OUT_OF_MEMORY when the slab or the planner's own memory
 * cannot be had. */
seam_status exec_plan_memory(seam_exec *e);

/* Places the values whose size only a run tells (exec_value.seen) in the
 * dynamic slab, from the largest sizes the runs so far gave them; called
 * before a run when the last one allocated some (seam_exec.dyn_missed). */
void exec_plan_dynamic(seam_exec *e);

/* Frees the string bytes kernel_bytes gave out (the root executor's). */
void exec_free_bytes(seam_exec *e);

/* kernel_fail with the status given: the message names the node. */
seam_status kernel_error(seam_kernel *k, seam_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The kernel of ai.seam Subgraph nodes (subgraph.c). */
extern const seam_kernel_def exec_subgraph_kernel;

#endif
