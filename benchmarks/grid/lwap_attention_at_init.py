"""Where LWAP's attention stands before any training, beside where the trained grid cells end.

    python benchmarks/grid/lwap_attention_at_init.py            # writes docs/ATTENTION_AT_INIT.md

"What LWAP learns" (docs/RESULTS.md, "What LWAP attends to") reads the trained cells' mean attention per
layer. A profile peaked on one layer is only learned if the head did not start there: with the paper's
score scale (1/(L+1), not 1/√H) and hidden states of unequal norm, the softmax over layers can be
saturated at step 0, and a saturated softmax passes almost no gradient to the scores. So for each grid
backbone this builds the paper's head exactly as a grid cell does (`transformers.set_seed(seed)`, then
`lwap.build_model`; seed 0 is the cells' seed 0), encodes STS-B test (senteval) in eval mode and reports:
the mean norm of each hidden state's masked mean as the head sees it (after NormalizeHiddenStates where the
backbone has it), the attention profile at init, how peaked it is (the mean over sentences and queries of
the largest weight), the same under `score_scale: sqrt_hidden`, and the trained profile of the grid's
`lwap` cells (both regimes, seeds averaged). CPU, about a minute per backbone.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: the repository root on sys.path, as `python -m` would
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch
from transformers import set_seed

from benchmarks import REPO
from benchmarks.grid.study import ROWS
from lwap.compare.attention import attention_profiles
from lwap.compare.grid import REGIME_WORDS, REGIMES, Grid, backbone_name, backbones
from lwap.eval.sts_data import load_stsb
from lwap.model import build_model, find_lwap

RESULTS = REPO / "benchmarks/results/compare"
OUTPUT = REPO / "docs/ATTENTION_AT_INIT.md"
MAX_LENGTH = 256  # the grid's evaluation length


def sentences() -> list[str]:
    pairs = load_stsb("test")
    return list(dict.fromkeys([*pairs.sentences1, *pairs.sentences2]))


@torch.no_grad()
def at_init(backbone: str, score_scale: str, seed: int, texts: list[str]) -> dict[str, Any]:
    """The untrained head's attention profile and peak, and the norms of the per-layer means it reads."""
    set_seed(seed)
    model = build_model(backbone, "lwap", max_seq_length=MAX_LENGTH, score_scale=score_scale).eval()
    head = find_lwap(model)
    norms: list[torch.Tensor] = []
    profiles: list[torch.Tensor] = []
    peaks: list[torch.Tensor] = []

    def record(module: Any, inputs: tuple[Any, ...], _output: Any) -> None:
        features = inputs[0]
        mask = features["attention_mask"].float()
        weights = (mask / mask.sum(1, keepdim=True)).unsqueeze(1)
        means = torch.cat([weights @ h.float() for h in features["all_layer_embeddings"]], dim=1)
        norms.append(means.norm(dim=-1))  # (B, N)
        attention = module.last_attention.float()  # (B, queries, N)
        profiles.append(attention.mean(dim=1))
        peaks.append(attention.max(dim=-1).values.mean(dim=1))

    handle = head.register_forward_hook(record)
    try:
        model.encode(texts, batch_size=64)
    finally:
        handle.remove()
    return {
        "norms": torch.cat(norms).mean(0).tolist(),
        "attention": torch.cat(profiles).mean(0).tolist(),
        "peak": torch.cat(peaks).mean().item(),
    }


def row(label: str, values: list[float], digits: int = 3) -> str:
    return f"| {label} | " + " | ".join(f"{v:.{digits}f}" for v in values) + " |"


def backbone_table(backbone: str, seed: int, texts: list[str], grid: Grid) -> list[str]:
    paper = at_init(backbone, "num_layers", seed, texts)
    sqrt = at_init(backbone, "sqrt_hidden", seed, texts)
    layers = len(paper["attention"])
    header = "| | embedding output | " + " | ".join(f"layer {i}" for i in range(1, layers)) + " |"
    lines = [
        f"### {backbone_name(backbone)}",
        "",
        header,
        "| --- |" + " --- |" * layers,
        row("norm of the layer mean the head reads", paper["norms"], 1),
        row(f"attention at init, paper's scale 1/{layers} (seed {seed})", paper["attention"]),
        row("attention at init, 1/√H", sqrt["attention"]),
    ]
    for regime in REGIMES:
        for profile in attention_profiles(grid, [backbone], regime, ROWS):
            if profile.row == "lwap":
                seeds = f"{profile.seeds} seed{'s' * (profile.seeds > 1)}"
                label = f"attention trained, {REGIME_WORDS[regime]} ({seeds})"
                lines.append(row(label, profile.attention))
    lines += [
        "",
        f"Largest weight per query at init, mean over sentences: {paper['peak']:.3f} at the paper's scale, "
        f"{sqrt['peak']:.3f} at 1/√H (uniform: {1 / layers:.3f}).",
        "",
    ]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    grid = Grid(RESULTS, REPO / "outputs/compare")
    texts = sentences()
    lines = [
        "# LWAP's attention at initialisation and after training",
        "",
        "Generated by `python benchmarks/grid/lwap_attention_at_init.py` (its docstring says what and why); "
        f"STS-B test, {len(texts)} sentences, max length {MAX_LENGTH}, eval mode. Do not edit by hand.",
        "",
    ]
    for backbone in backbones(RESULTS):
        print(f"[init] {backbone}", file=sys.stderr, flush=True)
        lines += backbone_table(backbone, args.seed, texts, grid)
    args.output.write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
