/* The context behind seam_context: the last error's message, and settings
 * shared by every handle made from it. No global state lives anywhere else. */
#ifndef SEAM_CONTEXT_H
#define SEAM_CONTEXT_H

#include <stdbool.h>

#include "seam.h"

#define SEAM_ERROR_MAX 2048

struct seam_context {
    seam_status last_status;
    char last_error[SEAM_ERROR_MAX];
    /* Internal, for tests: the loader unpacks the whole file at once
     * instead of streaming the top graph's nodes (src/onnx/load.c). */
    bool load_whole;
    /* Internal, for tests: called by the loader between its two passes
     * over the top graph's nodes, to change the bytes under it as another
     * process writing the mapped file could (src/onnx/load.c). */
    void (*load_between_passes)(void *arg);
    void *load_between_passes_arg;
    /* SEAM_TRACE_PHASES set when the context was made: seam_phase prints
     * each phase's CPU time and memory to stderr. */
    bool trace_phases;
    double phase_cpu;
    /* SEAM_SELF_CHECK set (and not "0") when the context was made: seam
     * checks itself as it goes, on in the test command. After every node
     * the executor runs, each output's dtype and shape are compared with
     * what inference said (src/runtime/exec.c); every plan the partitioner
     * makes is validated before it is returned (src/partition/validate.c).
     * A disagreement fails the call with SEAM_STATUS_INTERNAL, naming the
     * node. */
    bool self_check;
};

/* With tracing on (SEAM_TRACE_PHASES), prints "seam phase <what>: CPU
 * seconds since the last phase, resident and peak memory" to stderr; for
 * profiling big models phase by phase. */
void seam_phase(seam_context *ctx, const char *what);

/* Records a formatted message and returns status, so callers can write
 * `return seam_error(ctx, SEAM_STATUS_INVALID_MODEL, "node %d ...", i);`.
 * ctx may be NULL (the message is then dropped). */
seam_status seam_error(seam_context *ctx, seam_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Puts "prefix: " in front of the current message (for adding where an
 * error happened as it travels up, e.g. the file name). */
void seam_error_prefix(seam_context *ctx, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
