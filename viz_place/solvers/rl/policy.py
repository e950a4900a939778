"""The policy network: a small MLP that scores each candidate device, in plain numpy.

One input row per candidate device (``[group embedding, group state, device
features]``, see :mod:`.env`); the network maps each row to a logit and a
softmax over the candidates gives the action probabilities. Scoring rows one
device at a time is what lets one policy serve any number of devices.

Forward and backward passes are written by hand (tanh hidden layers, linear
output); a finite-difference test checks the gradients. Policies save to and
load from ``.npz`` (no pickle).

>>> import numpy as np
>>> pol = Policy.new(in_dim=4, hidden=(8,), seed=0)
>>> x = np.ones((3, 4))
>>> p = pol.probs(x)
>>> p.shape, round(float(p.sum()), 6)
((3,), 1.0)
"""
from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import SolverError
from .env import IN_DIM
from .features import BASE_NAMES

#: Bumped whenever the meaning of an input column changes; saved policies must match.
FEATURE_VERSION = 2
SHIPPED_POLICY = "rl_policy.npz"


def shipped_policy_path() -> Path:
    """The policy shipped with the package: package data ``viz_place/data/rl_policy.npz``
    (found through :mod:`importlib.resources`, so it works from an installed wheel)."""
    return Path(str(resources.files("viz_place").joinpath("data", SHIPPED_POLICY)))


def shipped_policy() -> "Policy":
    """The shipped policy (package data, read through :mod:`importlib.resources`).

    >>> shipped_policy().in_dim == IN_DIM
    True
    """
    resource = resources.files("viz_place").joinpath("data", SHIPPED_POLICY)
    if not resource.is_file():
        raise SolverError(f"the shipped policy {SHIPPED_POLICY!r} is missing from the installed package; pass "
                          "--policy FILE or train one with `viz-place train-rl`")
    with resources.as_file(resource) as path:
        return Policy.load(path)


