/* oxide/preconditions.h: the evaluator of launch preconditions (oxide.abi.preconditions) that the
   C launcher (oxide/runtime/_launcher_preconditions.c) and oxide/launch.hpp share; C99 and C++17.

   Each reader compiles a kernel's preconditions once (the C launcher from the manifest's Python
   lists, launch.hpp from its JSON) into postfix code of oxide_pre_insn: the encoding's operations
   (OXIDE_OP_*, oxide/abi.h, in the encoding's order) and two of the evaluator's own,
   OXIDE_PRE_TRUTH (a value as 0 or 1: the first operand of an "and"/"or") and OXIDE_PRE_CHECK (the
   end of precondition `index`: it fails when the value is 0). oxide_preconditions_failed runs
   that code over the packed parameter slots (oxide.abi.params) and the launch dimensions before
   every launch.

   Python (oxide/runtime/preconditions.py) evaluates over unbounded ints; every value an
   expression can have lies in [-2^63, 2^64) (slots, dimensions and the results of the wrapping
   operations are i64 or u64 values; a compiler refuses constants outside that range), so a value
   here is its low 64 bits and a sign flag: `neg` is 1 exactly when the value is negative.
   Comparisons are then exact, and the wrapping operations (to at most 64 bits) need only the low
   bits. A compiler must keep the stack at most OXIDE_PRE_STACK deep. */
#ifndef OXIDE_PRECONDITIONS_H
#define OXIDE_PRECONDITIONS_H

#include <stdint.h>
#include <string.h>

#include "abi.h"

enum { OXIDE_PRE_TRUTH = OXIDE_OP_COUNT, OXIDE_PRE_CHECK };

#define OXIDE_PRE_STACK 32 /* the deepest expression the evaluator takes */

typedef struct oxide_pre_insn {
    uint8_t op;
    uint8_t ty;     /* an OXIDE_DT_ integer or bool code: of OXIDE_OP_ARG's slot, of a cast and the arithmetic */
    uint8_t neg;    /* OXIDE_OP_CONST: the value is negative */
    uint16_t index; /* OXIDE_OP_ARG: slot; OXIDE_OP_GRID, OXIDE_OP_BLOCK: axis; OXIDE_PRE_CHECK: which precondition */
    uint64_t bits;  /* OXIDE_OP_CONST: the value's low 64 bits */
} oxide_pre_insn;

typedef struct {
    uint64_t bits;
    uint64_t neg;
} oxide_pre_value;

/* preconditions._wrap(ty, v) of a value whose low 64 bits are `low` (ty not bool) */
static inline oxide_pre_value oxide_pre_wrap(int ty, uint64_t low) {
    oxide_pre_value r;
    switch (ty) {
    case OXIDE_DT_I8: r.bits = (uint64_t)(int64_t)(int8_t)(uint8_t)low; break;
    case OXIDE_DT_I16: r.bits = (uint64_t)(int64_t)(int16_t)(uint16_t)low; break;
    case OXIDE_DT_I32: r.bits = (uint64_t)(int64_t)(int32_t)(uint32_t)low; break;
    case OXIDE_DT_U8: r.bits = (uint8_t)low; r.neg = 0; return r;
    case OXIDE_DT_U16: r.bits = (uint16_t)low; r.neg = 0; return r;
    case OXIDE_DT_U32: r.bits = (uint32_t)low; r.neg = 0; return r;
    case OXIDE_DT_U64: r.bits = low; r.neg = 0; return r;
    default: r.bits = low; break; /* OXIDE_DT_I64 */
    }
    r.neg = r.bits >> 63;
    return r;
}

/* The slot's value as the Python path has it: what was packed there, of type ty. */
static inline oxide_pre_value oxide_pre_load(int ty, const uint64_t *slot) {
    switch (ty) {
    case OXIDE_DT_I8: { int8_t y; memcpy(&y, slot, 1); return oxide_pre_wrap(OXIDE_DT_I64, (uint64_t)(int64_t)y); }
    case OXIDE_DT_I16: { int16_t y; memcpy(&y, slot, 2); return oxide_pre_wrap(OXIDE_DT_I64, (uint64_t)(int64_t)y); }
    case OXIDE_DT_I32: { int32_t y; memcpy(&y, slot, 4); return oxide_pre_wrap(OXIDE_DT_I64, (uint64_t)(int64_t)y); }
    case OXIDE_DT_U8: case OXIDE_DT_BOOL: { uint8_t y; memcpy(&y, slot, 1); return oxide_pre_wrap(OXIDE_DT_U64, y); }
    case OXIDE_DT_U16: { uint16_t y; memcpy(&y, slot, 2); return oxide_pre_wrap(OXIDE_DT_U64, y); }
    case OXIDE_DT_U32: { uint32_t y; memcpy(&y, slot, 4); return oxide_pre_wrap(OXIDE_DT_U64, y); }
    case OXIDE_DT_U64: return oxide_pre_wrap(OXIDE_DT_U64, *slot);
    default: return oxide_pre_wrap(OXIDE_DT_I64, *slot); /* OXIDE_DT_I64: a length, shape, stride or i64 scalar */
    }
}

