/* mpirun -np N seam run STAGED.onnx: one pipeline stage per rank
 * (docs/scale-out.md), on the library's pipeline (include/seam_mpi.h,
 * src/mpi) over MPI_COMM_WORLD. Built only with MPI (SEAM_WITH_MPI).
 *
 * Rank 0 reads the --input files and writes the outputs; a failure ends
 * the job (MPI_Abort), so that no rank waits on one that stopped. A
 * failure every rank agreed on (a rank could not load its stage, an input
 * was refused) is said once, by rank 0; any other by the rank it
 * happened on. */
#include <errno.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "core/npy.h"
#include "run.h"
#include "seam_mpi.h"
#include "seam_partition.h"

static void print_shape(const seam_tensor_view *v) {
    printf("output '%s': %s [", v->name, seam_dtype_name(v->dtype));
    for (int32_t d = 0; d < v->rank; d++) printf("%s%lld", d ? "," : "", (long long)v->dims[d]);
    printf("]\n");
}

/* Rank 0: each output written as DIR/<name>.npy (or its shape printed). */
static int write_outputs(seam_context *ctx, seam_pipeline *p, const char *dir) {
    if (dir && mkdir(dir, 0755) != 0 && errno != EEXIST)
        return fprintf(stderr, "seam run: cannot create '%s': %s\n", dir, strerror(errno)), CLI_BAD_INPUT;
    for (int32_t k = 0; k < seam_pipeline_output_count(p); k++) {
        seam_tensor_view v;
        seam_status st = seam_pipeline_output(p, k, &v);
        if (st) return cli_fail("run", ctx, st);
        if (!dir) {
            print_shape(&v);
            continue;
        }
        seam_tensor t = {.dtype = v.dtype, .rank = v.rank, .data = (void *)v.data, .nbytes = v.nbytes};
        memcpy(t.dims, v.dims, sizeof(int64_t) * (size_t)v.rank);
        t.numel = seam_shape_numel(t.dims, t.rank);
        char fname[512], path[4096], tmp[4200], err[1024];
        npy_file_name(v.name, fname, sizeof(fname), "output");
        snprintf(path, sizeof(path), "%s/%s.npy", dir, fname);
        snprintf(tmp, sizeof(tmp), "%s.tmp%ld", path, (long)getpid());
        if (!npy_write(tmp, &t, err, sizeof(err)) || rename(tmp, path) != 0) {
            fprintf(stderr, "seam run: output '%s': %s\n", v.name, err);
            unlink(tmp);
            return CLI_BAD_INPUT;
        }
    }
    return CLI_OK;
}

static void report(const seam_pipeline *p) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    seam_pipeline_stats s;
    if (seam_pipeline_get_stats(p, &s)) return;
    fprintf(stderr,
            "seam run: rank %d of %d: stage %d, %d nodes, weights %lld bytes; %d micro-batches in %.1f ms (computing "
            "%.1f ms, waiting %.1f ms); peak resident memory %ld KiB\n",
            s.rank, s.stages, s.rank, s.n_nodes, (long long)s.weight_bytes, s.micro_batches, s.run_ms, s.compute_ms,
            s.wait_ms, ru.ru_maxrss);
}

/* Rank 0: the --input files read and given; a usage mistake (an input
 * without a file) is this rank's alone, before anything is collective. */
static int give_inputs(seam_context *ctx, seam_pipeline *p, const stage_run_opts *o, seam_tensor *feeds) {
    char err[1024];
    for (int k = 0; k < o->n_inputs; k++) {
        bool known = false;
        for (int32_t i = 0; i < seam_pipeline_input_count(p); i++) known |= !strcmp(seam_pipeline_input_name(p, i), o->input_names[k]);
        if (!known) return fprintf(stderr, "seam run: the model has no input '%s'\n", o->input_names[k]), CLI_BAD_INPUT;
    }
    for (int32_t i = 0; i < seam_pipeline_input_count(p); i++) {
        const char *name = seam_pipeline_input_name(p, i);
        int file = -1;
        for (int k = 0; k < o->n_inputs; k++)
            if (!strcmp(o->input_names[k], name)) file = k;
        if (file < 0) return cli_usage("run", "a staged run reads every input from a file: give --input %s=FILE", name);
        if (!run_read_input(ctx, o->input_files[file], NULL, &feeds[i], err, sizeof(err)))
            return fprintf(stderr, "seam run: input '%s': %s\n", name, err), CLI_BAD_INPUT;
        const seam_tensor *t = &feeds[i];
        seam_status st = seam_pipeline_set_input(p, name, (seam_dtype)t->dtype, t->rank, t->dims, t->data);
        if (st) return cli_fail("run", ctx, st);
    }
    return CLI_OK;
}

