#include "core/context.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

const char *seam_status_string(seam_status status) {
    switch (status) {
    case SEAM_STATUS_OK: return "ok";
    case SEAM_STATUS_INVALID_ARGUMENT: return "invalid argument";
    case SEAM_STATUS_IO_ERROR: return "i/o error";
    case SEAM_STATUS_PARSE_ERROR: return "parse error";
    case SEAM_STATUS_INVALID_MODEL: return "invalid model";
    case SEAM_STATUS_UNSUPPORTED: return "unsupported";
    case SEAM_STATUS_OUT_OF_MEMORY: return "out of memory";
    case SEAM_STATUS_INTERNAL: return "internal error";
    case SEAM_STATUS_RUN_FAILED: return "run failed";
    }
    return "unknown status";
}

seam_status seam_context_create(seam_context **ctx_out) {
    if (!ctx_out) return SEAM_STATUS_INVALID_ARGUMENT;
    seam_context *ctx = calloc(1, sizeof(*ctx));
    if (ctx) {
        const char *check = getenv("SEAM_SELF_CHECK");
        ctx->trace_phases = getenv("SEAM_TRACE_PHASES") != NULL;
        ctx->self_check = check && check[0] && strcmp(check, "0") != 0;
    }
    *ctx_out = ctx;
    return ctx ? SEAM_STATUS_OK : SEAM_STATUS_OUT_OF_MEMORY;
}

void seam_context_free(seam_context *ctx) { free(ctx); }

void seam_phase(seam_context *ctx, const char *what) {
    if (!ctx || !ctx->trace_phases) return;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double cpu = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
                 ru.ru_stime.tv_usec * 1e-6;
    long size = 0, pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%ld %ld", &size, &pages) != 2) pages = 0;
        fclose(f);
    }
    fprintf(stderr, "seam phase %-14s cpu %6.3f s  rss %5ld MB  peak %5ld MB\n", what, cpu - ctx->phase_cpu,
            pages * sysconf(_SC_PAGESIZE) >> 20, ru.ru_maxrss >> 10);
    ctx->phase_cpu = cpu;
}

const char *seam_context_last_error(const seam_context *ctx) {
    return ctx ? ctx->last_error : "";
}

seam_status seam_error(seam_context *ctx, seam_status status, const char *fmt, ...) {
    if (!ctx) return status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx->last_error, sizeof(ctx->last_error), fmt, ap);
    va_end(ap);
    ctx->last_status = status;
    return status;
}

void seam_error_prefix(seam_context *ctx, const char *fmt, ...) {
    if (!ctx) return;
    char prefix[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof(prefix), fmt, ap);
    va_end(ap);
    /* Shift the message right and put the prefix in front; truncation at
     * the end of a very long message is fine. */
    size_t pl = strlen(prefix), ml = strlen(ctx->last_error);
    if (pl + 2 >= SEAM_ERROR_MAX) return;
    if (pl + 2 + ml >= SEAM_ERROR_MAX) ml = SEAM_ERROR_MAX - pl - 3;
    memmove(ctx->last_error + pl + 2, ctx->last_error, ml);
    ctx->last_error[pl + 2 + ml] = 0;
    memcpy(ctx->last_error, prefix, pl);
    ctx->last_error[pl] = ':';
    ctx->last_error[pl + 1] = ' ';
}
