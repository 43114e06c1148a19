/* Staged models: a partitioned model whose top-level nodes are cut into
 * pipeline stages, one process (MPI rank) each, the cut recorded in the
 * model's metadata_props as JSON under "seam.stages" (staged.c;
 * docs/scale-out.md). Nothing here sends anything: this is what a stage
 * is, which values cross between stages, and a stage's own model cut from
 * the file. The pipeline (src/mpi, include/seam_mpi.h) moves the values.
 *
 *     seam partition MODEL --stages 3 -o STAGED.onnx
 *       stage 0: nodes a b     weights wa wb   sends h1 to 1
 *       stage 1: node  c       weight  wc      sends h2 to 2
 *       stage 2: node  d       weight  wd      sends y to 0 (a graph output)
 *     x (a graph input) is read by rank 0 and sent to the stages that read it.
 *
 * The JSON: {"version": 1, "stages": N, "nodes": <the file's top-level
 * node count>, "stage": [{"rank", "nodes": [positions in the file's node
 * list], "names": [their names], "weights": [initializer names],
 * "weight_bytes"}], "values": [{"name", "from": stage (-1: a graph
 * input), "to": [stages that read it], "output": bool, "dtype": ONNX elem
 * type, "shape": [int | "symbol" | null]}], "inputs": [names],
 * "outputs": [names]}. A node made only of constants (a Constant) is in
 * every stage that reads it; every other node is in exactly one. */
#ifndef SEAM_RUNTIME_STAGED_H
#define SEAM_RUNTIME_STAGED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/tensor.h"
#include "seam.h"

#define SEAM_STAGES_KEY "seam.stages"
#define SEAM_STAGES_VERSION 1

typedef struct staged_value {
    const char *name;
    int32_t from;          /* the stage that makes it; -1: a graph input, read by rank 0 */
    int32_t n_to;
    int32_t *to;           /* the stages that read it (never `from`) */
    bool output;           /* a graph output: rank 0 writes it */
    int32_t dtype, rank;   /* ONNX elem type; rank -1: not known */
    int64_t dims[SEAM_MAX_RANK];      /* -1: not known (syms[d] its name, or NULL) */
    const char *syms[SEAM_MAX_RANK];
} staged_value;

typedef struct staged_stage {
    int32_t rank;
    int32_t n_nodes;
    int32_t *nodes;        /* positions in the file's node list */
    const char **names;
    int32_t n_weights;
    const char **weights;  /* sorted by strcmp */
    int64_t weight_bytes;
} staged_stage;

typedef struct staged_plan {
    int32_t n_stages, n_file_nodes;
    staged_stage *stages;
    int32_t n_values;
    staged_value *values;
    int32_t n_inputs, n_outputs;
    int32_t *inputs, *outputs; /* indices into values, in the graph's order */
    void *json;                /* the parsed text the strings point into */
} staged_plan;

/* What seam partition knew before applying its plan: each node's name and
 * the stage seam_plan_stages put it in (-1 for constants). */
typedef struct staged_source {
    int32_t n_nodes, n_stages;
    const char *const *names;
    const int32_t *stage;
} staged_source;

/* Cuts the applied (partitioned) model's top-level nodes into src's
 * stages and records the cut in its metadata ("seam.stages"), to be
 * saved with it. A device Subgraph node never straddles two stages: when
 * the planned cut falls inside one, the whole subgraph goes to the stage
 * that holds most of its nodes (the cut moves to its boundary), and a
 * line in *notes_out (malloc'd, "" when none; may be NULL) says so. Fails
 * (INVALID_ARGUMENT, naming the subgraph or value) when a stage is left
 * without nodes, or a value that crosses stages is not a tensor. */
seam_status staged_record(seam_model *applied, const staged_source *src, char **notes_out);

/* The plan recorded in the model file at path, without loading the model
 * (its metadata only): *out NULL when the file is not staged. */
seam_status staged_read(seam_context *ctx, const char *path, staged_plan **out);
/* The plan from the JSON text of "seam.stages". */
seam_status staged_parse(seam_context *ctx, const char *text, staged_plan **out);
void staged_free(staged_plan *p);

/* Stage `stage`'s own model: its nodes, its weights alone (other stages'
 * weights are never read), the values it receives as graph inputs and the
 * values it sends (to later stages, and graph outputs to rank 0) as graph
 * outputs, in the order staged_stage_inputs / staged_stage_outputs give. */
seam_status staged_load_stage(seam_context *ctx, const char *path, const staged_plan *p, int32_t stage,
                              seam_model **out);
/* The values stage receives / sends, as indices into p->values, in the
 * stage model's input / output order; returns the count (idx may be NULL
 * to count). */
int32_t staged_stage_inputs(const staged_plan *p, int32_t stage, int32_t *idx);
int32_t staged_stage_outputs(const staged_plan *p, int32_t stage, int32_t *idx);

#endif
