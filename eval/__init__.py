"""STS and semantic-search evaluation (installed as lwap.eval).

`evaluate_model(model, tasks=...)` runs everything `lwap eval` does and returns the results dict;
`stsb_evaluator()` is the STS-B dev evaluator that training uses for model selection. Both are imported
lazily so that `import lwap.eval` (and `lwap --help`) stays instant.
"""

from __future__ import annotations

from typing import Any

__all__ = ["DEFAULT_TASKS", "evaluate_model", "stsb_evaluator"]


def __getattr__(name: str) -> Any:
    if name in ("evaluate_model", "DEFAULT_TASKS"):
        from lwap.eval import api

        return getattr(api, name)
    if name == "stsb_evaluator":
        from lwap.eval.evaluators import stsb_evaluator

        return stsb_evaluator
    raise AttributeError(f"module 'lwap.eval' has no attribute {name!r}")
