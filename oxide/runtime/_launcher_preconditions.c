/* launch preconditions: each variant's programs (oxide.abi.preconditions, KernelSpec.preconditions'
   `code`), read once into the code of the evaluator oxide/launch.hpp shares
   (oxide/include/oxide/preconditions.h: the code, its checks, the evaluator and why its 64-bit
   values are exact), run before every launch. */


#include "_launcher.h"

#include "../include/oxide/preconditions.h"

/* The index of the first precondition that does not hold, or -1 when all do. */
int preconditions_failed(const PInsn *code, int n, const uint64_t *slots, const unsigned *grid,
                         const unsigned *block) {
    return oxide_preconditions_failed(code, n, slots, grid, block);
}

/* One [opcode, operand] pair of a program into *in (an operand outside [-2^63, 2^64): 0). */
static int read_instruction(PyObject *pair, PInsn *in) {
    if (!(PyList_Check(pair) || PyTuple_Check(pair)) || PySequence_Fast_GET_SIZE(pair) != 2) return 0;
    PyObject **item = PySequence_Fast_ITEMS(pair);
    if (!PyLong_Check(item[0]) || !PyLong_Check(item[1])) return 0;
    long op = PyLong_AsLong(item[0]);
    if (op < 0 || op >= OXIDE_OP_COUNT || op == OXIDE_OP_CHECK) return 0; /* a program holds no check: we append it */
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(item[1], &overflow);
    memset(in, 0, sizeof *in);
    in->op = (uint8_t)op;
    if (overflow > 0) {
        unsigned long long u = PyLong_AsUnsignedLongLong(item[1]); /* [2^63, 2^64) */
        if (u == (unsigned long long)-1 && PyErr_Occurred()) return 0;
        in->bits = (uint64_t)u;
    } else if (overflow < 0 || (v == -1 && PyErr_Occurred())) {
        return 0;
    } else {
        in->bits = (uint64_t)v, in->neg = v < 0;
    }
    return 1;
}

/* The code that checks every program of `programs` (a sequence, or None for none), in order,
   over slots of the given codes: *out (NULL when there are none) and its length. 0 if the
   evaluator cannot take them (the kernel then launches through Python, which checks them);
   -1 with an exception set on a malformed argument. */
int compile_preconditions(PyObject *programs, const int8_t *slot_codes, Py_ssize_t n_slots, PInsn **out,
                          int *n_out) {
    *out = NULL, *n_out = 0;
    if (programs == NULL || programs == Py_None) return 1;
    PyObject *fast = PySequence_Fast(programs, "preconditions must be a sequence");
    if (fast == NULL) return -1;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(fast);
    PInsn *code = PyMem_Malloc(sizeof(PInsn) * (size_t)OXIDE_PRECONDITION_PROGRAM_LIMIT);
    if (code == NULL) {
        Py_DECREF(fast);
        PyErr_NoMemory();
        return -1;
    }
    int n = 0, ok = 1;
    for (Py_ssize_t i = 0; i < count && ok; i++) {
        PyObject *program = PySequence_Fast(PySequence_Fast_GET_ITEM(fast, i), "a program must be a sequence");
        if (program == NULL) {
            ok = 0;
            break;
        }
        Py_ssize_t m = PySequence_Fast_GET_SIZE(program);
        ok = m < OXIDE_PRECONDITION_PROGRAM_LIMIT - n; /* and its check */
        for (Py_ssize_t j = 0; j < m && ok; j++) ok = read_instruction(PySequence_Fast_GET_ITEM(program, j), &code[n++]);
        Py_DECREF(program);
        if (ok) {
            memset(&code[n], 0, sizeof code[n]);
            code[n].op = OXIDE_OP_CHECK, code[n].bits = (uint64_t)i, n++;
        }
    }
    Py_DECREF(fast);
    if (PyErr_Occurred()) PyErr_Clear();
    if (ok && n > 0) ok = oxide_pre_prepare(code, n, slot_codes, (size_t)n_slots) == NULL;
    if (!ok || n == 0) {
        PyMem_Free(code);
        return ok;
    }
    PInsn *kept = PyMem_Realloc(code, sizeof(PInsn) * (size_t)n);
    *out = kept != NULL ? kept : code, *n_out = n;
    return 1;
}
