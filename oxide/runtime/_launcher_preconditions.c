/* launch preconditions (oxide/runtime/preconditions.py), compiled once per variant into
   postfix code over the packed slots and the launch dimensions, evaluated before every launch.

   Python evaluates them over unbounded ints; every value an expression can have lies in
   [-2^63, 2^64) (slots, dimensions and the results of the wrapping operations are i64 or u64
   values; constants outside that range are refused at compile time), so a value here is its
   low 64 bits and a sign flag: `neg` is 1 exactly when the value is negative. Comparisons
   are then exact, and the wrapping operations (to at most 64 bits) need only the low bits. */


#include "_launcher.h"

enum { PC_CONST, PC_ARG, PC_GRID, PC_BLOCK, PC_CAST, PC_ADD, PC_SUB, PC_MUL, PC_NEG, PC_LT, PC_LE, PC_GT, PC_GE,
       PC_EQ, PC_NE, PC_AND, PC_OR, PC_NOT, PC_TRUTH, PC_CHECK };

struct PInsn_ {
    uint8_t op;
    uint8_t ty;     /* a DT_ integer or bool code: of PC_ARG's slot, of PC_CAST and the arithmetic */
    uint8_t neg;    /* PC_CONST: the value is negative */
    uint16_t index; /* PC_ARG: slot; PC_GRID, PC_BLOCK: axis; PC_CHECK: which precondition */
    uint64_t bits;  /* PC_CONST: the value's low 64 bits */
};

typedef struct {
    uint64_t bits;
    uint64_t neg;
} PValue;

#define PRE_STACK 32     /* the deepest expression the evaluator takes; deeper ones stay in Python */
#define PRE_MAX_CODE 4096 /* instructions per variant */

/* preconditions._wrap(ty, v) of a value whose low 64 bits are `low` (ty not bool) */
static inline PValue pre_wrap(int ty, uint64_t low) {
    PValue r;
    switch (ty) {
    case DT_I8: r.bits = (uint64_t)(int64_t)(int8_t)(uint8_t)low; break;
    case DT_I16: r.bits = (uint64_t)(int64_t)(int16_t)(uint16_t)low; break;
    case DT_I32: r.bits = (uint64_t)(int64_t)(int32_t)(uint32_t)low; break;
    case DT_U8: r.bits = (uint8_t)low; r.neg = 0; return r;
    case DT_U16: r.bits = (uint16_t)low; r.neg = 0; return r;
    case DT_U32: r.bits = (uint32_t)low; r.neg = 0; return r;
    case DT_U64: r.bits = low; r.neg = 0; return r;
    default: r.bits = low; break; /* DT_I64 */
    }
    r.neg = r.bits >> 63;
    return r;
}

/* The slot's value as the Python path has it: what pack_scalar or the view wrote, of type ty. */
static inline PValue pre_load(int ty, const uint64_t *slot) {
    switch (ty) {
    case DT_I8: { int8_t y; memcpy(&y, slot, 1); return pre_wrap(DT_I64, (uint64_t)(int64_t)y); }
    case DT_I16: { int16_t y; memcpy(&y, slot, 2); return pre_wrap(DT_I64, (uint64_t)(int64_t)y); }
    case DT_I32: { int32_t y; memcpy(&y, slot, 4); return pre_wrap(DT_I64, (uint64_t)(int64_t)y); }
    case DT_U8: case DT_BOOL: { uint8_t y; memcpy(&y, slot, 1); return pre_wrap(DT_U64, y); }
    case DT_U16: { uint16_t y; memcpy(&y, slot, 2); return pre_wrap(DT_U64, y); }
    case DT_U32: { uint32_t y; memcpy(&y, slot, 4); return pre_wrap(DT_U64, y); }
    case DT_U64: return pre_wrap(DT_U64, *slot);
    default: return pre_wrap(DT_I64, *slot); /* DT_I64: a length, shape, stride or i64 scalar */
    }
}

static inline int pre_less(PValue a, PValue b) { return a.neg != b.neg ? (int)a.neg : a.bits < b.bits; }

static inline PValue pre_flag(int x) {
    PValue r = {(uint64_t)(x != 0), 0};
    return r;
}

