/*
 * seam_report.h - see a partition and where the time goes: one
 * self-contained HTML page of a plan, a Chrome trace of a profiled run,
 * and a work directory with everything a user needs to reproduce one
 * device subgraph alone.
 *
 *     seam_plan *plan;                        // seam_partition(model, ...)
 *     seam_report *r;
 *     seam_report_create(plan, "model.onnx", &r);  // before seam_plan_apply
 *     seam_plan_apply(model, plan, ...); seam_plan_free(plan);
 *     seam_report_set_partitioned(r, model);       // for a work directory
 *     ... make a session with options.profile, run it ...
 *     seam_report_add_run(r, session, model);      // measured times
 *     seam_report_write_html(r, "plan.html");
 *     seam_session_write_trace(session, model, "trace.json");
 *     seam_report_write_workdir(r, session, NULL, 0, "work");
 *     seam_report_free(r);
 *
 * Every file is written to a temporary name and renamed, so a failure
 * leaves no half-written file. The messages (seam_context_last_error on
 * the plan's model's context) name the file.
 */
#ifndef SEAM_REPORT_H
#define SEAM_REPORT_H

#include "seam_backend.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct seam_report seam_report;

/* A snapshot of the plan (every node's target and reason, inputs and
 * outputs with dtype and shape, the subgraphs, the plan's JSON): the plan
 * and its model may change or be freed afterwards. model_name (may be
 * NULL) titles the page. */
SEAM_API seam_status seam_report_create(const seam_plan *plan, const char *model_name, seam_report **report_out);
SEAM_API void seam_report_free(seam_report *report);

/* Keeps the model as seam_plan_apply left it (packed as ONNX bytes), so
 * that seam_report_write_workdir can write it and each device subgraph as
 * a standalone model. Call it before seam_report_expose_boundaries. */
SEAM_API seam_status seam_report_set_partitioned(seam_report *report, seam_model *partitioned);

/* Makes every value that crosses a subgraph boundary (the inputs and
 * outputs of each ai.seam Subgraph node) a graph output of the partitioned
 * model, so a session keeps it and seam_report_write_workdir can dump it.
 * Call before making the session. */
SEAM_API seam_status seam_report_expose_boundaries(seam_report *report, seam_model *partitioned);

/* Reads the last run of a profiled session (options.profile) of the
 * model (the plan's model, or it after seam_plan_apply): each node's and
 * each subgraph's measured time, and the session's compile log. Nodes
 * inside a device subgraph have no time of their own (not measured). */
SEAM_API seam_status seam_report_add_run(seam_report *report, seam_session *session, const seam_model *model);

/* Writes one HTML file with no external resources: an SVG of the graph
 * (laid out by graphviz: a coloured cluster per subgraph, heavier edges
 * labelled with bytes where a value crosses a device boundary), each
 * node's details and reason on hover or click, a summary table of the
 * subgraphs, and the supported-fraction line. Graphs over
 * SEAM_REPORT_NODE_VIEW_MAX nodes get one box per subgraph instead, with
 * each subgraph's nodes on demand (laid out when it has at most
 * SEAM_REPORT_SUBGRAPH_VIEW_MAX nodes, else listed). */
#define SEAM_REPORT_NODE_VIEW_MAX 2000
#define SEAM_REPORT_SUBGRAPH_VIEW_MAX 300
#define SEAM_REPORT_BOX_VIEW_MAX 400  /* subgraph boxes laid out; more are listed in the table only */
SEAM_API seam_status seam_report_write_html(const seam_report *report, const char *path);

/* Writes the last run of a profiled session as Chrome trace events (JSON,
 * what Perfetto and chrome://tracing open): one span per node and per
 * device subgraph on a track per target, its boundary copies as their
 * own spans, each device subgraph's compile at session creation. model is
 * the session's model. */
SEAM_API seam_status seam_session_write_trace(seam_session *session, const seam_model *model, const char *path);

/* Writes a work directory: .seam-workdir (the marker), plan.json,
 * partitioned.onnx and subgraph_<id>_<target>.onnx for each device
 * subgraph (its nodes, with its boundary values as graph inputs and
 * outputs and the weights it reads; seam run accepts it), with a session
 * subgraph_<id>_<target>.log (its backend's compile log) and, when
 * seam_report_expose_boundaries was called, values/<name>.npy: every
 * boundary value of the last run, plus the n_extra tensors given (e.g.
 * the run's inputs). The directory is written as DIR.tmp-XXXXXX and
 * renamed; an existing DIR without the marker is refused (IO_ERROR). */
SEAM_API seam_status seam_report_write_workdir(const seam_report *report, seam_session *session,
                                               const seam_tensor_view *extra, int32_t n_extra, const char *dir);

#ifdef __cplusplus
}
#endif
#endif /* SEAM_REPORT_H */
