/* The library's pipeline over a communicator the caller made
 * (include/seam_mpi.h), through libseam.so's exported API alone. Run by
 * tests/checks/check_mpi.py as
 *
 *     mpirun -np 4 mpi_pipeline STAGED.onnx PLAIN.onnx HIDDEN
 *
 * STAGED.onnx: a 3-stage MLP whose input x is [N, HIDDEN]; PLAIN.onnx:
 * the same plan without stages. World ranks 0-2 split off a communicator
 * of their own, in reverse order (pipeline rank 0 is world rank 2), and
 * world rank 3 stays out. Checked:
 *   - runs of batch 8, 3 (new shapes: the stages load again) and 8 equal,
 *     byte for byte, the plain model's run in one session;
 *   - 4 micro-batches equal the four slices run in one session, joined;
 *   - set_input on a rank other than 0 and an output before a run: refused
 *     there; an unknown input on rank 0: the next run fails on every rank
 *     with rank 0's message ("rank 0: ..."), and the pipeline runs again;
 *   - the caller's own messages on its communicator (tags 0-2, pending
 *     across the runs) arrive untouched, and nothing of seam's arrives there
 *     or on world rank 3;
 *   - a rank that stops taking part (pipeline rank 2 skips a run): rank 0's
 *     run fails naming rank 2 within the 2 s timeout plus slack, as a
 *     status (no abort), the pipeline then refuses runs, and every rank
 *     frees it and finalises.
 * Prints a line per check ("ok"/"FAIL"), exits 1 on a failure. */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "seam.h"
#include "seam_mpi.h"

static int wrank, failures;
static seam_context *ctx;

