/* Scalar arguments: the values launch.py's converters accept, packed as its struct formats pack them. */
#include "_launcher.h"

static int is_numpy_scalar(PyObject *value) {
    PyTypeObject *tp = Py_TYPE(value);
    for (int i = 0; i < n_scalar_types; i++)
        if (scalar_types[i] == tp) return 1;
    return 0;
}


static int as_double(PyObject *value, double *out) {
    if (PyFloat_CheckExact(value)) {
        *out = PyFloat_AS_DOUBLE(value);
        return 1;
    }
    if (PyLong_CheckExact(value) || is_numpy_scalar(value)) {
        double d = PyLong_CheckExact(value) ? PyLong_AsDouble(value) : PyFloat_AsDouble(value);
        if (d == -1.0 && PyErr_Occurred()) {
            PyErr_Clear();
            return 0;
        }
        *out = d;
        return 1;
    }
    return 0;
}

int pack_scalar(PyObject *value, int code, uint64_t *slot) {
    if (code >= DT_I8 && code <= DT_U64 && !PyLong_Check(value) && is_numpy_scalar(value)) {
        PyObject *index = PyNumber_Index(value); /* numpy.int32(5) -> 5; numpy.float32 refuses */
        if (index == NULL) {
            PyErr_Clear();
            return 0;
        }
        int ok = pack_scalar(index, code, slot);
        Py_DECREF(index);
        return ok;
    }
    unsigned char *p = (unsigned char *)slot;
    *slot = 0;
    if (code >= DT_I8 && code <= DT_U32 && code != DT_I64) {
        if (!PyLong_Check(value)) return 0;
        int overflow = 0;
        long long x = PyLong_AsLongLongAndOverflow(value, &overflow);
        if (overflow || (x == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            return 0;
        }
        switch (code) {
        case DT_I8: if (x < INT8_MIN || x > INT8_MAX) return 0; { int8_t y = (int8_t)x; memcpy(p, &y, 1); } break;
        case DT_I16: if (x < INT16_MIN || x > INT16_MAX) return 0; { int16_t y = (int16_t)x; memcpy(p, &y, 2); } break;
        case DT_I32: if (x < INT32_MIN || x > INT32_MAX) return 0; { int32_t y = (int32_t)x; memcpy(p, &y, 4); } break;
        case DT_U8: if (x < 0 || x > UINT8_MAX) return 0; { uint8_t y = (uint8_t)x; memcpy(p, &y, 1); } break;
        case DT_U16: if (x < 0 || x > UINT16_MAX) return 0; { uint16_t y = (uint16_t)x; memcpy(p, &y, 2); } break;
        case DT_U32: if (x < 0 || x > (long long)UINT32_MAX) return 0; { uint32_t y = (uint32_t)x; memcpy(p, &y, 4); } break;
        }
        return 1;
    }
    if (code == DT_I64) {
        if (!PyLong_Check(value)) return 0;
        int overflow = 0;
        long long x = PyLong_AsLongLongAndOverflow(value, &overflow);
        if (overflow || (x == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            return 0;
        }
        int64_t y = (int64_t)x;
        memcpy(p, &y, 8);
        return 1;
    }
    if (code == DT_U64) {
        if (!PyLong_Check(value)) return 0;
        unsigned long long x = PyLong_AsUnsignedLongLong(value);
        if (x == (unsigned long long)-1 && PyErr_Occurred()) {
            PyErr_Clear();
            return 0;
        }
        uint64_t y = (uint64_t)x;
        memcpy(p, &y, 8);
        return 1;
    }
    if (code == DT_BOOL) {
        uint8_t y;
        if (value == Py_True) y = 1;
        else if (value == Py_False) y = 0;
        else if (PyLong_CheckExact(value)) {
            int overflow = 0;
            long long x = PyLong_AsLongLongAndOverflow(value, &overflow);
            if (overflow || (x != 0 && x != 1)) return 0;
            y = (uint8_t)x;
        } else return 0;
        memcpy(p, &y, 1);
        return 1;
    }
    double d;
    if (!as_double(value, &d)) return 0;
    switch (code) {
    case DT_F64:
        memcpy(p, &d, 8);
        return 1;
    case DT_F32: {
        if (fabs(d) > FLT_MAX && !isinf(d)) return 0; /* the Python path rounds these the GPU's way */
        float f = (float)d;
        memcpy(p, &f, 4);
        return 1;
    }
    case DT_F16:
        if (fabs(d) > 65504.0 && !isinf(d)) return 0;
#if PY_VERSION_HEX >= 0x030B0000
        if (PyFloat_Pack2(d, (char *)p, PY_LITTLE_ENDIAN) < 0) {
#else
        if (_PyFloat_Pack2(d, p, PY_LITTLE_ENDIAN) < 0) {
#endif
            PyErr_Clear();
            *slot = 0;
            return 0;
        }
        return 1;
    case DT_BF16: {
        uint16_t y;
        if (isnan(d)) y = 0x7FC0;
        else {
            if (fabs(d) > 3.3895313892515355e38 && !isinf(d)) return 0;
            float f = (float)d;
            uint32_t bits;
            memcpy(&bits, &f, 4);
            uint64_t rounded = (uint64_t)bits + 0x7FFF + ((bits >> 16) & 1); /* to nearest even */
            y = (uint16_t)((rounded >> 16) & 0xFFFF);
        }
        memcpy(p, &y, 2);
        return 1;
    }
    default:
        return 0;
    }
}

