/* Einsum equation parsing (see einsum.h). */
#include "ops/einsum.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static int32_t letter(char c) {
    if (c >= 'a' && c <= 'z') return c - 'a';
    if (c >= 'A' && c <= 'Z') return 26 + c - 'A';
    return -1;
}

/* Parses one term of [start, end): labels, with at most one "..." standing
 * for ell dims (the widest ellipsis is `width`; narrower ones take its
 * rightmost labels, which is numpy's broadcasting). */
static int parse_term(const char *p, const char *end, int32_t rank_or_neg, int32_t width, int32_t *labels,
                      int32_t *out_rank, int32_t *ell_dims, char *err, size_t n) {
    int32_t explicit_n = 0;
    bool has_ell = false;
    for (const char *q = p; q < end; q++) {
        if (*q == ' ') continue;
        if (*q == '.') {
            if (has_ell || end - q < 3 || q[1] != '.' || q[2] != '.') {
                snprintf(err, n, "bad ellipsis in the equation");
                return -1;
            }
            has_ell = true;
            q += 2;
            continue;
        }
        if (letter(*q) < 0) {
            snprintf(err, n, "'%c' is not a label (letters only)", *q);
            return -1;
        }
        explicit_n++;
    }
    int32_t ell = 0;
    if (has_ell) ell = rank_or_neg >= 0 ? rank_or_neg - explicit_n : width;
    if (ell < 0 || (rank_or_neg >= 0 && !has_ell && explicit_n != rank_or_neg)) {
        snprintf(err, n, "a term has %d labels for an input of rank %d", explicit_n, rank_or_neg);
        return -1;
    }
    if (explicit_n + ell > EINSUM_MAX_RANK) {
        snprintf(err, n, "too many dims in a term");
        return -1;
    }
    int32_t r = 0;
    for (const char *q = p; q < end; q++) {
        if (*q == ' ') continue;
        if (*q == '.') {
            for (int32_t k = 0; k < ell; k++) labels[r++] = 52 + (width - ell) + k;
            q += 2;
            continue;
        }
        labels[r++] = letter(*q);
    }
    *out_rank = r;
    *ell_dims = has_ell ? ell : 0;
    return 0;
}

int einsum_parse(const char *eq, size_t len, int32_t n_in, const int32_t *ranks, einsum_spec *s, char *err,
                 size_t err_size) {
    memset(s, 0, sizeof(*s));
    if (n_in < 1 || n_in > EINSUM_MAX_IN) {
        snprintf(err, err_size, "Einsum takes 1 to %d inputs", EINSUM_MAX_IN);
        return -1;
    }
    const char *end = eq + len, *arrow = NULL;
    for (const char *q = eq; q + 1 < end; q++)
        if (q[0] == '-' && q[1] == '>') arrow = q;
    const char *lhs_end = arrow ? arrow : end;
    /* the widest ellipsis decides the ellipsis labels */
    int32_t width = 0;
    const char *p = eq;
    for (int32_t i = 0; i < n_in; i++) {
        const char *c = p;
        while (c < lhs_end && *c != ',') c++;
        if (i < n_in - 1 && c == lhs_end) {
            snprintf(err, err_size, "the equation has fewer terms than the %d inputs", n_in);
            return -1;
        }
        int32_t r, ell;
        if (parse_term(p, c, ranks[i], 0, s->label[i], &r, &ell, err, err_size)) return -1;
        if (ell > width) width = ell;
        p = c + 1;
    }
    if (p - 1 != lhs_end) {
        snprintf(err, err_size, "the equation has more terms than the %d inputs", n_in);
        return -1;
    }
    p = eq;
    for (int32_t i = 0; i < n_in; i++) {
        const char *c = p;
        while (c < lhs_end && *c != ',') c++;
        int32_t ell;
        if (parse_term(p, c, ranks[i], width, s->label[i], &s->rank[i], &ell, err, err_size)) return -1;
        p = c + 1;
    }
    s->n_in = n_in;
    if (arrow) {
        int32_t ell;
        if (parse_term(arrow + 2, end, -1, width, s->out_label, &s->out_rank, &ell, err, err_size)) return -1;
        bool seen[EINSUM_N_LABELS] = {false};
        for (int32_t i = 0; i < n_in; i++)
            for (int32_t d = 0; d < s->rank[i]; d++) seen[s->label[i][d]] = true;
        for (int32_t d = 0; d < s->out_rank; d++)
            if (!seen[s->out_label[d]]) {
                snprintf(err, err_size, "an output label appears in no input");
                return -1;
            }
    } else { /* implicit: the ellipsis, then labels seen once, sorted */
        int32_t count[EINSUM_N_LABELS] = {0};
        for (int32_t i = 0; i < n_in; i++)
            for (int32_t d = 0; d < s->rank[i]; d++) count[s->label[i][d]]++;
        int32_t r = 0;
        for (int32_t k = 0; k < width; k++) s->out_label[r++] = 52 + k;
        /* numpy sorts uppercase before lowercase */
        for (int32_t l = 26; l < 52; l++)
            if (count[l] == 1 && r < EINSUM_MAX_RANK) s->out_label[r++] = l;
        for (int32_t l = 0; l < 26; l++)
            if (count[l] == 1 && r < EINSUM_MAX_RANK) s->out_label[r++] = l;
        s->out_rank = r;
    }
    return 0;
}
