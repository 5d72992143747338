"""The LLTM cell's element-wise forward and backward kernels (the idea of pytorch/extension-cpp's
LLTM, written for oxide). ``gates`` is the ``[batch, 3 * state]`` output of the cell's linear
layer: the input gate, output gate and candidate cell pre-activations side by side. One thread
per (batch row, state column)."""
import oxide as ox
from oxide import DisjointTensor, Tensor, f32, f64, thread

T = ox.TypeVar("T", f32, f64)


def sigmoid(z: T) -> T:
    return 1.0 / (1.0 + ox.math.exp(-z))


def d_sigmoid(z: T) -> T:
    s = sigmoid(z)
    return (1.0 - s) * s


def d_tanh(z: T) -> T:
    t = ox.math.tanh(z)
    return 1.0 - t * t


def elu(z: T) -> T:  # alpha = 1
    return z if z > 0.0 else ox.math.exp(z) - 1.0


def d_elu(z: T) -> T:
    return 1.0 if z > 0.0 else ox.math.exp(z)


@ox.kernel
def lltm_forward(
    gate_i: Tensor[T, 2],
    gate_o: Tensor[T, 2],
    gate_c: Tensor[T, 2],
    old_cell: Tensor[T, 2],
    new_h: DisjointTensor[T, 2],
    new_cell: DisjointTensor[T, 2],
    input_gate: DisjointTensor[T, 2],
    output_gate: DisjointTensor[T, 2],
    candidate_cell: DisjointTensor[T, 2],
) -> None:
    """``gate_i``, ``gate_o``, ``gate_c``: the three ``[batch, state]`` column blocks of the gates
    (strided views of one ``[batch, 3 * state]`` tensor)."""
    # checked at launch (they depend on shapes only); they prove every index below in bounds
    assert gate_i.shape[0] == new_h.shape[0] and gate_i.shape[1] == new_h.shape[1]
    assert gate_o.shape[0] == new_h.shape[0] and gate_o.shape[1] == new_h.shape[1]
    assert gate_c.shape[0] == new_h.shape[0] and gate_c.shape[1] == new_h.shape[1]
    assert old_cell.shape[0] == new_h.shape[0] and old_cell.shape[1] == new_h.shape[1]
    assert new_cell.shape[0] == new_h.shape[0] and new_cell.shape[1] == new_h.shape[1]
    assert input_gate.shape[0] == new_h.shape[0] and input_gate.shape[1] == new_h.shape[1]
    assert output_gate.shape[0] == new_h.shape[0] and output_gate.shape[1] == new_h.shape[1]
    assert candidate_cell.shape[0] == new_h.shape[0] and candidate_cell.shape[1] == new_h.shape[1]
    row, col = thread.index_2d()
    if row < new_h.shape[0] and col < new_h.shape[1]:
        ig = sigmoid(gate_i[row, col])
        og = sigmoid(gate_o[row, col])
        cc = elu(gate_c[row, col])
        nc = old_cell[row, col] + cc * ig
        new_h[row, col] = ox.math.tanh(nc) * og
        new_cell[row, col] = nc
        input_gate[row, col] = ig
        output_gate[row, col] = og
        candidate_cell[row, col] = cc


@ox.kernel
def lltm_backward(
    grad_h: Tensor[T, 2],
    grad_cell: Tensor[T, 2],
    new_cell: Tensor[T, 2],
    input_gate: Tensor[T, 2],
    output_gate: Tensor[T, 2],
    candidate_cell: Tensor[T, 2],
    gate_i: Tensor[T, 2],
    gate_o: Tensor[T, 2],
    gate_c: Tensor[T, 2],
    d_old_cell: DisjointTensor[T, 2],
    d_input_gate: DisjointTensor[T, 2],
    d_output_gate: DisjointTensor[T, 2],
    d_candidate_cell: DisjointTensor[T, 2],
) -> None:
    assert grad_h.shape[0] == d_old_cell.shape[0] and grad_h.shape[1] == d_old_cell.shape[1]
    assert grad_cell.shape[0] == d_old_cell.shape[0] and grad_cell.shape[1] == d_old_cell.shape[1]
    assert new_cell.shape[0] == d_old_cell.shape[0] and new_cell.shape[1] == d_old_cell.shape[1]
    assert input_gate.shape[0] == d_old_cell.shape[0] and input_gate.shape[1] == d_old_cell.shape[1]
    assert output_gate.shape[0] == d_old_cell.shape[0] and output_gate.shape[1] == d_old_cell.shape[1]
    assert candidate_cell.shape[0] == d_old_cell.shape[0] and candidate_cell.shape[1] == d_old_cell.shape[1]
    assert gate_i.shape[0] == d_old_cell.shape[0] and gate_i.shape[1] == d_old_cell.shape[1]
    assert gate_o.shape[0] == d_old_cell.shape[0] and gate_o.shape[1] == d_old_cell.shape[1]
    assert gate_c.shape[0] == d_old_cell.shape[0] and gate_c.shape[1] == d_old_cell.shape[1]
    assert d_input_gate.shape[0] == d_old_cell.shape[0] and d_input_gate.shape[1] == d_old_cell.shape[1]
    assert d_output_gate.shape[0] == d_old_cell.shape[0] and d_output_gate.shape[1] == d_old_cell.shape[1]
    assert d_candidate_cell.shape[0] == d_old_cell.shape[0] and d_candidate_cell.shape[1] == d_old_cell.shape[1]
    row, col = thread.index_2d()
    if row < d_old_cell.shape[0] and col < d_old_cell.shape[1]:
        nc = new_cell[row, col]
        gh = grad_h[row, col]
        d_og = ox.math.tanh(nc) * gh
        d_tanh_nc = output_gate[row, col] * gh
        d_nc = d_tanh(nc) * d_tanh_nc + grad_cell[row, col]
        d_old_cell[row, col] = d_nc
        d_input_gate[row, col] = candidate_cell[row, col] * d_nc * d_sigmoid(gate_i[row, col])
        d_output_gate[row, col] = d_og * d_sigmoid(gate_o[row, col])
        d_candidate_cell[row, col] = input_gate[row, col] * d_nc * d_elu(gate_c[row, col])
