/* Shared bits of the seam command-line tool. Exit codes: 0 ok, 1 bad
 * input (a model, a file, data), 2 bad usage (an unknown option, a
 * missing argument). */
#ifndef SEAM_CLI_H
#define SEAM_CLI_H

#include <stdbool.h>

#include "seam.h"

#define CLI_OK 0
#define CLI_BAD_INPUT 1
#define CLI_USAGE 2

/* Prints "seam <cmd>: message" to stderr and returns CLI_USAGE. */
int cli_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints "seam <cmd>: <status>: <context's last error>" and returns the exit
 * code for the status: CLI_USAGE for INVALID_ARGUMENT, else CLI_BAD_INPUT. */
int cli_fail(const char *cmd, seam_context *ctx, seam_status st);

/* Applies one --shape NAME=AxBxC to m (and re-infers). Returns CLI_OK,
 * CLI_USAGE for a malformed argument, or CLI_BAD_INPUT when the model
 * refuses the shape (no such input, wrong rank, a fixed dim differs). */
struct seam_model;
int cli_set_shape(const char *cmd, seam_context *ctx, seam_model *m, const char *arg);

/* Whether paths a and b name one existing file (an output about to
 * overwrite the input model). */
bool cli_same_file(const char *a, const char *b);

/* A monotonic clock in milliseconds, and qsort's order of doubles. */
double cli_now_ms(void);
int cli_cmp_double(const void *a, const void *b);

int cmd_inspect(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_analyze(int argc, char **argv);
int cmd_partition(int argc, char **argv);
int cmd_replace_weights(int argc, char **argv);
int cmd_quantize(int argc, char **argv);
int cmd_backend_check(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);

#endif