/* A failed collective call: said here unless every rank agreed on it
 * (its message starts "rank R: "), then by rank 0 alone. *agreed: the
 * other ranks know, and end by themselves. */
static int said(seam_context *ctx, seam_status st, int world_rank, bool *agreed) {
    const char *msg = seam_context_last_error(ctx);
    int r = -1, n = 0;
    *agreed = sscanf(msg, "rank %d: %n", &r, &n) == 1 && n > 0;
    if (!*agreed) fprintf(stderr, "seam run: rank %d: %s: %s\n", world_rank, seam_status_string(st), msg);
    else if (world_rank == 0) cli_fail("run", ctx, st);
    return st == SEAM_STATUS_INVALID_ARGUMENT ? CLI_USAGE : CLI_BAD_INPUT;
}

static int pipeline_main(seam_context *ctx, const stage_run_opts *o, int world_rank, bool *abort_job) {
    bool agreed = true;
    if (o->tg->n_libs > 0 && targets_load(o->tg, "run", ctx)) return CLI_BAD_INPUT;
    seam_pipeline_options po = {o->threads, o->micro_batches, o->timeout_s, o->tg->avail, o->tg->n_avail};
    seam_pipeline *p = NULL;
    seam_status st = seam_pipeline_create(ctx, o->path, MPI_COMM_WORLD, &po, &p);
    if (st) {
        int rc = said(ctx, st, world_rank, &agreed);
        *abort_job = !agreed || st == SEAM_STATUS_RUN_FAILED;
        return rc;
    }
    int rc = CLI_OK, input_rc = CLI_OK;
    int32_t n_in = seam_pipeline_input_count(p);
    seam_tensor *feeds = calloc((size_t)n_in + 1, sizeof(seam_tensor));
    if (world_rank == 0) input_rc = feeds ? give_inputs(ctx, p, o, feeds) : CLI_BAD_INPUT;
    if (input_rc) seam_pipeline_refuse_run(p, input_rc == CLI_USAGE ? SEAM_STATUS_INVALID_ARGUMENT : SEAM_STATUS_IO_ERROR,
                                           "rank 0 could not give the inputs (its message says why)");
    /* every rank runs, rank 0 after a refused input too: the run then
     * fails on every rank alike, and nobody waits for it */
    st = seam_pipeline_run(p);
    if (input_rc) rc = input_rc; /* said already */
    else if (st) rc = said(ctx, st, world_rank, &agreed);
    *abort_job = st && (!agreed || st == SEAM_STATUS_RUN_FAILED); /* a rank that did not come may wait still */
    if (!rc && world_rank == 0) rc = write_outputs(ctx, p, o->out_dir);
    if (!rc && o->report) report(p);
    for (int32_t i = 0; feeds && i < n_in; i++) seam_value_free(&feeds[i]);
    free(feeds);
    seam_pipeline_free(p);
    return rc;
}

int run_mpi_pipeline(const stage_run_opts *o, const staged_plan *plan) {
    (void)plan; /* read again by the pipeline, on every rank */
    if (MPI_Init(NULL, NULL) != MPI_SUCCESS) {
        fprintf(stderr, "seam run: MPI_Init failed\n");
        return CLI_BAD_INPUT;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int world_rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    seam_context *ctx = NULL;
    bool abort_job = false;
    int rc = seam_context_create(&ctx) ? CLI_BAD_INPUT : pipeline_main(ctx, o, world_rank, &abort_job);
    seam_context_free(ctx);
    fflush(stdout);
    fflush(stderr);
    if (abort_job) MPI_Abort(MPI_COMM_WORLD, rc ? rc : 1); /* the others may wait on this rank: end them now */
    MPI_Finalize();
    return rc;
}
