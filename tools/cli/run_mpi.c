/* mpirun -np N seam run STAGED.onnx: one pipeline stage per rank
 * (docs/scale-out.md). Built only with MPI (SEAM_WITH_MPI).
 *
 * Each rank loads its own stage's model (its nodes and weights alone,
 * runtime/staged.c) and, per micro-batch m, receives the values it reads
 * from the ranks that make them, runs, and sends what it makes to the
 * ranks that read it; rank 0 also reads the inputs (and sends each to the
 * stages that read it), gathers the graph outputs and writes them.
 *
 *     rank 0:  x[m] --> stage 0 --h1[m]-->
 *     rank 1:                   --h1[m]--> stage 1 --h2[m]-->
 *     rank 2:                                      --h2[m]--> stage 2 --y[m]--> rank 0
 *
 * A value travels as one message (tag: its index in the plan's "values"):
 * a header (micro-batch, dtype, rank, dims, bytes) and the bytes. Sends are
 * MPI_Isend from one of two buffers per value, so a stage runs micro-batch
 * m + 1 while m's values are still on their way; a buffer is reused (at
 * m + 2) once its sends completed. Every wait polls (MPI_Improbe, MPI_Test)
 * against a deadline: no progress for --stage-timeout seconds (default 10)
 * ends the run with an error naming the rank waited for, and the job is
 * aborted so the other ranks end too. MPI errors return
 * (MPI_ERRORS_RETURN) and are reported naming the rank. Rank 0 takes the
 * outputs as they come, also while it waits for anything else, so no
 * stage waits on it.
 *
 * The pipeline runs over the communicator it is given (stage_pipeline);
 * run_mpi_pipeline passes a duplicate of MPI_COMM_WORLD.
 */
#include <errno.h>
#include <limits.h>
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "core/npy.h"
#include "ir/ir.h"
#include "run.h"
#include "seam_partition.h"

#define HDR_WORDS 24                          /* micro-batch, dtype, rank, dims[16], bytes; 192 bytes */
#define HDR_BYTES (HDR_WORDS * sizeof(int64_t)) /* the data after it stays 64-byte aligned */

/* A tensor as it travels: a buffer with the header and the bytes. */
typedef struct msg {
    uint8_t *buf;
    size_t cap;
    int32_t dtype, rank;
    int64_t dims[SEAM_MAX_RANK];
    size_t nbytes;
    const void *data;
} msg;

/* A value this rank sends: to whom, from two buffers in turn. */
typedef struct sender {
    int32_t value;   /* index into the plan's values */
    int32_t n_dest;
    int *dest;       /* ranks */
    msg slot[2];
    MPI_Request *req[2];
    int n_req[2], mb[2];
} sender;

typedef struct pipeline {
    MPI_Comm comm;
    int rank, size, M;
    const staged_plan *p;
    const stage_run_opts *o;
    double timeout_s, last_progress;
    double grace;           /* added to the deadline of rank 0's last collection (see stage_pipeline) */
    bool draining;
    seam_context *ctx;
    seam_model *m;
    seam_session *s;
    int32_t n_in, n_out;    /* the stage model's inputs and outputs (indices into values) */
    int32_t *in_idx, *out_idx;
    msg *rin;               /* per stage input: the last received */
    int32_t n_send;
    sender *send;
    /* rank 0 */
    seam_tensor *feeds;     /* per graph input (p->inputs order), whole */
    msg *outs;              /* per graph output and micro-batch: [k * M + mb] */
    int32_t *got;           /* per graph output: parts in */
    double t_compute, t_wait, t_start;
} pipeline;

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Sleeps between polls: 10 us, doubling to 1 ms while nothing comes. The
 * CPU is left to the ranks that compute (a rank spinning in MPI_Wait on a
 * shared machine slows the stage it waits for). */
static void backoff(int *us) {
    struct timespec t = {0, (long)*us * 1000};
    nanosleep(&t, NULL);
    if (*us < 1000) *us *= 2;
}

static int mpi_fail(const pipeline *P, int code, const char *call, int peer, const char *name) {
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(code, text, &len);
    fprintf(stderr, "seam run: rank %d: %s %s rank %d%s%s%s failed: %s\n", P->rank, call,
            !strcmp(call, "MPI_Isend") ? "to" : "from", peer, name ? " ('" : "", name ? name : "", name ? "')" : "", text);
    return CLI_BAD_INPUT;
}

static int drain(pipeline *P);

