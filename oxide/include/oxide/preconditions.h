/* oxide/preconditions.h: the evaluator of launch preconditions that the C launcher
   (oxide/runtime/_launcher_preconditions.c) and oxide/launch.hpp share; C99 and C++17.

   A precondition is a program of oxide.abi.preconditions, as the manifest holds it: postfix code
   of [opcode, operand] pairs, the opcodes OXIDE_OP_* of oxide/abi.h. A reader puts a kernel's
   programs one after another, each followed by OXIDE_OP_CHECK with the precondition's index as
   its operand, into oxide_pre_insn (the operand as its low 64 bits and its sign: `bits`, `neg`);
   oxide_pre_prepare checks that code as the manifest's Python reader does and derives what the
   evaluator reads; oxide_preconditions_failed runs it over the packed parameter slots
   (oxide.abi.params) and the launch dimensions before every launch.

   Python (oxide/runtime/preconditions.py) evaluates over unbounded ints; every value a program
   can have lies in [-2^63, 2^64) (slots, dimensions and the results of the wrapping operations
   are i64 or u64 values, and so are the constants), so a value here is its low 64 bits and a
   sign flag: `neg` is 1 exactly when the value is negative. Comparisons are then exact, and the
   wrapping operations (to at most 64 bits) need only the low bits. */
#ifndef OXIDE_PRECONDITIONS_H
#define OXIDE_PRECONDITIONS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "abi.h"

typedef struct oxide_pre_insn {
    uint8_t op;     /* an OXIDE_OP_ code */
    uint8_t ty;     /* set by oxide_pre_prepare: the OXIDE_DT_ code of OXIDE_OP_ARG's slot, of a cast and the arithmetic */
    uint8_t neg;    /* the operand is negative */
    uint16_t index; /* set by oxide_pre_prepare: OXIDE_OP_ARG's slot, an axis, OXIDE_OP_CHECK's precondition */
    uint64_t bits;  /* the operand's low 64 bits (OXIDE_OP_CONST's value) */
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
    oxide_pre_value st[OXIDE_PRECONDITION_STACK_LIMIT];
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
        case OXIDE_OP_TRUTH: st[sp - 1] = oxide_pre_flag(st[sp - 1].bits != 0); break;
        case OXIDE_OP_CHECK:
            if (st[--sp].bits == 0) return in->index;
            break;
        }
    }
    return -1;
}

static inline int oxide_pre_is_integer(int code) {
    for (int i = 0; i < OXIDE_INTEGER_TYPE_COUNT; i++)
        if (code == oxide_integer_types[i]) return 1;
    return 0;
}

/* Checks the `n` instructions of a kernel's code (its programs, each followed by its
   OXIDE_OP_CHECK) over `n_slots` slots of the dtype codes `slot_codes`, as the manifest's reader
   checks a program (oxide.abi.preconditions.program_problem), and sets each instruction's `ty`
   and `index`. NULL when oxide_preconditions_failed may run it; else why not. */
static inline const char *oxide_pre_prepare(oxide_pre_insn *code, int n, const int8_t *slot_codes, size_t n_slots) {
    int height = 0;
    if (n > OXIDE_PRECONDITION_PROGRAM_LIMIT) return "has more instructions than OXIDE_PRECONDITION_PROGRAM_LIMIT";
    for (int i = 0; i < n; i++) {
        oxide_pre_insn *in = &code[i];
        const uint64_t x = in->bits;
        int pops = 2, pushes = 1;
        in->ty = 0, in->index = 0;
        if (in->op >= OXIDE_OP_COUNT) return "has an opcode this evaluator does not know";
        if (in->op != OXIDE_OP_CONST && in->neg) return "has a negative operand";
        switch (in->op) {
        case OXIDE_OP_CONST: pops = 0; break;
        case OXIDE_OP_ARG:
            if (x >= n_slots) return "reads a slot the kernel does not have";
            if (!oxide_pre_is_integer(slot_codes[x])) return "reads a slot that holds no integer";
            in->index = (uint16_t)x, in->ty = (uint8_t)slot_codes[x], pops = 0;
            break;
        case OXIDE_OP_GRID:
        case OXIDE_OP_BLOCK:
            if (x > 2) return "reads an axis that is not 0, 1 or 2";
            in->index = (uint16_t)x, pops = 0;
            break;
        case OXIDE_OP_CAST:
        case OXIDE_OP_NEG:
        case OXIDE_OP_ADD:
        case OXIDE_OP_SUB:
        case OXIDE_OP_MUL:
            /* arithmetic in bool (never emitted by the compiler) needs the exact result: Python's */
            if (x >= OXIDE_DT_COUNT || !oxide_pre_is_integer((int)x) || (in->op != OXIDE_OP_CAST && x == OXIDE_DT_BOOL))
                return "computes in a type that is not an integer type of the encoding";
            in->ty = (uint8_t)x;
            if (in->op == OXIDE_OP_CAST || in->op == OXIDE_OP_NEG) pops = 1;
            break;
        case OXIDE_OP_NOT:
        case OXIDE_OP_TRUTH:
            if (x != 0) return "has an operand where its operation takes none";
            pops = 1;
            break;
        case OXIDE_OP_CHECK:
            if (x >= UINT16_MAX || height != 1) return "checks a value its program did not leave alone";
            in->index = (uint16_t)x, pushes = 0, pops = 1;
            break;
        default: /* the comparisons, and, or */
            if (x != 0) return "has an operand where its operation takes none";
        }
        if (height < pops) return "takes more values than its stack holds";
        height += pushes - pops;
        if (height > OXIDE_PRECONDITION_STACK_LIMIT) return "needs more values on its stack than OXIDE_PRECONDITION_STACK_LIMIT";
    }
    return height == 0 ? NULL : "leaves a value no check takes";
}

#endif /* OXIDE_PRECONDITIONS_H */
