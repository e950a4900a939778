"""The explorer opens PyTorch modules and hf: model SPECs."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from viz_place.errors import InputFormatError  # noqa: E402
from viz_place.widgets import PlacementExplorer  # noqa: E402

TINY_GPT2 = {"n_layer": 2, "n_embd": 64, "n_head": 4, "vocab_size": 500, "bos_token_id": 0, "eos_token_id": 0}


def test_explorer_opens_a_module_with_example_inputs():
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    ex = PlacementExplorer(m, (torch.randn(2, 16),), load_bokehjs=False)
    g = ex.state.graph
    assert [n.layer for n in g.nodes()] == ["/0", "/1", "/2"] and g.source["module"] == "Sequential"
    assert set(ex.state.placement.assignment) == set(g.node_ids)


def test_explorer_opens_an_hf_spec_with_overrides_and_solves_it():
    ex = PlacementExplorer("hf:gpt2", overrides=TINY_GPT2, import_options={"seq_len": 8, "granularity": "module"},
                           load_bokehjs=False)
    g = ex.state.graph
    assert g.source["spec"] == "hf:gpt2" and "transformer.h.1" in g.node_ids
    ex.run("dp")
    assert ex.state.placement.solver == "dp"


def test_explorer_errors_are_clear():
    m = torch.nn.Linear(4, 4)
    with pytest.raises(InputFormatError, match="needs example_inputs"):
        PlacementExplorer(m, load_bokehjs=False)
    with pytest.raises(InputFormatError, match="apply to a torch.nn.Module or an hf: model SPEC"):
        PlacementExplorer("chain", overrides={"n_layer": 2}, load_bokehjs=False)
    with pytest.raises(InputFormatError, match="unknown model type"):
        PlacementExplorer("hf:nosuch", load_bokehjs=False)
