"""Run a model's backbone through OpenVINO, every layer's hidden states out, the pooling head in torch.

Encoding is forward-only, so a graph compiler can fuse what eager torch runs op by op; on this CPU
OpenVINO's fp32 kernels are also about twice torch's (docs/BENCHMARKS.md, "Encoding").
Why not sentence-transformers' own `backend="openvino"`: it goes through optimum's
`OVModelForFeatureExtraction`, whose graph returns only the last hidden state, while LWAP (and the
weighted, first_last_avg and last2_avg poolers) pool over every layer. Here the backbone is converted
in memory (`openvino.convert_model`, a few seconds) with its hidden states stacked as one output, and
put in place of `Transformer.model`: sentence-transformers' own `Transformer.forward` calls it as it
would the torch backbone, so tokenization, the pooling modules and `model.encode` are unchanged.
"""

from __future__ import annotations

import inspect
import time
import warnings
from typing import Any

import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.modules import Transformer
from transformers.modeling_outputs import BaseModelOutput

from lwap.errors import InputError

_OV_PRECISION = {"fp32": "f32", "bf16": "bf16"}


class _StackedHiddenStates(torch.nn.Module):
    """The backbone with its outputs as one tensor: (L+1, B, T, H) hidden states, or (B, T, H) last."""

    def __init__(self, backbone: torch.nn.Module, input_names: list[str], all_layers: bool) -> None:
        super().__init__()
        self.backbone, self.input_names, self.all_layers = backbone, input_names, all_layers

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        kwargs = dict(zip(self.input_names, inputs, strict=True))
        out = self.backbone(**kwargs, output_hidden_states=self.all_layers, return_dict=True)
        return torch.stack(out.hidden_states) if self.all_layers else out.last_hidden_state


def stacked_backbone(model: SentenceTransformer) -> tuple[_StackedHiddenStates, tuple[torch.Tensor, ...]]:
    """`model`'s backbone as one-output module (all layers where its config asks for hidden states), and
    example inputs to trace it with: the tokenizer's inputs that the backbone's forward accepts."""
    transformer, backbone = model[0], model[0].model
    accepted = set(inspect.signature(backbone.forward).parameters)
    example = model.preprocess(["an example sentence", "a second, longer example sentence"])
    input_names = [
        name for name in transformer.tokenizer.model_input_names if name in accepted and name in example
    ]
    all_layers = bool(getattr(backbone.config, "output_hidden_states", False))
    wrapper = _StackedHiddenStates(backbone, input_names, all_layers).eval()
    return wrapper, tuple(example[name] for name in input_names)


def stacked_output(out: torch.Tensor, all_layers: bool) -> BaseModelOutput:
    """What the torch backbone returns, from the stacked output of `_StackedHiddenStates`' graph."""
    if not all_layers:
        return BaseModelOutput(last_hidden_state=out)
    return BaseModelOutput(last_hidden_state=out[-1], hidden_states=tuple(out))


class OpenVINOBackbone(torch.nn.Module):
    """Stands in for `Transformer.model`: called the same way, returns the same `BaseModelOutput`."""

    def __init__(self, compiled: Any, input_names: list[str], config: Any, all_layers: bool) -> None:
        super().__init__()
        self.request = compiled.create_infer_request()
        self.input_names, self.config, self.all_layers = input_names, config, all_layers

    def forward(self, **inputs: Any) -> BaseModelOutput:
        feeds = {name: inputs[name].cpu().numpy() for name in self.input_names}
        # infer returns a fresh array (share_outputs=False): later calls cannot overwrite earlier outputs
        return stacked_output(torch.from_numpy(self.request.infer(feeds)[0]), self.all_layers)

    def save_pretrained(self, *args: Any, **kwargs: Any) -> None:
        raise InputError(
            "a model encoding through OpenVINO cannot be saved; save the torch model it came from"
        )


def use_openvino(model: SentenceTransformer, precision: str = "fp32") -> float:
    """Put the OpenVINO graph of `model`'s backbone in its place (in place); return the seconds it took.

    `precision` is the graph's: "fp32", or "bf16" (OpenVINO's own bf16 kernels, where the CPU has them).
    The pooling modules stay in torch and run as before (under `lwap.encoding.autocast` for bf16).
    """
    try:
        import openvino
    except ImportError:
        raise InputError("the openvino backend needs OpenVINO: pip install 'lwap[openvino]'") from None
    if precision not in _OV_PRECISION:
        raise InputError(f"precision must be one of {tuple(_OV_PRECISION)}, got {precision!r}")
    if model.device.type != "cpu":
        raise InputError(f"the openvino backend runs on the CPU; the model is on {model.device}")
    transformer = model[0]
    if not isinstance(transformer, Transformer):
        raise InputError(
            f"the openvino backend needs a Transformer first module, not {type(transformer).__name__}"
        )
    backbone = transformer.model
    if isinstance(backbone, OpenVINOBackbone):
        raise InputError("this model already encodes through OpenVINO")
    started = time.perf_counter()
    wrapper, example = stacked_backbone(model)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tracer warnings about Python control flow: noise for a user
        graph = openvino.convert_model(wrapper, example_input=example)
    for port, name in zip(graph.inputs, wrapper.input_names, strict=True):
        port.get_tensor().set_names({name})
    compiled = openvino.Core().compile_model(
        graph,
        "CPU",
        {
            "INFERENCE_PRECISION_HINT": _OV_PRECISION[precision],
            "INFERENCE_NUM_THREADS": torch.get_num_threads(),
            "PERFORMANCE_HINT": "LATENCY",  # one request at a time, all threads on it: how encode calls it
        },
    )
    transformer.model = OpenVINOBackbone(compiled, wrapper.input_names, backbone.config, wrapper.all_layers)
    return time.perf_counter() - started
