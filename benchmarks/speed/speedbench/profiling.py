"""torch.profiler over a few training steps of a variant: where a step goes, by op and by category."""

from __future__ import annotations

from typing import Any

from benchmarks.speed.speedbench.variants import Built


def profile_variant(variant: Built, steps: int) -> dict[str, Any]:
    """torch.profiler over `steps` training steps: self time per op, per step, and the unaccounted rest."""
    profile = variant.run(steps + 3, seed=0, profile_steps=steps).profile
    assert profile is not None
    wall, ops = profile["wall"], sorted(profile["ops"], key=lambda item: -item[1])
    return {
        "key": variant.variant.key,
        "variant": f"{variant.variant.label} ({variant.variant.precision})",
        "steps": steps,
        "wall_s_per_step": wall / steps,
        "op_self_s_per_step": sum(seconds for _, seconds, _ in ops) / steps,
        "top_ops": [
            {"op": name, "ms_per_step": 1e3 * s / steps, "share_of_step": s / wall, "calls": calls}
            for name, s, calls in ops[:15]
        ],
        "categories": categorize(ops, wall),
    }


CATEGORIES = {
    "matmul (mm, addmm, bmm)": ("aten::mm", "aten::addmm", "aten::bmm", "aten::_mkldnn_matmul"),
    "dropout and RReLU random numbers": (
        "aten::bernoulli_",
        "aten::rrelu_with_noise",
        "aten::uniform_",
        "aten::random_",
    ),
    "dtype casts and copies": ("aten::copy_", "aten::_to_copy"),
    "optimizer (fused AdamW)": ("aten::_fused_adamw_",),
    "zeroing (fill_, zero_)": ("aten::fill_", "aten::zero_"),
}


def categorize(ops: list[tuple[str, float, int]], wall: float) -> dict[str, float]:
    other, ranges = (
        "other aten ops (elementwise, norms, softmax, GELU, ...)",
        "autograd engine, optimizer wrapper",
    )
    shares = {name: 0.0 for name in [*CATEGORIES, other, ranges]}
    for name, seconds, _ in ops:
        bucket = next((c for c, members in CATEGORIES.items() if name in members), None)
        if bucket is None:
            bucket = other if name.startswith("aten::") else ranges  # ranges: their own (self) time only
        shares[bucket] += seconds / wall
    shares["outside any op (Python: trainer, model code, collator; tokenizer)"] = max(
        0.0, 1 - sum(shares.values())
    )
    return shares
