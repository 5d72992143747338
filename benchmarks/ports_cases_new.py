"""The second half of the ports corpus: kernels from sources the first corpus did not use (llm.c,
PolyBench-GPU kernels not in it, Rodinia nn, PyTorch ATen, cuda-samples), each ported to oxide
line by line (tests/packages/ports/port_<name>.py), compiled and checked as the first half is."""
from __future__ import annotations

from typing import Any

import numpy as np

from benchmarks.ports import Case, Side, Spec
from benchmarks.ports_cases_util import cdiv, close_to_max, cuda, dev, empty, i32, i64, poisoner, restore, u64, f32

__all__ = ["NEW_CORPUS"]

LLMC_FLAGS = ("--use_fast_math",)   # llm.c's Makefile and dev/cuda builds: -O3 --use_fast_math
B, T, C, NH = 8, 1024, 768, 12        # llm.c dev/cuda's sizes (GPT-2 small, batch 8)


def make_llmc_encoder_forward(torch: Any, rng: np.random.Generator) -> Case:
    V = 50257
    inp = dev(torch, rng.integers(0, V, B * T).astype(np.int32))
    wte = torch.randn(V * C, device="cuda")
    wpe = torch.randn(T * C, device="cuda")
    out = empty(torch, B * T * C)

    def body(s: Side) -> None:
        s.launch("encoder_forward_kernel2", cdiv(B * T * C, 256), 256, (out, inp, wte, wpe, i32(B), i32(T), i32(C)))
    return Case("B 8, T 1024, C 768", body, poisoner(out), lambda: [out], rtol=0, atol=0)


def make_llmc_residual_forward(torch: Any, rng: np.random.Generator) -> Case:
    n = B * T * C
    a, b = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out = empty(torch, n)

    def body(s: Side) -> None:
        s.launch("residual_forward_kernel1", cdiv(n, 256), 256, (out, a, b, i32(n)))
    return Case("B 8, T 1024, C 768", body, poisoner(out), lambda: [out], rtol=0, atol=0)


def make_llmc_gelu_forward(torch: Any, rng: np.random.Generator) -> Case:
    n = B * T * C
    x = torch.randn(n, device="cuda") * 3
    out = empty(torch, n)

    def body(s: Side) -> None:
        s.launch("gelu_forward_kernel1", cdiv(n, 256), 256, (out, x, i32(n)))
    return Case("B 8, T 1024, C 768", body, poisoner(out), lambda: [out], rtol=1e-5, atol=1e-5)


def make_llmc_gelu_backward(torch: Any, rng: np.random.Generator) -> Case:
    n = B * T * C
    x = torch.randn(n, device="cuda") * 3
    dout = torch.randn(n, device="cuda")
    dinp = empty(torch, n)

    def body(s: Side) -> None:
        s.launch("gelu_backward1", cdiv(n, 256), 256, (dinp, x, dout, i32(n)))
    return Case("B 8, T 1024, C 768", body, poisoner(dinp), lambda: [dinp], rtol=1e-4, atol=1e-5,
                notes=("the port computes cosh from two exps (oxide has no cosh)",))


def make_llmc_permute(torch: Any, rng: np.random.Generator) -> Case:
    d = C // NH
    inp = torch.randn(B * T * 3 * C, device="cuda")
    q, k, v = (empty(torch, B * NH * T * d) for _ in range(3))

    def body(s: Side) -> None:
        s.launch("permute_kernel", cdiv(B * NH * T * d, 256), 256, (q, k, v, inp, i32(B), i32(T), i32(NH), i32(d)))
    return Case("B 8, T 1024, NH 12, d 64", body, poisoner(q, k, v), lambda: [q, k, v], rtol=0, atol=0)


def make_llmc_unpermute(torch: Any, rng: np.random.Generator) -> Case:
    d = C // NH
    inp = torch.randn(B * NH * T * d, device="cuda")
    out = empty(torch, B * T * C)

    def body(s: Side) -> None:
        s.launch("unpermute_kernel", cdiv(B * NH * T * d, 256), 256, (inp, out, i32(B), i32(T), i32(NH), i32(d)))
    return Case("B 8, T 1024, NH 12, d 64", body, poisoner(out), lambda: [out], rtol=0, atol=0)


