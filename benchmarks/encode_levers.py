"""Encoding levers for a saved lwap model, each against plain `model.encode` at the same precision.

    python benchmarks/encode_levers.py [--sentences 3000] [--rounds 3] [--out FILE.json]

Issue 15's first probe: which inference changes pay on this CPU before any of them becomes an `lwap
encode` flag. Setups (all the LWAP model of the speed benchmark: packaged all-MiniLM-L6-v2, untrained
head, batch 64, max length 32, the first Wikipedia sentences of the mirror):

  fp32                   plain `model.encode` (the fp32 reference)
  fp32 compiled          the backbone's forward through `torch.compile(dynamic=True)` (inductor, C++)
  bf16 autocast          what `lwap encode --precision bf16` does today (fp32 weights, autocast)
  bf16 weights           the whole model cast to bf16 (no per-op casts), no autocast
  bf16 weights eager     the same with eager attention instead of SDPA
  bf16 weights compiled  the same with the compiled forward
  fp32 openvino          `lwap encode --backend openvino`: the backbone as an OpenVINO graph, head in torch
  bf16 openvino          the same at OpenVINO's bf16 inference precision (head under bf16 autocast)
  fp32 onnxruntime       the same graph exported with `torch.onnx.export`, run by ONNX Runtime (only
                         where onnxruntime and onnxscript are installed; not an lwap option)
  int8 onnxruntime       that graph through ONNX Runtime's dynamic int8 quantisation (`quantize_dynamic`:
                         int8 weights, activations quantised per batch), against plain fp32

The rounds interleave the setups (order reversed every other round), so load changes slow all alike; the
figure is sentences/s over the median round. Agreement: the lowest cosine of any sentence against the fp32
reference over every STS-B test sentence, and the STS-B test Spearman of each setup. Run it alone on the
machine (speed figures from a busy machine are not figures). sentence-transformers calls the backbone's
`forward` method directly, so compiling the module object (`torch.compile(module)`) would be bypassed:
the forward method itself is compiled.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# compiled setups compile from an empty inductor cache, as on a user's first run (set before torch loads)
os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", tempfile.mkdtemp(prefix="lwap-inductor-"))

import torch
from speedbench.machine import busy_cores
from speedbench.settings import BACKBONE, BATCH, MAX_LENGTH, read_sentences

SETUPS = (
    "fp32",
    "fp32 compiled",
    "bf16 autocast",
    "bf16 weights",
    "bf16 weights eager",
    "bf16 weights compiled",
    "fp32 openvino",
    "bf16 openvino",
    "fp32 onnxruntime",
    "int8 onnxruntime",
)


def build(setup: str, state: dict[str, torch.Tensor]) -> Any:
    """The LWAP model (weights `state`) as one setup runs it."""
    from lwap import build_model

    model = build_model(BACKBONE, "lwap", max_seq_length=MAX_LENGTH).eval()
    model.load_state_dict(state)
    backbone = model[0].auto_model
    if "eager" in setup:
        backbone.set_attn_implementation("eager")
    if "bf16 weights" in setup:
        model.to(torch.bfloat16)
    if "compiled" in setup:
        backbone.forward = torch.compile(backbone.forward, dynamic=True)
    if "openvino" in setup:
        from lwap.openvino_backbone import use_openvino

        use_openvino(model, setup.split()[0])
    if "onnxruntime" in setup:
        use_onnxruntime(model, quantized=setup.startswith("int8"))
    return model


def use_onnxruntime(model: Any, quantized: bool = False) -> None:
    """The backbone through ONNX Runtime: the graph `lwap.openvino_backbone` converts, exported to ONNX."""
    import onnxruntime

    from lwap.openvino_backbone import stacked_backbone, stacked_output

    wrapper, example = stacked_backbone(model)
    names, all_layers = wrapper.input_names, wrapper.all_layers
    path = Path(tempfile.mkdtemp(prefix="lwap-ort-")) / "backbone.onnx"
    dims = {0: torch.export.Dim("batch"), 1: torch.export.Dim("length")}  # the same for every input
    torch.onnx.export(wrapper, example, str(path), input_names=names, dynamic_shapes=((dims,) * len(names),))
    if quantized:
        from onnxruntime.quantization import QuantType, quantize_dynamic

        quantize_dynamic(str(path), str(path.with_suffix(".int8.onnx")), weight_type=QuantType.QInt8)
        path = path.with_suffix(".int8.onnx")
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = torch.get_num_threads()
    session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])

    class OnnxBackbone(torch.nn.Module):
        config = model[0].model.config

        def forward(self, **inputs: Any) -> Any:
            out = session.run(None, {n: inputs[n].numpy() for n in names})[0]
            return stacked_output(torch.from_numpy(out), all_layers)

    model[0].model = OnnxBackbone()


def has_onnxruntime() -> bool:
    import importlib.util

    return all(importlib.util.find_spec(m) for m in ("onnxruntime", "onnxscript"))


def encode(model: Any, setup: str, sentences: list[str]) -> torch.Tensor:
    from lwap.encoding import autocast

    with autocast("bf16" if setup in ("bf16 autocast", "bf16 openvino") else "fp32"), torch.inference_mode():
        out = model.encode(sentences, batch_size=BATCH, convert_to_tensor=True)
    return out.float()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "encode-levers.json"))
    args = parser.parse_args()

    from lwap import build_model
    from lwap.eval.sts_data import load_stsb
    from lwap.eval.sts_scoring import cosine_scores, spearman_x100

    sentences = read_sentences(args.sentences)
    stsb = load_stsb("test")
    stsb_sentences = sorted(set(stsb.sentences1) | set(stsb.sentences2))
    torch.manual_seed(0)
    state = build_model(BACKBONE, "lwap", max_seq_length=MAX_LENGTH).state_dict()
    busy = busy_cores()
    models, build_seconds, compile_seconds, agreement = {}, {}, {}, {}
    reference: torch.Tensor | None = None
    setups = [s for s in SETUPS if "onnxruntime" not in s or has_onnxruntime()]
    for setup in setups:
        start = time.perf_counter()
        models[setup] = build(setup, state)
        build_seconds[setup] = round(time.perf_counter() - start, 1)  # OpenVINO converts here
        start = time.perf_counter()
        embeddings = encode(models[setup], setup, stsb_sentences)  # compiles here, where it compiles
        compile_seconds[setup] = round(time.perf_counter() - start, 1)
        if reference is None:
            reference = embeddings
        unit = torch.nn.functional.normalize(embeddings, dim=1).numpy()
        agreement[setup] = {
            "min_cosine_to_fp32": torch.nn.functional.cosine_similarity(embeddings, reference).min().item(),
            "stsb_test": spearman_x100(*cosine_scores(stsb, dict(zip(stsb_sentences, unit, strict=True)))),
        }
        print(f"{setup}: first pass over STS-B test {compile_seconds[setup]} s", flush=True)
    seconds: dict[str, list[float]] = {setup: [] for setup in setups}
    for r in range(args.rounds):
        for setup in setups if r % 2 == 0 else setups[::-1]:
            start = time.perf_counter()
            encode(models[setup], setup, sentences)
            seconds[setup].append(time.perf_counter() - start)
    rows = {}
    for setup in setups:
        rate = len(sentences) / statistics.median(seconds[setup])
        base = "bf16 autocast" if setup.startswith("bf16") else "fp32"
        rows[setup] = {
            "sentences_per_s": rate,
            "against_plain": rate / (len(sentences) / statistics.median(seconds[base])),
            "seconds": seconds[setup],
            "build_seconds": build_seconds[setup],
            "first_pass_seconds": compile_seconds[setup],
            **agreement[setup],
        }
        print(
            f"{setup:24s} {rate:7.1f} sent/s  {rows[setup]['against_plain']:.2f}× plain  "
            f"min cos {agreement[setup]['min_cosine_to_fp32']:.5f}  STS-B {agreement[setup]['stsb_test']:.2f}"
        )
    result = {
        "command": "python benchmarks/encode_levers.py " + " ".join(sys.argv[1:]),
        "date": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "busy_cores_before": busy,
        "threads": torch.get_num_threads(),
        "sentences": len(sentences),
        "rounds": args.rounds,
        "setups": rows,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
