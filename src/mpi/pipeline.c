/* A staged model's pipeline over the caller's communicator
 * (include/seam_mpi.h; pipeline.h draws it). Each rank loads its own
 * stage's model (its nodes and weights alone, runtime/staged.c) and, per
 * micro-batch m, receives the values it reads from the ranks that make
 * them, runs, and sends what it makes to the ranks that read it; rank 0
 * also takes the inputs (and sends each to the stages that read it) and
 * gathers the graph outputs. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ir/ir.h"
#include "pipeline.h"
#include "runtime/subgraph.h"

/* SEAM_STAGE_FAULT=RANK:MB[:exit|kill|hang], a test hook: rank RANK
 * exits (status 1), is killed (SIGKILL) or stops answering when it comes
 * to micro-batch MB. */
static void fault_hook(const seam_pipeline *P, int mb) {
    const char *f = getenv("SEAM_STAGE_FAULT");
    int r = -1, at = -1;
    char mode[16] = "exit";
    if (!f || sscanf(f, "%d:%d:%15s", &r, &at, mode) < 2 || r != P->rank || at != mb) return;
    fprintf(stderr, "seam: pipeline rank %d: SEAM_STAGE_FAULT: %s at micro-batch %d\n", P->rank, mode, mb);
    fflush(stderr);
    if (!strcmp(mode, "kill")) raise(SIGKILL);
    if (!strcmp(mode, "hang"))
        for (;;) pause();
    _exit(1);
}

/* The session, made when the first micro-batch's shapes are known (as a
 * plain run fixes its inputs' shapes before making its session); made
 * again, from the stage's model loaded again, when they change. */
static seam_status make_session(seam_pipeline *P, const int64_t (*dims)[SEAM_MAX_RANK], const int32_t *ranks) {
    seam_status st;
    if (P->s) {
        bool same = true;
        for (int32_t i = 0; i < P->n_in && same; i++) {
            same = ranks[i] == P->sig_rank[i];
            for (int32_t d = 0; same && d < ranks[i]; d++) same = dims[i][d] == P->sig_dims[i][d];
        }
        if (same) return SEAM_STATUS_OK;
        seam_session_free(P->s), P->s = NULL;
        seam_model_free(P->m), P->m = NULL;
        if ((st = staged_load_stage(P->ctx, P->path, P->p, P->rank, &P->m))) return P->broken = true, st;
    }
    for (int32_t i = 0; i < P->n_in; i++) {
        if ((st = seam_model_set_input_shape(P->m, P->p->values[P->in_idx[i]].name, ranks[i], dims[i])))
            return P->broken = true, st;
        P->sig_rank[i] = ranks[i];
        memcpy(P->sig_dims[i], dims[i], sizeof(int64_t) * (size_t)ranks[i]);
    }
    seam_qdq_stats q;
    if ((st = seam_model_fuse_qdq(P->m, SEAM_QDQ_UNITS | SEAM_QDQ_FOLD, &q))) return P->broken = true, st;
    int32_t n = subgraph_find_targets(P->ctx, P->m, P->targets, P->n_targets, 40);
    seam_session_options so = {P->n_threads, false, false, P->targets, n, NULL, NULL};
    if ((st = seam_session_create(P->m, &so, &P->s))) return P->broken = true, st;
    return SEAM_STATUS_OK;
}

/* Micro-batch mb's part of rank 0's graph input k: dim 0 cut into M. */
static void feed_part(const seam_pipeline *P, int32_t k, int mb, int64_t *dims, const void **data, size_t *nbytes) {
    const feed *t = &P->feeds[k];
    for (int32_t d = 0; d < t->rank; d++) dims[d] = t->dims[d];
    *nbytes = t->nbytes / (size_t)P->M;
    if (t->rank > 0) dims[0] = t->dims[0] / P->M;
    *data = (const uint8_t *)t->data + (size_t)mb * *nbytes;
}

static int32_t input_pos(const seam_pipeline *P, int32_t value) {
    for (int32_t k = 0; k < P->p->n_inputs; k++)
        if (P->p->inputs[k] == value) return k;
    return -1;
}