/* A failed seam call on this rank: its status and message. */
static int rank_fail(const pipeline *P, seam_status st) {
    fprintf(stderr, "seam run: rank %d: %s: %s\n", P->rank, seam_status_string(st), seam_context_last_error(P->ctx));
    return CLI_BAD_INPUT;
}

/* Waits for req (with peer, about value `name` of micro-batch mb) within
 * the deadline; rank 0 takes outputs meanwhile. */
static int wait_req(pipeline *P, MPI_Request *req, int peer, const char *name, int mb, bool sending) {
    int us = 10, rc;
    double t0 = now_s();
    for (;;) {
        int flag = 0;
        if ((rc = MPI_Test(req, &flag, MPI_STATUS_IGNORE)) != MPI_SUCCESS)
            return mpi_fail(P, rc, sending ? "MPI_Isend" : "MPI_Imrecv", peer, name);
        if (flag) break;
        if (P->rank == 0 && !P->draining && (rc = drain(P))) return rc;
        if (now_s() - P->last_progress > P->timeout_s + P->grace) {
            if (sending)
                fprintf(stderr,
                        "seam run: rank %d: rank %d has not taken '%s' (micro-batch %d) for %.0f s: it exited, hung, or "
                        "is still busy (--stage-timeout S waits longer)\n",
                        P->rank, peer, name, mb, P->timeout_s);
            else
                fprintf(stderr,
                        "seam run: rank %d: nothing from rank %d for %.0f s (receiving '%s', micro-batch %d): it exited, "
                        "hung, or is still busy (--stage-timeout S waits longer)\n",
                        P->rank, peer, P->timeout_s, name, mb);
            return CLI_BAD_INPUT;
        }
        backoff(&us);
    }
    P->last_progress = now_s();
    P->t_wait += P->last_progress - t0;
    return CLI_OK;
}

static bool grow(msg *m, size_t need) {
    if (m->cap >= need) return true;
    void *p = NULL;
    if (posix_memalign(&p, 64, need)) return false;
    free(m->buf);
    m->buf = p, m->cap = need;
    return true;
}

/* Receives value v (its tag) of micro-batch mb from rank src into dst.
 * poll: only when it is there already (*got says). */
static int recv_value(pipeline *P, int src, int32_t v, int mb, msg *dst, bool poll, bool *got) {
    const char *name = P->p->values[v].name;
    MPI_Message mm;
    MPI_Status stt;
    int flag = 0, rc, us = 10;
    double t0 = now_s();
    if (got) *got = false;
    for (;;) {
        if ((rc = MPI_Improbe(src, v, P->comm, &flag, &mm, &stt)) != MPI_SUCCESS)
            return mpi_fail(P, rc, "MPI_Improbe", src, name);
        if (flag) break;
        if (poll) return CLI_OK;
        if (P->rank == 0 && !P->draining && (rc = drain(P))) return rc;
        if (now_s() - P->last_progress > P->timeout_s + P->grace) {
            fprintf(stderr,
                    "seam run: rank %d: nothing from rank %d for %.0f s (waiting for '%s', micro-batch %d of %d): it "
                    "exited, hung, or is still busy (--stage-timeout S waits longer)\n",
                    P->rank, src, P->timeout_s, name, mb, P->M);
            return CLI_BAD_INPUT;
        }
        backoff(&us);
    }
    P->t_wait += now_s() - t0;
    int count = 0;
    MPI_Get_count(&stt, MPI_BYTE, &count);
    if (count < (int)HDR_BYTES || !grow(dst, (size_t)count)) {
        fprintf(stderr, "seam run: rank %d: '%s' from rank %d: %s\n", P->rank, name, src,
                count < (int)HDR_BYTES ? "a message shorter than its header" : "out of memory");
        return CLI_BAD_INPUT;
    }
    MPI_Request req;
    if ((rc = MPI_Imrecv(dst->buf, count, MPI_BYTE, &mm, &req)) != MPI_SUCCESS) return mpi_fail(P, rc, "MPI_Imrecv", src, name);
    if ((rc = wait_req(P, &req, src, name, mb, false))) return rc;
    const int64_t *h = (const int64_t *)dst->buf;
    if (h[0] != mb || h[2] < 0 || h[2] > SEAM_MAX_RANK || (size_t)h[3 + SEAM_MAX_RANK] + HDR_BYTES != (size_t)count) {
        fprintf(stderr, "seam run: rank %d: '%s' from rank %d is not micro-batch %d's, or malformed (micro-batch %lld)\n",
                P->rank, name, src, mb, (long long)h[0]);
        return CLI_BAD_INPUT;
    }
    dst->dtype = (int32_t)h[1], dst->rank = (int32_t)h[2];
    for (int32_t d = 0; d < dst->rank; d++) dst->dims[d] = h[3 + d];
    dst->nbytes = (size_t)h[3 + SEAM_MAX_RANK];
    dst->data = dst->buf + HDR_BYTES;
    if (got) *got = true;
    return CLI_OK;
}

