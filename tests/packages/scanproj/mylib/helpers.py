raise RuntimeError("helpers must never be imported")

from oxide import f32


def square(x: f32) -> f32:
    return x * x


def unused(x: f32) -> f32:
    return x
