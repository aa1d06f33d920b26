"""What sentence-transformers' AdaptiveLayerLoss trains at its shallower layers, with lwap's poolers and loss.

    python benchmarks/elastic/adaptive_layer_probe.py [--backbone MODEL] [--pairs 32]

Forward passes only, no training: a small model (the packaged all-MiniLM-L6-v2 by default), a batch of
STS-B dev sentence pairs (the sample packaged with lwap), and AdaptiveLayerLoss(model, lwap's SimCSELoss)
with every layer each step (`n_layers_per_step=-1`) and no KL term (`kl_temperature=0`), so that each of
its calls of the inner loss is one depth's term. A recording wrapper keeps what the inner loss sees.

(i) Multi-layer poolers, eval mode (no dropout): for each layer index k that the library's loop visits,
    the largest difference between the anchors' sentence vectors in the layer-k term and in the full-depth
    term. The library hands the pooler layer k's `token_embeddings` but leaves every layer in
    `all_layer_embeddings`, so a pooler reading several layers (lwap, first_last_avg, weighted) gives the
    full-depth vector again: 0. `mean` reads the token embeddings and changes. Beside it, lwap's own depth
    reading (lwap.depth.DepthReader, the pooler on levels 0..k) for the same poolers.
(ii) Unsupervised SimCSE as lwap feeds it (one column, encoded twice for two dropout views), train mode:
    the largest difference between positive and anchor in each term, measured on the layer-k states the
    pooler reads (LWAP's RReLU draws random slopes per call, which would hide the states' equality in its
    output). The library rebuilds each later term from the states its first call cached in the feature
    dicts, and the second view's dict is a copy of the first's (made by the inner loss on each call), so
    at every layer below the last the positive is the anchor: 0. For contrast: the same text as two
    separate columns (the library's documented unsupervised recipe) and lwap's depth loss
    (lwap.train.elastic.DepthElasticLoss).

Writes nothing; prints two Markdown tables. Read it against the installed sentence-transformers'
sentence_transformer/losses/adaptive_layer.py (TransformerDecorator.call_use_cache).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: the repository root on sys.path, as `python -m` would
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

POOLERS = ("mean", "lwap", "first_last_avg", "weighted")


def sample_pairs(count: int) -> tuple[list[str], list[str]]:
    """The first `count` sentence pairs of STS-B dev as packaged with lwap (works offline)."""
    from lwap.checks.files import text_lines
    from lwap.data_sources import sample_folder

    firsts, seconds = [], []
    for _, line in text_lines(sample_folder() / "stsb" / "senteval-tokenized" / "sts-dev.csv.gz"):
        fields = line.split("\t")
        firsts.append(fields[5])
        seconds.append(fields[6])
        if len(firsts) == count:
            break
    return firsts, seconds


class Recorder:
    """Wraps a SimCSELoss's `compute_loss_from_embeddings` to keep each call's embeddings (detached)."""

    def __init__(self, loss: Any) -> None:
        self.calls: list[list[Any]] = []
        inner = loss.compute_loss_from_embeddings

        def record(embeddings: list[Any], labels: Any) -> Any:
            self.calls.append([e.detach().clone() for e in embeddings])
            return inner(embeddings, labels)

        loss.compute_loss_from_embeddings = record


class StateRecorder:
    """Keeps the token embeddings (the layer-k states) each call hands the first module after the backbone."""

    def __init__(self, model: Any) -> None:
        self.states: list[Any] = []
        model[1].register_forward_pre_hook(
            lambda _, args: self.states.append(args[0]["token_embeddings"].detach())
        )


def library_terms(model: Any, columns: list[dict[str, Any]]) -> tuple[list[int], Recorder, StateRecorder]:
    """One forward of AdaptiveLayerLoss(model, SimCSELoss) over all layers; (layer order, recordings)."""
    import torch
    from sentence_transformers.sentence_transformer.losses import AdaptiveLayerLoss

    from lwap.train.losses import SimCSELoss

    inner = SimCSELoss(model)
    recorder, states = Recorder(inner), StateRecorder(model)
    loss = AdaptiveLayerLoss(model, inner, n_layers_per_step=-1, kl_temperature=0.0)
    with torch.no_grad():
        loss([dict(c) for c in columns], torch.zeros(len(columns[0]["input_ids"])))
    layers = model[0].auto_model.config.num_hidden_layers
    return [layers, *range(layers)], recorder, states  # the full depth first, then 0 .. L-1 in order


def build(backbone: str, pooling: str) -> Any:
    """The model with `pooling`; a new head (lwap's, weighted's) drawn from seed 0, so reruns agree."""
    import torch

    from lwap import build_model

    torch.manual_seed(0)
    options = {"weighted_layer_start": 1} if pooling == "weighted" else {}
    return build_model(backbone, pooling, **options)


def difference(a: Any, b: Any) -> float:
    return float((a.float() - b.float()).abs().max())


Rows = dict[int, dict[str, float | None]]  # layer k -> column -> difference (None: not defined there)


def multi_layer_differences(backbone: str, pairs: int) -> Rows:
    """(i): per layer index, |term's anchors − full-depth anchors| for each pooler, library vs lwap."""
    import torch

    from lwap.depth import DepthReader

    firsts, seconds = sample_pairs(pairs)
    rows: Rows = {}
    for pooling in POOLERS:
        model = build(backbone, pooling).eval()
        columns = [model.preprocess(firsts), model.preprocess(seconds)]
        order, recorder, _ = library_terms(model, columns)
        full = recorder.calls[0][0]
        depths = list(range(1, order[0] + 1))
        with torch.no_grad():
            own = DepthReader(model, depths).embed(dict(columns[0]), depths)["sentence_embedding"]
        for layer, call in zip(order[1:], recorder.calls[1:], strict=True):
            row = rows.setdefault(layer, {})
            row[f"{pooling}: library"] = difference(call[0], full)
            row[f"{pooling}: lwap"] = difference(own[:, layer - 1], full) if layer >= 1 else None
    return rows


