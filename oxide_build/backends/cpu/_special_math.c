/* The CPU device's forms of the CUDA math functions C's library lacks: erfinv, erfcinv, erfcx,
 * normcdfinv and the modified Bessel functions cyl_bessel_i0 / cyl_bessel_i1, f32 and f64
 * (oxide_build/intrinsics/math.py calls them as oxide_cpu_<name>f / oxide_cpu_<name>; the JIT
 * finds them through symbols(), as it finds the scheduler's, oxide_build/backends/cpu/jit.py).
 *
 * Each is computed in long double (x87's 64-bit significand on x86-64 Linux, binary128 on
 * aarch64) from the C library's erfl, erfcl, expl and logl, then rounded once to the argument's
 * type: within about one ulp of the exact value, under CUDA's documented bounds (2 to 8 ulp).
 * - erfinv, erfcinv, normcdfinv: Newton's method from Winitzki's approximation (a relative error
 *   of about 1e-3), six steps: on erf(y) = x where |x| <= 0.5, on log erfc(y) = log z in the tails
 *   (nearly linear in y^2 there, so Newton converges from the start; erfcl does not underflow in
 *   long double for any double argument). Reflections are exact: 1 - |x| for |x| >= 0.5 and
 *   2 - z for z >= 1 (Sterbenz), 2p for normcdfinv.
 * - erfcx(x) = exp(x^2) erfc(x): x^2 split exactly into hi + lo (fmal) so that exp(x^2) keeps its
 *   precision up to x = 100; beyond, its asymptotic series 1/(x sqrt(pi)) (1 - 1/(2x^2) + ...).
 * - cyl_bessel_i0 / i1: their power series, every term positive (no cancellation), summed until a
 *   term no longer changes the sum; above the argument whose value overflows, infinity.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <stdint.h>

#if defined(__GNUC__)
#define EXPORT __attribute__((visibility("default")))
#else
#define EXPORT
#endif

typedef long double ld;

static const ld SQRT_PI_OVER_2 = 0.886226925452758013649083741670572591L;  /* sqrt(pi) / 2 */
static const ld INV_SQRT_PI = 0.564189583547756286948079451560772586L;     /* 1 / sqrt(pi) */
static const ld SQRT2 = 1.414213562373095048801688724209698079L;
static const ld PI = 3.141592653589793238462643383279502884L;
#define NEWTON_STEPS 6

/* Winitzki's approximation of erfinv, from L = log(1 - x^2) (= log(z (2 - z)) for z = 1 - x) */
static ld winitzki(ld L) {
    const ld a = 0.147L;
    const ld g = 2.0L / (PI * a) + L / 2.0L;
    return sqrtl(sqrtl(g * g - L / a) - g);
}

/* erfinv(x) for 0 <= x <= 0.5 */
static ld erfinv_center(ld x) {
    if (x == 0.0L) return x;
    ld y = winitzki(log1pl(-x * x));
    for (int k = 0; k < NEWTON_STEPS; k++) y -= (erfl(y) - x) * SQRT_PI_OVER_2 * expl(y * y);
    return y;
}

/* erfcinv(z) for 0 < z < 0.5 (y > 0.47): Newton on log erfc(y) = log z */
static ld erfcinv_tail(ld z) {
    const ld log_z = logl(z);
    ld y = winitzki(log_z + logl(2.0L - z));
    for (int k = 0; k < NEWTON_STEPS; k++) {
        const ld e = erfcl(y);
        y += (logl(e) - log_z) * SQRT_PI_OVER_2 * e * expl(y * y);
    }
    return y;
}

static ld erfcinv_l(ld z) {
    if (isnan(z)) return z;
    if (z <= 0.0L || z >= 2.0L) return z == 0.0L ? (ld)INFINITY : z == 2.0L ? -(ld)INFINITY : (ld)NAN;
    if (z > 1.0L) return -erfcinv_l(2.0L - z);
    if (z >= 0.5L) return erfinv_center(1.0L - z);
    return erfcinv_tail(z);
}

static ld erfinv_l(ld x) {
    if (isnan(x)) return x;
    const ld a = fabsl(x);
    if (a >= 1.0L) return a == 1.0L ? copysignl((ld)INFINITY, x) : (ld)NAN;
    const ld y = a <= 0.5L ? erfinv_center(a) : erfcinv_tail(1.0L - a);
    return copysignl(y, x);
}

static ld erfcx_l(ld x) {
    if (isnan(x)) return x;
    if (x < 100.0L) {
        if (x < -110.0L) return (ld)INFINITY;  /* beyond long double's exp too */
        const ld hi = x * x;
        const ld lo = fmal(x, x, -hi);  /* x^2 = hi + lo exactly (x has at most 53 bits) */
        return expl(hi) * erfcl(x) * (1.0L + lo);
    }
    if (isinf(x)) return 0.0L;
    /* 1/(x sqrt(pi)) * sum (-1)^k (2k-1)!! / (2x^2)^k: at x >= 100 the sixth term is below 1e-20 */
    const ld t = 1.0L / (2.0L * x * x);
    ld term = 1.0L, sum = 1.0L;
    for (int k = 1; k <= 6; k++) {
        term *= -(ld)(2 * k - 1) * t;
        sum += term;
    }
    return INV_SQRT_PI / x * sum;
}

