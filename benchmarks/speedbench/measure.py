"""Measurements outside training: the matmul bound of this CPU and `model.encode` sentences/s."""

from __future__ import annotations

import statistics
import time
from typing import Any

from speedbench.settings import BACKBONE, BATCH, MAX_LENGTH


def matmul_bound(threads: int, repeats: int, hidden: int = 384, intermediate: int = 1536) -> dict[str, Any]:
    """GFLOP/s of torch.mm with this model's linear-layer GEMMs, fwd and both backward GEMMs, fp32 and bf16.

    Per encoder layer: Q, K, V, O (H×H), FFN up (H×4H), FFN down (4H×H), each as forward (M×K·K×N),
    input gradient (M×N·N×K) and weight gradient (K×M·M×N), M = batch × length rows. The rate is total FLOPs
    over total median time for M = 64·32 (one view per forward, as `lwap train` runs) and 2·64·32 (both views
    in one forward, as the minimal loop); the higher of the two is the bound. A 2048³ square is shown too.
    """
    import torch

    torch.set_num_threads(threads)
    shapes = [(hidden, hidden)] * 4 + [(hidden, intermediate), (intermediate, hidden)]

    def timed(a: Any, b: Any) -> float:
        torch.mm(a, b)
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            torch.mm(a, b)
            times.append(time.perf_counter() - start)
        return statistics.median(times)

    result: dict[str, Any] = {}
    for dtype_name, dtype in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
        by_rows = {}
        for rows in (BATCH * MAX_LENGTH, 2 * BATCH * MAX_LENGTH):
            flops = seconds = 0.0
            for k, n in shapes:
                x, w, g = (torch.randn(*s, dtype=dtype) for s in ((rows, k), (k, n), (rows, n)))
                seconds += timed(x, w) + timed(g, w.t()) + timed(x.t(), g)
                flops += 3 * 2 * rows * k * n
            by_rows[rows] = flops / seconds / 1e9
        square = torch.randn(2048, 2048, dtype=dtype)
        result[dtype_name] = {
            "model_gemms_gflops_by_rows": by_rows,
            "bound_gflops": max(by_rows.values()),
            "square_2048_gflops": 2 * 2048**3 / timed(square, square) / 1e9,
        }
    return result


def encode_speed(sentences: list[str], rounds: int, threads: int) -> dict[str, Any]:
    """Sentences/s of `model.encode` (batch 64, max length 32): lwap, mean and cls pooling, fp32 and bf16,
    each with the torch backbone (plain sentence-transformers) and through `lwap encode --backend openvino`.

    Keys are `pooling/precision` (torch) and `pooling/precision/openvino`. The OpenVINO graphs are built
    before the timed rounds; their conversion seconds are reported beside the rates (a one-off per load).
    `tokens_per_sentence` (padded, as the batches ran) gives the forward FLOPs: 2·N per token.
    """
    import torch

    from lwap import build_model
    from lwap.encoding import autocast
    from lwap.openvino_backbone import use_openvino

    torch.set_num_threads(threads)
    state = {
        p: build_model(BACKBONE, p, max_seq_length=MAX_LENGTH).state_dict() for p in ("lwap", "mean", "cls")
    }
    models, convert_seconds = {}, {}
    for pooling in state:
        for precision in ("fp32", "bf16"):
            for backend in ("torch", "openvino"):
                key = f"{pooling}/{precision}" + ("/openvino" if backend == "openvino" else "")
                model = build_model(BACKBONE, pooling, max_seq_length=MAX_LENGTH).eval()
                model.load_state_dict(state[pooling])
                if backend == "openvino":
                    convert_seconds[key] = use_openvino(model, precision)
                models[key] = model
    setups = list(models)
    precision_of = {key: key.split("/")[1] for key in setups}
    for key in setups:  # warm-up
        with autocast(precision_of[key]):
            models[key].encode(sentences[:256], batch_size=BATCH)
    seconds: dict[str, list[float]] = {key: [] for key in setups}
    for r in range(rounds):
        for key in setups if r % 2 == 0 else setups[::-1]:  # alternate: no order bias
            start = time.perf_counter()
            with autocast(precision_of[key]):
                models[key].encode(sentences, batch_size=BATCH, convert_to_numpy=True)
            seconds[key].append(time.perf_counter() - start)
    tokenizer = models["cls/fp32"].tokenizer
    order = sorted(sentences, key=len, reverse=True)  # as `encode` batches them: longest first
    padded = sum(
        len(batch)
        * max(len(ids) for ids in tokenizer(batch, truncation=True, max_length=MAX_LENGTH)["input_ids"])
        for batch in (order[i : i + BATCH] for i in range(0, len(order), BATCH))
    )
    rates = {
        key: {
            "sentences_per_s": len(sentences) / statistics.median(ts),
            "seconds": ts,
            **({"convert_seconds": convert_seconds[key]} if key in convert_seconds else {}),
        }
        for key, ts in seconds.items()
    }
    return rates | {"tokens_per_sentence": padded / len(sentences)}