class Policy:
    """An MLP ``row -> logit`` with tanh hidden layers and input standardisation.

    ``params`` is the flat list ``[W0, b0, W1, b1, ...]`` (updated in place by
    :class:`Adam`); ``x_mean``/``x_std`` standardise the input columns.
    """

    def __init__(self, params: list[np.ndarray], x_mean: np.ndarray, x_std: np.ndarray,
                 meta: dict[str, Any] | None = None) -> None:
        self.params = [np.array(p, dtype=float) for p in params]
        self.x_mean = np.asarray(x_mean, dtype=float)
        self.x_std = np.asarray(x_std, dtype=float)
        self.meta = dict(meta or {})

    @classmethod
    def new(cls, in_dim: int = IN_DIM, hidden: tuple[int, ...] = (32, 32), seed: int = 0) -> "Policy":
        """Random initial weights (Glorot-scaled normals, last layer near zero), seeded."""
        rng = np.random.default_rng(seed)
        params: list[np.ndarray] = []
        dims = [in_dim, *hidden, 1]
        for li, (a, b) in enumerate(zip(dims[:-1], dims[1:])):
            scale = np.sqrt(1.0 / a) * (0.1 if li == len(dims) - 2 else 1.0)
            params.append(rng.normal(0.0, scale, size=(a, b)))
            params.append(np.zeros(b))
        return cls(params, np.zeros(in_dim), np.ones(in_dim),
                   {"in_dim": in_dim, "hidden": list(hidden), "feature_version": FEATURE_VERSION})

    @property
    def in_dim(self) -> int:
        return self.params[0].shape[0]

    def copy(self) -> "Policy":
        return Policy([p.copy() for p in self.params], self.x_mean.copy(), self.x_std.copy(), dict(self.meta))

    # --- forward / backward -----------------------------------------------------
    def _forward(self, x: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
        h = (x - self.x_mean) / self.x_std
        acts = [h]
        n_layers = len(self.params) // 2
        for li in range(n_layers):
            W, b = self.params[2 * li], self.params[2 * li + 1]
            h = h @ W + b
            if li < n_layers - 1:
                h = np.tanh(h)
            acts.append(h)
        return h[:, 0], acts

    def logits(self, x: np.ndarray) -> np.ndarray:
        """One logit per row of ``x``."""
        return self._forward(x)[0]

    def probs(self, x: np.ndarray, temperature: float = 1.0) -> np.ndarray:
        """Softmax of the logits (divided by ``temperature``) over the rows of ``x``."""
        return softmax(self.logits(x) / temperature)

    def backward(self, x: np.ndarray, dz: np.ndarray) -> list[np.ndarray]:
        """Gradients of ``sum(dz * logits(x))`` with respect to :attr:`params`."""
        _, acts = self._forward(x)
        grads: list[np.ndarray] = [None] * len(self.params)  # type: ignore[list-item]
        n_layers = len(self.params) // 2
        delta = dz[:, None]
        for li in range(n_layers - 1, -1, -1):
            a_in = acts[li]
            grads[2 * li] = a_in.T @ delta
            grads[2 * li + 1] = delta.sum(axis=0)
            if li > 0:
                delta = (delta @ self.params[2 * li].T) * (1.0 - acts[li] ** 2)
        return grads

    # --- persistence ---------------------------------------------------------------
    def save(self, path: str | Path) -> Path:
        """Write the policy to ``path`` (``.npz``); returns the path written."""
        path = Path(path)
        arrays = {f"p{i}": p for i, p in enumerate(self.params)}
        meta = {**self.meta, "in_dim": self.in_dim, "feature_version": FEATURE_VERSION,
                "n_params": len(self.params), "base_features": list(BASE_NAMES)}
        arrays["x_mean"], arrays["x_std"] = self.x_mean, self.x_std
        arrays["meta"] = np.array(json.dumps(meta))
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as fh:
            np.savez(fh, **arrays)
        return path

    @classmethod
    def load(cls, path: str | Path) -> "Policy":
        """Read a policy written by :meth:`save`; a clear :class:`SolverError` if it does not fit."""
        path = Path(path)
        if not path.is_file():
            raise SolverError(f"policy file {str(path)!r} does not exist")
        try:
            with np.load(path, allow_pickle=False) as data:
                meta = json.loads(str(data["meta"]))
                params = [data[f"p{i}"] for i in range(int(meta["n_params"]))]
                x_mean, x_std = data["x_mean"], data["x_std"]
        except (KeyError, ValueError, OSError, json.JSONDecodeError) as err:
            raise SolverError(f"policy file {str(path)!r} is not a viz_place policy: {err}") from None
        if meta.get("feature_version") != FEATURE_VERSION or params[0].shape[0] != IN_DIM:
            raise SolverError(f"policy file {str(path)!r} was made for feature version {meta.get('feature_version')} "
                              f"with {params[0].shape[0]} inputs; this version uses version {FEATURE_VERSION} "
                              f"with {IN_DIM} inputs — retrain it with `viz-place train-rl`")
        return cls(params, x_mean, x_std, meta)


def load_policy(path: str | Path | None = None) -> Policy:
    """The policy at ``path``, or the shipped one when ``path`` is empty (for callers: the solver reads no file)."""
    return Policy.load(path) if path else shipped_policy()


def softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max()
    e = np.exp(z)
    return e / e.sum()


class Adam:
    """Adam on a list of arrays, updated in place.

    >>> p = [np.array([1.0])]
    >>> opt = Adam(p, lr=0.1)
    >>> opt.step([np.array([1.0])]); bool(p[0][0] < 1.0)
    True
    """

    def __init__(self, params: list[np.ndarray], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8) -> None:
        self.params = params
        self.lr = lr
        self.b1, self.b2 = betas
        self.eps = eps
        self.m = [np.zeros_like(p) for p in params]
        self.v = [np.zeros_like(p) for p in params]
        self.t = 0

    def step(self, grads: list[np.ndarray]) -> None:
        self.t += 1
        c1 = 1 - self.b1 ** self.t
        c2 = 1 - self.b2 ** self.t
        for p, g, m, v in zip(self.params, grads, self.m, self.v):
            m *= self.b1
            m += (1 - self.b1) * g
            v *= self.b2
            v += (1 - self.b2) * g * g
            p -= self.lr * (m / c1) / (np.sqrt(v / c2) + self.eps)


def clip_by_norm(grads: list[np.ndarray], max_norm: float) -> float:
    """Scale ``grads`` in place so their global norm is at most ``max_norm``; return the norm before."""
    norm = float(np.sqrt(sum(float((g * g).sum()) for g in grads)))
    if max_norm > 0 and norm > max_norm:
        for g in grads:
            g *= max_norm / norm
    return norm
