/* The pipeline's state, shared by pipeline.c (the API: create, inputs,
 * run, outputs) and move.c (what travels: messages, waits, agreement).
 * Built with MPI only (SEAM_WITH_MPI); include/seam_mpi.h is the API.
 *
 *     rank 0:  x[m] --> stage 0 --h1[m]-->
 *     rank 1:                   --h1[m]--> stage 1 --h2[m]-->
 *     rank 2:                                      --h2[m]--> stage 2 --y[m]--> rank 0
 *
 * A value travels as one message on the pipeline's own communicator (a
 * duplicate of the caller's), its tag the value's index in the plan's
 * "values" plus one (tag 0 carries pl_agree's statuses): a header (run, micro-batch, dtype, rank, dims, bytes) and the
 * bytes. Sends are MPI_Isend from one of two buffers per value, so a
 * stage runs micro-batch m + 1 while m's values are still on their way; a
 * buffer is reused (at m + 2) once its sends completed. Every wait polls
 * (MPI_Improbe, MPI_Test) against a deadline: no progress for the stage
 * timeout fails the call naming the rank waited for. Rank 0 takes the
 * graph outputs as they come, also while it waits for anything else, so
 * no stage waits on it. */
#ifndef SEAM_MPI_PIPELINE_H
#define SEAM_MPI_PIPELINE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/context.h"
#include "core/tensor.h"
#include "runtime/staged.h"
#include "seam_mpi.h"

#define HDR_WORDS 24                            /* run, micro-batch, dtype, rank, dims[16], bytes: 192 bytes */
#define HDR_BYTES (HDR_WORDS * sizeof(int64_t)) /* the data after it stays 64-byte aligned */
#define HDR_NBYTES (4 + SEAM_MAX_RANK)          /* the word holding the byte count */
#define PL_TAG_AGREE 0                          /* the statuses before a run (pl_agree) */
#define PL_TAG(value) ((value) + 1)             /* a value's messages */

/* A tensor as it travels: a buffer with the header and the bytes. */
typedef struct msg {
    uint8_t *buf;
    size_t cap;
    int32_t dtype, rank;
    int64_t dims[SEAM_MAX_RANK];
    size_t nbytes;
    const void *data;
} msg;

/* A value this rank sends: to whom, from two buffers in turn. */
typedef struct sender {
    int32_t value;   /* index into the plan's values */
    int32_t n_dest;
    int *dest;       /* ranks */
    msg slot[2];
    MPI_Request *req[2];
    int n_req[2], mb[2];
} sender;

/* A graph input rank 0 was given for the next run. */
typedef struct feed {
    bool set;
    int32_t dtype, rank;
    int64_t dims[SEAM_MAX_RANK];
    const void *data;
    size_t nbytes;
} feed;

struct seam_pipeline {
    seam_context *ctx;      /* the caller's: errors */
    MPI_Comm comm;          /* the caller's, duplicated */
    bool have_comm;
    int rank, size, M;
    int64_t run;            /* runs started, the current one's number */
    int64_t agreements;     /* pl_agree calls so far */
    double timeout_s, last_progress;
    double grace;           /* added to the deadline of rank 0's last collection */
    bool draining, broken;
    char *path;
    staged_plan *p;
    const seam_backend *targets[40];
    int32_t n_targets;
    int32_t n_threads;
    seam_model *m;
    seam_session *s;
    int64_t (*sig_dims)[SEAM_MAX_RANK]; /* the stage inputs' shapes the session was made for */
    int32_t *sig_rank;
    int32_t n_in, n_out;    /* the stage model's inputs and outputs (indices into values) */
    int32_t *in_idx, *out_idx;
    msg *rin;               /* per stage input: the last received */
    int32_t n_send;
    sender *send;
    /* rank 0 */
    feed *feeds;            /* per graph input (p->inputs order) */
    seam_status input_status; /* a refused seam_pipeline_set_input since the last run */
    char input_error[SEAM_ERROR_MAX];
    msg *outs;              /* per graph output and micro-batch: [k * M + mb] */
    int32_t *got;           /* per graph output: parts in */
    seam_tensor *joined;    /* per graph output: the parts joined (M > 1) */
    double t_compute, t_wait, t_start, t_run;
};

double pl_now(void);
/* The pipeline's failure: the message on ctx (prefixed nothing: the
 * caller knows its own rank), the pipeline broken. */
seam_status pl_fail(seam_pipeline *P, seam_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* An MPI call's failure, naming the call and the peer. */
seam_status pl_mpi_fail(seam_pipeline *P, int code, const char *call, int peer, const char *name);
bool pl_grow(msg *m, size_t need);
/* Waits for req (with peer, about value `name` of micro-batch mb) within
 * the deadline; rank 0 takes outputs meanwhile. */
seam_status pl_wait_req(seam_pipeline *P, MPI_Request *req, int peer, const char *name, int mb, bool sending);
/* Receives value v of micro-batch mb from rank src into dst. poll: only
 * when it is there already (*got says). */
seam_status pl_recv_value(seam_pipeline *P, int src, int32_t v, int mb, msg *dst, bool poll, bool *got);
/* Rank 0: every graph output part that has arrived, taken. */
seam_status pl_drain(seam_pipeline *P);
/* Sends (dtype, rank, dims, data) as s's value of micro-batch mb. */
seam_status pl_send_value(seam_pipeline *P, sender *s, int mb, int32_t dtype, int32_t rank, const int64_t *dims,
                          const void *data, size_t nbytes);
/* Every rank: every rank's `mine` sent to rank 0, which answers with the
 * lowest failing rank's status and message, or names the lowest rank that
 * did not come within the deadline (the pipeline then broken); on every
 * rank that came, that status and "rank R: message". Point to point, so
 * that a missing rank is named. */
seam_status pl_agree(seam_pipeline *P, seam_status mine);
/* A collective request (the communicator's duplicate) waited for within
 * the deadline. */
seam_status pl_wait_collective(seam_pipeline *P, MPI_Request *req, const char *what);

#endif
