/* seam_mpi.h: a staged model's pipeline over a communicator the caller
 * passes (docs/scale-out.md). In libseam.so when it was built with MPI
 * (SEAM_WITH_MPI); installed only then. The CLI's `mpirun -np N seam run
 * STAGED.onnx` runs on the same calls.
 *
 * A staged model (seam partition MODEL --stages N -o STAGED.onnx) is cut
 * into N stages; rank r of the communicator runs stage r, holding its
 * weights alone. Pipeline rank 0 (the communicator's rank 0) gives the
 * inputs and gets the outputs; values between stages travel by MPI
 * point-to-point on a duplicate of the communicator, so the caller's own
 * messages never mix with seam's.
 *
 *     MPI_Init(&argc, &argv);                      // the caller's, as is the comm
 *     seam_context *ctx;  seam_context_create(&ctx);
 *     seam_pipeline *p;
 *     seam_pipeline_options o = {.micro_batches = 4};
 *     seam_pipeline_create(ctx, "staged.onnx", comm, &o, &p);   // every rank of comm
 *     if (rank == 0) seam_pipeline_set_input(p, "x", SEAM_DTYPE_FLOAT32, 2, dims, x);
 *     seam_pipeline_run(p);                         // every rank of comm
 *     if (rank == 0) seam_pipeline_output(p, 0, &y);
 *     seam_pipeline_free(p);
 *
 * seam_pipeline_create and seam_pipeline_run are collective: every rank
 * of the communicator calls them, in the same order. No call waits
 * forever: a rank that does not answer for options.stage_timeout_s
 * seconds (a rank that exited, was killed, hangs or never called) makes
 * the call fail on the ranks that waited for it, with a message naming
 * it. seam never calls MPI_Init, MPI_Finalize or MPI_Abort: the caller
 * decides whether a failed run ends the job (the CLI aborts it).
 *
 * A failure found before any value moved (a rank could not load its
 * stage; rank 0's inputs were refused) is agreed: every rank returns the
 * failing rank's status, and every rank's message reads "rank R: " and
 * that rank's message (a failing rank before any other; a rank that did
 * not come to the run at all before every other failure). Later failures are each rank's own. After a run
 * failed, the pipeline refuses further runs; free it. One thread uses a
 * pipeline at a time. */
#ifndef SEAM_MPI_H
#define SEAM_MPI_H

#include <mpi.h>

#include "seam.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct seam_pipeline seam_pipeline;

typedef struct seam_pipeline_options {
    int32_t n_threads;        /* this rank's worker threads; 0: one per core */
    int32_t micro_batches;    /* the inputs' dim 0 cut into this many parts, which
                                 flow through the stages one after another;
                                 0 or 1: whole */
    double stage_timeout_s;   /* a wait without progress for this long fails; 0: 10 s */
    /* Backends the stages' saved subgraphs name, besides the built-in ones
     * and the plug-ins seam_backend_find finds by name; may be NULL. */
    const seam_backend *const *targets;
    int32_t n_targets;
} seam_pipeline_options;

/* Every rank of comm: loads its stage of the staged model at path (the
 * file must be readable on every rank). The communicator's size must be
 * the model's stage count; comm is duplicated, and stays the caller's.
 * MPI must be initialised (MPI_THREAD_SINGLE is enough: seam calls MPI
 * from the calling thread alone). When a rank does not call it within the
 * stage timeout, the others fail, and MPI's duplication of comm is still
 * under way on them (a collective cannot be cancelled): leave comm alone
 * then (do not free it) and end the job, as the CLI does (MPI_Abort). */
SEAM_API seam_status seam_pipeline_create(seam_context *ctx, const char *path, MPI_Comm comm,
                                          const seam_pipeline_options *options, seam_pipeline **pipeline_out);
SEAM_API void seam_pipeline_free(seam_pipeline *pipeline);

/* This process's pipeline rank (the communicator's rank), and the rank count. */
SEAM_API int32_t seam_pipeline_rank(const seam_pipeline *pipeline);
SEAM_API int32_t seam_pipeline_stages(const seam_pipeline *pipeline);

/* The model's graph inputs and outputs, on every rank. */
SEAM_API int32_t seam_pipeline_input_count(const seam_pipeline *pipeline);
SEAM_API const char *seam_pipeline_input_name(const seam_pipeline *pipeline, int32_t index);
SEAM_API int32_t seam_pipeline_output_count(const seam_pipeline *pipeline);
SEAM_API const char *seam_pipeline_output_name(const seam_pipeline *pipeline, int32_t index);

/* Rank 0 only: binds graph input `name` to caller-owned data (dense,
 * row-major), not copied: it must stay valid until the run returns. A
 * wrong name, dtype, rank or fixed dim is refused naming the input, and
 * so is a first dim the micro-batches do not divide; the next run then
 * fails on every rank (agreed), so the other ranks never wait for it. */
SEAM_API seam_status seam_pipeline_set_input(seam_pipeline *pipeline, const char *name, seam_dtype dtype,
                                             int32_t rank, const int64_t *dims, const void *data);

/* Any rank: this rank cannot take part in the next run (rank 0 could not
 * read an input file, say): the next run fails on every rank with
 * `status` and "rank R: why", and the pipeline runs again after it. A
 * refusal of seam_pipeline_set_input's counts the same way; the first
 * one since the last run is the one said. */
SEAM_API seam_status seam_pipeline_refuse_run(seam_pipeline *pipeline, seam_status status, const char *why);

/* Every rank: one run of the whole model over the inputs rank 0 set
 * (every input, every run). Input shapes may change between runs; a
 * stage meeting new shapes loads its model again for them. */
SEAM_API seam_status seam_pipeline_run(seam_pipeline *pipeline);

/* Rank 0 only: output `index` of the last run, its micro-batches joined
 * along dim 0; owned by the pipeline, valid until the next run or free. */
SEAM_API seam_status seam_pipeline_output(seam_pipeline *pipeline, int32_t index, seam_tensor_view *view_out);

/* What this rank did in the last run. */
typedef struct seam_pipeline_stats {
    int32_t rank, stages;     /* this rank's stage, and the stage count */
    int32_t n_nodes;          /* the stage's nodes (as the staged file counts them) */
    int64_t weight_bytes;     /* the stage's weights: all this rank holds */
    int32_t micro_batches;
    double run_ms;            /* the last run, from its start to its end on this rank */
    double compute_ms;        /* of which running the stage's model */
    double wait_ms;           /* and waiting for values from, or sends to, other ranks */
} seam_pipeline_stats;
SEAM_API seam_status seam_pipeline_get_stats(const seam_pipeline *pipeline, seam_pipeline_stats *stats_out);

#ifdef __cplusplus
}
#endif

#endif
