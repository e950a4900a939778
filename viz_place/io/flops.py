"""FLOPs of an operator from its type and tensor shapes (ONNX op names).

A multiply-add counts as 2 FLOPs. Rules (``out`` = elements of the first output):

==============================================  ==========================================
Conv                                            2 * out * (C_in / group) * prod(kernel) (+ out with bias)
ConvTranspose                                   2 * in * (C_out / group) * prod(kernel) (+ out with bias)
Gemm, MatMul (and torch's Linear)               2 * out * K (+ out with a bias / ``C``)
MaxPool, AveragePool, LpPool                    out * prod(kernel_shape)
GlobalAveragePool, GlobalMaxPool, reductions    elements of the input
BatchNormalization                              2 * out (scale and shift, inference)
LayerNorm, InstanceNorm, GroupNorm              5 * out
LRN                                             out * (2 * size + 3)
Softmax, LogSoftmax                             5 * out (max, subtract, exp, sum, divide)
Attention (Q B,H,S,E; K, V B,H,T,E|Ev)          2*B*H*S*T*(E + Ev) + 5*B*H*S*T (softmax)
MultiheadAttention (torch module, one op)       projections + Attention + output projection, biases
LSTM, GRU, RNN (G = 4, 3, 1 gates)              dirs * seq * batch * (2*G*H*(I + H) + 2*G*H + c*H), c = 24, 17, 4
Einsum (explicit ``->``, no ``...``)            2 * product of every index's size (1x without a contraction)
element-wise (Add, Relu, ...)                   out per input beyond the first (n-ary), 1 for unary
transcendental (Sigmoid, Tanh, Exp, Erf, ...)   4 * out
data movement (Concat, Transpose, Slice, ...)   0 (their bytes still cost time)
views (Reshape, Flatten, Squeeze, ...)          0 (and no time: see ``roofline.VIEW_OPS``)
==============================================  ==========================================

Any other op type gets an *estimate* of 1 FLOP per output element, and the
caller must report it (:func:`op_flops` returns ``estimated=True``).

>>> op_flops("Conv", [(1, 3, 224, 224), (64, 3, 7, 7), (64,)], [(1, 64, 112, 112)], {})
(236830720.0, False)
>>> op_flops("MyCustomOp", [(2, 3)], [(2, 3)], {})
(6.0, True)
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

from ..model.roofline import VIEW_OPS as VIEW

Shape = tuple[int, ...]

UNARY = frozenset({"Relu", "LeakyRelu", "PRelu", "Neg", "Abs", "Clip", "Sqrt", "Reciprocal", "Floor", "Ceil",
                   "Round", "Sign", "Not", "ThresholdedRelu", "Relu6", "Hardtanh", "CumSum"})
TRANSCENDENTAL = frozenset({"Sigmoid", "Tanh", "Exp", "Log", "Erf", "Gelu", "Softplus", "Softsign", "HardSigmoid",
                            "HardSwish", "Elu", "Selu", "Celu", "Mish", "Silu", "Sin", "Cos", "Pow", "Rsqrt"})
BINARY = frozenset({"Add", "Sub", "Mul", "Div", "Max", "Min", "Sum", "Mean", "Equal", "Greater", "Less",
                    "GreaterOrEqual", "LessOrEqual", "And", "Or", "Xor", "Where", "Mod", "BitShift"})
REDUCE = frozenset({"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
                    "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare", "ArgMax", "ArgMin",
                    "GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"})
POOL = frozenset({"MaxPool", "AveragePool", "LpPool"})
NORM5 = frozenset({"LayerNormalization", "InstanceNormalization", "GroupNormalization", "MeanVarianceNormalization"})
MOVE = frozenset({"Concat", "Split", "Slice", "Transpose", "Gather", "GatherElements", "GatherND", "Pad", "Tile",
                  "Expand", "Cast", "CastLike", "DepthToSpace", "SpaceToDepth", "ScatterElements", "ScatterND",
                  "Resize", "Upsample", "Shape", "Size", "Constant", "ConstantOfShape", "Range", "NonZero",
                  "TopK", "OneHot", "Trilu", "ReverseSequence"})

#: Every op type with a rule (anything else is estimated).
KNOWN_OPS = (UNARY | TRANSCENDENTAL | BINARY | REDUCE | POOL | NORM5 | MOVE | VIEW
             | {"Conv", "ConvTranspose", "Gemm", "MatMul", "BatchNormalization", "LRN", "Softmax", "LogSoftmax",
                "Attention", "MultiheadAttention", "LSTM", "GRU", "RNN", "Einsum"})


def numel(shape: Sequence[int] | None) -> int:
    """Elements of a tensor of ``shape`` (a scalar has 1)."""
    return 0 if shape is None else math.prod(int(d) for d in shape)


def op_flops(op_type: str, inputs: Sequence[Shape | None], outputs: Sequence[Shape],
             attrs: Mapping[str, Any]) -> tuple[float, bool]:
    """``(flops, estimated)`` for one op; shapes include weights (absent optional
    inputs are ``None``). ``estimated`` is True when ``op_type`` has no rule."""
    out = numel(outputs[0]) if outputs else 0
    has = lambda i: len(inputs) > i and inputs[i] is not None  # noqa: E731
    if op_type == "Conv":
        w = inputs[1]
        return float(2 * out * numel(w[1:]) + (out if has(2) else 0)), False
    if op_type == "ConvTranspose":
        w = inputs[1]
        return float(2 * numel(inputs[0]) * numel(w[1:]) + (out if has(2) else 0)), False
    if op_type == "Gemm":
        a = inputs[0]
        k = a[0] if attrs.get("transA", 0) else a[-1]
        return float(2 * out * k + (out if has(2) else 0)), False
    if op_type == "MatMul":
        k = inputs[0][-1]
        return float(2 * out * k), False
    if op_type == "Attention":
        q, k, v = inputs[0], inputs[1], inputs[2]
        t = k[-2]
        if len(q) == 4:
            b, h, s, e = q
            return float(2 * b * h * s * t * (e + v[-1]) + 5 * b * h * s * t), False
        heads = int(attrs.get("q_num_heads", 1))
        b, s, he = q
        return float(2 * b * s * t * (he + v[-1]) + 5 * b * heads * s * t), False
    if op_type == "MultiheadAttention":  # torch.nn.MultiheadAttention as one op (torch.fx import)
        return _mha_flops(inputs, attrs), False
    if op_type in _RNN_GATES:
        return _rnn_flops(op_type, inputs, attrs), False
    if op_type == "Einsum":
        flops = _einsum_flops(str(attrs.get("equation", "")), inputs)
        return (float(out), True) if flops is None else (flops, False)
    if op_type in POOL:
        kernel = attrs.get("kernel_shape") or ()
        return float(out * max(1, numel(kernel))), False
    if op_type in REDUCE:
        return float(numel(inputs[0])), False
    if op_type == "BatchNormalization":
        return float(2 * out), False
    if op_type in NORM5:
        return float(5 * out), False
    if op_type == "LRN":
        return float(out * (2 * int(attrs.get("size", 5)) + 3)), False
    if op_type in ("Softmax", "LogSoftmax"):
        return float(5 * out), False
    if op_type in TRANSCENDENTAL:
        return float(4 * out), False
    if op_type in UNARY:
        return float(out), False
    if op_type in BINARY:
        n_in = sum(1 for s in inputs if s is not None)
        return float(out * max(1, n_in - 1)), False
    if op_type in MOVE or op_type in VIEW:
        return 0.0, False
    return float(out), True


def _mha_flops(inputs: Sequence[Shape | None], attrs: Mapping[str, Any]) -> float:
    q, k, v = inputs[0], inputs[1], inputs[2]
    batch_first = bool(attrs.get("batch_first", False))
    if len(q) == 2:  # unbatched (S, E)
        b, s, t = 1, q[0], k[0]
    elif batch_first:
        b, s, t = q[0], q[1], k[1]
    else:
        b, s, t = q[1], q[0], k[0]
    e, kdim, vdim, heads = q[-1], k[-1], v[-1], int(attrs.get("num_heads", 1))
    projections = 2 * b * (s * e * e + t * kdim * e + t * vdim * e + s * e * e) + b * (2 * s * e + 2 * t * e)
    return float(projections + 2 * 2 * b * s * t * e + 5 * b * heads * s * t)


#: Gates and element-wise FLOPs per hidden unit and step (sigmoid/tanh = 4) of recurrent ops.
_RNN_GATES = {"LSTM": (4, 24), "GRU": (3, 17), "RNN": (1, 4)}


def _rnn_flops(op_type: str, inputs: Sequence[Shape | None], attrs: Mapping[str, Any]) -> float:
    x = inputs[0]
    gates, elementwise = _RNN_GATES[op_type]
    if len(x) == 2:  # unbatched (seq, input), torch only
        x = (x[0], 1, x[1])
    seq, batch = (x[1], x[0]) if attrs.get("layout", 0) else (x[0], x[1])
    if "torch_layers" in attrs:  # a torch nn.LSTM/GRU/RNN module: every layer, biases always there if bias=True
        dirs, bias = attrs["directions"], 2 * gates if attrs.get("bias", True) else 0
        return float(sum(dirs * seq * batch * (2 * gates * h * (i + h) + bias * h + elementwise * h)
                         for i, h in attrs["torch_layers"]))
    w = inputs[1]
    dirs, hidden, size_in = w[0], w[1] // gates, w[2]
    bias = 2 * gates * hidden if len(inputs) > 3 and inputs[3] is not None else 0
    return float(dirs * seq * batch * (2 * gates * hidden * (size_in + hidden) + bias + elementwise * hidden))


def _einsum_flops(equation: str, inputs: Sequence[Shape | None]) -> float | None:
    """2 x the product of all index sizes for a contraction (1x for a pure product or
    transpose); ``None`` (estimate) for implicit output or ``...`` broadcasting."""
    eq = equation.replace(" ", "")
    if "->" not in eq or "..." in eq:
        return None
    lhs, rhs = eq.split("->")
    terms = lhs.split(",")
    if len(terms) != len(inputs) or any(s is None or len(s) != len(t) for s, t in zip(inputs, terms)):
        return None
    sizes: dict[str, int] = {}
    for term, shape in zip(terms, inputs):
        for letter, dim in zip(term, shape):
            sizes[letter] = max(sizes.get(letter, 1), int(dim))
    total = math.prod(sizes.values())
    contracted = set(sizes) - set(rhs)
    return float((2 if contracted and len(terms) > 1 else 1) * total)