/* The index of the first precondition that does not hold, or -1 when all do. */
int preconditions_failed(const PInsn *code, int n, const uint64_t *slots, const unsigned *grid,
                                const unsigned *block) {
    PValue st[PRE_STACK];
    int sp = 0;
    for (const PInsn *in = code, *end = code + n; in < end; in++) {
        switch (in->op) {
        case PC_CONST: st[sp].bits = in->bits, st[sp].neg = in->neg, sp++; break;
        case PC_ARG: st[sp++] = pre_load(in->ty, &slots[in->index]); break;
        case PC_GRID: st[sp].bits = grid[in->index], st[sp].neg = 0, sp++; break;
        case PC_BLOCK: st[sp].bits = block[in->index], st[sp].neg = 0, sp++; break;
        case PC_CAST: st[sp - 1] = in->ty == DT_BOOL ? pre_flag(st[sp - 1].bits != 0) : pre_wrap(in->ty, st[sp - 1].bits); break;
        case PC_ADD: sp--, st[sp - 1] = pre_wrap(in->ty, st[sp - 1].bits + st[sp].bits); break;
        case PC_SUB: sp--, st[sp - 1] = pre_wrap(in->ty, st[sp - 1].bits - st[sp].bits); break;
        case PC_MUL: sp--, st[sp - 1] = pre_wrap(in->ty, st[sp - 1].bits * st[sp].bits); break;
        case PC_NEG: st[sp - 1] = pre_wrap(in->ty, (uint64_t)0 - st[sp - 1].bits); break;
        case PC_LT: sp--, st[sp - 1] = pre_flag(pre_less(st[sp - 1], st[sp])); break;
        case PC_LE: sp--, st[sp - 1] = pre_flag(!pre_less(st[sp], st[sp - 1])); break;
        case PC_GT: sp--, st[sp - 1] = pre_flag(pre_less(st[sp], st[sp - 1])); break;
        case PC_GE: sp--, st[sp - 1] = pre_flag(!pre_less(st[sp - 1], st[sp])); break;
        case PC_EQ: sp--, st[sp - 1] = pre_flag(st[sp - 1].bits == st[sp].bits && st[sp - 1].neg == st[sp].neg); break;
        case PC_NE: sp--, st[sp - 1] = pre_flag(st[sp - 1].bits != st[sp].bits || st[sp - 1].neg != st[sp].neg); break;
        case PC_AND: sp--, st[sp - 1] = pre_flag(st[sp - 1].bits != 0 && st[sp].bits != 0); break;
        case PC_OR: sp--, st[sp - 1] = pre_flag(st[sp - 1].bits != 0 || st[sp].bits != 0); break;
        case PC_NOT: st[sp - 1] = pre_flag(st[sp - 1].bits == 0); break;
        case PC_TRUTH: st[sp - 1] = pre_flag(st[sp - 1].bits != 0); break;
        case PC_CHECK:
            if (st[--sp].bits == 0) return in->index;
            break;
        }
    }
    return -1;
}

typedef struct {
    PInsn *code;
    int n, cap, depth, max_depth;
    const int8_t *slot_codes; /* [n_slots]: the DT_ code of each packed slot */
    Py_ssize_t n_slots;
} PreCompiler;

static int pre_emit(PreCompiler *c, int op, int ty, int index, int delta) {
    if (c->n >= PRE_MAX_CODE) return 0;
    if (c->n == c->cap) {
        int cap = c->cap ? 2 * c->cap : 16;
        PInsn *code = PyMem_Realloc(c->code, (size_t)cap * sizeof(PInsn));
        if (code == NULL) return 0;
        c->code = code, c->cap = cap;
    }
    PInsn *in = &c->code[c->n++];
    memset(in, 0, sizeof *in);
    in->op = (uint8_t)op, in->ty = (uint8_t)ty, in->index = (uint16_t)index;
    c->depth += delta;
    if (c->depth > c->max_depth) c->max_depth = c->depth;
    return c->depth <= PRE_STACK;
}

static int pre_is(PyObject *s, const char *name) {
    return PyUnicode_Check(s) && PyUnicode_CompareWithASCIIString(s, name) == 0;
}

