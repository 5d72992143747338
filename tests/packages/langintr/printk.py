"""A kernel that prints (tests/test_lang_intrinsics_gpu.py runs it in a subprocess and reads
its stdout): every form print() takes in a kernel."""
import oxide as ox
from oxide import Slice, f32, i32, thread, u32, u64


@ox.kernel
def show(x: Slice[f32], n: Slice[i32], u: Slice[u64]) -> None:
    i = thread.index_1d()
    if i < len(x) and i < len(n) and i < len(u):
        print("row", i, n[i], u[i], n[i] > 0)
        print(f"fmt {i}: x={x[i]:.3f} n={n[i]:>6d}|{n[i]:<6d}|{u32(n[i]):08x}|{u[i]:#x}|{x[i]:+.4e}|{n[i]:.2f} 100%",
              end="!\n")
        print("g", i, x[i], sep=",")