/* Rank 0: a part of a graph output this rank made, kept. */
static seam_status keep_output(seam_pipeline *P, int32_t value, int mb, const seam_tensor_view *view) {
    for (int32_t o = 0; o < P->p->n_outputs; o++) {
        if (P->p->outputs[o] != value) continue;
        msg *m = &P->outs[o * P->M + mb];
        if (!pl_grow(m, view->nbytes + 1)) return pl_fail(P, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
        memcpy(m->buf, view->data, view->nbytes);
        m->dtype = view->dtype, m->rank = view->rank, m->nbytes = view->nbytes, m->data = m->buf;
        memcpy(m->dims, view->dims, sizeof(int64_t) * (size_t)view->rank);
        P->got[o]++;
    }
    return SEAM_STATUS_OK;
}

/* One micro-batch through this rank's stage. */
static seam_status stage_step(seam_pipeline *P, int mb) {
    const staged_plan *p = P->p;
    seam_status st = SEAM_STATUS_OK;
    fault_hook(P, mb);
    int64_t(*dims)[SEAM_MAX_RANK] = calloc((size_t)P->n_in + 1, sizeof(*dims));
    int32_t *ranks = calloc((size_t)P->n_in + 1, sizeof(int32_t)), *dtypes = calloc((size_t)P->n_in + 1, sizeof(int32_t));
    const void **data = calloc((size_t)P->n_in + 1, sizeof(void *));
    if (!dims || !ranks || !dtypes || !data) st = pl_fail(P, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    for (int32_t i = 0; i < P->n_in && !st; i++) {
        const staged_value *v = &p->values[P->in_idx[i]];
        if (v->from < 0 && P->rank == 0) { /* a graph input rank 0 holds */
            int32_t k = input_pos(P, P->in_idx[i]);
            size_t nb;
            feed_part(P, k, mb, dims[i], &data[i], &nb);
            ranks[i] = P->feeds[k].rank, dtypes[i] = P->feeds[k].dtype;
            continue;
        }
        msg *r = &P->rin[i];
        if ((st = pl_recv_value(P, v->from < 0 ? 0 : v->from, P->in_idx[i], mb, r, false, NULL))) break;
        memcpy(dims[i], r->dims, sizeof(int64_t) * (size_t)r->rank);
        ranks[i] = r->rank, dtypes[i] = r->dtype, data[i] = r->data;
    }
    if (!st) st = make_session(P, (const int64_t(*)[SEAM_MAX_RANK])dims, ranks);
    for (int32_t i = 0; i < P->n_in && !st; i++)
        if ((st = seam_session_set_input(P->s, p->values[P->in_idx[i]].name, (seam_dtype)dtypes[i], ranks[i], dims[i],
                                         data[i])))
            P->broken = true;
    free(dims), free(ranks), free(dtypes), free(data);
    if (st) return st;
    double t0 = pl_now();
    if ((st = seam_session_run(P->s))) return P->broken = true, st;
    P->t_compute += pl_now() - t0;
    P->last_progress = pl_now(); /* computing is progress too */
    for (int32_t k = 0; k < P->n_out; k++) {
        seam_tensor_view view;
        if ((st = seam_session_output(P->s, k, &view))) return P->broken = true, st;
        for (int32_t q = 0; q < P->n_send; q++)
            if (P->send[q].value == P->out_idx[k] &&
                (st = pl_send_value(P, &P->send[q], mb, view.dtype, view.rank, view.dims, view.data, view.nbytes)))
                return st;
        if (P->rank == 0 && p->values[P->out_idx[k]].output && (st = keep_output(P, P->out_idx[k], mb, &view))) return st;
    }
    return SEAM_STATUS_OK;
}

/* The senders of this rank: its stage's outputs that another rank reads
 * (graph outputs go to rank 0), and on rank 0 the graph inputs. */
static seam_status make_senders(seam_pipeline *P) {
    const staged_plan *p = P->p;
    P->send = calloc((size_t)p->n_values + 1, sizeof(sender));
    if (!P->send) return seam_error(P->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    for (int32_t v = 0; v < p->n_values; v++) {
        const staged_value *val = &p->values[v];
        if (!(val->from == P->rank || (val->from < 0 && P->rank == 0))) continue;
        sender *s = &P->send[P->n_send];
        s->dest = malloc(sizeof(int) * ((size_t)val->n_to + 2));
        s->req[0] = malloc(sizeof(MPI_Request) * ((size_t)val->n_to + 2));
        s->req[1] = malloc(sizeof(MPI_Request) * ((size_t)val->n_to + 2));
        if (!s->dest || !s->req[0] || !s->req[1]) return seam_error(P->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
        for (int32_t k = 0; k < val->n_to; k++)
            if (val->to[k] != P->rank) s->dest[s->n_dest++] = val->to[k];
        if (val->output && P->rank != 0 && val->from == P->rank) s->dest[s->n_dest++] = 0;
        s->value = v;
        if (s->n_dest) {
            P->n_send++;
            continue;
        }
        free(s->dest), free(s->req[0]), free(s->req[1]); /* nobody to send it to: the slot is the next value's */
        memset(s, 0, sizeof(*s));
    }
    return SEAM_STATUS_OK;
}

/* This rank's part of create: the plan, its stage's model, the buffers. */
static seam_status load(seam_pipeline *P, const char *path, const seam_pipeline_options *o) {
    seam_status st;
    if (!(P->path = strdup(path))) return seam_error(P->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    if ((st = staged_read(P->ctx, path, &P->p))) return st;
    if (!P->p)
        return seam_error(P->ctx, SEAM_STATUS_INVALID_ARGUMENT,
                          "%s is not staged: stage it with seam partition %s --stages %d -o STAGED.onnx", path, path,
                          P->size);
    const staged_plan *p = P->p;
    if (p->n_stages != P->size)
        return seam_error(P->ctx, SEAM_STATUS_INVALID_ARGUMENT,
                          "%s is staged for %d ranks, and the communicator has %d: run it on %d", path, p->n_stages,
                          P->size, p->n_stages);
    void *tag_ub = NULL;
    int has_ub = 0;
    MPI_Comm_get_attr(P->comm, MPI_TAG_UB, &tag_ub, &has_ub);
    if (has_ub && PL_TAG(p->n_values) > *(int *)tag_ub)
        return seam_error(P->ctx, SEAM_STATUS_UNSUPPORTED, "%d values cross stages, over this MPI's %d tags", p->n_values,
                          *(int *)tag_ub);
    for (int32_t k = 0; o && k < o->n_targets && P->n_targets < 32; k++)
        if (o->targets[k]) P->targets[P->n_targets++] = o->targets[k];
    P->targets[P->n_targets++] = seam_backend_dnnl();
    P->n_in = staged_stage_inputs(p, P->rank, NULL), P->n_out = staged_stage_outputs(p, P->rank, NULL);
    P->in_idx = malloc(sizeof(int32_t) * ((size_t)P->n_in + 1));
    P->out_idx = malloc(sizeof(int32_t) * ((size_t)P->n_out + 1));
    P->rin = calloc((size_t)P->n_in + 1, sizeof(msg));
    P->sig_dims = calloc((size_t)P->n_in + 1, sizeof(*P->sig_dims));
    P->sig_rank = calloc((size_t)P->n_in + 1, sizeof(int32_t));
    P->feeds = calloc((size_t)p->n_inputs + 1, sizeof(feed));
    P->outs = calloc((size_t)p->n_outputs * (size_t)P->M + 1, sizeof(msg));
    P->got = calloc((size_t)p->n_outputs + 1, sizeof(int32_t));
    P->joined = calloc((size_t)p->n_outputs + 1, sizeof(seam_tensor));
    if (!P->in_idx || !P->out_idx || !P->rin || !P->sig_dims || !P->sig_rank || !P->feeds || !P->outs || !P->got ||
        !P->joined)
        return seam_error(P->ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    staged_stage_inputs(p, P->rank, P->in_idx);
    staged_stage_outputs(p, P->rank, P->out_idx);
    if ((st = make_senders(P))) return st;
    return staged_load_stage(P->ctx, path, p, P->rank, &P->m);
}

seam_status seam_pipeline_create(seam_context *ctx, const char *path, MPI_Comm comm, const seam_pipeline_options *o,
                                 seam_pipeline **out) {
    if (out) *out = NULL;
    if (!ctx || !path || !out) return seam_error(ctx, SEAM_STATUS_INVALID_ARGUMENT, "seam_pipeline_create: a NULL argument");
    int init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    if (!init || fin)
        return seam_error(ctx, SEAM_STATUS_INVALID_ARGUMENT, "seam_pipeline_create: MPI is %s",
                          fin ? "finalized" : "not initialized (MPI_Init is the caller's)");
    if (comm == MPI_COMM_NULL) return seam_error(ctx, SEAM_STATUS_INVALID_ARGUMENT, "seam_pipeline_create: MPI_COMM_NULL");
    if (o && (o->micro_batches < 0 || o->n_threads < 0 || o->stage_timeout_s < 0 || o->n_targets < 0 ||
              (o->n_targets > 0 && !o->targets)))
        return seam_error(ctx, SEAM_STATUS_INVALID_ARGUMENT,
                          "seam_pipeline_create: options: micro_batches %d, n_threads %d, stage_timeout_s %g, n_targets "
                          "%d (none may be negative; targets given with n_targets)",
                          o->micro_batches, o->n_threads, o->stage_timeout_s, o->n_targets);
    seam_pipeline *P = calloc(1, sizeof(*P));
    if (!P) return seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    P->ctx = ctx;
    P->M = o && o->micro_batches > 1 ? o->micro_batches : 1;
    P->timeout_s = o && o->stage_timeout_s > 0 ? o->stage_timeout_s : 10;
    P->n_threads = o ? o->n_threads : 0;
    MPI_Comm_rank(comm, &P->rank);
    MPI_Comm_size(comm, &P->size);
    /* The duplicate is made without blocking, so that a rank that never
     * calls does not hang the others; when it times out, the duplicate
     * still under way writes into *dup later, so dup is left to it (an
     * MPI collective cannot be cancelled). */
    struct {
        MPI_Comm comm;
        MPI_Request req;
    } *dup = malloc(sizeof(*dup));
    if (!dup) {
        free(P);
        return seam_error(ctx, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    int e = MPI_Comm_idup(comm, &dup->comm, &dup->req);
    seam_status st = e != MPI_SUCCESS ? pl_mpi_fail(P, e, "MPI_Comm_idup", -1, NULL)
                                      : pl_wait_collective(P, &dup->req, "seam_pipeline_create");
    if (st) {
        if (e != MPI_SUCCESS) free(dup);
        free(P);
        return st;
    }
    P->comm = dup->comm;
    free(dup);
    P->have_comm = true;
    MPI_Comm_set_errhandler(P->comm, MPI_ERRORS_RETURN);
    st = load(P, path, o);
    if ((st = pl_agree(P, st))) {
        seam_pipeline_free(P);
        return st;
    }
    *out = P;
    return SEAM_STATUS_OK;
}

void seam_pipeline_free(seam_pipeline *P) {
    if (!P) return;
    seam_session_free(P->s);
    seam_model_free(P->m);
    bool pending = false; /* a failed run's sends: MPI may still read their buffers */
    for (int32_t q = 0; P->send && q < P->n_send; q++)
        for (int b = 0; b < 2; b++)
            for (int r = 0; r < P->send[q].n_req[b]; r++) {
                int done = 0;
                MPI_Test(&P->send[q].req[b][r], &done, MPI_STATUS_IGNORE);
                if (!done) MPI_Request_free(&P->send[q].req[b][r]), pending = true;
            }
    for (int32_t q = 0; P->send && q < (P->p ? P->p->n_values : 0); q++) {
        free(P->send[q].dest), free(P->send[q].req[0]), free(P->send[q].req[1]);
        if (!pending) free(P->send[q].slot[0].buf), free(P->send[q].slot[1].buf);
    }
    for (int32_t i = 0; P->rin && i < P->n_in; i++) free(P->rin[i].buf);
    for (int32_t k = 0; P->outs && P->p && k < P->p->n_outputs * P->M; k++) free(P->outs[k].buf);
    for (int32_t k = 0; P->joined && P->p && k < P->p->n_outputs; k++) free(P->joined[k].data);
    free(P->rin), free(P->send), free(P->feeds), free(P->outs), free(P->got), free(P->joined), free(P->in_idx);
    free(P->out_idx), free(P->sig_dims), free(P->sig_rank), free(P->path);
    staged_free(P->p);
    if (P->have_comm && !P->broken) MPI_Comm_free(&P->comm);
    free(P);
}

int32_t seam_pipeline_rank(const seam_pipeline *P) { return P ? P->rank : -1; }
int32_t seam_pipeline_stages(const seam_pipeline *P) { return P ? P->size : 0; }
int32_t seam_pipeline_input_count(const seam_pipeline *P) { return P ? P->p->n_inputs : 0; }
int32_t seam_pipeline_output_count(const seam_pipeline *P) { return P ? P->p->n_outputs : 0; }

const char *seam_pipeline_input_name(const seam_pipeline *P, int32_t k) {
    return P && k >= 0 && k < P->p->n_inputs ? P->p->values[P->p->inputs[k]].name : NULL;
}

const char *seam_pipeline_output_name(const seam_pipeline *P, int32_t k) {
    return P && k >= 0 && k < P->p->n_outputs ? P->p->values[P->p->outputs[k]].name : NULL;
}

/* The checks of one input against the plan; the message on ctx. */
static seam_status check_input(seam_pipeline *P, const char *name, seam_dtype dtype, int32_t rank, const int64_t *dims,
                               const void *data, int32_t *pos) {
    const staged_plan *p = P->p;
    int32_t i = -1;
    for (int32_t k = 0; k < p->n_inputs && i < 0; k++)
        if (!strcmp(p->values[p->inputs[k]].name, name)) i = k;
    if (i < 0) return seam_error(P->ctx, SEAM_STATUS_INVALID_ARGUMENT, "the model has no input '%s'", name);
    const staged_value *v = &p->values[p->inputs[i]];
    if (rank < 0 || rank > SEAM_MAX_RANK || (rank > 0 && !dims))
        return seam_error(P->ctx, SEAM_STATUS_INVALID_ARGUMENT, "input '%s': rank %d", name, rank);
    if ((int32_t)dtype != v->dtype || (v->rank >= 0 && rank != v->rank))
        return seam_error(P->ctx, SEAM_STATUS_INVALID_ARGUMENT, "input '%s': the model wants %s of rank %d, not %s of rank %d",
                          name, seam_dtype_name((seam_dtype)v->dtype), v->rank, seam_dtype_name(dtype), rank);
    if (dtype == SEAM_DTYPE_STRING)
        return seam_error(P->ctx, SEAM_STATUS_UNSUPPORTED, "input '%s': strings do not travel between stages", name);
    for (int32_t d = 0; d < rank; d++) {
        if (dims[d] < 0) return seam_error(P->ctx, SEAM_STATUS_INVALID_ARGUMENT, "input '%s': dimension %d is %lld", name, d,
                                           (long long)dims[d]);
        if (v->dims[d] >= 0 && v->dims[d] != dims[d])
            return seam_error(P->ctx, SEAM_STATUS_INVALID_ARGUMENT,
                              "input '%s': dimension %d is fixed at %lld in the model; %lld was given", name, d,
                              (long long)v->dims[d], (long long)dims[d]);
    }
    if (P->M > 1 && (rank < 1 || dims[0] % P->M != 0))
        return seam_error(P->ctx, SEAM_STATUS_INVALID_ARGUMENT,
                          "%d micro-batches: input '%s' has %s%lld, which %d parts do not divide evenly", P->M, name,
                          rank < 1 ? "no first dim" : "a first dim of ", rank < 1 ? 0LL : (long long)dims[0], P->M);
    if (P->M > 1 && v->rank > 0 && v->dims[0] >= 0)
        return seam_error(P->ctx, SEAM_STATUS_INVALID_ARGUMENT,
                          "%d micro-batches: input '%s' has a fixed first dim (%lld); micro-batches need a symbolic one "
                          "(export the model with a dynamic batch)",
                          P->M, name, (long long)v->dims[0]);
    if (!data && seam_shape_numel(dims, rank) > 0)
        return seam_error(P->ctx, SEAM_STATUS_INVALID_ARGUMENT, "input '%s': no data", name);
    *pos = i;
    return SEAM_STATUS_OK;
}

seam_status seam_pipeline_set_input(seam_pipeline *P, const char *name, seam_dtype dtype, int32_t rank,
                                    const int64_t *dims, const void *data) {
    if (!P || !name) return SEAM_STATUS_INVALID_ARGUMENT;
    if (P->rank != 0)
        return seam_error(P->ctx, SEAM_STATUS_INVALID_ARGUMENT,
                          "seam_pipeline_set_input on rank %d: inputs are given on rank 0 (the others receive theirs)",
                          P->rank);
    int32_t i = 0;
    seam_status st = check_input(P, name, dtype, rank, dims, data, &i);
    if (st) {
        if (!P->input_status) {
            P->input_status = st;
            snprintf(P->input_error, sizeof(P->input_error), "%s", seam_context_last_error(P->ctx));
        }
        return st;
    }
    feed *f = &P->feeds[i];
    f->set = true, f->dtype = (int32_t)dtype, f->rank = rank, f->data = data;
    if (rank) memcpy(f->dims, dims, sizeof(int64_t) * (size_t)rank);
    f->nbytes = (size_t)seam_shape_numel(dims, rank) * seam_dtype_size(dtype);
    return SEAM_STATUS_OK;
}

seam_status seam_pipeline_refuse_run(seam_pipeline *P, seam_status st, const char *why) {
    if (!P || st == SEAM_STATUS_OK) return SEAM_STATUS_INVALID_ARGUMENT;
    if (!P->input_status) {
        P->input_status = st;
        snprintf(P->input_error, sizeof(P->input_error), "%s", why && why[0] ? why : seam_status_string(st));
    }
    return SEAM_STATUS_OK;
}

/* Before a run: this rank's status (a refusal; on rank 0, its inputs),
 * agreed by every rank next. */
static seam_status inputs_status(seam_pipeline *P) {
    if (P->input_status) return seam_error(P->ctx, P->input_status, "%s", P->input_error);
    if (P->rank != 0) return SEAM_STATUS_OK;
    for (int32_t k = 0; k < P->p->n_inputs; k++)
        if (!P->feeds[k].set)
            return seam_error(P->ctx, SEAM_STATUS_INVALID_ARGUMENT,
                              "input '%s' was not set (rank 0 sets every input before every run)",
                              P->p->values[P->p->inputs[k]].name);
    return SEAM_STATUS_OK;
}

/* Rank 0, after the run: each graph output's parts joined along dim 0. */
static seam_status join_outputs(seam_pipeline *P) {
    for (int32_t k = 0; k < P->p->n_outputs; k++) {
        const char *name = P->p->values[P->p->outputs[k]].name;
        seam_tensor *t = &P->joined[k];
        const msg *first = &P->outs[k * P->M];
        t->dtype = first->dtype, t->rank = first->rank;
        memcpy(t->dims, first->dims, sizeof(int64_t) * (size_t)t->rank);
        size_t total = 0;
        for (int mb = 0; mb < P->M; mb++) {
            const msg *m = &P->outs[k * P->M + mb];
            bool same = m->dtype == t->dtype && m->rank == t->rank && (P->M == 1 || t->rank > 0);
            for (int32_t d = 1; same && d < t->rank; d++) same = m->dims[d] == t->dims[d];
            if (!same)
                return pl_fail(P, SEAM_STATUS_RUN_FAILED,
                               "output '%s': micro-batch %d's part does not join the others along dim 0", name, mb);
            if (mb) t->dims[0] += m->dims[0];
            total += m->nbytes;
        }
        t->numel = seam_shape_numel(t->dims, t->rank);
        t->nbytes = total;
        if (P->M == 1) continue; /* the one part is the output */
        free(t->data);
        if (!(t->data = malloc(total + 1))) return pl_fail(P, SEAM_STATUS_OUT_OF_MEMORY, "output '%s': out of memory", name);
        size_t at = 0;
        for (int mb = 0; mb < P->M; mb++) {
            const msg *m = &P->outs[k * P->M + mb];
            memcpy((uint8_t *)t->data + at, m->data, m->nbytes);
            at += m->nbytes;
        }
    }
    return SEAM_STATUS_OK;
}

/* Rank 0: the outputs still due, and graph inputs that are outputs too.
 * Rank 0 waits 2 s past the deadline, so that when a rank fails, the rank
 * waiting on it directly says so first (rank 0 is the end of every chain). */
static seam_status collect(seam_pipeline *P) {
    const staged_plan *p = P->p;
    seam_status st = SEAM_STATUS_OK;
    P->grace = 2;
    for (int32_t k = 0; k < p->n_outputs && !st; k++) {
        const staged_value *v = &p->values[p->outputs[k]];
        if (v->from < 0) {
            int32_t i = input_pos(P, p->outputs[k]);
            for (int mb = 0; mb < P->M; mb++) {
                msg *m = &P->outs[k * P->M + mb];
                const void *data;
                feed_part(P, i, mb, m->dims, &data, &m->nbytes);
                if (!pl_grow(m, m->nbytes + 1)) return pl_fail(P, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
                memcpy(m->buf, data, m->nbytes);
                m->dtype = P->feeds[i].dtype, m->rank = P->feeds[i].rank, m->data = m->buf;
            }
            P->got[k] = P->M;
        }
        P->draining = true;
        while (!st && P->got[k] < P->M) {
            st = pl_recv_value(P, v->from, p->outputs[k], P->got[k], &P->outs[k * P->M + P->got[k]], false, NULL);
            if (!st) P->got[k]++;
        }
        P->draining = false;
    }
    P->grace = 0;
    return st;
}

static seam_status run_micro_batches(seam_pipeline *P) {
    const staged_plan *p = P->p;
    seam_status st = SEAM_STATUS_OK;
    P->last_progress = pl_now();
    for (int mb = 0; mb < P->M && !st; mb++) {
        if (P->rank == 0) /* the graph inputs other stages read */
            for (int32_t q = 0; q < P->n_send && !st; q++) {
                int32_t k = input_pos(P, P->send[q].value);
                if (k < 0 || p->values[P->send[q].value].from >= 0) continue;
                int64_t dims[SEAM_MAX_RANK];
                const void *data;
                size_t nb;
                feed_part(P, k, mb, dims, &data, &nb);
                st = pl_send_value(P, &P->send[q], mb, P->feeds[k].dtype, P->feeds[k].rank, dims, data, nb);
            }
        if (!st) st = stage_step(P, mb);
        if (!st && P->rank == 0) st = pl_drain(P);
    }
    if (!st && P->rank == 0) st = collect(P);
    for (int32_t q = 0; q < P->n_send && !st; q++) /* every send delivered */
        for (int b = 0; b < 2 && !st; b++) {
            for (int r = 0; r < P->send[q].n_req[b] && !st; r++)
                st = pl_wait_req(P, &P->send[q].req[b][r], P->send[q].dest[r], p->values[P->send[q].value].name,
                                 P->send[q].mb[b], true);
            if (!st) P->send[q].n_req[b] = 0;
        }
    if (!st && P->rank == 0) st = join_outputs(P);
    return st;
}

seam_status seam_pipeline_run(seam_pipeline *P) {
    if (!P) return SEAM_STATUS_INVALID_ARGUMENT;
    if (P->broken)
        return seam_error(P->ctx, SEAM_STATUS_INVALID_ARGUMENT,
                          "an earlier run of this pipeline failed: free it (seam_pipeline_free) and make another");
    P->t_start = pl_now();
    P->t_compute = P->t_wait = 0;
    seam_status st = pl_agree(P, inputs_status(P));
    P->input_status = SEAM_STATUS_OK;
    if (!st) {
        P->run++;
        memset(P->got, 0, sizeof(int32_t) * (size_t)P->p->n_outputs);
        st = run_micro_batches(P);
    }
    for (int32_t k = 0; k < P->p->n_inputs; k++) P->feeds[k].set = false; /* every input, every run */
    P->t_run = pl_now() - P->t_start;
    return st;
}

seam_status seam_pipeline_output(seam_pipeline *P, int32_t index, seam_tensor_view *view) {
    if (!P || !view) return SEAM_STATUS_INVALID_ARGUMENT;
    if (P->rank != 0)
        return seam_error(P->ctx, SEAM_STATUS_INVALID_ARGUMENT,
                          "seam_pipeline_output on rank %d: the outputs are rank 0's", P->rank);
    if (index < 0 || index >= P->p->n_outputs)
        return seam_error(P->ctx, SEAM_STATUS_INVALID_ARGUMENT, "output %d: the model has %d", index, P->p->n_outputs);
    if (P->run == 0 || P->broken || P->got[index] < P->M)
        return seam_error(P->ctx, SEAM_STATUS_INVALID_ARGUMENT, "output %d: no run has finished", index);
    const seam_tensor *t = &P->joined[index];
    *view = (seam_tensor_view){P->p->values[P->p->outputs[index]].name, (seam_dtype)t->dtype, t->rank, t->dims,
                               P->M == 1 ? P->outs[index].data : t->data, t->nbytes};
    return SEAM_STATUS_OK;
}

seam_status seam_pipeline_get_stats(const seam_pipeline *P, seam_pipeline_stats *out) {
    if (!P || !out) return SEAM_STATUS_INVALID_ARGUMENT;
    const staged_stage *sg = &P->p->stages[P->rank];
    *out = (seam_pipeline_stats){P->rank, P->size, sg->n_nodes, sg->weight_bytes, P->M,
                                 1e3 * P->t_run, 1e3 * P->t_compute, 1e3 * P->t_wait};
    return SEAM_STATUS_OK;
}
