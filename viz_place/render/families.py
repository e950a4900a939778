"""Op families (what kind of work an op does) and the glyph each is drawn with.

>>> op_family("Conv"), op_family("addmm"), op_family("LayerNormalization"), op_family("Relu")
('conv', 'matmul', 'normalisation', 'activation')
>>> op_family("Add"), op_family("Reshape"), op_family("MaxPool")
('element-wise', 'data movement', 'other')
"""
from __future__ import annotations

#: family -> Bokeh marker, in legend order.
FAMILY_MARKERS = {
    "conv": "square",
    "matmul": "diamond",
    "normalisation": "hex",
    "activation": "triangle",
    "element-wise": "circle",
    "data movement": "inverted_triangle",
    "other": "star",
}

_RULES = (
    ("normalisation", ("norm", "lrn")),
    ("conv", ("conv",)),
    ("matmul", ("matmul", "gemm", "addmm", "linear", "einsum", "bmm", "baddbmm", "mm")),
    ("activation", ("relu", "gelu", "sigmoid", "tanh", "softmax", "silu", "swish", "elu", "clip", "softplus",
                    "mish", "hardtanh", "selu", "prelu", "erf")),
    ("data movement", ("reshape", "transpose", "concat", "cat", "split", "gather", "slice", "flatten", "view",
                       "permute", "squeeze", "unsqueeze", "expand", "pad", "embedding", "alias", "identity",
                       "cast", "to", "copy", "chunk", "shape", "tile", "repeat", "scatter", "contiguous",
                       "select", "index", "stack", "narrow", "unflatten", "getitem", "input", "output")),
    ("element-wise", ("add", "sub", "mul", "div", "pow", "sqrt", "rsqrt", "exp", "log", "neg", "abs", "sum", "where",
                      "dropout", "max", "min", "mean", "reciprocal", "sin", "cos", "floor", "ceil", "equal",
                      "greater", "less", "not", "and", "or", "masked_fill", "fill", "scale", "bias")),
)


def op_family(op_type: str) -> str:
    """The family of an op type (case-insensitive, by name; ``"other"`` when unknown)."""
    t = (op_type or "").lower().strip("_")
    for fam, keys in _RULES:
        for k in keys:
            if t == k or (len(k) > 3 and k in t) or (k in ("mm", "to", "cat") and t == k):
                return fam
    if "pool" in t:
        return "other"
    return "other"