def make_llmc_adamw(torch: Any, rng: np.random.Generator) -> Case:
    n = 124475904                                    # GPT-2 small's parameters
    saved = [torch.randn(n, device="cuda"), torch.randn(n, device="cuda") * 0.01,
             torch.rand(n, device="cuda") * 1e-4]
    params, m, v = (t.clone() for t in saved)
    grads = torch.randn(n, device="cuda")
    lr, beta1, beta2, eps, wd, t = 1e-3, 0.9, 0.999, 1e-8, 0.01, 1
    b1c, b2c = 1.0 - beta1 ** t, 1.0 - beta2 ** t

    def body(s: Side) -> None:
        s.launch("adamw_kernel2", cdiv(n, 512), 512, (params, grads, m, v, i64(n), f32(lr), f32(beta1), f32(beta2),
                                                      f32(b1c), f32(b2c), f32(eps), f32(wd)))
    return Case("124475904 parameters (GPT-2 small)", body, restore((params, saved[0]), (m, saved[1]), (v, saved[2])),
                lambda: [params, m, v], rtol=1e-5, atol=1e-6,
                notes=("timed runs keep updating the same parameters (same work)",))


def make_llmc_layernorm_forward(torch: Any, rng: np.random.Generator) -> Case:
    n = B * T
    inp = torch.randn(n * C, device="cuda") * 2 + 0.5
    weight, bias = torch.rand(C, device="cuda") + 0.5, torch.rand(C, device="cuda") - 0.5
    out, mean, rstd = empty(torch, n * C), empty(torch, n), empty(torch, n)

    def body(s: Side) -> None:
        s.launch("layernorm_forward_kernel3", cdiv(n * 32, 256), 256, (out, mean, rstd, inp, weight, bias, i32(n), i32(C)))
    return Case("N = B*T = 8192 rows, C 768", body, poisoner(out, mean, rstd), lambda: [out, mean, rstd],
                rtol=1e-5, atol=1e-5)


def make_vector_add(torch: Any, rng: np.random.Generator) -> Case:
    n = 1 << 26
    a, b = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    c = empty(torch, n)

    def body(s: Side) -> None:
        s.launch("vector_add", cdiv(n, 256), 256, (a, b, c, i32(n)), symbol="vectorAdd")
    return Case("2^26 f32 (the sample's: 50000)", body, poisoner(c), lambda: [c], rtol=0, atol=0)


