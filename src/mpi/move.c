/* What travels between a pipeline's ranks (pipeline.h): a value's
 * message sent and received, the waits against the deadline, and the
 * agreement on every rank's status before values move. */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pipeline.h"

double pl_now(void) {
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

seam_status pl_fail(seam_pipeline *P, seam_status st, const char *fmt, ...) {
    char text[SEAM_ERROR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    P->broken = true;
    return seam_error(P->ctx, st, "%s", text);
}

seam_status pl_mpi_fail(seam_pipeline *P, int code, const char *call, int peer, const char *name) {
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(code, text, &len);
    if (peer < 0) return pl_fail(P, SEAM_STATUS_RUN_FAILED, "%s failed: %s", call, text);
    return pl_fail(P, SEAM_STATUS_RUN_FAILED, "%s %s rank %d%s%s%s failed: %s", call,
                   !strcmp(call, "MPI_Isend") ? "to" : "from", peer, name ? " ('" : "", name ? name : "",
                   name ? "')" : "", text);
}

static bool late(const seam_pipeline *P) { return pl_now() - P->last_progress > P->timeout_s + P->grace; }

seam_status pl_wait_req(seam_pipeline *P, MPI_Request *req, int peer, const char *name, int mb, bool sending) {
    int us = 10, rc;
    seam_status st;
    double t0 = pl_now();
    for (;;) {
        int flag = 0;
        if ((rc = MPI_Test(req, &flag, MPI_STATUS_IGNORE)) != MPI_SUCCESS)
            return pl_mpi_fail(P, rc, sending ? "MPI_Isend" : "MPI_Imrecv", peer, name);
        if (flag) break;
        if (P->rank == 0 && !P->draining && (st = pl_drain(P))) return st;
        if (late(P)) {
            if (sending)
                return pl_fail(P, SEAM_STATUS_RUN_FAILED,
                               "'%s' (micro-batch %d) not taken by rank %d for %.0f s: it exited, hung, or is still "
                               "busy (a longer stage timeout waits longer)",
                               name, mb, peer, P->timeout_s);
            return pl_fail(P, SEAM_STATUS_RUN_FAILED,
                           "nothing from rank %d for %.0f s (receiving '%s', micro-batch %d): it exited, hung, or is "
                           "still busy (a longer stage timeout waits longer)",
                           peer, P->timeout_s, name, mb);
        }
        backoff(&us);
    }
    P->last_progress = pl_now();
    P->t_wait += P->last_progress - t0;
    return SEAM_STATUS_OK;
}

bool pl_grow(msg *m, size_t need) {
    if (m->cap >= need) return true;
    void *p = NULL;
    if (posix_memalign(&p, 64, need)) return false;
    free(m->buf);
    m->buf = p, m->cap = need;
    return true;
}

seam_status pl_recv_value(seam_pipeline *P, int src, int32_t v, int mb, msg *dst, bool poll, bool *got) {
    const char *name = P->p->values[v].name;
    MPI_Message mm;
    MPI_Status stt;
    int flag = 0, rc, us = 10;
    seam_status st;
    double t0 = pl_now();
    if (got) *got = false;
    for (;;) {
        if ((rc = MPI_Improbe(src, PL_TAG(v), P->comm, &flag, &mm, &stt)) != MPI_SUCCESS)
            return pl_mpi_fail(P, rc, "MPI_Improbe", src, name);
        if (flag) break;
        if (poll) return SEAM_STATUS_OK;
        if (P->rank == 0 && !P->draining && (st = pl_drain(P))) return st;
        if (late(P))
            return pl_fail(P, SEAM_STATUS_RUN_FAILED,
                           "nothing from rank %d for %.0f s (waiting for '%s', micro-batch %d of %d): it exited, hung, "
                           "or is still busy (a longer stage timeout waits longer)",
                           src, P->timeout_s, name, mb, P->M);
        backoff(&us);
    }
    P->t_wait += pl_now() - t0;
    int count = 0;
    MPI_Get_count(&stt, MPI_BYTE, &count);
    if (count < (int)HDR_BYTES || !pl_grow(dst, (size_t)count))
        return pl_fail(P, count < (int)HDR_BYTES ? SEAM_STATUS_RUN_FAILED : SEAM_STATUS_OUT_OF_MEMORY,
                       "'%s' from rank %d: %s", name, src,
                       count < (int)HDR_BYTES ? "a message shorter than its header" : "out of memory");
    MPI_Request req;
    if ((rc = MPI_Imrecv(dst->buf, count, MPI_BYTE, &mm, &req)) != MPI_SUCCESS)
        return pl_mpi_fail(P, rc, "MPI_Imrecv", src, name);
    if ((st = pl_wait_req(P, &req, src, name, mb, false))) return st;
    const int64_t *h = (const int64_t *)dst->buf;
    if (h[0] != P->run || h[1] != mb || h[3] < 0 || h[3] > SEAM_MAX_RANK || h[HDR_NBYTES] < 0 ||
        (size_t)h[HDR_NBYTES] + HDR_BYTES != (size_t)count)
        return pl_fail(P, SEAM_STATUS_RUN_FAILED,
                       "'%s' from rank %d is not run %lld's micro-batch %d, or malformed (run %lld, micro-batch %lld)",
                       name, src, (long long)P->run, mb, (long long)h[0], (long long)h[1]);
    dst->dtype = (int32_t)h[2], dst->rank = (int32_t)h[3];
    for (int32_t d = 0; d < dst->rank; d++) dst->dims[d] = h[4 + d];
    dst->nbytes = (size_t)h[HDR_NBYTES];
    dst->data = dst->buf + HDR_BYTES;
    if (got) *got = true;
    return SEAM_STATUS_OK;
}

seam_status pl_drain(seam_pipeline *P) {
    seam_status st = SEAM_STATUS_OK;
    P->draining = true;
    for (int32_t k = 0; k < P->p->n_outputs && !st; k++) {
        const staged_value *v = &P->p->values[P->p->outputs[k]];
        bool got = true;
        while (!st && got && v->from > 0 && P->got[k] < P->M) {
            st = pl_recv_value(P, v->from, P->p->outputs[k], P->got[k], &P->outs[k * P->M + P->got[k]], true, &got);
            if (!st && got) P->got[k]++;
        }
    }
    P->draining = false;
    return st;
}

/* From the buffer micro-batch mb - 2 used, once its sends are done. */
seam_status pl_send_value(seam_pipeline *P, sender *s, int mb, int32_t dtype, int32_t rank, const int64_t *dims,
                          const void *data, size_t nbytes) {
    const char *name = P->p->values[s->value].name;
    int b = mb % 2, rc;
    seam_status st;
    for (int r = 0; r < s->n_req[b]; r++)
        if ((st = pl_wait_req(P, &s->req[b][r], s->dest[r], name, s->mb[b], true))) return st;
    s->n_req[b] = 0;
    if (nbytes > (size_t)INT_MAX - HDR_BYTES)
        return pl_fail(P, SEAM_STATUS_UNSUPPORTED, "'%s' is %zu bytes, over the 2 GiB of one message: use more micro-batches",
                       name, nbytes);
    msg *m = &s->slot[b];
    if (!pl_grow(m, HDR_BYTES + nbytes)) return pl_fail(P, SEAM_STATUS_OUT_OF_MEMORY, "'%s': out of memory", name);
    int64_t *h = (int64_t *)m->buf;
    memset(h, 0, HDR_BYTES);
    h[0] = P->run, h[1] = mb, h[2] = dtype, h[3] = rank;
    for (int32_t d = 0; d < rank; d++) h[4 + d] = dims[d];
    h[HDR_NBYTES] = (int64_t)nbytes;
    if (nbytes) memcpy(m->buf + HDR_BYTES, data, nbytes);
    s->mb[b] = mb;
    for (int r = 0; r < s->n_dest; r++) {
        if ((rc = MPI_Isend(m->buf, (int)(HDR_BYTES + nbytes), MPI_BYTE, s->dest[r], PL_TAG(s->value), P->comm,
                            &s->req[b][r])) != MPI_SUCCESS)
            return pl_mpi_fail(P, rc, "MPI_Isend", s->dest[r], name);
        s->n_req[b]++;
    }
    return SEAM_STATUS_OK;
}

seam_status pl_wait_collective(seam_pipeline *P, MPI_Request *req, const char *what) {
    int us = 10, e;
    double t0 = pl_now();
    for (;;) {
        int flag = 0;
        if ((e = MPI_Test(req, &flag, MPI_STATUS_IGNORE)) != MPI_SUCCESS) return pl_mpi_fail(P, e, what, -1, NULL);
        if (flag) return SEAM_STATUS_OK;
        if (pl_now() - t0 > P->timeout_s)
            return pl_fail(P, SEAM_STATUS_RUN_FAILED,
                           "the other ranks did not all come to %s within %.0f s (one may have failed, exited, or "
                           "still be loading: a longer stage timeout waits longer)",
                           what, P->timeout_s);
        backoff(&us);
    }
}

/* What a rank tells rank 0 before a run, and rank 0's verdict back. */
typedef struct agree_msg {
    int64_t round, status, origin, missing;
    char text[SEAM_ERROR_MAX];
} agree_msg;

/* Receives an agree_msg from src into m, polling until `until`; false when
 * none came. */
static seam_status recv_agree(seam_pipeline *P, int src, agree_msg *m, double until, bool *came) {
    int us = 10, flag = 0, rc;
    MPI_Message mm;
    MPI_Status stt;
    *came = false;
    for (;;) {
        if ((rc = MPI_Improbe(src, PL_TAG_AGREE, P->comm, &flag, &mm, &stt)) != MPI_SUCCESS)
            return pl_mpi_fail(P, rc, "MPI_Improbe", src, NULL);
        if (flag) break;
        if (pl_now() > until) return SEAM_STATUS_OK;
        backoff(&us);
    }
    int count = 0;
    MPI_Get_count(&stt, MPI_BYTE, &count);
    if (count != (int)sizeof(*m)) {
        MPI_Mrecv(NULL, 0, MPI_BYTE, &mm, MPI_STATUS_IGNORE);
        return pl_fail(P, SEAM_STATUS_RUN_FAILED, "a malformed message from rank %d before a run", src);
    }
    if ((rc = MPI_Mrecv(m, count, MPI_BYTE, &mm, MPI_STATUS_IGNORE)) != MPI_SUCCESS)
        return pl_mpi_fail(P, rc, "MPI_Mrecv", src, NULL);
    if (m->round != P->agreements)
        return pl_fail(P, SEAM_STATUS_RUN_FAILED, "rank %d is out of step (its call %lld, this rank's %lld)", src,
                       (long long)m->round, (long long)P->agreements);
    m->text[sizeof(m->text) - 1] = 0;
    *came = true;
    return SEAM_STATUS_OK;
}

static seam_status send_agree(seam_pipeline *P, int dest, const agree_msg *m) {
    MPI_Request req;
    int rc = MPI_Isend(m, (int)sizeof(*m), MPI_BYTE, dest, PL_TAG_AGREE, P->comm, &req);
    if (rc != MPI_SUCCESS) return pl_mpi_fail(P, rc, "MPI_Isend", dest, NULL);
    P->last_progress = pl_now();
    return pl_wait_req(P, &req, dest, "its status before a run", 0, true);
}

/* Rank 0: every other rank's status within the deadline, the verdict
 * (the lowest failing rank's, or the lowest rank that did not come) sent
 * back to those that came. */
static seam_status judge(seam_pipeline *P, agree_msg *verdict) {
    bool *came = calloc((size_t)P->size + 1, sizeof(bool));
    agree_msg *m = malloc(sizeof(*m));
    if (!came || !m) return free(came), free(m), pl_fail(P, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    double until = pl_now() + P->timeout_s;
    seam_status st = SEAM_STATUS_OK;
    int us = 10, left = P->size - 1;
    while (!st && left > 0 && pl_now() <= until) {
        int before = left;
        for (int r = 1; r < P->size && !st; r++) {
            if (came[r] || (st = recv_agree(P, r, m, 0, &came[r])) || !came[r]) continue;
            left--;
            if (m->status && (!verdict->status || r < verdict->origin)) *verdict = *m;
        }
        if (left == before) backoff(&us);
    }
    for (int r = 1; r < P->size && !st && !verdict->missing; r++)
        if (!came[r]) {
            verdict->status = SEAM_STATUS_RUN_FAILED, verdict->origin = r, verdict->missing = 1;
            snprintf(verdict->text, sizeof(verdict->text),
                     "did not come to the %s within %.0f s: it exited, hung, failed before, or is still busy (a "
                     "longer stage timeout waits longer)",
                     P->agreements ? "run" : "pipeline's creation", P->timeout_s);
        }
    for (int r = 1; r < P->size && !st; r++)
        if (came[r]) st = send_agree(P, r, verdict);
    free(came), free(m);
    return st;
}

seam_status pl_agree(seam_pipeline *P, seam_status mine) {
    agree_msg *m = calloc(1, sizeof(*m));
    if (!m) return pl_fail(P, SEAM_STATUS_OUT_OF_MEMORY, "out of memory");
    m->round = P->agreements, m->status = mine, m->origin = P->rank;
    if (mine) snprintf(m->text, sizeof(m->text), "%s", seam_context_last_error(P->ctx));
    seam_status st;
    bool draining = P->draining;
    P->draining = true; /* no outputs are due */
    P->last_progress = pl_now();
    if (P->rank == 0) {
        st = judge(P, m);
    } else if (!(st = send_agree(P, 0, m))) {
        bool came = false;
        st = recv_agree(P, 0, m, pl_now() + 2 * P->timeout_s + 2, &came);
        if (!st && !came)
            st = pl_fail(P, SEAM_STATUS_RUN_FAILED,
                         "nothing from rank 0 for %.0f s before a run: it exited, hung, or is still busy (a longer "
                         "stage timeout waits longer)",
                         2 * P->timeout_s + 2);
    }
    P->agreements++;
    P->draining = draining;
    if (!st && m->status) {
        if (m->missing) P->broken = true; /* a rank that did not come may still send */
        st = seam_error(P->ctx, (seam_status)m->status, "rank %d: %s", (int)m->origin, m->text);
    }
    free(m);
    return st;
}
