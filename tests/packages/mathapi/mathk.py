"""Kernels for tests/test_math_api_gpu.py: every function of CUDA's math API that ox.math provides,
for f32 and f64, each written to its own row of ``out`` (float results) or ``iout`` (integer and
boolean results); the test's FLOAT_ROWS and INT_ROWS name the rows in this order."""
import oxide as ox
from oxide import MutSlice, Slice, f32, f64, i32, i64, thread

T = ox.TypeVar("T", f32, f64)


@ox.kernel
def math_api(x: Slice[T], y: Slice[T], unit: Slice[T], pos: Slice[T], halves: Slice[T], special: Slice[T],
             orders: Slice[i32], exps: Slice[i32], out: MutSlice[T], iout: MutSlice[i64]) -> None:
    i = thread.index_1d()
    m = len(x)
    if i < m and i < len(y) and i < len(unit) and i < len(pos) and i < len(halves) and i < len(special) \
            and i < len(orders) and i < len(exps):
        v, w, u, p, h, s, n, e = x[i], y[i], unit[i], pos[i], halves[i], special[i], orders[i], exps[i]
        s0, c0 = ox.math.sincos(v)
        s1, c1 = ox.math.sincospi(v)
        fr, ip = ox.math.modf(h)
        mant, ex = ox.math.frexp(v)
        rem, quo = ox.math.remquo(v, w)
        with ox.unsafe():
            out[0 * m + i] = ox.math.sqrt(p)  # sqrt
            out[1 * m + i] = ox.math.rsqrt(p)  # rsqrt
            out[2 * m + i] = ox.math.cbrt(v)  # cbrt
            out[3 * m + i] = ox.math.rcbrt(v)  # rcbrt
            out[4 * m + i] = ox.math.exp(v)  # exp
            out[5 * m + i] = ox.math.exp2(v)  # exp2
            out[6 * m + i] = ox.math.exp10(v)  # exp10
            out[7 * m + i] = ox.math.expm1(v)  # expm1
            out[8 * m + i] = ox.math.log(p)  # log
            out[9 * m + i] = ox.math.log2(p)  # log2
            out[10 * m + i] = ox.math.log10(p)  # log10
            out[11 * m + i] = ox.math.log1p(p - 0.09)  # log1p
            out[12 * m + i] = ox.math.logb(v)  # logb
            out[13 * m + i] = ox.math.sin(v)  # sin
            out[14 * m + i] = ox.math.cos(v)  # cos
            out[15 * m + i] = ox.math.tan(v)  # tan
            out[16 * m + i] = ox.math.sinpi(v)  # sinpi
            out[17 * m + i] = ox.math.cospi(v)  # cospi
            out[18 * m + i] = ox.math.asin(2.0 * u - 1.0)  # asin
            out[19 * m + i] = ox.math.acos(2.0 * u - 1.0)  # acos
            out[20 * m + i] = ox.math.atan(v)  # atan
            out[21 * m + i] = ox.math.sinh(v)  # sinh
            out[22 * m + i] = ox.math.cosh(v)  # cosh
            out[23 * m + i] = ox.math.tanh(v)  # tanh
            out[24 * m + i] = ox.math.asinh(v)  # asinh
            out[25 * m + i] = ox.math.acosh(1.0 + p)  # acosh
            out[26 * m + i] = ox.math.atanh(2.0 * u - 1.0)  # atanh
            out[27 * m + i] = ox.math.erf(v)  # erf
            out[28 * m + i] = ox.math.erfc(v)  # erfc
            out[29 * m + i] = ox.math.erfinv(2.0 * u - 1.0)  # erfinv
            out[30 * m + i] = ox.math.erfcinv(2.0 * u)  # erfcinv
            out[31 * m + i] = ox.math.erfcx(v)  # erfcx
            out[32 * m + i] = ox.math.normcdf(v)  # normcdf
            out[33 * m + i] = ox.math.normcdfinv(u)  # normcdfinv
            out[34 * m + i] = ox.math.lgamma(v)  # lgamma
            out[35 * m + i] = ox.math.tgamma(v)  # tgamma
            out[36 * m + i] = ox.math.j0(v)  # j0
            out[37 * m + i] = ox.math.j1(v)  # j1
            out[38 * m + i] = ox.math.y0(p)  # y0
            out[39 * m + i] = ox.math.y1(p)  # y1
            out[40 * m + i] = ox.math.jn(n, p)  # jn
            out[41 * m + i] = ox.math.yn(n, p)  # yn
            out[42 * m + i] = ox.math.cyl_bessel_i0(v)  # cyl_bessel_i0
            out[43 * m + i] = ox.math.cyl_bessel_i1(v)  # cyl_bessel_i1
            out[44 * m + i] = ox.math.floor(h)  # floor
            out[45 * m + i] = ox.math.ceil(h)  # ceil
            out[46 * m + i] = ox.math.trunc(h)  # trunc
            out[47 * m + i] = ox.math.round(h)  # round
            out[48 * m + i] = ox.math.rint(h)  # rint
            out[49 * m + i] = ox.math.nearbyint(h)  # nearbyint
            out[50 * m + i] = ox.math.fabs(v)  # fabs
            out[51 * m + i] = ox.math.abs(v)  # abs
            out[52 * m + i] = ox.math.pow(p, v)  # pow
            out[53 * m + i] = ox.math.atan2(v, w)  # atan2
            out[54 * m + i] = ox.math.fmod(v, w)  # fmod
            out[55 * m + i] = ox.math.remainder(v, w)  # remainder
            out[56 * m + i] = ox.math.hypot(v, w)  # hypot
            out[57 * m + i] = ox.math.rhypot(v, w)  # rhypot
            out[58 * m + i] = ox.math.norm3d(v, w, p)  # norm3d
            out[59 * m + i] = ox.math.rnorm3d(v, w, p)  # rnorm3d
            out[60 * m + i] = ox.math.norm4d(v, w, p, u)  # norm4d
            out[61 * m + i] = ox.math.rnorm4d(v, w, p, u)  # rnorm4d
            out[62 * m + i] = ox.math.copysign(p, v)  # copysign
            out[63 * m + i] = ox.math.nextafter(v, w)  # nextafter
            out[64 * m + i] = ox.math.fdim(v, w)  # fdim
            out[65 * m + i] = ox.math.fmin(v, w)  # fmin
            out[66 * m + i] = ox.math.fmax(v, w)  # fmax
            out[67 * m + i] = ox.math.min(v, w)  # min
            out[68 * m + i] = ox.math.max(v, w)  # max
            out[69 * m + i] = ox.math.ldexp(v, e)  # ldexp
            out[70 * m + i] = ox.math.scalbn(v, e)  # scalbn
            out[71 * m + i] = ox.math.scalbln(v, i64(e))  # scalbln
            out[72 * m + i] = s0  # sincos.sin
            out[73 * m + i] = c0  # sincos.cos
            out[74 * m + i] = s1  # sincospi.sin
            out[75 * m + i] = c1  # sincospi.cos
            out[76 * m + i] = fr  # modf.frac
            out[77 * m + i] = ip  # modf.int
            out[78 * m + i] = mant  # frexp.mant
            out[79 * m + i] = rem  # remquo.rem
            iout[0 * m + i] = i64(ox.math.ilogb(v))  # ilogb
            iout[1 * m + i] = ox.math.lround(h)  # lround
            iout[2 * m + i] = ox.math.llround(h)  # llround
            iout[3 * m + i] = ox.math.lrint(h)  # lrint
            iout[4 * m + i] = ox.math.llrint(h)  # llrint
            iout[5 * m + i] = i64(ex)  # frexp.exp
            iout[6 * m + i] = i64(quo)  # remquo.quo
            iout[7 * m + i] = i64(ox.math.isnan(s))  # isnan
            iout[8 * m + i] = i64(ox.math.isinf(s))  # isinf
            iout[9 * m + i] = i64(ox.math.isfinite(s))  # isfinite
            iout[10 * m + i] = i64(ox.math.signbit(s))  # signbit