/* Rank 0: every graph output part that has arrived, taken. */
static int drain(pipeline *P) {
    int rc = CLI_OK;
    P->draining = true;
    for (int32_t k = 0; k < P->p->n_outputs && !rc; k++) {
        const staged_value *v = &P->p->values[P->p->outputs[k]];
        bool got = true;
        while (!rc && got && v->from > 0 && P->got[k] < P->M) {
            rc = recv_value(P, v->from, P->p->outputs[k], P->got[k], &P->outs[k * P->M + P->got[k]], true, &got);
            if (!rc && got) P->got[k]++;
        }
    }
    P->draining = false;
    return rc;
}

/* Sends (dtype, rank, dims, data) as value s->value of micro-batch mb to
 * s's ranks, from the buffer micro-batch mb - 2 used once its sends are
 * done. */
static int send_value(pipeline *P, sender *s, int mb, int32_t dtype, int32_t rank, const int64_t *dims, const void *data,
                      size_t nbytes) {
    const char *name = P->p->values[s->value].name;
    int b = mb % 2, rc;
    for (int r = 0; r < s->n_req[b]; r++)
        if ((rc = wait_req(P, &s->req[b][r], s->dest[r], name, s->mb[b], true))) return rc;
    s->n_req[b] = 0;
    if (nbytes > (size_t)INT_MAX - HDR_BYTES) {
        fprintf(stderr, "seam run: rank %d: '%s' is %zu bytes, over the 2 GiB of one message: use more --micro-batches\n",
                P->rank, name, nbytes);
        return CLI_BAD_INPUT;
    }
    msg *m = &s->slot[b];
    if (!grow(m, HDR_BYTES + nbytes)) {
        fprintf(stderr, "seam run: rank %d: out of memory\n", P->rank);
        return CLI_BAD_INPUT;
    }
    int64_t *h = (int64_t *)m->buf;
    memset(h, 0, HDR_BYTES);
    h[0] = mb, h[1] = dtype, h[2] = rank;
    for (int32_t d = 0; d < rank; d++) h[3 + d] = dims[d];
    h[3 + SEAM_MAX_RANK] = (int64_t)nbytes;
    if (nbytes) memcpy(m->buf + HDR_BYTES, data, nbytes);
    s->mb[b] = mb;
    for (int r = 0; r < s->n_dest; r++) {
        if ((rc = MPI_Isend(m->buf, (int)(HDR_BYTES + nbytes), MPI_BYTE, s->dest[r], s->value, P->comm,
                            &s->req[b][r])) != MPI_SUCCESS)
            return mpi_fail(P, rc, "MPI_Isend", s->dest[r], name);
        s->n_req[b]++;
    }
    return CLI_OK;
}

/* SEAM_STAGE_FAULT=RANK:MB[:exit|kill|hang], a test hook: rank RANK
 * exits (status 1), is killed (SIGKILL) or stops answering when it comes
 * to micro-batch MB. */
static void fault_hook(const pipeline *P, int mb) {
    const char *f = getenv("SEAM_STAGE_FAULT");
    int r = -1, at = -1;
    char mode[16] = "exit";
    if (!f || sscanf(f, "%d:%d:%15s", &r, &at, mode) < 2 || r != P->rank || at != mb) return;
    fprintf(stderr, "seam run: rank %d: SEAM_STAGE_FAULT: %s at micro-batch %d\n", P->rank, mode, mb);
    fflush(stderr);
    if (!strcmp(mode, "kill")) raise(SIGKILL);
    if (!strcmp(mode, "hang"))
        for (;;) pause();
    _exit(1);
}

/* The session, made when the first micro-batch's shapes are known (as a
 * plain seam run fixes its inputs' shapes before making its session). */
