"""The LLTM cell as two PyTorch operators (forward and backward) made of oxide kernels and
PyTorch matmuls, declared with ``oxide.torch.op``; the ``LLTM`` module; the pure-PyTorch cell
that ``tests/test_lltm_gpu.py`` and ``benchmarks/lltm.py`` compare them with.

    import torch
    from examples.lltm.lltm import LLTM
    cell = LLTM(input_features=32, state_size=128).cuda()
    new_h, new_cell = cell(x, (h, c))          # autograd works; so does torch.compile
"""
from __future__ import annotations

import math

import torch

import oxide.torch as oxt
from examples.lltm import kernels

__all__ = ["lltm_forward", "lltm_backward", "lltm_reference", "LLTM", "BLOCK"]

BLOCK = (128, 2)  # threads per block along (state, batch)


def _grid(batch: int, state: int) -> tuple[int, int]:
    return (-(-state // BLOCK[0]), -(-batch // BLOCK[1]))


def _gate_blocks(gates: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """The input, output and candidate-cell column blocks of ``[batch, 3 * state]`` gates
    (strided views; one ``chunk`` costs less host time than three slices)."""
    return gates.chunk(3, dim=1)


def _backward(ctx, grad_h, grad_cell, *unused):  # type: ignore[no-untyped-def]
    input, weights, bias, old_h, old_cell = ctx.inputs
    new_h, new_cell, input_gate, output_gate, candidate_cell, X, gates = ctx.outputs
    d_old_h, d_input, d_weights, d_bias, d_old_cell = lltm_backward(
        grad_h.contiguous(), grad_cell.contiguous(), new_cell, input_gate, output_gate, candidate_cell, X, gates,
        weights)
    return d_input, d_weights, d_bias, d_old_h, d_old_cell


_like_cell = oxt.Out(like="old_cell")


@oxt.op(
    "oxide_lltm::forward",
    outputs={
        "new_h": _like_cell, "new_cell": _like_cell, "input_gate": _like_cell, "output_gate": _like_cell,
        "candidate_cell": _like_cell,
        # made by torch.cat and torch.addmm, as in the C++ extension: no allocation and out= of ours
        "X": oxt.Out(like="input", shape=lambda input, old_h: (input.shape[0], old_h.shape[1] + input.shape[1]),
                     returned=True),
        "gates": oxt.Out(like="input", shape=lambda input, weights: (input.shape[0], weights.shape[0]), returned=True),
    },
    backward=_backward,
)
def lltm_forward(input: torch.Tensor, weights: torch.Tensor, bias: torch.Tensor, old_h: torch.Tensor,
                 old_cell: torch.Tensor, new_h: torch.Tensor, new_cell: torch.Tensor, input_gate: torch.Tensor,
                 output_gate: torch.Tensor, candidate_cell: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    X = torch.cat([old_h, input], dim=1)
    gates = torch.addmm(bias, X, weights.t())
    batch, state = old_cell.shape
    kernels.lltm_forward[_grid(batch, state), BLOCK](
        *_gate_blocks(gates), old_cell, new_h, new_cell, input_gate, output_gate, candidate_cell)
    return X, gates


@oxt.op(
    "oxide_lltm::backward",
    outputs={
        "d_old_h": oxt.Out(like="new_cell"),
        "d_input": oxt.Out(like="X", shape=lambda X, new_cell: (X.shape[0], X.shape[1] - new_cell.shape[1])),
        "d_weights": oxt.Out(like="weights"),
        "d_bias": oxt.Out(like="gates", shape=lambda gates: (gates.shape[1],)),
        "d_old_cell": oxt.Out(like="new_cell"),
    },
)
def lltm_backward(grad_h: torch.Tensor, grad_cell: torch.Tensor, new_cell: torch.Tensor, input_gate: torch.Tensor,
                  output_gate: torch.Tensor, candidate_cell: torch.Tensor, X: torch.Tensor, gates: torch.Tensor,
                  weights: torch.Tensor, d_old_h: torch.Tensor, d_input: torch.Tensor, d_weights: torch.Tensor,
                  d_bias: torch.Tensor, d_old_cell: torch.Tensor) -> None:
    batch, state = new_cell.shape
    d_gates = torch.empty_like(gates)
    kernels.lltm_backward[_grid(batch, state), BLOCK](
        grad_h, grad_cell, new_cell, input_gate, output_gate, candidate_cell, *_gate_blocks(gates),
        d_old_cell, *_gate_blocks(d_gates))
    torch.mm(d_gates.t(), X, out=d_weights)
    torch.sum(d_gates, dim=0, out=d_bias)
    # d_X = d_gates @ weights, split into the old state's and the input's columns: two matmuls
    # into the outputs, as an op's outputs cannot be views of one tensor
    torch.mm(d_gates, weights[:, :state], out=d_old_h)
    torch.mm(d_gates, weights[:, state:], out=d_input)


def lltm_reference(input: torch.Tensor, weights: torch.Tensor, bias: torch.Tensor, old_h: torch.Tensor,
                   old_cell: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The LLTM cell in plain PyTorch (autograd computes its backward)."""
    X = torch.cat([old_h, input], dim=1)
    gate_weights = torch.nn.functional.linear(X, weights, bias)
    gates = gate_weights.chunk(3, dim=1)
    input_gate = torch.sigmoid(gates[0])
    output_gate = torch.sigmoid(gates[1])
    candidate_cell = torch.nn.functional.elu(gates[2])
    new_cell = old_cell + candidate_cell * input_gate
    new_h = torch.tanh(new_cell) * output_gate
    return new_h, new_cell


class LLTM(torch.nn.Module):
    """An LLTM cell: ``forward(input, (h, c)) -> (new_h, new_cell)``."""

    def __init__(self, input_features: int, state_size: int) -> None:
        super().__init__()
        self.input_features = input_features
        self.state_size = state_size
        self.weights = torch.nn.Parameter(torch.empty(3 * state_size, input_features + state_size))
        self.bias = torch.nn.Parameter(torch.empty(3 * state_size))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.state_size)
        for weight in self.parameters():
            weight.data.uniform_(-stdv, +stdv)

    def forward(self, input: torch.Tensor, state: tuple[torch.Tensor, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        outputs = lltm_forward(input, self.weights, self.bias, *state)
        return outputs[0], outputs[1]