static inline int oxide_pre_less(oxide_pre_value a, oxide_pre_value b) {
    return a.neg != b.neg ? (int)a.neg : a.bits < b.bits;
}

static inline oxide_pre_value oxide_pre_flag(int x) {
    oxide_pre_value r = {(uint64_t)(x != 0), 0};
    return r;
}

/* The index of the first precondition that does not hold, or -1 when all do. */
static inline int oxide_preconditions_failed(const oxide_pre_insn *code, int n, const uint64_t *slots,
                                             const unsigned *grid, const unsigned *block) {
    oxide_pre_value st[OXIDE_PRE_STACK];
    int sp = 0;
    for (const oxide_pre_insn *in = code, *end = code + n; in < end; in++) {
        switch (in->op) {
        case OXIDE_OP_CONST: st[sp].bits = in->bits, st[sp].neg = in->neg, sp++; break;
        case OXIDE_OP_ARG: st[sp++] = oxide_pre_load(in->ty, &slots[in->index]); break;
        case OXIDE_OP_GRID: st[sp].bits = grid[in->index], st[sp].neg = 0, sp++; break;
        case OXIDE_OP_BLOCK: st[sp].bits = block[in->index], st[sp].neg = 0, sp++; break;
        case OXIDE_OP_CAST:
            st[sp - 1] = in->ty == OXIDE_DT_BOOL ? oxide_pre_flag(st[sp - 1].bits != 0) : oxide_pre_wrap(in->ty, st[sp - 1].bits);
            break;
        case OXIDE_OP_ADD: sp--, st[sp - 1] = oxide_pre_wrap(in->ty, st[sp - 1].bits + st[sp].bits); break;
        case OXIDE_OP_SUB: sp--, st[sp - 1] = oxide_pre_wrap(in->ty, st[sp - 1].bits - st[sp].bits); break;
        case OXIDE_OP_MUL: sp--, st[sp - 1] = oxide_pre_wrap(in->ty, st[sp - 1].bits * st[sp].bits); break;
        case OXIDE_OP_NEG: st[sp - 1] = oxide_pre_wrap(in->ty, (uint64_t)0 - st[sp - 1].bits); break;
        case OXIDE_OP_LT: sp--, st[sp - 1] = oxide_pre_flag(oxide_pre_less(st[sp - 1], st[sp])); break;
        case OXIDE_OP_LE: sp--, st[sp - 1] = oxide_pre_flag(!oxide_pre_less(st[sp], st[sp - 1])); break;
        case OXIDE_OP_GT: sp--, st[sp - 1] = oxide_pre_flag(oxide_pre_less(st[sp], st[sp - 1])); break;
        case OXIDE_OP_GE: sp--, st[sp - 1] = oxide_pre_flag(!oxide_pre_less(st[sp - 1], st[sp])); break;
        case OXIDE_OP_EQ:
            sp--, st[sp - 1] = oxide_pre_flag(st[sp - 1].bits == st[sp].bits && st[sp - 1].neg == st[sp].neg);
            break;
        case OXIDE_OP_NE:
            sp--, st[sp - 1] = oxide_pre_flag(st[sp - 1].bits != st[sp].bits || st[sp - 1].neg != st[sp].neg);
            break;
        case OXIDE_OP_AND: sp--, st[sp - 1] = oxide_pre_flag(st[sp - 1].bits != 0 && st[sp].bits != 0); break;
        case OXIDE_OP_OR: sp--, st[sp - 1] = oxide_pre_flag(st[sp - 1].bits != 0 || st[sp].bits != 0); break;
        case OXIDE_OP_NOT: st[sp - 1] = oxide_pre_flag(st[sp - 1].bits == 0); break;
        case OXIDE_PRE_TRUTH: st[sp - 1] = oxide_pre_flag(st[sp - 1].bits != 0); break;
        case OXIDE_PRE_CHECK:
            if (st[--sp].bits == 0) return in->index;
            break;
        }
    }
    return -1;
}

/* The OXIDE_OP_ code of an operation's name, or -1. */
static inline int oxide_pre_op(const char *name) {
    for (int i = 0; i < OXIDE_OP_COUNT; i++)
        if (strcmp(name, oxide_op_names[i]) == 0) return i;
    return -1;
}

/* An integer type name of the encoding as its OXIDE_DT_ code; OXIDE_DT_NONE if it is not one. */
static inline int oxide_pre_type(const char *name) {
    for (int i = 0; i < OXIDE_INTEGER_TYPE_COUNT; i++)
        if (strcmp(name, oxide_dtype_names[oxide_integer_types[i]]) == 0) return oxide_integer_types[i];
    return OXIDE_DT_NONE;
}

#endif /* OXIDE_PRECONDITIONS_H */
