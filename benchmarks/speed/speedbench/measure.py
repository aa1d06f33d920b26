"""Measurements outside training: the matmul bound of this CPU (and a GPU's GEMM rate), `model.encode`
sentences/s."""

from __future__ import annotations

import statistics
import time
from typing import Any

from benchmarks.speed.speedbench.settings import BACKBONE, BATCH, MAX_LENGTH
from benchmarks.speed.speedbench.timing import synchronize


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


def gemm_rate(device: str, n: int, repeats: int) -> float:
    """Measured bf16 FLOP/s of n×n GEMMs on `device`, synchronised (the GPU benchmark's MFU denominator:
    a GPU's square GEMMs reach its peak, where the CPU's bound above uses the model's own shapes)."""
    import torch

    a = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    synchronize(device)
    start = time.perf_counter()
    for _ in range(repeats):
        a @ b
    synchronize(device)
    return 2 * n**3 * repeats / (time.perf_counter() - start)


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
    rates = {
        key: {
            "sentences_per_s": len(sentences) / statistics.median(ts),
            "seconds": ts,
            **({"convert_seconds": convert_seconds[key]} if key in convert_seconds else {}),
        }
        for key, ts in seconds.items()
    }
    return rates | {
        "tokens_per_sentence": padded_tokens_per_sentence(models["cls/fp32"].tokenizer, sentences)
    }


def padded_tokens_per_sentence(tokenizer: Any, sentences: list[str]) -> float:
    """Tokens per sentence as `model.encode` pads them: longest first, batches of BATCH, MAX_LENGTH cut."""
    order = sorted(sentences, key=len, reverse=True)
    batches = (order[i : i + BATCH] for i in range(0, len(order), BATCH))
    encoded = (tokenizer(batch, truncation=True, max_length=MAX_LENGTH)["input_ids"] for batch in batches)
    return sum(len(ids) * max(map(len, ids)) for ids in encoded) / len(sentences)


BREAKDOWN_SETUPS = ("lwap/fp32", "lwap/fp32/openvino", "lwap/bf16", "lwap/bf16/openvino", "cls/bf16/openvino")


class _Timers:
    """Seconds spent per part of `model.encode`: tokenization, the first module, the modules after it."""

    def __init__(self, model: Any) -> None:
        self.spent = {"tokenize": 0.0, "backbone": 0.0, "pooling": 0.0}
        self._started: dict[str, float] = {}
        inner = model.preprocess

        def preprocess(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                self.spent["tokenize"] += time.perf_counter() - start

        model.preprocess = preprocess  # sentence-transformers calls self.preprocess once per batch
        modules = list(model)
        for part, module in (("backbone", modules[0]), *(("pooling", m) for m in modules[1:])):
            module.register_forward_pre_hook(self._pre(part))
            module.register_forward_hook(self._post(part))

    def _pre(self, part: str) -> Any:
        return lambda *_: self._started.__setitem__(part, time.perf_counter())

    def _post(self, part: str) -> Any:
        def hook(*_: Any) -> None:
            self.spent[part] += time.perf_counter() - self._started[part]

        return hook

    def reset(self) -> None:
        self.spent = dict.fromkeys(self.spent, 0.0)


def encode_breakdown(sentences: list[str], threads: int, repeats: int = 3) -> dict[str, Any]:
    """Where one `model.encode` call spends its time: tokenization, backbone, pooling modules, the rest.

    Timers wrap `model.preprocess` (sentence-transformers' tokenization step) and the forward of the
    first module (the backbone, torch or OpenVINO) and of the pooling modules after it; *rest* is the
    remainder of the call (sorting, batching, moving outputs). Seconds are medians over `repeats` calls
    after one warm-up call.
    """
    import torch

    from lwap import build_model
    from lwap.encoding import autocast
    from lwap.openvino_backbone import use_openvino

    torch.set_num_threads(threads)
    result = {}
    for key in BREAKDOWN_SETUPS:
        pooling, precision, *backend = key.split("/")
        model = build_model(BACKBONE, pooling, max_seq_length=MAX_LENGTH).eval()
        if backend:
            use_openvino(model, precision)
        timers = _Timers(model)
        runs = []
        for r in range(repeats + 1):
            timers.reset()
            start = time.perf_counter()
            with autocast(precision):
                model.encode(sentences, batch_size=BATCH, convert_to_numpy=True)
            total = time.perf_counter() - start
            if r:
                runs.append({"total": total, **timers.spent, "rest": total - sum(timers.spent.values())})
        result[key] = {part: statistics.median(run[part] for run in runs) for part in runs[0]}
    tokens = padded_tokens_per_sentence(model.tokenizer, sentences)
    return {"sentences": len(sentences), "repeats": repeats, "tokens_per_sentence": tokens, "setups": result}