/* I0 (order 0) or I1 (order 1) of x >= 0: sum (x^2/4)^k / (k! (k + order)!), times (x/2)^order */
static ld bessel_i_l(ld x, int order) {
    const ld q = x * x / 4.0L;
    ld term = 1.0L, sum = 1.0L;
    for (int k = 1; k < 100000; k++) {
        term *= q / ((ld)k * (ld)(k + order));
        const ld next = sum + term;
        if (next == sum) break;
        sum = next;
    }
    return order ? sum * (x / 2.0L) : sum;
}

/* the largest argument whose I0 / I1 is finite is below these (f64: 713.98..., f32: 91.9...) */
static ld bessel_i(ld x, int order, ld overflow) {
    if (isnan(x)) return x;
    const ld a = fabsl(x);
    if (a > overflow) return order ? copysignl((ld)INFINITY, x) : (ld)INFINITY;
    const ld v = bessel_i_l(a, order);
    return order ? copysignl(v, x) : v;  /* I1 is odd (I1(-0) = -0), I0 even */
}

EXPORT double oxide_cpu_erfinv(double x) { return (double)erfinv_l(x); }
EXPORT float oxide_cpu_erfinvf(float x) { return (float)erfinv_l(x); }
EXPORT double oxide_cpu_erfcinv(double x) { return (double)erfcinv_l(x); }
EXPORT float oxide_cpu_erfcinvf(float x) { return (float)erfcinv_l(x); }
EXPORT double oxide_cpu_erfcx(double x) { return (double)erfcx_l(x); }
EXPORT float oxide_cpu_erfcxf(float x) { return (float)erfcx_l(x); }
/* normcdfinv(p) = -sqrt(2) erfcinv(2p); + 0 makes the median +0, not -0 */
static ld normcdfinv_l(ld p) { return -SQRT2 * erfcinv_l(2.0L * p) + 0.0L; }

EXPORT double oxide_cpu_normcdfinv(double p) { return (double)normcdfinv_l(p); }
EXPORT float oxide_cpu_normcdfinvf(float p) { return (float)normcdfinv_l(p); }
EXPORT double oxide_cpu_cyl_bessel_i0(double x) { return (double)bessel_i(x, 0, 720.0L); }
EXPORT float oxide_cpu_cyl_bessel_i0f(float x) { return (float)bessel_i(x, 0, 100.0L); }
EXPORT double oxide_cpu_cyl_bessel_i1(double x) { return (double)bessel_i(x, 1, 720.0L); }
EXPORT float oxide_cpu_cyl_bessel_i1f(float x) { return (float)bessel_i(x, 1, 100.0L); }

static PyObject *symbols(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return Py_BuildValue(
        "{s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K}",
        "oxide_cpu_erfinv", (unsigned long long)(uintptr_t)&oxide_cpu_erfinv,
        "oxide_cpu_erfinvf", (unsigned long long)(uintptr_t)&oxide_cpu_erfinvf,
        "oxide_cpu_erfcinv", (unsigned long long)(uintptr_t)&oxide_cpu_erfcinv,
        "oxide_cpu_erfcinvf", (unsigned long long)(uintptr_t)&oxide_cpu_erfcinvf,
        "oxide_cpu_erfcx", (unsigned long long)(uintptr_t)&oxide_cpu_erfcx,
        "oxide_cpu_erfcxf", (unsigned long long)(uintptr_t)&oxide_cpu_erfcxf,
        "oxide_cpu_normcdfinv", (unsigned long long)(uintptr_t)&oxide_cpu_normcdfinv,
        "oxide_cpu_normcdfinvf", (unsigned long long)(uintptr_t)&oxide_cpu_normcdfinvf,
        "oxide_cpu_cyl_bessel_i0", (unsigned long long)(uintptr_t)&oxide_cpu_cyl_bessel_i0,
        "oxide_cpu_cyl_bessel_i0f", (unsigned long long)(uintptr_t)&oxide_cpu_cyl_bessel_i0f,
        "oxide_cpu_cyl_bessel_i1", (unsigned long long)(uintptr_t)&oxide_cpu_cyl_bessel_i1,
        "oxide_cpu_cyl_bessel_i1f", (unsigned long long)(uintptr_t)&oxide_cpu_cyl_bessel_i1f);
}

static PyMethodDef methods[] = {
    {"symbols", symbols, METH_NOARGS, "The addresses of the special functions, by name."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_special_math",
    "The CPU device's erfinv, erfcinv, erfcx, normcdfinv and cyl_bessel_i0/i1 (f32 and f64).", -1, methods,
};

PyMODINIT_FUNC PyInit__special_math(void) { return PyModule_Create(&module); }
