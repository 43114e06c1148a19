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

/* UTF-8 of code point c into out (4 bytes at most); 0 when c is not a
 * Unicode scalar value. */
static size_t utf8_put(uint32_t c, uint8_t *out) {
    if (c < 0x80) return out[0] = (uint8_t)c, 1;
    if (c < 0x800) return out[0] = (uint8_t)(0xC0 | c >> 6), out[1] = (uint8_t)(0x80 | (c & 63)), 2;
    if (c >= 0xD800 && c < 0xE000) return 0;
    if (c < 0x10000) {
        out[0] = (uint8_t)(0xE0 | c >> 12), out[1] = (uint8_t)(0x80 | (c >> 6 & 63)), out[2] = (uint8_t)(0x80 | (c & 63));
        return 3;
    }
    if (c < 0x110000) {
        out[0] = (uint8_t)(0xF0 | c >> 18), out[1] = (uint8_t)(0x80 | (c >> 12 & 63));
        out[2] = (uint8_t)(0x80 | (c >> 6 & 63)), out[3] = (uint8_t)(0x80 | (c & 63));
        return 4;
    }
    return 0;
}

/* The next code point of UTF-8 at *p (below end); false when the bytes
 * are not UTF-8. */
static bool utf8_get(const uint8_t **p, const uint8_t *end, uint32_t *c) {
    const uint8_t *q = *p;
    uint8_t b = *q++;
    int more = b < 0x80 ? 0 : (b & 0xE0) == 0xC0 ? 1 : (b & 0xF0) == 0xE0 ? 2 : (b & 0xF8) == 0xF0 ? 3 : -1;
    if (more < 0 || end - q < more) return false;
    uint32_t v = more == 0 ? b : more == 1 ? b & 31u : more == 2 ? b & 15u : b & 7u;
    for (int k = 0; k < more; k++) {
        if ((q[k] & 0xC0) != 0x80) return false;
        v = v << 6 | (q[k] & 63u);
    }
    static const uint32_t least[] = {0, 0x80, 0x800, 0x10000};
    if (v < least[more] || v > 0x10FFFF || (v >= 0xD800 && v < 0xE000)) return false;
    *c = v;
    *p = q + more;
    return true;
}

/* A string tensor from numel fixed-width items of `width` bytes at data:
 * t->data is numel seam_bytes, then their UTF-8 (or raw) bytes, one block.
 * numpy drops trailing NULs of each item, and so does this. */