/* A type name of the encoding as its DT_ code; DT_NONE if it is not one. */
static int pre_type(PyObject *s) {
    static const char *names[] = {"i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "bool"};
    static const int codes[] = {DT_I8, DT_I16, DT_I32, DT_I64, DT_U8, DT_U16, DT_U32, DT_U64, DT_BOOL};
    for (int i = 0; i < 9; i++)
        if (pre_is(s, names[i])) return codes[i];
    return DT_NONE;
}

/* A non-negative int below `limit`, or -1. */
static long pre_small_int(PyObject *x, long limit) {
    if (!PyLong_Check(x)) return -1;
    int overflow = 0;
    long v = PyLong_AsLongAndOverflow(x, &overflow);
    if (overflow || v < 0 || v >= limit) {
        PyErr_Clear();
        return -1;
    }
    return v;
}

/* Appends the code of expression e; 0 where the evaluator cannot take it exactly like
   preconditions.evaluate (the kernel then launches through Python). Leaves no exception set. */
static int pre_compile(PreCompiler *c, PyObject *e, int nesting) {
    if (nesting > 64 || !(PyList_Check(e) || PyTuple_Check(e))) return 0;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(e);
    PyObject **item = PySequence_Fast_ITEMS(e);
    if (n < 1 || !PyUnicode_Check(item[0])) return 0;
    PyObject *op = item[0];
    if (pre_is(op, "const")) {
        if (n != 2 || !PyLong_Check(item[1])) return 0;
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(item[1], &overflow);
        uint64_t bits;
        if (overflow > 0) {
            unsigned long long u = PyLong_AsUnsignedLongLong(item[1]); /* [2^63, 2^64) */
            if (u == (unsigned long long)-1 && PyErr_Occurred()) {
                PyErr_Clear();
                return 0;
            }
            bits = (uint64_t)u;
        } else if (overflow < 0 || (v == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            return 0;
        } else {
            bits = (uint64_t)v;
        }
        if (!pre_emit(c, PC_CONST, 0, 0, 1)) return 0;
        c->code[c->n - 1].bits = bits;
        c->code[c->n - 1].neg = overflow == 0 && v < 0;
        return 1;
    }
    if (pre_is(op, "arg")) {
        long k = n == 2 ? pre_small_int(item[1], (long)c->n_slots) : -1;
        if (k < 0) return 0;
        int ty = c->slot_codes[k];
        if (!((ty >= DT_I8 && ty <= DT_U64) || ty == DT_BOOL)) return 0; /* a float: Python truncates it */
        return pre_emit(c, PC_ARG, ty, (int)k, 1);
    }
    if (pre_is(op, "grid") || pre_is(op, "block")) {
        long a = n == 2 ? pre_small_int(item[1], 3) : -1;
        return a >= 0 && pre_emit(c, pre_is(op, "grid") ? PC_GRID : PC_BLOCK, 0, (int)a, 1);
    }
    if (pre_is(op, "cast")) {
        int ty = n == 3 ? pre_type(item[1]) : DT_NONE;
        return ty != DT_NONE && pre_compile(c, item[2], nesting + 1) && pre_emit(c, PC_CAST, ty, 0, 0);
    }
    if (pre_is(op, "add") || pre_is(op, "sub") || pre_is(op, "mul")) {
        int ty = n == 4 ? pre_type(item[1]) : DT_NONE;
        int code = pre_is(op, "add") ? PC_ADD : pre_is(op, "sub") ? PC_SUB : PC_MUL;
        /* arithmetic in bool (never emitted by the compiler) needs the exact result: Python's */
        return ty != DT_NONE && ty != DT_BOOL && pre_compile(c, item[2], nesting + 1) &&
               pre_compile(c, item[3], nesting + 1) && pre_emit(c, code, ty, 0, -1);
    }
    if (pre_is(op, "neg")) {
        int ty = n == 3 ? pre_type(item[1]) : DT_NONE;
        return ty != DT_NONE && ty != DT_BOOL && pre_compile(c, item[2], nesting + 1) && pre_emit(c, PC_NEG, ty, 0, 0);
    }
    static const char *comparisons[] = {"lt", "le", "gt", "ge", "eq", "ne"};
    for (int i = 0; i < 6; i++) {
        if (pre_is(op, comparisons[i]))
            return n == 3 && pre_compile(c, item[1], nesting + 1) && pre_compile(c, item[2], nesting + 1) &&
                   pre_emit(c, PC_LT + i, 0, 0, -1);
    }
    if (pre_is(op, "and") || pre_is(op, "or")) {
        int is_and = pre_is(op, "and");
        if (n != 2 || !(PyList_Check(item[1]) || PyTuple_Check(item[1]))) return 0;
        Py_ssize_t m = PySequence_Fast_GET_SIZE(item[1]);
        PyObject **parts = PySequence_Fast_ITEMS(item[1]);
        if (m == 0) { /* all([]) is 1, any([]) is 0 */
            if (!pre_emit(c, PC_CONST, 0, 0, 1)) return 0;
            c->code[c->n - 1].bits = (uint64_t)is_and;
            return 1;
        }
        if (!pre_compile(c, parts[0], nesting + 1) || !pre_emit(c, PC_TRUTH, 0, 0, 0)) return 0;
        for (Py_ssize_t i = 1; i < m; i++)
            if (!pre_compile(c, parts[i], nesting + 1) || !pre_emit(c, is_and ? PC_AND : PC_OR, 0, 0, -1)) return 0;
        return 1;
    }
    if (pre_is(op, "not")) return n == 2 && pre_compile(c, item[1], nesting + 1) && pre_emit(c, PC_NOT, 0, 0, 0);
    return 0; /* an operation this launcher does not know: Python says what it is */
}

/* The code that checks every expression of `exprs` (a sequence, or None for none), in order,
   over slots of the given codes: *out (NULL when there are none) and its length. 0 if the
   evaluator cannot take them; -1 with an exception set on a malformed argument. */
int compile_preconditions(PyObject *exprs, const int8_t *slot_codes, Py_ssize_t n_slots, PInsn **out,
                                 int *n_out) {
    *out = NULL, *n_out = 0;
    if (exprs == NULL || exprs == Py_None) return 1;
    PyObject *fast = PySequence_Fast(exprs, "preconditions must be a sequence");
    if (fast == NULL) return -1;
    PreCompiler c = {NULL, 0, 0, 0, 0, slot_codes, n_slots};
    int ok = 1;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(fast);
    for (Py_ssize_t i = 0; i < count && ok; i++) {
        ok = i < UINT16_MAX && pre_compile(&c, PySequence_Fast_GET_ITEM(fast, i), 0) &&
             pre_emit(&c, PC_CHECK, 0, (int)i, -1);
    }
    Py_DECREF(fast);
    if (PyErr_Occurred()) PyErr_Clear();
    if (!ok) {
        PyMem_Free(c.code);
        return 0;
    }
    *out = c.code, *n_out = c.n;
    return 1;
}