static int make_session(pipeline *P, const int64_t (*dims)[SEAM_MAX_RANK], const int32_t *ranks) {
    seam_status st;
    for (int32_t i = 0; i < P->n_in; i++)
        if ((st = seam_model_set_input_shape(P->m, P->p->values[P->in_idx[i]].name, ranks[i], dims[i])))
            return rank_fail(P, st);
    cli_targets *tg = P->o->tg;
    seam_qdq_stats q;
    if (!tg->no_fold && (st = seam_model_fuse_qdq(P->m, SEAM_QDQ_UNITS | SEAM_QDQ_FOLD, &q)))
        return rank_fail(P, st);
    run_find_saved_targets(tg, P->ctx, P->m);
    bool has_dnnl = false;
    for (int32_t k = 0; k < tg->n_avail; k++) has_dnnl |= tg->avail[k] == seam_backend_dnnl();
    if (!has_dnnl && tg->n_avail < (int32_t)(sizeof(tg->avail) / sizeof(tg->avail[0]))) tg->avail[tg->n_avail++] = seam_backend_dnnl();
    seam_session_options so = {P->o->threads, false, false, tg->avail, tg->n_avail, NULL, NULL};
    if ((st = seam_session_create(P->m, &so, &P->s))) return rank_fail(P, st);
    return CLI_OK;
}

/* Micro-batch mb's part of rank 0's graph input k: dim 0 cut into M. */
static void feed_part(const pipeline *P, int32_t k, int mb, int64_t *dims, const void **data, size_t *nbytes) {
    const seam_tensor *t = &P->feeds[k];
    for (int32_t d = 0; d < t->rank; d++) dims[d] = t->dims[d];
    *nbytes = t->nbytes / (size_t)P->M;
    if (t->rank > 0) dims[0] = t->dims[0] / P->M;
    *data = (const uint8_t *)t->data + (size_t)mb * *nbytes;
}

static int32_t input_pos(const pipeline *P, int32_t value) {
    for (int32_t k = 0; k < P->p->n_inputs; k++)
        if (P->p->inputs[k] == value) return k;
    return -1;
}

/* One micro-batch through this rank's stage. */
static int stage_step(pipeline *P, int mb) {
    const staged_plan *p = P->p;
    int rc;
    seam_status st;
    fault_hook(P, mb);
    int64_t(*dims)[SEAM_MAX_RANK] = calloc((size_t)P->n_in + 1, sizeof(*dims));
    int32_t *ranks = calloc((size_t)P->n_in + 1, sizeof(int32_t)), *dtypes = calloc((size_t)P->n_in + 1, sizeof(int32_t));
    const void **data = calloc((size_t)P->n_in + 1, sizeof(void *));
    if (!dims || !ranks || !dtypes || !data) {
        free(dims), free(ranks), free(dtypes), free(data);
        fprintf(stderr, "seam run: rank %d: out of memory\n", P->rank);
        return CLI_BAD_INPUT;
    }
    rc = CLI_OK;
    for (int32_t i = 0; i < P->n_in && !rc; i++) {
        const staged_value *v = &p->values[P->in_idx[i]];
        if (v->from < 0 && P->rank == 0) { /* a graph input rank 0 holds */
            int32_t k = input_pos(P, P->in_idx[i]);
            size_t nb;
            feed_part(P, k, mb, dims[i], &data[i], &nb);
            ranks[i] = P->feeds[k].rank, dtypes[i] = P->feeds[k].dtype;
            continue;
        }
        msg *r = &P->rin[i];
        if ((rc = recv_value(P, v->from < 0 ? 0 : v->from, P->in_idx[i], mb, r, false, NULL))) break;
        memcpy(dims[i], r->dims, sizeof(int64_t) * (size_t)r->rank);
        ranks[i] = r->rank, dtypes[i] = r->dtype, data[i] = r->data;
    }
    if (!rc && !P->s) rc = make_session(P, (const int64_t(*)[SEAM_MAX_RANK])dims, ranks);
    for (int32_t i = 0; i < P->n_in && !rc; i++)
        if ((st = seam_session_set_input(P->s, p->values[P->in_idx[i]].name, (seam_dtype)dtypes[i], ranks[i], dims[i],
                                         data[i])))
            rc = rank_fail(P, st);
    free(dims), free(ranks), free(dtypes), free(data);
    if (rc) return rc;
    double t0 = now_s();
    if ((st = seam_session_run(P->s))) return rank_fail(P, st);
    P->t_compute += now_s() - t0;
    P->last_progress = now_s(); /* computing is progress too */
    for (int32_t k = 0; k < P->n_out; k++) {
        seam_tensor_view view;
        if ((st = seam_session_output(P->s, k, &view))) return rank_fail(P, st);
        for (int32_t q = 0; q < P->n_send; q++)
            if (P->send[q].value == P->out_idx[k] &&
                (rc = send_value(P, &P->send[q], mb, view.dtype, view.rank, view.dims, view.data, view.nbytes)))
                return rc;
        if (P->rank != 0 || !p->values[P->out_idx[k]].output) continue;
        for (int32_t o = 0; o < p->n_outputs; o++) { /* rank 0's own graph output */
            if (p->outputs[o] != P->out_idx[k]) continue;
            msg *m = &P->outs[o * P->M + mb];
            if (!grow(m, view.nbytes + 1)) return fprintf(stderr, "seam run: rank 0: out of memory\n"), CLI_BAD_INPUT;
            memcpy(m->buf, view.data, view.nbytes);
            m->dtype = view.dtype, m->rank = view.rank, m->nbytes = view.nbytes, m->data = m->buf;
            memcpy(m->dims, view.dims, sizeof(int64_t) * (size_t)view.rank);
            P->got[o]++;
        }
    }
    return CLI_OK;
}

