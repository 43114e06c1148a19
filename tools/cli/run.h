/* seam run's parts in run_io.c: reading the --input files, random data
 * for the inputs without one, the --report table and the --output-dir
 * files. run.c's cmd_run puts them together. */
#ifndef SEAM_CLI_RUN_H
#define SEAM_CLI_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ir/ir.h"
#include "core/tensor.h"
#include "runtime/staged.h"
#include "seam.h"
#include "targets.h"

/* Reads an input file into t as the model's type for it declares (NULL:
 * a tensor): a .npy (a tensor; numpy strings; uint16 for a bfloat16
 * input), or else an ONNX TensorProto, SequenceProto or OptionalProto
 * .pb. t owns its data (seam_value_free). False with a message in err. */
bool run_read_input(seam_context *ctx, const char *file, const ir_type *type, seam_tensor *t, char *err,
                    size_t errn);


/* The shape of an input file fixes the model's symbolic dims of that input
 * when it agrees with the model's rank and fixed dims: backends that
 * compile for static shapes then take the model. "NAME=AxBxC" in arg, or
 * false to leave the input as it is (a contradiction is reported when the
 * input is set). */
bool run_shape_from_input(const ir_value *v, const seam_tensor *t, char *arg, size_t n);

/* Random data from a fixed seed for t's dtype and dims (t->numel set):
 * floats in [-1, 1), small non-negative integers (safe as indices and
 * token ids), words "w0".."w9" for strings. t->data is malloc'd (one
 * block), the caller's to free. False: out of memory. */
bool run_fill_random(seam_tensor *t, uint64_t seed);
/* Random data for graph input i (v), which has no file: its type and shape
 * must be known; a CLI exit code (messages name the command cmd). */
int run_random_input(const char *cmd, const ir_value *v, int32_t i, seam_tensor *t);

/* One line per device subgraph and per run of CPU nodes between them, in
 * execution order, from the last run's profile (--report). */
void run_print_report(seam_session *s, const ir_graph *g);

/* Writes every output to DIR/<name>.npy, or .pb for what .npy cannot hold
 * (a sequence, an empty optional, bfloat16, strings that are not UTF-8;
 * said on stderr) or for every output with format "pb"; all or nothing: a
 * failure leaves DIR as it was. g: the session's graph (the outputs'
 * declared types). Returns the exit code. */
int run_write_outputs(seam_context *ctx, seam_session *s, const ir_graph *g, int32_t n_outputs, const char *out_dir,
                      const char *format);

/* A saved model's device subgraphs name their targets: the plug-ins among
 * them that tg does not have yet are looked for by name (run.c). */
void run_find_saved_targets(cli_targets *tg, seam_context *ctx, const seam_model *m);

/* What a staged run (run_staged.c, run_mpi.c) takes from seam run's
 * command line. */
typedef struct stage_run_opts {
    const char *path, *out_dir;
    int n_inputs;
    const char *input_names[64], *input_files[64]; /* as many as run.c's MAX_NAMED */
    int threads, micro_batches; /* micro_batches 0: not given (1) */
    double timeout_s;           /* --stage-timeout: a receive or send without progress for this long fails */
    bool report, quiet, ignore_stages, other_options;
    cli_targets *tg;
} stage_run_opts;

/* Before a plain run: a staged file (run across MPI ranks), or a plain
 * one started by mpirun on several ranks (refused). Returns -1 when the
 * plain run goes on, else the exit code (run_staged.c). */
int run_staged(const stage_run_opts *o);
#if SEAM_WITH_MPI
/* The pipeline on MPI_COMM_WORLD: this rank's stage of p (run_mpi.c). */
int run_mpi_pipeline(const stage_run_opts *o, const staged_plan *p);
#endif

#endif
