/*
 * Dimensions as expressions of a model's symbolic input dims (symdim.c
 * carries them through inference): `2*seq`, `seq-1`, `batch*seq`,
 * `(H-1)//2+1`, `min(seq,512)`.
 *
 * An expression is a sum of terms, each an integer coefficient times a
 * product of atoms; an atom is a symbol (an input's named dim) or an
 * operation the sum cannot hold: a division or remainder by a constant,
 * a min or a max. Terms and atoms are kept in one order, so two equal
 * expressions are equal field by field (sx_eq). Every operation says
 * when it cannot give an exact result (too many terms, overflow, a
 * division that is not by a positive constant): the caller then treats
 * the dim as unknown.
 *
 * Division and remainder mean ONNX's integer Div (truncating) and Mod
 * (fmod 0: the sign of the divisor), so that an expression computes
 * exactly what the nodes it replaces compute.
 */
#ifndef SEAM_OPS_SYMEXPR_H
#define SEAM_OPS_SYMEXPR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ir/ir.h"

#define SX_MAX_TERMS 8
#define SX_MAX_DEG 4
#define SX_MAX_ATOMS 4096

typedef struct sx_term {
    int64_t c;
    int16_t n;                /* atoms in the product; 0: a constant */
    int16_t a[SX_MAX_DEG];    /* atom indices, ascending */
} sx_term;

typedef struct sx {
    int32_t n;                /* terms; 0: the expression 0 */
    sx_term t[SX_MAX_TERMS];
} sx;

typedef enum sx_atom_kind { SX_SYM, SX_DIV, SX_MOD, SX_MIN, SX_MAX } sx_atom_kind;

typedef struct sx_atom {
    sx_atom_kind kind;
    const char *name;         /* SX_SYM: the dim's name */
    int32_t input, axis;      /* SX_SYM: the graph input (value index) and axis it is read from */
    sx a, b;                  /* SX_DIV, SX_MOD: a / c, a % c with b the constant c; SX_MIN, SX_MAX: of a and b */
    bool nonneg;              /* never negative (a dim, or made of such) */
} sx_atom;

/* The atoms of one model's expressions (a growing table). */
typedef struct sx_atoms {
    sx_atom *v;
    int32_t n, cap;
    struct seam_arena *arena; /* where the table grows */
} sx_atoms;

void sx_const(sx *e, int64_t v);
/* True with *v when e is a constant. */
bool sx_is_const(const sx *e, int64_t *v);
bool sx_eq(const sx *a, const sx *b);
/* The atom index of a symbol (added when new); -1 when the table is full. */
int32_t sx_symbol(sx_atoms *at, const char *name, int32_t input, int32_t axis);
void sx_atom_expr(sx *e, int32_t atom);
/* e = a + b, a - b, a * b; false when the result does not fit. */
bool sx_add(const sx *a, const sx *b, sx *e);
bool sx_sub(const sx *a, const sx *b, sx *e);
bool sx_mul(const sx *a, const sx *b, sx *e);
/* ONNX integer Div and Mod of a by b; exact where b divides every term,
 * an atom where b is a positive constant, false otherwise. */
bool sx_div(sx_atoms *at, const sx *a, const sx *b, sx *e);
bool sx_mod(sx_atoms *at, const sx *a, const sx *b, sx *e);
bool sx_min(sx_atoms *at, const sx *a, const sx *b, sx *e);
bool sx_max(sx_atoms *at, const sx *a, const sx *b, sx *e);
/* True when e is never negative (every coefficient and atom is not). */
bool sx_nonneg(const sx_atoms *at, const sx *e);
/* Writes e for people (`2*seq+1`, `(H-1)//2`) when syms is NULL, else in
 * DimExpr's form, each symbol as $k with k its index in syms (added when
 * new, at most max_syms). False when buf is too small or syms full. */
bool sx_print(const sx_atoms *at, const sx *e, char *buf, size_t size, int32_t *syms, int32_t *n_syms,
              int32_t max_syms);
/* Evaluates DimExpr's form with $k = vals[k]; false with why set when it
 * does not parse, names a $k past n_vals, divides by 0 or overflows. */
bool sx_eval(const char *s, const int64_t *vals, int32_t n_vals, int64_t *out, char *why, size_t why_size);

/* The same form read as an expression, with $k = syms[k]; false when it
 * does not parse or is not one seam can hold. */
bool sx_parse(sx_atoms *at, const char *s, const sx *syms, int32_t n_syms, sx *out);

/* A DimExpr node's attributes (ops/symdim.c), read and checked once:
 * `exprs` (strings, n of them), `sym_input` and `sym_axis` (symbol k is
 * input sym_input[k]'s dim sym_axis[k]; at most 16), `shape` ([] with one
 * expression, or [n]) and `to` (int64 or int32). */
typedef struct dimexpr_form {
    const ir_attr *exprs;
    const int64_t *sym_input, *sym_axis;
    int32_t n_syms, rank, n, to;
} dimexpr_form;
bool dimexpr_form_read(const ir_node *node, dimexpr_form *f);
/* Element e as a number, with $k = vals[k]; false with why set (may be
 * NULL) when it does not parse, overflows, divides by 0, or leaves int32
 * where `to` is int32. */
bool dimexpr_form_eval(const dimexpr_form *f, int32_t e, const int64_t *vals, int64_t *out, char *why, size_t why_size);
/* Element e as an expression, with $k = syms[k]. */
bool dimexpr_form_parse(const dimexpr_form *f, int32_t e, sx_atoms *at, const sx *syms, sx *out);

#endif