/* Rank 0: the --input files, checked against the plan's inputs and M. */
static int read_feeds(pipeline *P) {
    const staged_plan *p = P->p;
    const stage_run_opts *o = P->o;
    char err[1024];
    for (int k = 0; k < o->n_inputs; k++) {
        bool known = false;
        for (int32_t i = 0; i < p->n_inputs; i++) known |= !strcmp(p->values[p->inputs[i]].name, o->input_names[k]);
        if (!known) return fprintf(stderr, "seam run: the model has no input '%s'\n", o->input_names[k]), CLI_BAD_INPUT;
    }
    for (int32_t i = 0; i < p->n_inputs; i++) {
        const staged_value *v = &p->values[p->inputs[i]];
        int file = -1;
        for (int k = 0; k < o->n_inputs; k++)
            if (!strcmp(o->input_names[k], v->name)) file = k;
        if (file < 0)
            return cli_usage("run", "a staged run reads every input from a file: give --input %s=FILE", v->name);
        if (!run_read_input(P->ctx, o->input_files[file], NULL, &P->feeds[i], err, sizeof(err)))
            return fprintf(stderr, "seam run: input '%s': %s\n", v->name, err), CLI_BAD_INPUT;
        const seam_tensor *t = &P->feeds[i];
        if (t->dtype != v->dtype || (v->rank >= 0 && t->rank != v->rank))
            return fprintf(stderr, "seam run: input '%s': the model wants %s of rank %d, the file holds %s of rank %d\n",
                           v->name, seam_dtype_name((seam_dtype)v->dtype), v->rank, seam_dtype_name((seam_dtype)t->dtype),
                           t->rank),
                   CLI_BAD_INPUT;
        for (int32_t d = 0; d < v->rank && d < t->rank; d++)
            if (v->dims[d] >= 0 && v->dims[d] != t->dims[d])
                return fprintf(stderr, "seam run: input '%s': dimension %d is fixed at %lld in the model; %lld was given\n",
                               v->name, d, (long long)v->dims[d], (long long)t->dims[d]),
                       CLI_BAD_INPUT;
        if (t->dtype == SEAM_DTYPE_STRING)
            return fprintf(stderr, "seam run: input '%s': strings do not travel between stages\n", v->name), CLI_BAD_INPUT;
        if (P->M > 1 && (t->rank < 1 || t->dims[0] % P->M != 0))
            return cli_usage("run", "--micro-batches %d: input '%s' has %s%lld, which %d parts do not divide evenly", P->M,
                             v->name, t->rank < 1 ? "no first dim" : "a first dim of ",
                             t->rank < 1 ? 0LL : (long long)t->dims[0], P->M);
        if (P->M > 1 && v->rank > 0 && v->dims[0] >= 0)
            return cli_usage("run", "--micro-batches %d: input '%s' has a fixed first dim (%lld); micro-batches need a "
                                    "symbolic one (export the model with a dynamic batch)",
                             P->M, v->name, (long long)v->dims[0]);
    }
    return CLI_OK;
}

/* The senders of this rank: its stage's outputs that another rank reads
 * (graph outputs go to rank 0), and on rank 0 the graph inputs. */
