/* seam partition --stages: the plan cut into pipeline stages, printed as a
 * table or merged into --json, and the schedule simulated (stages.c). */
#ifndef SEAM_CLI_STAGES_H
#define SEAM_CLI_STAGES_H

#include <stdbool.h>

#include "runtime/staged.h"
#include "seam_partition.h"

typedef struct cli_stages {
    seam_stage_options o;
    bool asked, simulate, other; /* --stages given; --simulate; another stage option given */
    int32_t micro_batches;       /* 0: 4 per stage */
} cli_stages;

#define STAGES_HELP                                                                              \
    "  --stages N            also cut the plan into N pipeline stages (one process each):\n"      \
    "                        the slowest stage or link as fast as it can be, each stage\n"        \
    "                        within --stage-memory; prints each stage's nodes, time,\n"          \
    "                        memory and what it sends (with --json: \"pipeline\");\n"             \
    "                        with -o, OUT.onnx records the stages (metadata\n"                   \
    "                        \"seam.stages\"): run it with mpirun -np N seam run OUT.onnx\n"     \
    "                        (with --weights-file, each rank reads its own weights alone)\n"    \
    "  --stage-memory SIZE   what one stage may hold (bytes, or with K, M or G)\n"               \
    "  --link-gbits G        the link between stages, gigabits per second (default 10)\n"        \
    "  --link-latency-us L   its latency per transfer (default 20)\n"                            \
    "  --simulate            the pipeline's schedule on paper: makespan, steady-state\n"         \
    "                        interval, throughput, bubble and each stage's busy share\n"         \
    "  --micro-batches M     inputs in flight for --simulate (default 4 per stage)\n"

void stages_init(cli_stages *s);
/* Takes argv[*k] (and its value) when it is a stage option: 1 taken, 0
 * not one, CLI_USAGE (after saying why) for a bad value. */
int stages_option(cli_stages *s, const char *cmd, int argc, char **argv, int *k);
/* After parsing: a stage option without --stages is a usage error. */
int stages_check(const cli_stages *s, const char *cmd);
/* Cuts plan into stages and prints them (plan_json: the plan's --json text
 * to merge them into, or NULL for the table). Returns an exit code. */
int stages_print(const cli_stages *s, const char *cmd, seam_context *ctx, const seam_plan *plan, const char *plan_json);

/* With --stages and -o: each plan node's name and stage, taken before the
 * plan is applied (stages_source_free frees them). Returns an exit code. */
int stages_source(const cli_stages *s, const char *cmd, seam_context *ctx, const seam_plan *plan, staged_source *out);
void stages_source_free(staged_source *src);
/* After seam_plan_apply: records the stages in the model's metadata,
 * saying where a cut moved to a subgraph's boundary (on stdout unless
 * quiet). Returns an exit code. */
int stages_record(const char *cmd, seam_context *ctx, seam_model *m, const staged_source *src, bool quiet);

#endif
