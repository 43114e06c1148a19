/* seam run of a staged model (runtime/staged.h), before any MPI: whether
 * the file is staged (its metadata read, the model not loaded), whether
 * mpirun started as many ranks as it has stages, and what a staged run
 * does not take. The pipeline itself is run_mpi.c's, built with MPI only
 * (SEAM_WITH_MPI). mpirun's rank and size are read from its environment,
 * so these checks need no MPI_Init. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "run.h"

/* The first of the environment variables that is set, as a number. */
static int env_number(const char *a, const char *b, const char *c, int fallback) {
    const char *names[] = {a, b, c};
    for (int k = 0; k < 3; k++) {
        const char *v = names[k] ? getenv(names[k]) : NULL;
        if (v && *v) return atoi(v);
    }
    return fallback;
}

int run_staged(const stage_run_opts *o) {
    int world = env_number("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", NULL, 1);
    bool launched = env_number("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", NULL, 0) > 0; /* by mpirun, even -np 1 */
    int rank = env_number("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", 0);
    seam_context *ctx;
    if (seam_context_create(&ctx)) return CLI_BAD_INPUT;
    staged_plan *p = NULL;
    seam_status st = staged_read(ctx, o->path, &p);
    int rc = -1;
    bool ran = false;
    if (st) {
        /* in one process, the plain run's load says what is wrong */
        if (world > 1) rc = rank == 0 ? cli_fail("run", ctx, st) : CLI_BAD_INPUT;
    } else if (!p) {
        if (o->micro_batches)
            rc = cli_usage("run", "--micro-batches is for a staged model (seam partition MODEL --stages N -o STAGED.onnx)");
        else if (world > 1) {
            if (rank == 0)
                fprintf(stderr,
                        "seam run: %s is not staged, and mpirun started %d ranks: each would run all of it. Stage it with "
                        "seam partition %s --stages %d -o STAGED.onnx and run that with mpirun, or run this one without "
                        "mpirun\n",
                        o->path, world, o->path, world);
            rc = CLI_USAGE;
        }
    } else if (o->ignore_stages) {
        if (o->micro_batches) rc = cli_usage("run", "--micro-batches does not go with --ignore-stages");
        else if (world > 1) rc = rank == 0 ? cli_usage("run", "--ignore-stages runs in one process, not under mpirun -np %d", world)
                                           : CLI_USAGE;
    } else if (p->n_stages == 1 && world == 1 && !o->micro_batches) {
        rc = -1; /* one stage: the plain run is the pipeline */
    } else if (!SEAM_WITH_MPI) {
        if (rank == 0)
            fprintf(stderr,
                    "seam run: %s is staged for %d ranks, and this seam was built without MPI (-DSEAM_WITH_MPI=OFF, or no "
                    "libopenmpi-dev): build it with MPI and run it with mpirun -np %d, or run the model in one process "
                    "with --ignore-stages\n",
                    o->path, p->n_stages, p->n_stages);
        rc = CLI_USAGE;
    } else if (world == 1 && !(launched && p->n_stages == 1)) {
        fprintf(stderr,
                "seam run: %s is staged for %d ranks: run it with mpirun -np %d seam run %s --input ... (or in this one "
                "process with --ignore-stages)\n",
                o->path, p->n_stages, p->n_stages, o->path);
        rc = CLI_USAGE;
    } else if (world != p->n_stages) {
        if (rank == 0)
            fprintf(stderr,
                    "seam run: %s is staged for %d ranks, and mpirun started %d: run it with mpirun -np %d seam run %s ...\n",
                    o->path, p->n_stages, world, p->n_stages, o->path);
        rc = CLI_USAGE;
    } else if (o->other_options) {
        rc = rank == 0 ? cli_usage("run", "a staged run takes --input, --output-dir, --threads, --micro-batches, "
                                          "--stage-timeout, --stage-report and --quiet; --repeat, --report, --html, "
                                          "--profile, --workdir, --shape, --dynamic-batch, --target and --output-format pb "
                                          "are for a run in one process")
                       : CLI_USAGE;
    } else {
#if SEAM_WITH_MPI /* (built only with MPI; without, the branch above took it) */
        rc = run_mpi_pipeline(o, p);
#endif
        ran = true; /* (a run's failure is each rank's own) */
    }
    /* Refused before any run: rank 0 says why and fails; the others leave
     * quietly with 0. Had they failed too, mpirun could end the job at the
     * first of them, before rank 0's message was out (it did, under ASan);
     * mpirun exits with rank 0's status either way. */
    if (rc > 0 && world > 1 && rank != 0 && !ran) rc = CLI_OK;
    staged_free(p);
    seam_context_free(ctx);
    return rc;
}
