/* launch preconditions (oxide/runtime/preconditions.py), compiled once per variant into
   postfix code over the packed slots and the launch dimensions, evaluated before every launch by
   the evaluator oxide/launch.hpp shares (oxide/include/oxide/preconditions.h: the code, the
   evaluator and why its 64-bit values are exact). */


#include "_launcher.h"

#include "../include/oxide/preconditions.h"

#define PRE_MAX_CODE 4096 /* instructions per variant */

/* The index of the first precondition that does not hold, or -1 when all do. */
int preconditions_failed(const PInsn *code, int n, const uint64_t *slots, const unsigned *grid,
                         const unsigned *block) {
    return oxide_preconditions_failed(code, n, slots, grid, block);
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
    return c->depth <= OXIDE_PRE_STACK;
}

/* The OXIDE_OP_ code of an operation's name, or -1. */
static int pre_op(PyObject *s) {
    const char *name = PyUnicode_Check(s) ? PyUnicode_AsUTF8(s) : NULL;
    if (name == NULL) {
        PyErr_Clear();
        return -1;
    }
    return oxide_pre_op(name);
}

/* A type name of the encoding as its DT_ code; DT_NONE if it is not one. */
static int pre_type(PyObject *s) {
    const char *name = PyUnicode_Check(s) ? PyUnicode_AsUTF8(s) : NULL;
    if (name == NULL) {
        PyErr_Clear();
        return DT_NONE;
    }
    return oxide_pre_type(name);
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
    int op = pre_op(item[0]);
    if (op == OXIDE_OP_CONST) {
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
        if (!pre_emit(c, OXIDE_OP_CONST, 0, 0, 1)) return 0;
        c->code[c->n - 1].bits = bits;
        c->code[c->n - 1].neg = overflow == 0 && v < 0;
        return 1;
    }
    if (op == OXIDE_OP_ARG) {
        long k = n == 2 ? pre_small_int(item[1], (long)c->n_slots) : -1;
        if (k < 0) return 0;
        int ty = c->slot_codes[k];
        if (!((ty >= DT_I8 && ty <= DT_U64) || ty == DT_BOOL)) return 0; /* a float: Python truncates it */
        return pre_emit(c, OXIDE_OP_ARG, ty, (int)k, 1);
    }
    if (op == OXIDE_OP_GRID || op == OXIDE_OP_BLOCK) {
        long a = n == 2 ? pre_small_int(item[1], 3) : -1;
        return a >= 0 && pre_emit(c, op, 0, (int)a, 1);
    }
    if (op == OXIDE_OP_CAST) {
        int ty = n == 3 ? pre_type(item[1]) : DT_NONE;
        return ty != DT_NONE && pre_compile(c, item[2], nesting + 1) && pre_emit(c, op, ty, 0, 0);
    }
    if (op == OXIDE_OP_ADD || op == OXIDE_OP_SUB || op == OXIDE_OP_MUL) {
        int ty = n == 4 ? pre_type(item[1]) : DT_NONE;
        /* arithmetic in bool (never emitted by the compiler) needs the exact result: Python's */
        return ty != DT_NONE && ty != DT_BOOL && pre_compile(c, item[2], nesting + 1) &&
               pre_compile(c, item[3], nesting + 1) && pre_emit(c, op, ty, 0, -1);
    }
    if (op == OXIDE_OP_NEG) {
        int ty = n == 3 ? pre_type(item[1]) : DT_NONE;
        return ty != DT_NONE && ty != DT_BOOL && pre_compile(c, item[2], nesting + 1) && pre_emit(c, op, ty, 0, 0);
    }
    if (op >= OXIDE_OP_LT && op <= OXIDE_OP_NE) /* the comparisons */
        return n == 3 && pre_compile(c, item[1], nesting + 1) && pre_compile(c, item[2], nesting + 1) &&
               pre_emit(c, op, 0, 0, -1);
    if (op == OXIDE_OP_AND || op == OXIDE_OP_OR) {
        int is_and = op == OXIDE_OP_AND;
        if (n != 2 || !(PyList_Check(item[1]) || PyTuple_Check(item[1]))) return 0;
        Py_ssize_t m = PySequence_Fast_GET_SIZE(item[1]);
        PyObject **parts = PySequence_Fast_ITEMS(item[1]);
        if (m == 0) { /* all([]) is 1, any([]) is 0 */
            if (!pre_emit(c, OXIDE_OP_CONST, 0, 0, 1)) return 0;
            c->code[c->n - 1].bits = (uint64_t)is_and;
            return 1;
        }
        if (!pre_compile(c, parts[0], nesting + 1) || !pre_emit(c, OXIDE_PRE_TRUTH, 0, 0, 0)) return 0;
        for (Py_ssize_t i = 1; i < m; i++)
            if (!pre_compile(c, parts[i], nesting + 1) || !pre_emit(c, op, 0, 0, -1)) return 0;
        return 1;
    }
    if (op == OXIDE_OP_NOT) return n == 2 && pre_compile(c, item[1], nesting + 1) && pre_emit(c, op, 0, 0, 0);
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
             pre_emit(&c, OXIDE_PRE_CHECK, 0, (int)i, -1);
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

