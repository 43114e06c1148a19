/* .npy reading and writing: a magic string, a version, a header length
 * and a Python-dict header such as
 *   {'descr': '<f4', 'fortran_order': False, 'shape': (1, 3, 224, 224), }
 * followed by the raw data. */
#include "core/npy.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *descr;
    int32_t dtype;
} npy_types[] = {
    {"f4", SEAM_DTYPE_FLOAT32}, {"f8", SEAM_DTYPE_FLOAT64}, {"f2", SEAM_DTYPE_FLOAT16},
    {"i1", SEAM_DTYPE_INT8},    {"u1", SEAM_DTYPE_UINT8},   {"i2", SEAM_DTYPE_INT16},
    {"u2", SEAM_DTYPE_UINT16},  {"i4", SEAM_DTYPE_INT32},   {"u4", SEAM_DTYPE_UINT32},
    {"i8", SEAM_DTYPE_INT64},   {"u8", SEAM_DTYPE_UINT64},  {"b1", SEAM_DTYPE_BOOL},
    {"c8", SEAM_DTYPE_COMPLEX64}, {"c16", SEAM_DTYPE_COMPLEX128},
};

static const char *find_key(const char *h, const char *key) {
    const char *p = strstr(h, key);
    if (!p) return NULL;
    p += strlen(key);
    while (*p == ' ' || *p == ':') p++;
    return p;
}

bool npy_parse(const unsigned char *buf, size_t n, seam_tensor *t, char *err, size_t errn) {
    memset(t, 0, sizeof(*t));
    if (n < 10 || memcmp(buf, "\x93NUMPY", 6) != 0) {
        snprintf(err, errn, "not a .npy file (no \\x93NUMPY magic)");
        return false;
    }
    int major = buf[6];
    size_t hl, off;
    if (major == 1) {
        hl = (size_t)buf[8] | (size_t)buf[9] << 8;
        off = 10;
    } else if (major == 2 || major == 3) {
        if (n < 12) {
            snprintf(err, errn, "truncated .npy header");
            return false;
        }
        hl = (size_t)buf[8] | (size_t)buf[9] << 8 | (size_t)buf[10] << 16 | (size_t)buf[11] << 24;
        off = 12;
    } else {
        snprintf(err, errn, ".npy version %d is not supported", major);
        return false;
    }
    if (hl > n - off || hl > 65536) {
        snprintf(err, errn, "truncated .npy header");
        return false;
    }
    char h[65537];
    memcpy(h, buf + off, hl);
    h[hl] = 0;
    const char *d = find_key(h, "'descr'");
    if (!d || (*d != '\'' && *d != '"')) {
        snprintf(err, errn, ".npy header has no descr");
        return false;
    }
    char descr[16] = {0};
    size_t dl = strcspn(d + 1, "'\"");
    if (dl == 0 || dl >= sizeof(descr)) {
        snprintf(err, errn, ".npy descr is not understood");
        return false;
    }
    memcpy(descr, d + 1, dl);
    if (descr[0] == '>' && strcmp(descr + 1, "i1") != 0 && strcmp(descr + 1, "u1") != 0 && strcmp(descr + 1, "b1") != 0) {
        snprintf(err, errn, "big-endian .npy data ('%s') is not supported", descr);
        return false;
    }
    const char *code = (descr[0] == '<' || descr[0] == '|' || descr[0] == '=' || descr[0] == '>') ? descr + 1 : descr;
    t->dtype = 0;
    for (size_t k = 0; k < sizeof(npy_types) / sizeof(npy_types[0]); k++)
        if (strcmp(code, npy_types[k].descr) == 0) t->dtype = npy_types[k].dtype;
    if (!t->dtype) {
        snprintf(err, errn, ".npy dtype '%s' is not supported", descr);
        return false;
    }
    const char *fo = find_key(h, "'fortran_order'");
    if (fo && strncmp(fo, "True", 4) == 0) {
        snprintf(err, errn, "Fortran-order .npy data is not supported");
        return false;
    }
    const char *s = find_key(h, "'shape'");
    if (!s || *s != '(') {
        snprintf(err, errn, ".npy header has no shape");
        return false;
    }
    s++;
    t->rank = 0;
    while (*s && *s != ')') {
        while (*s == ' ' || *s == ',') s++;
        if (*s == ')') break;
        char *end;
        long long v = strtoll(s, &end, 10);
        if (end == s || v < 0 || t->rank >= SEAM_MAX_RANK) {
            snprintf(err, errn, ".npy shape is not valid");
            return false;
        }
        t->dims[t->rank++] = v;
        s = end;
    }
    t->numel = seam_shape_numel(t->dims, t->rank);
    size_t es = seam_dtype_size((seam_dtype)t->dtype);
    if (t->numel < 0 || (uint64_t)t->numel > (n - off - hl) / es) {
        snprintf(err, errn, ".npy data is shorter than its shape needs");
        return false;
    }
    t->nbytes = (size_t)t->numel * es;
    t->data = malloc(t->nbytes ? t->nbytes : 1);
    if (!t->data) {
        snprintf(err, errn, "out of memory");
        return false;
    }
    memcpy(t->data, buf + off + hl, t->nbytes);
    return true;
}