def make_transpose_naive(torch: Any, rng: np.random.Generator) -> Case:
    h = w = 8192
    x = torch.randn(h * w, device="cuda")
    out = empty(torch, h * w)

    def body(s: Side) -> None:
        s.launch("transpose_naive", (w // 32, h // 32), (32, 8), (out, x, i32(w), i32(h)), symbol="transposeNaive")
    return Case("8192 x 8192 f32 (the sample's: 1024 x 1024)", body, poisoner(out), lambda: [out], rtol=0, atol=0)


def make_polybench_gemm(torch: Any, rng: np.random.Generator) -> Case:
    n = 512
    a, b = torch.rand(n * n, device="cuda"), torch.rand(n * n, device="cuda")
    c0 = torch.rand(n * n, device="cuda")
    c = c0.clone()

    def body(s: Side) -> None:
        s.launch("gemm_kernel", (n // 32, n // 8), (32, 8), (a, b, c))
    return Case("NI = NJ = NK = 512", body, restore((c, c0)), lambda: [c], compare=close_to_max(1e-5),
                notes=("timed runs keep scaling and accumulating into the same C (same work)",))


def make_polybench_2dconv(torch: Any, rng: np.random.Generator) -> Case:
    n = 4096
    a = torch.rand(n * n, device="cuda")
    b = empty(torch, n * n)

    def body(s: Side) -> None:
        s.launch("convolution2d_kernel", (n // 32, n // 8), (32, 8), (a, b), symbol="Convolution2D_kernel")
    return Case("NI = NJ = 4096", body, poisoner(b), lambda: [b], rtol=1e-5, atol=1e-6)


def make_polybench_3dconv(torch: Any, rng: np.random.Generator) -> Case:
    n = 256
    a = torch.rand(n ** 3, device="cuda")
    b = empty(torch, n ** 3)

    def body(s: Side) -> None:
        for i in range(1, n - 1):
            s.launch("convolution3d_kernel", (n // 32, n // 8), (32, 8), (a, b, i32(i)), symbol="convolution3D_kernel")
    return Case("NI = NJ = NK = 256 (254 launches)", body, poisoner(b), lambda: [b], rtol=1e-5, atol=1e-5)


def make_polybench_gesummv(torch: Any, rng: np.random.Generator) -> Case:
    n = 4096
    a, b = torch.rand(n * n, device="cuda"), torch.rand(n * n, device="cuda")
    x = torch.rand(n, device="cuda")
    y, tmp = torch.zeros(n, device="cuda"), torch.zeros(n, device="cuda")

    def body(s: Side) -> None:
        s.launch("gesummv_kernel", cdiv(n, 256), 256, (a, b, x, y, tmp))

    def reset() -> None:
        y.zero_()
        tmp.zero_()
    return Case("N = 4096", body, reset, lambda: [y, tmp], compare=close_to_max(1e-5))


def make_polybench_mvt(torch: Any, rng: np.random.Generator) -> Case:
    n = 4096
    a = torch.rand(n * n, device="cuda")
    y1, y2 = torch.rand(n, device="cuda"), torch.rand(n, device="cuda")
    x1, x2 = torch.zeros(n, device="cuda"), torch.zeros(n, device="cuda")

    def body(s: Side) -> None:
        s.launch("mvt_kernel1", cdiv(n, 256), 256, (a, x1, y1))
        s.launch("mvt_kernel2", cdiv(n, 256), 256, (a, x2, y2))

    def reset() -> None:
        x1.zero_()
        x2.zero_()
    return Case("N = 4096", body, reset, lambda: [x1, x2], compare=close_to_max(1e-5))


def make_polybench_syrk(torch: Any, rng: np.random.Generator) -> Case:
    n = 1024
    a = torch.rand(n * n, device="cuda")
    c0 = torch.rand(n * n, device="cuda")
    c = c0.clone()

    def body(s: Side) -> None:
        s.launch("syrk_kernel", (n // 32, n // 8), (32, 8), (f32(32412.0), f32(2123.0), a, c))
    return Case("N = M = 1024", body, restore((c, c0)), lambda: [c], compare=close_to_max(1e-5),
                notes=("timed runs keep scaling and accumulating into the same C (same work)",))


def make_polybench_fdtd2d(torch: Any, rng: np.random.Generator) -> Case:
    nx = ny = 2048
    tmax = 20
    fict = torch.arange(tmax, dtype=torch.float32, device="cuda")
    saved = [torch.rand(nx * (ny + 1), device="cuda"), torch.rand((nx + 1) * ny, device="cuda"),
             torch.rand(nx * ny, device="cuda")]
    ex, ey, hz = (t.clone() for t in saved)
    grid = (cdiv(ny, 32), cdiv(nx, 8))

    def body(s: Side) -> None:
        for t in range(tmax):
            s.launch("fdtd_step1_kernel", grid, (32, 8), (fict, ex, ey, hz, i32(t)))
            s.launch("fdtd_step2_kernel", grid, (32, 8), (ex, ey, hz, i32(t)))
            s.launch("fdtd_step3_kernel", grid, (32, 8), (ex, ey, hz, i32(t)))
    return Case("NX = NY = 2048, 20 steps (60 launches; PolyBench: 500 steps)", body,
                restore((ex, saved[0]), (ey, saved[1]), (hz, saved[2])), lambda: [ex, ey, hz], compare=close_to_max(1e-5))


def make_polybench_jacobi2d(torch: Any, rng: np.random.Generator) -> Case:
    n, steps = 4096, 20
    a0 = torch.rand(n * n, device="cuda")
    a, b = a0.clone(), torch.zeros(n * n, device="cuda")
    grid = (cdiv(n, 32), cdiv(n, 8))

    def body(s: Side) -> None:
        for _ in range(steps):
            s.launch("run_jacobi_kernel1", grid, (32, 8), (i32(n), a, b), symbol="runJacobiCUDA_kernel1")
            s.launch("run_jacobi_kernel2", grid, (32, 8), (i32(n), a, b), symbol="runJacobiCUDA_kernel2")

    def reset() -> None:
        a.copy_(a0)
        b.zero_()
    return Case("N = 4096, 20 steps (PolyBench: N = 1000)", body, reset, lambda: [a, b], rtol=1e-5, atol=1e-6)


def make_rodinia_nn(torch: Any, rng: np.random.Generator) -> Case:
    n = 1 << 24
    loc = torch.rand(2 * n, device="cuda") * 180 - 90
    dist = empty(torch, n)
    grid = (4096, cdiv(cdiv(n, 256), 4096))

    def body(s: Side) -> None:
        s.launch("euclid", grid, 256, (loc, dist, i32(n), f32(30.0), f32(90.0)))
    return Case("2^24 records (Rodinia's: 42764)", body, poisoner(dist), lambda: [dist], rtol=1e-6, atol=1e-5)


def make_aten_upsample_nearest2d(torch: Any, rng: np.random.Generator) -> Case:
    nc, h1, w1, h2, w2 = 1024, 256, 256, 512, 512
    x = torch.randn(nc * h1 * w1, device="cuda")
    out = empty(torch, nc * h2 * w2)
    grid = (cdiv(w2, 32), cdiv(h2, 8), cdiv(nc, 4))

    def body(s: Side) -> None:
        if cuda(s):
            s.launch("upsample_nearest2d_out_frame", grid, (32, 8, 4),
                     (x, out, u64(nc), u64(h1), u64(w1), u64(h2), u64(w2), f32(h1 / h2), f32(w1 / w2)),
                     symbol="_Z28upsample_nearest2d_out_frameIfEvPKT_PS0_mmmmmff")
        else:
            s.launch("upsample_nearest2d_out_frame", grid, (32, 8, 4),
                     (x, out, i64(nc), i64(h1), i64(w1), i64(h2), i64(w2), f32(h1 / h2), f32(w1 / w2)))
    return Case("N*C = 1024 planes, 256 x 256 to 512 x 512 f32", body, poisoner(out), lambda: [out], rtol=0, atol=0)


def make_aten_im2col(torch: Any, rng: np.random.Generator) -> Case:
    ch, h, w, k, pad, stride, dil = 64, 128, 128, 3, 1, 1, 1
    hc = (h + 2 * pad - (dil * (k - 1) + 1)) // stride + 1
    wc = (w + 2 * pad - (dil * (k - 1) + 1)) // stride + 1
    n = ch * hc * wc
    im = torch.randn(ch * h * w, device="cuda")
    col = empty(torch, ch * k * k * hc * wc)
    args = (i64(n), im, i64(h), i64(w), i64(k), i64(k), i64(pad), i64(pad), i64(stride), i64(stride), i64(dil),
            i64(dil), i64(hc), i64(wc), col)

    def body(s: Side) -> None:
        s.launch("im2col_kernel", cdiv(n, 1024), 1024, args, symbol="_Z13im2col_kernelIfEvlPKT_llllllllllllPS0_")
    return Case("64 channels of 128 x 128, 3 x 3, pad 1", body, poisoner(col), lambda: [col], rtol=0, atol=0)


def _new(name: str, source: str, make: Any, llmc: bool = False) -> Spec:
    return Spec(name=name, source=source, origin="new", make=make, nvcc_flags=LLMC_FLAGS if llmc else (),
                fast_math=llmc)


NEW_CORPUS: tuple[Spec, ...] = (
    _new("llmc_encoder_forward", "llm.c dev/cuda/encoder_forward.cu (encoder_forward_kernel2)",
         make_llmc_encoder_forward, llmc=True),
    _new("llmc_residual_forward", "llm.c dev/cuda/residual_forward.cu (residual_forward_kernel1)",
         make_llmc_residual_forward, llmc=True),
    _new("llmc_gelu_forward", "llm.c dev/cuda/gelu_forward.cu (gelu_forward_kernel1)", make_llmc_gelu_forward,
         llmc=True),
    _new("llmc_gelu_backward", "llm.c dev/cuda/gelu_backward.cu (gelu_backward1)", make_llmc_gelu_backward, llmc=True),
    _new("llmc_permute", "llm.c dev/cuda/attention_forward.cu (permute_kernel)", make_llmc_permute, llmc=True),
    _new("llmc_unpermute", "llm.c dev/cuda/attention_forward.cu (unpermute_kernel)", make_llmc_unpermute, llmc=True),
    _new("llmc_adamw", "llm.c dev/cuda/adamw.cu (adamw_kernel2)", make_llmc_adamw, llmc=True),
    _new("llmc_layernorm_forward", "llm.c dev/cuda/layernorm_forward.cu (layernorm_forward_kernel3)",
         make_llmc_layernorm_forward, llmc=True),
    _new("vector_add", "cuda-samples vectorAdd", make_vector_add),
    _new("transpose_naive", "cuda-samples transpose (transposeNaive)", make_transpose_naive),
    _new("polybench_gemm", "PolyBench-GPU 1.0 CUDA/GEMM/gemm.cu", make_polybench_gemm),
    _new("polybench_2dconv", "PolyBench-GPU 1.0 CUDA/2DCONV/2DConvolution.cu", make_polybench_2dconv),
    _new("polybench_3dconv", "PolyBench-GPU 1.0 CUDA/3DCONV/3DConvolution.cu", make_polybench_3dconv),
    _new("polybench_gesummv", "PolyBench-GPU 1.0 CUDA/GESUMMV/gesummv.cu", make_polybench_gesummv),
    _new("polybench_mvt", "PolyBench-GPU 1.0 CUDA/MVT/mvt.cu", make_polybench_mvt),
    _new("polybench_syrk", "PolyBench-GPU 1.0 CUDA/SYRK/syrk.cu", make_polybench_syrk),
    _new("polybench_fdtd2d", "PolyBench-GPU 1.0 CUDA/FDTD-2D/fdtd2d.cu", make_polybench_fdtd2d),
    _new("polybench_jacobi2d", "PolyBench-GPU 1.0 CUDA/JACOBI2D/jacobi2D.cu", make_polybench_jacobi2d),
    _new("rodinia_nn", "Rodinia 3.1 cuda/nn/nn_cuda.cu (euclid)", make_rodinia_nn),
    _new("aten_upsample_nearest2d", "PyTorch ATen UpSampleNearest2d.cu (upsample_nearest2d_out_frame)",
         make_aten_upsample_nearest2d),
    _new("aten_im2col", "PyTorch ATen im2col.cuh (im2col_kernel)", make_aten_im2col),
)