static bool parse_strings(const unsigned char *data, size_t avail, size_t width, bool ucs4, seam_tensor *t, char *err,
                          size_t errn) {
    if (t->numel < 0 || (width && (uint64_t)t->numel > avail / width)) {
        snprintf(err, errn, ".npy data is shorter than its shape needs");
        return false;
    }
    size_t n = (size_t)t->numel;
    size_t text = n * width; /* UTF-8 takes at most 4 bytes a code point, as UCS-4 does */
    t->nbytes = n * sizeof(seam_bytes);
    t->data = malloc(t->nbytes + text + 1);
    if (!t->data) {
        snprintf(err, errn, "out of memory");
        return false;
    }
    seam_bytes *b = t->data;
    uint8_t *at = (uint8_t *)t->data + t->nbytes;
    for (size_t i = 0; i < n; i++) {
        const unsigned char *item = data + i * width;
        size_t len = width;
        if (ucs4) {
            while (len >= 4 && !(item[len - 4] | item[len - 3] | item[len - 2] | item[len - 1])) len -= 4;
        } else {
            while (len && !item[len - 1]) len--;
        }
        b[i].data = (const char *)at;
        if (!ucs4) {
            memcpy(at, item, len);
            at += len;
        } else {
            for (size_t k = 0; k < len; k += 4) {
                uint32_t c = (uint32_t)item[k] | (uint32_t)item[k + 1] << 8 | (uint32_t)item[k + 2] << 16 |
                             (uint32_t)item[k + 3] << 24;
                size_t w = utf8_put(c, at);
                if (!w) {
                    free(t->data);
                    t->data = NULL;
                    snprintf(err, errn, ".npy string %zu holds U+%X, not a Unicode character", i, (unsigned)c);
                    return false;
                }
                at += w;
            }
        }
        b[i].len = (size_t)(at - (const uint8_t *)b[i].data);
    }
    return true;
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
    if (strcmp(code, "O") == 0) {
        snprintf(err, errn, ".npy of Python objects ('%s') is refused (it would need a pickle): save strings as numpy "
                 "unicode, e.g. np.save(f, a.astype(str))", descr);
        return false;
    }
    /* strings: unicode (U, UCS-4 code points) or bytes (S), fixed width,
     * NUL-padded */
    size_t width = 0;
    bool ucs4 = code[0] == 'U', bytes = code[0] == 'S';
    if ((ucs4 || bytes) && descr[0] != '>') {
        char *end;
        long w = strtol(code + 1, &end, 10);
        if (end == code + 1 || *end || w < 0 || w > (1 << 24)) {
            snprintf(err, errn, ".npy descr '%s' is not understood", descr);
            return false;
        }
        width = (size_t)w * (ucs4 ? 4 : 1);
    }
    t->dtype = width || ucs4 || bytes ? SEAM_DTYPE_STRING : 0;
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
    if (t->dtype == SEAM_DTYPE_STRING) return parse_strings(buf + off + hl, n - off - hl, width, ucs4, t, err, errn);
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

/* A string tensor as numpy unicode: each item's code points, NUL-padded
 * to the longest (malloc'd into *out, *width code points). False when a
 * string is not UTF-8 or holds a NUL (numpy would drop a trailing one):
 * .npy cannot hold it as it is. */
static bool strings_ucs4(const seam_bytes *s, int64_t numel, uint32_t **out, size_t *width) {
    size_t w = 0;
    for (int64_t i = 0; i < numel; i++) {
        size_t cps = 0;
        uint32_t c;
        for (const uint8_t *p = (const uint8_t *)s[i].data, *end = p + s[i].len; p < end; cps++)
            if (!utf8_get(&p, end, &c) || c == 0) return false;
        if (cps > w) w = cps;
    }
    uint32_t *u = calloc((size_t)numel * w + 1, sizeof(uint32_t));
    if (!u) return false;
    for (int64_t i = 0; i < numel; i++) {
        uint32_t *to = u + (size_t)i * w;
        for (const uint8_t *p = (const uint8_t *)s[i].data, *end = p + s[i].len; p < end;) utf8_get(&p, end, to++);
    }
    *out = u;
    *width = w;
    return true;
}

int npy_write_file(FILE *f, seam_dtype dtype, int32_t rank, const int64_t *dims, const void *data, size_t nbytes) {
    const char *code = npy_code(dtype);
    char ucode[32];
    uint32_t *ucs = NULL;
    if (dtype == SEAM_DTYPE_STRING) {
        int64_t numel = seam_shape_numel(dims, rank);
        size_t w;
        if (numel < 0 || !strings_ucs4(data, numel, &ucs, &w)) return 1;
        snprintf(ucode, sizeof(ucode), "U%zu", w ? w : 1);
        code = ucode;
        data = ucs;
        nbytes = (size_t)numel * w * 4;
        if (!w && numel) { /* numpy's '<U1' of empty strings */
            free(ucs);
            ucs = calloc((size_t)numel, 4);
            if (!ucs) return 2;
            data = ucs;
            nbytes = (size_t)numel * 4;
        }
    }
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
    free(ucs);
    return ok ? 0 : 2;
}

bool npy_holds(const seam_tensor *t) {
    if (t->dtype == SEAM_DTYPE_STRING) {
        uint32_t *u;
        size_t w;
        if (!strings_ucs4(t->data, t->numel, &u, &w)) return false;
        free(u);
        return true;
    }
    return npy_code((seam_dtype)t->dtype) != NULL;
}

bool npy_write(const char *path, const seam_tensor *t, char *err, size_t errn) {
    if (!npy_holds(t)) {
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