static int make_senders(pipeline *P) {
    const staged_plan *p = P->p;
    P->send = calloc((size_t)p->n_values + 1, sizeof(sender));
    if (!P->send) return CLI_BAD_INPUT;
    for (int32_t v = 0; v < p->n_values; v++) {
        const staged_value *val = &p->values[v];
        bool mine = val->from == P->rank || (val->from < 0 && P->rank == 0);
        if (!mine) continue;
        sender *s = &P->send[P->n_send];
        s->dest = malloc(sizeof(int) * ((size_t)val->n_to + 2));
        s->req[0] = malloc(sizeof(MPI_Request) * ((size_t)val->n_to + 2));
        s->req[1] = malloc(sizeof(MPI_Request) * ((size_t)val->n_to + 2));
        if (!s->dest || !s->req[0] || !s->req[1]) return CLI_BAD_INPUT;
        for (int32_t k = 0; k < val->n_to; k++)
            if (val->to[k] != P->rank) s->dest[s->n_dest++] = val->to[k];
        if (val->output && P->rank != 0 && val->from == P->rank) s->dest[s->n_dest++] = 0;
        s->value = v;
        if (s->n_dest) P->n_send++;
    }
    return CLI_OK;
}

static void print_shape(const char *name, const seam_tensor *t) {
    printf("output '%s': %s [", name, seam_dtype_name((seam_dtype)t->dtype));
    for (int32_t d = 0; d < t->rank; d++) printf("%s%lld", d ? "," : "", (long long)t->dims[d]);
    printf("]\n");
}

/* Rank 0: each graph output's parts joined along dim 0, written as
 * DIR/<name>.npy (or its shape printed). */
static int write_outputs(pipeline *P) {
    const staged_plan *p = P->p;
    const char *dir = P->o->out_dir;
    if (dir && mkdir(dir, 0755) != 0 && errno != EEXIST)
        return fprintf(stderr, "seam run: cannot create '%s': %s\n", dir, strerror(errno)), CLI_BAD_INPUT;
    for (int32_t k = 0; k < p->n_outputs; k++) {
        const staged_value *v = &p->values[p->outputs[k]];
        seam_tensor t = {0};
        const msg *first = &P->outs[k * P->M];
        t.dtype = first->dtype, t.rank = first->rank;
        memcpy(t.dims, first->dims, sizeof(int64_t) * (size_t)t.rank);
        size_t total = 0;
        for (int mb = 0; mb < P->M; mb++) {
            const msg *m = &P->outs[k * P->M + mb];
            bool same = m->dtype == t.dtype && m->rank == t.rank && (P->M == 1 || t.rank > 0);
            for (int32_t d = 1; same && d < t.rank; d++) same = m->dims[d] == t.dims[d];
            if (!same)
                return fprintf(stderr, "seam run: output '%s': micro-batch %d's part does not join the others along dim 0\n",
                               v->name, mb),
                       CLI_BAD_INPUT;
            if (mb) t.dims[0] += m->dims[0];
            total += m->nbytes;
        }
        t.numel = seam_shape_numel(t.dims, t.rank);
        t.nbytes = total;
        t.data = malloc(total + 1);
        if (!t.data) return fprintf(stderr, "seam run: out of memory\n"), CLI_BAD_INPUT;
        size_t at = 0;
        for (int mb = 0; mb < P->M; mb++) {
            const msg *m = &P->outs[k * P->M + mb];
            memcpy((uint8_t *)t.data + at, m->data, m->nbytes);
            at += m->nbytes;
        }
        int rc = CLI_OK;
        if (dir) {
            char fname[512], path[4096], tmp[4200], err[1024];
            npy_file_name(v->name, fname, sizeof(fname), "output");
            snprintf(path, sizeof(path), "%s/%s.npy", dir, fname);
            snprintf(tmp, sizeof(tmp), "%s.tmp%ld", path, (long)getpid());
            if (!npy_write(tmp, &t, err, sizeof(err)) || rename(tmp, path) != 0) {
                fprintf(stderr, "seam run: output '%s': %s\n", v->name, err);
                unlink(tmp);
                rc = CLI_BAD_INPUT;
            }
        } else {
            print_shape(v->name, &t);
        }
        free(t.data);
        if (rc) return rc;
    }
    return CLI_OK;
}

