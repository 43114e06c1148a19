/* External data: a tensor whose bytes are in a file next to the model
 * (ONNX's external_data: location, offset, length). The location must stay
 * inside the model's folder. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/context.h"
#include "onnx/load.h"

/* A relative location that stays inside the model's folder: no absolute
 * path, no ".." component, and (after resolving links) still inside. */
static seam_status external_path(loader *L, const char *tname, const char *loc, char *out, size_t n) {
    if (!L->base_dir)
        return seam_error(L->ctx, SEAM_STATUS_INVALID_MODEL,
                          "initializer '%s' uses external data '%s', but the model was not loaded from a file",
                          tname, loc);
    if (!loc[0]) return seam_error(L->ctx, SEAM_STATUS_INVALID_MODEL, "initializer '%s': external data location is empty", tname);
    if (loc[0] == '/' || loc[0] == '\\')
        return seam_error(L->ctx, SEAM_STATUS_INVALID_MODEL,
                          "initializer '%s': external data location '%s' is absolute; it must be relative to the model's folder",
                          tname, loc);
    for (const char *p = loc; *p;) {
        const char *e = p + strcspn(p, "/\\");
        if (e - p == 2 && p[0] == '.' && p[1] == '.')
            return seam_error(L->ctx, SEAM_STATUS_INVALID_MODEL,
                              "initializer '%s': external data location '%s' leaves the model's folder", tname, loc);
        p = *e ? e + 1 : e;
    }
    if ((size_t)snprintf(out, n, "%s/%s", L->base_dir, loc) >= n)
        return seam_error(L->ctx, SEAM_STATUS_INVALID_MODEL, "initializer '%s': external data location too long", tname);
    char real[PATH_MAX];
    if (!realpath(out, real))
        return seam_error(L->ctx, SEAM_STATUS_INVALID_MODEL,
                          "initializer '%s': external data file '%s' is missing (%s)", tname, out, strerror(errno));
    size_t bl = strlen(L->base_dir);
    if (strncmp(real, L->base_dir, bl) != 0 || (real[bl] != '/' && !(bl == 1 && L->base_dir[0] == '/')))
        return seam_error(L->ctx, SEAM_STATUS_INVALID_MODEL,
                          "initializer '%s': external data '%s' resolves outside the model's folder", tname, loc);
    return SEAM_STATUS_OK;
}

seam_status onnx_read_external(loader *L, const Onnx__TensorProto *tp, ir_tensor *t, size_t want) {
    const char *loc = NULL;
    int64_t offset = 0, length = -1;
    for (size_t k = 0; k < tp->n_external_data; k++) {
        const Onnx__StringStringEntryProto *e = tp->external_data[k];
        const char *key = e->key ? e->key : "", *val = e->value ? e->value : "";
        char *end;
        if (strcmp(key, "location") == 0) {
            loc = val;
        } else if (strcmp(key, "offset") == 0 || strcmp(key, "length") == 0) {
            errno = 0;
            long long x = strtoll(val, &end, 10);
            if (errno || *end || x < 0 || end == val)
                return seam_error(L->ctx, SEAM_STATUS_INVALID_MODEL,
                                  "initializer '%s': external data %s '%s' is not a non-negative integer", t->name, key, val);
            if (key[0] == 'o') offset = x;
            else length = x;
        }
    }
    if (!loc) return seam_error(L->ctx, SEAM_STATUS_INVALID_MODEL, "initializer '%s': external data has no location", t->name);
    if (length >= 0 && (uint64_t)length != want)
        return seam_error(L->ctx, SEAM_STATUS_INVALID_MODEL,
                          "initializer '%s': external data length %lld disagrees with its dims (%zu bytes)",
                          t->name, (long long)length, want);
    char path[PATH_MAX + 256];
    seam_status st = external_path(L, t->name, loc, path, sizeof(path));
    if (st) return st;
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return seam_error(L->ctx, SEAM_STATUS_INVALID_MODEL, "initializer '%s': cannot open external data file '%s': %s",
                          t->name, path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || (uint64_t)sb.st_size < (uint64_t)offset + want) {
        close(fd);
        return seam_error(L->ctx, SEAM_STATUS_INVALID_MODEL,
                          "initializer '%s': external data file '%s' is too short for %zu bytes at offset %lld",
                          t->name, path, want, (long long)offset);
    }
    void *buf = onnx_tensor_buf(L, want);
    if (!buf) {
        close(fd);
        return OOM(L);
    }
    size_t got = 0;
    while (got < want) {
        ssize_t r = pread(fd, (char *)buf + got, want - got, (off_t)(offset + (int64_t)got));
        if (r <= 0) {
            close(fd);
            return seam_error(L->ctx, SEAM_STATUS_IO_ERROR, "initializer '%s': reading '%s' failed", t->name, path);
        }
        got += (size_t)r;
    }
    close(fd);
    t->data = buf;
    t->external_location = dup_str(L, loc);
    return SEAM_STATUS_OK;
}