def unsupervised_differences(backbone: str, pairs: int) -> Rows:
    """(ii): per layer index, |positive − anchor| in train mode (module docstring)."""
    import torch
    from sentence_transformers.sentence_transformer.losses import AdaptiveLayerLoss

    from lwap.depth import DepthReader
    from lwap.train.elastic import DepthElasticLoss, ElasticPlan
    from lwap.train.losses import SimCSELoss

    firsts, _ = sample_pairs(pairs)
    rows: Rows = {}
    for pooling in POOLERS:
        model = build(backbone, pooling).train()
        torch.manual_seed(0)
        order, _, states = library_terms(model, [model.preprocess(firsts)])
        for index, layer in enumerate(order):
            anchor, positive = states.states[2 * index], states.states[2 * index + 1]
            rows.setdefault(layer, {})[f"{pooling}, one column: states"] = difference(anchor, positive)
    model = build(backbone, "mean").train()
    inner = SimCSELoss(model)
    recorder = Recorder(inner)
    torch.manual_seed(0)
    with torch.no_grad():  # the library's documented recipe: the same text as two separate columns
        AdaptiveLayerLoss(model, inner, n_layers_per_step=-1, kl_temperature=0.0)(
            [model.preprocess(firsts), model.preprocess(firsts)], torch.zeros(len(firsts))
        )
    for index, layer in enumerate(order):
        anchor, positive = recorder.calls[index]
        rows[layer]["mean, two columns: vectors"] = difference(anchor, positive)
    inner = SimCSELoss(model)
    recorder = Recorder(inner)
    depths = list(range(1, order[0] + 1))
    plan = ElasticPlan(DepthReader(model, depths), depths, dict.fromkeys(depths, 1.0), None, [(None, 1.0)])
    torch.manual_seed(0)
    with torch.no_grad():  # lwap's depth loss on the one column: one forward per view, levels 0..k
        DepthElasticLoss(inner, plan)([model.preprocess(firsts)], torch.zeros(len(firsts)))
    for layer in order:
        anchor_positive = recorder.calls[layer - 1] if layer >= 1 else None
        rows[layer]["mean, lwap's depth loss: vectors"] = (
            difference(*anchor_positive) if anchor_positive is not None else None
        )
    return rows


def markdown(rows: Rows) -> list[str]:
    columns = list(next(iter(rows.values())))
    lines = [f"| layer k | {' | '.join(columns)} |", "| ---: |" + " ---: |" * len(columns)]
    for layer, row in sorted(rows.items()):
        cells = ["—" if row[c] is None else f"{row[c]:.3g}" for c in columns]
        lines.append(f"| {layer} | {' | '.join(cells)} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    import sentence_transformers

    from lwap.backbones import DEFAULT_BACKBONE

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backbone", default=DEFAULT_BACKBONE, help="a small model (hub id or folder)")
    parser.add_argument("--pairs", type=int, default=32, help="STS-B dev pairs in the batch")
    args = parser.parse_args(argv)
    print(f"sentence-transformers {sentence_transformers.__version__}, backbone {args.backbone}\n")
    print("(i) |anchor vectors of the layer-k term − of the full-depth term|, eval mode (library:")
    print("AdaptiveLayerLoss; lwap: the pooler on levels 0..k). 0 = the term is the full-depth term again.\n")
    print("\n".join(markdown(multi_layer_differences(args.backbone, args.pairs))))
    print("\n(ii) |positive − anchor|, unsupervised SimCSE, train mode (dropout): of the layer-k states the")
    print(
        "pooler reads (one column, as lwap's SimCSELoss takes it) or of the vectors. 0: positive = anchor.\n"
    )
    print("\n".join(markdown(unsupervised_differences(args.backbone, args.pairs))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