static void report(const pipeline *P) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    const staged_stage *sg = &P->p->stages[P->rank];
    fprintf(stderr,
            "seam run: rank %d of %d: stage %d, %d nodes, weights %lld bytes; %d micro-batches in %.1f ms (computing "
            "%.1f ms, waiting %.1f ms); peak resident memory %ld KiB\n",
            P->rank, P->size, P->rank, sg->n_nodes, (long long)sg->weight_bytes, P->M, 1e3 * (now_s() - P->t_start),
            1e3 * P->t_compute, 1e3 * P->t_wait, ru.ru_maxrss);
}

/* Agrees on every rank's status so far (the largest wins), within the
 * deadline: a rank that failed to start stops the others cleanly. */
static int agree(pipeline *P, int rc, int *all) {
    MPI_Request req;
    int e = MPI_Iallreduce(&rc, all, 1, MPI_INT, MPI_MAX, P->comm, &req);
    if (e != MPI_SUCCESS) return mpi_fail(P, e, "MPI_Iallreduce", -1, NULL);
    int us = 10;
    double t0 = now_s();
    for (;;) {
        int flag = 0;
        if ((e = MPI_Test(&req, &flag, MPI_STATUS_IGNORE)) != MPI_SUCCESS) return mpi_fail(P, e, "MPI_Iallreduce", -1, NULL);
        if (flag) return CLI_OK;
        if (now_s() - t0 > P->timeout_s) {
            fprintf(stderr, "seam run: rank %d: the other ranks were not all ready within %.0f s (one may have failed "
                            "to start, or is still loading: --stage-timeout S waits longer)\n", P->rank, P->timeout_s);
            return CLI_BAD_INPUT;
        }
        backoff(&us);
    }
}

static void pipe_free(pipeline *P) {
    seam_session_free(P->s);
    seam_model_free(P->m);
    for (int32_t i = 0; P->rin && i < P->n_in; i++) free(P->rin[i].buf);
    for (int32_t q = 0; P->send && q < P->p->n_values; q++) {
        free(P->send[q].dest), free(P->send[q].req[0]), free(P->send[q].req[1]);
        free(P->send[q].slot[0].buf), free(P->send[q].slot[1].buf);
    }
    for (int32_t k = 0; P->feeds && k < P->p->n_inputs; k++) seam_value_free(&P->feeds[k]);
    for (int32_t k = 0; P->outs && k < P->p->n_outputs * P->M; k++) free(P->outs[k].buf);
    free(P->rin), free(P->send), free(P->feeds), free(P->outs), free(P->got), free(P->in_idx), free(P->out_idx);
    seam_context_free(P->ctx);
}

/* The pipeline over comm (whose size is the plan's stage count), this
 * rank running stage `rank`. *abort_job: the failure came while other
 * ranks may still wait on this one. */
