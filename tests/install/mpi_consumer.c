/* A C program against the installed seam_mpi.h and libseam.so: the
 * staged model given (y = Relu(x) + 1 on float32[4], one stage) run as a
 * pipeline over MPI_COMM_WORLD (tests/install/run_install_test.sh, where
 * seam was built with MPI). */
#include <mpi.h>
#include <stdio.h>

#include <seam_mpi.h>

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    MPI_Init(&argc, &argv);
    seam_context *ctx = NULL;
    seam_pipeline *p = NULL;
    float x[4] = {-2, -1, 0, 3};
    int64_t dims[1] = {4};
    seam_tensor_view y;
    int ok = seam_context_create(&ctx) == SEAM_STATUS_OK && seam_pipeline_create(ctx, argv[1], MPI_COMM_WORLD, NULL, &p) == SEAM_STATUS_OK &&
             seam_pipeline_set_input(p, "x", SEAM_DTYPE_FLOAT32, 1, dims, x) == SEAM_STATUS_OK &&
             seam_pipeline_run(p) == SEAM_STATUS_OK && seam_pipeline_output(p, 0, &y) == SEAM_STATUS_OK;
    const float *v = ok ? y.data : NULL;
    ok = ok && y.nbytes == 16 && v[0] == 1 && v[1] == 1 && v[2] == 1 && v[3] == 4;
    if (!ok) fprintf(stderr, "mpi_consumer: %s\n", ctx ? seam_context_last_error(ctx) : "no context");
    seam_pipeline_free(p);
    seam_context_free(ctx);
    MPI_Finalize();
    if (ok) printf("mpi_consumer: ok\n");
    return ok ? 0 : 1;
}