/* The type code of dtype ("f4", ...), or NULL when .npy cannot hold it. */
static const char *npy_code(seam_dtype dtype) {
    for (size_t k = 0; k < sizeof(npy_types) / sizeof(npy_types[0]); k++)
        if (npy_types[k].dtype == (int32_t)dtype) return npy_types[k].descr;
    return NULL;
}

int npy_write_file(FILE *f, seam_dtype dtype, int32_t rank, const int64_t *dims, const void *data, size_t nbytes) {
    const char *code = npy_code(dtype);
    if (!code) return 1;
    char h[512];
    int len = snprintf(h, sizeof(h), "{'descr': '%c%s', 'fortran_order': False, 'shape': (",
                       seam_dtype_size(dtype) == 1 ? '|' : '<', code);
    for (int32_t k = 0; k < rank; k++) len += snprintf(h + len, sizeof(h) - (size_t)len, "%lld, ", (long long)dims[k]);
    if (rank > 1) len -= 2; /* numpy writes (3,) but (2, 3) */
    len += snprintf(h + len, sizeof(h) - (size_t)len, "), }");
    /* pad with spaces so the data starts 64-byte aligned; end with \n */
    int total = 10 + len + 1;
    int pad = (64 - total % 64) % 64;
    unsigned hl = (unsigned)(len + pad + 1);
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(hl & 0xff), (unsigned char)(hl >> 8)};
    bool ok = fwrite(pre, 1, 10, f) == 10 && fwrite(h, 1, (size_t)len, f) == (size_t)len;
    for (int k = 0; k < pad && ok; k++) ok = fputc(' ', f) != EOF;
    ok = ok && fputc('\n', f) != EOF && (nbytes == 0 || fwrite(data, 1, nbytes, f) == nbytes);
    return ok ? 0 : 2;
}

bool npy_write(const char *path, const seam_tensor *t, char *err, size_t errn) {
    if (!npy_code((seam_dtype)t->dtype)) {
        snprintf(err, errn, "dtype %s cannot be written as .npy", seam_dtype_name((seam_dtype)t->dtype));
        return false;
    }
    FILE *f = fopen(path, "wb");
    if (!f) {
        snprintf(err, errn, "cannot create '%s'", path);
        return false;
    }
    int r = npy_write_file(f, (seam_dtype)t->dtype, t->rank, t->dims, t->data, t->nbytes);
    bool ok = fclose(f) == 0 && r == 0;
    if (!ok) snprintf(err, errn, "writing '%s' failed", path);
    return ok;
}

void npy_file_name(const char *name, char *out, size_t n, const char *fallback) {
    size_t k = 0;
    for (; name[k] && k + 1 < n; k++) {
        char c = name[k];
        bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
        out[k] = ok ? c : '_';
    }
    out[k] = 0;
    if (k == 0 || strcmp(out, ".") == 0 || strcmp(out, "..") == 0) snprintf(out, n, "%s", fallback);
}
