"""The model card's section on a model trained to be used smaller (objective.matryoshka_dims, depths)."""

from __future__ import annotations

from typing import Any

PLACEHOLDER = "sentence_transformers_model_id"  # as lwap.train.model_card: push_to_hub fills it in


def elastic_section(objective: Any, trust_remote_code: bool) -> list[str]:
    """["## Smaller and faster", text] for an elastic model, else []."""
    dims, depths = objective.matryoshka_dims, objective.depths
    if dims is None and depths is None:
        return []
    flag = ", trust_remote_code=True" if trust_remote_code else ""
    parts: list[str] = []
    if dims is not None:
        shortest = min(dims)
        parts.append(
            f"Trained with Matryoshka dimensions {sorted(dims, reverse=True)}: the first d dimensions of a "
            "vector are a vector of their own (renormalise them; cosine similarity does). sentence-"
            "transformers truncates them for you:\n\n"
            "```python\nfrom sentence_transformers import SentenceTransformer\n\n"
            f'model = SentenceTransformer("{PLACEHOLDER}"{flag}, truncate_dim={shortest})\n'
            'embeddings = model.encode(["A man is playing a guitar."])  # '
            f"{shortest} dimensions\n```\n\n"
            f"or `lwap encode MODEL --dims {shortest} ...`."
        )
    if depths is not None:
        shallow = min(depths)
        parts.append(
            f"Trained at backbone depths {sorted(depths)}: the model also works with its backbone cut to "
            "its first k layers, the pooling reading layers 0..k only, and encodes about k/L of the time. "
            f"`lwap encode MODEL --layers {shallow} ...` encodes so; `lwap truncate MODEL SMALL --layers "
            f"{shallow}` saves a folder without the other layers, which sentence-transformers loads as "
            "any model (docs/TRAINING.md of lwap, 'Elastic embeddings')."
        )
    return ["## Smaller and faster", "\n\n".join(parts)]