static int stage_pipeline(MPI_Comm comm, const stage_run_opts *o, const staged_plan *p, bool *abort_job) {
    pipeline P;
    memset(&P, 0, sizeof(P));
    P.comm = comm, P.p = p, P.o = o, P.timeout_s = o->timeout_s, P.M = o->micro_batches ? o->micro_batches : 1;
    P.t_start = now_s();
    MPI_Comm_rank(comm, &P.rank);
    MPI_Comm_size(comm, &P.size);
    *abort_job = false;
    int rc = seam_context_create(&P.ctx) ? CLI_BAD_INPUT : CLI_OK;
    void *tag_ub = NULL;
    int has_ub = 0;
    MPI_Comm_get_attr(comm, MPI_TAG_UB, &tag_ub, &has_ub);
    if (!rc && has_ub && p->n_values > *(int *)tag_ub) {
        fprintf(stderr, "seam run: %d values cross stages, over this MPI's %d tags\n", p->n_values, *(int *)tag_ub);
        rc = CLI_BAD_INPUT;
    }
    if (!rc) {
        P.n_in = staged_stage_inputs(p, P.rank, NULL), P.n_out = staged_stage_outputs(p, P.rank, NULL);
        P.in_idx = malloc(sizeof(int32_t) * ((size_t)P.n_in + 1));
        P.out_idx = malloc(sizeof(int32_t) * ((size_t)P.n_out + 1));
        P.rin = calloc((size_t)P.n_in + 1, sizeof(msg));
        if (!P.in_idx || !P.out_idx || !P.rin) rc = CLI_BAD_INPUT;
    }
    if (!rc) {
        staged_stage_inputs(p, P.rank, P.in_idx);
        staged_stage_outputs(p, P.rank, P.out_idx);
        rc = make_senders(&P);
        if (rc) fprintf(stderr, "seam run: rank %d: out of memory\n", P.rank);
    }
    if (!rc && P.rank == 0) {
        P.feeds = calloc((size_t)p->n_inputs + 1, sizeof(seam_tensor));
        P.outs = calloc((size_t)p->n_outputs * (size_t)P.M + 1, sizeof(msg));
        P.got = calloc((size_t)p->n_outputs + 1, sizeof(int32_t));
        rc = P.feeds && P.outs && P.got ? read_feeds(&P) : CLI_BAD_INPUT;
    }
    seam_status st;
    if (!rc && o->tg->n_libs > 0) rc = targets_load(o->tg, "run", P.ctx);
    if (!rc && (st = staged_load_stage(P.ctx, o->path, p, P.rank, &P.m))) rc = rank_fail(&P, st);
    int all = rc;
    if (agree(&P, rc, &all)) {
        *abort_job = true;
        pipe_free(&P);
        return CLI_BAD_INPUT;
    }
    if (all) {
        pipe_free(&P);
        return all;
    }
    P.last_progress = now_s();
    for (int mb = 0; mb < P.M && !rc; mb++) {
        if (P.rank == 0) /* the graph inputs other stages read */
            for (int32_t q = 0; q < P.n_send && !rc; q++) {
                int32_t k = input_pos(&P, P.send[q].value);
                if (k < 0 || p->values[P.send[q].value].from >= 0) continue;
                int64_t dims[SEAM_MAX_RANK];
                const void *data;
                size_t nb;
                feed_part(&P, k, mb, dims, &data, &nb);
                rc = send_value(&P, &P.send[q], mb, P.feeds[k].dtype, P.feeds[k].rank, dims, data, nb);
            }
        if (!rc) rc = stage_step(&P, mb);
        if (!rc && P.rank == 0) rc = drain(&P);
    }
    /* the outputs still due: rank 0 waits 2 s past the deadline, so that
     * when a rank fails, the rank waiting on it directly says so first
     * (rank 0 is the end of every chain) */
    P.grace = 2;
    if (!rc && P.rank == 0) {
        for (int32_t k = 0; k < p->n_outputs && !rc; k++) {
            const staged_value *v = &p->values[p->outputs[k]];
            if (v->from < 0) { /* a graph input that is an output as well */
                for (int mb = 0; mb < P.M; mb++) {
                    int32_t i = input_pos(&P, p->outputs[k]);
                    msg *m = &P.outs[k * P.M + mb];
                    const void *data;
                    feed_part(&P, i, mb, m->dims, &data, &m->nbytes);
                    m->dtype = P.feeds[i].dtype, m->rank = P.feeds[i].rank, m->data = data;
                }
                P.got[k] = P.M;
            }
            P.draining = true;
            while (!rc && P.got[k] < P.M) {
                rc = recv_value(&P, v->from, p->outputs[k], P.got[k], &P.outs[k * P.M + P.got[k]], false, NULL);
                if (!rc) P.got[k]++;
            }
            P.draining = false;
        }
    }
    for (int32_t q = 0; q < P.n_send && !rc; q++) /* every send delivered */
        for (int b = 0; b < 2 && !rc; b++)
            for (int r = 0; r < P.send[q].n_req[b] && !rc; r++)
                rc = wait_req(&P, &P.send[q].req[b][r], P.send[q].dest[r], p->values[P.send[q].value].name,
                              P.send[q].mb[b], true);
    if (!rc && P.rank == 0) rc = write_outputs(&P);
    if (!rc && o->report) report(&P);
    *abort_job = rc != CLI_OK;
    pipe_free(&P);
    return rc;
}

int run_mpi_pipeline(const stage_run_opts *o, const staged_plan *p) {
    if (MPI_Init(NULL, NULL) != MPI_SUCCESS) {
        fprintf(stderr, "seam run: MPI_Init failed\n");
        return CLI_BAD_INPUT;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm comm;
    if (MPI_Comm_dup(MPI_COMM_WORLD, &comm) != MPI_SUCCESS) {
        fprintf(stderr, "seam run: MPI_Comm_dup failed\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
        return CLI_BAD_INPUT;
    }
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    bool abort_job = false;
    int rc = stage_pipeline(comm, o, p, &abort_job);
    fflush(stdout);
    fflush(stderr);
    if (abort_job) MPI_Abort(comm, rc ? rc : 1); /* the others may wait on this rank: end them now */
    MPI_Comm_free(&comm);
    MPI_Finalize();
    return rc;
}