static void check(int ok, const char *what, const char *detail) {
    printf("%s world rank %d: %s%s%s\n", ok ? "ok  " : "FAIL", wrank, what, detail && !ok ? ": " : "",
           detail && !ok ? detail : "");
    fflush(stdout);
    if (!ok) failures++;
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static float *input(int64_t n, int64_t hidden, unsigned seed) {
    float *x = malloc(sizeof(float) * (size_t)(n * hidden));
    uint32_t s = seed * 2654435761u + 1;
    for (int64_t i = 0; i < n * hidden; i++) {
        s = s * 1664525u + 1013904223u;
        x[i] = (float)((double)(s >> 8) / (double)(1u << 24) * 2.0 - 1.0);
    }
    return x;
}

/* The plain model's output for rows [0, n) of x, run `parts` slices at a
 * time in one session, joined: malloc'd, *bytes its size. */
static void *reference(const char *plain, const float *x, int64_t n, int64_t hidden, int parts, size_t *bytes) {
    seam_model *m = NULL;
    seam_session *s = NULL;
    seam_session_options so = {0};
    so.n_threads = 1;
    if (seam_model_load(ctx, plain, &m) || seam_session_create(m, &so, &s)) {
        check(0, "the plain model loads", seam_context_last_error(ctx));
        exit(1);
    }
    uint8_t *out = NULL;
    size_t at = 0;
    for (int k = 0; k < parts; k++) {
        int64_t dims[2] = {n / parts, hidden};
        seam_tensor_view v;
        if (seam_session_set_input(s, "x", SEAM_DTYPE_FLOAT32, 2, dims, x + k * (n / parts) * hidden) ||
            seam_session_run(s) || seam_session_output(s, 0, &v)) {
            check(0, "the plain model runs", seam_context_last_error(ctx));
            exit(1);
        }
        out = realloc(out, at + v.nbytes);
        memcpy(out + at, v.data, v.nbytes);
        at += v.nbytes;
    }
    seam_session_free(s);
    seam_model_free(m);
    *bytes = at;
    return out;
}

/* One run of batch n on every pipeline rank; rank 0 compares with the
 * plain model's run in `parts` slices. */
static void run_once(seam_pipeline *p, const char *plain, int64_t n, int64_t hidden, int parts, unsigned seed,
                     const char *what) {
    float *x = input(n, hidden, seed);
    int64_t dims[2] = {n, hidden};
    char line[256];
    if (seam_pipeline_rank(p) == 0) {
        seam_status st = seam_pipeline_set_input(p, "x", SEAM_DTYPE_FLOAT32, 2, dims, x);
        check(st == SEAM_STATUS_OK, "set_input on rank 0", seam_context_last_error(ctx));
    }
    seam_status st = seam_pipeline_run(p);
    snprintf(line, sizeof(line), "%s: the run", what);
    check(st == SEAM_STATUS_OK, line, seam_context_last_error(ctx));
    if (seam_pipeline_rank(p) == 0 && !st) {
        seam_tensor_view v;
        size_t bytes = 0;
        void *want = reference(plain, x, n, hidden, parts, &bytes);
        st = seam_pipeline_output(p, 0, &v);
        snprintf(line, sizeof(line), "%s: output [%lld, %lld] equals the plain model's%s, bitwise", what,
                 st ? -1LL : (long long)v.dims[0], st || v.rank < 2 ? -1LL : (long long)v.dims[1],
                 parts > 1 ? " slices joined" : "");
        check(!st && v.rank == 2 && v.dims[0] == n && v.nbytes == bytes && !memcmp(v.data, want, bytes), line,
              seam_context_last_error(ctx));
        free(want);
    }
    free(x);
}

static void nothing_on(MPI_Comm comm, const char *what) {
    int flag = 1;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &flag, MPI_STATUS_IGNORE);
    check(!flag, what, "a message is waiting there");
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: mpirun -np 4 mpi_pipeline STAGED.onnx PLAIN.onnx HIDDEN\n");
        return 2;
    }
    const char *staged = argv[1], *plain = argv[2];
    int64_t hidden = atoll(argv[3]);
    MPI_Init(&argc, &argv);
    int wsize;
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    if (wsize != 4) {
        fprintf(stderr, "mpi_pipeline: run it on 4 ranks\n");
        MPI_Finalize();
        return 2;
    }
    seam_context_create(&ctx);
    MPI_Comm comm;
    MPI_Comm_split(MPI_COMM_WORLD, wrank < 3 ? 0 : MPI_UNDEFINED, 2 - wrank, &comm);
    if (wrank < 3) {
        seam_pipeline_options o = {0};
        o.n_threads = 1;
        o.stage_timeout_s = 5;
        seam_pipeline *p = NULL;
        seam_status st = seam_pipeline_create(ctx, staged, comm, &o, &p);
        check(st == SEAM_STATUS_OK, "create over the split communicator", seam_context_last_error(ctx));
        if (st) MPI_Abort(MPI_COMM_WORLD, 1);
        check(seam_pipeline_rank(p) == 2 - wrank && seam_pipeline_stages(p) == 3, "pipeline rank = communicator rank", NULL);
        check(seam_pipeline_input_count(p) == 1 && !strcmp(seam_pipeline_input_name(p, 0), "x") &&
                  seam_pipeline_output_count(p) == 1 && seam_pipeline_input_name(p, 1) == NULL,
              "the graph's inputs and outputs", NULL);
        int64_t d[2] = {8, hidden};
        float one = 0;
        if (seam_pipeline_rank(p) != 0) {
            st = seam_pipeline_set_input(p, "x", SEAM_DTYPE_FLOAT32, 2, d, &one);
            check(st == SEAM_STATUS_INVALID_ARGUMENT && strstr(seam_context_last_error(ctx), "rank 0"),
                  "set_input off rank 0: refused", seam_context_last_error(ctx));
        } else {
            seam_tensor_view v;
            st = seam_pipeline_output(p, 0, &v);
            check(st == SEAM_STATUS_INVALID_ARGUMENT, "an output before a run: refused", seam_context_last_error(ctx));
        }
        /* the caller's own messages on its communicator, on the tags seam
         * would use there, pending across seam's runs: seam must neither
         * take them nor mix its own in */
        int mine[3] = {100 + wrank, 200 + wrank, 300 + wrank}, theirs[3] = {0, 0, 0};
        int to = (seam_pipeline_rank(p) + 1) % 3, from = (seam_pipeline_rank(p) + 2) % 3;
        MPI_Request sent[3];
        for (int t = 0; t < 3; t++) MPI_Isend(&mine[t], 1, MPI_INT, to, t, comm, &sent[t]);
        run_once(p, plain, 8, hidden, 1, 1, "batch 8");
        run_once(p, plain, 3, hidden, 1, 2, "batch 3 (new shapes)");
        /* an unknown input: every rank's run fails alike, then runs again */
        if (seam_pipeline_rank(p) == 0) {
            st = seam_pipeline_set_input(p, "y", SEAM_DTYPE_FLOAT32, 2, d, &one);
            check(st == SEAM_STATUS_INVALID_ARGUMENT, "an unknown input: refused", seam_context_last_error(ctx));
        }
        st = seam_pipeline_run(p);
        check(st == SEAM_STATUS_INVALID_ARGUMENT && !strncmp(seam_context_last_error(ctx), "rank 0: ", 8) &&
                  strstr(seam_context_last_error(ctx), "'y'"),
              "after it, the run fails on every rank with rank 0's message", seam_context_last_error(ctx));
        run_once(p, plain, 8, hidden, 1, 3, "batch 8 again, after the refused run");
        for (int t = 0; t < 3; t++) MPI_Recv(&theirs[t], 1, MPI_INT, from, t, comm, MPI_STATUS_IGNORE);
        MPI_Waitall(3, sent, MPI_STATUSES_IGNORE);
        int sender = 2 - from; /* the world rank of pipeline rank `from` */
        check(theirs[0] == 100 + sender && theirs[1] == 200 + sender && theirs[2] == 300 + sender,
              "the caller's own messages on its communicator, across seam's runs, untouched", NULL);
        nothing_on(comm, "nothing of seam's on the caller's communicator");
        seam_pipeline_stats s;
        st = seam_pipeline_get_stats(p, &s);
        check(!st && s.rank == 2 - wrank && s.stages == 3 && s.n_nodes > 0 && s.weight_bytes > 0 && s.run_ms > 0 &&
                  s.compute_ms > 0 && s.compute_ms <= s.run_ms,
              "stats", NULL);
        seam_pipeline_free(p);

        o.micro_batches = 4;
        st = seam_pipeline_create(ctx, staged, comm, &o, &p);
        check(st == SEAM_STATUS_OK, "create, 4 micro-batches", seam_context_last_error(ctx));
        run_once(p, plain, 8, hidden, 4, 4, "4 micro-batches of batch 8");
        if (seam_pipeline_rank(p) == 0) {
            int64_t d6[2] = {6, hidden};
            float *x = input(6, hidden, 5);
            st = seam_pipeline_set_input(p, "x", SEAM_DTYPE_FLOAT32, 2, d6, x);
            check(st == SEAM_STATUS_INVALID_ARGUMENT && strstr(seam_context_last_error(ctx), "divide"),
                  "a batch of 6 in 4 micro-batches: refused", seam_context_last_error(ctx));
            free(x);
        }
        st = seam_pipeline_run(p);
        check(st == SEAM_STATUS_INVALID_ARGUMENT, "and the run after it fails on every rank", seam_context_last_error(ctx));
        seam_pipeline_free(p);

        /* pipeline rank 2 (world rank 0) stops taking part */
        o.micro_batches = 1, o.stage_timeout_s = 2;
        st = seam_pipeline_create(ctx, staged, comm, &o, &p);
        check(st == SEAM_STATUS_OK, "create, a 2 s timeout", seam_context_last_error(ctx));
        if (seam_pipeline_rank(p) != 2) {
            float *x = input(8, hidden, 6);
            if (seam_pipeline_rank(p) == 0) seam_pipeline_set_input(p, "x", SEAM_DTYPE_FLOAT32, 2, d, x);
            double t0 = now_s();
            st = seam_pipeline_run(p);
            double t = now_s() - t0;
            char line[160];
            snprintf(line, sizeof(line), "a rank that skips the run: named, a status, in %.1f s (< 8)", t);
            if (seam_pipeline_rank(p) == 0 || st)
                check(st == SEAM_STATUS_RUN_FAILED && strstr(seam_context_last_error(ctx), "rank 2") && t < 8, line,
                      seam_context_last_error(ctx));
            if (st) {
                st = seam_pipeline_run(p);
                check(st == SEAM_STATUS_INVALID_ARGUMENT && strstr(seam_context_last_error(ctx), "earlier run"),
                      "after a failed run, runs are refused", seam_context_last_error(ctx));
            }
            free(x);
        }
        seam_pipeline_free(p);
        MPI_Comm_free(&comm);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (wrank == 3) nothing_on(MPI_COMM_WORLD, "nothing of seam's reaches the rank outside the communicator");
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    seam_context_free(ctx);
    MPI_Finalize();
    if (wrank == 0) printf("%s\n", all ? "mpi_pipeline: FAILED" : "mpi_pipeline: all passed");
    return all ? 1 : 0;
}
