"""Device functions in a module of their own: no kernel here, so no artifacts either; the
kernels that call them are compiled with them."""
from oxide import f32


def axpy(a: f32, x: f32, y: f32) -> f32:
    return a * x + y
