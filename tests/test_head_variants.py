"""LWAP for already-trained encoders: native start, the head's learning rate, head warm-up."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from conftest import SENTENCES
from sentence_transformers import SentenceTransformer
from test_train_run import tiny_config

from lwap import build_model, find_lwap, load_model
from lwap.errors import ConfigError
from lwap.train import load_config, train
from lwap.train.config import TrainingConfig
from lwap.train.head_training import head_learning_rate_mapping
from lwap.train.losses import SimCSELoss


def encode(model: SentenceTransformer) -> torch.Tensor:
    return model.encode(SENTENCES, convert_to_tensor=True)


def test_native_start_embeds_exactly_as_the_backbone(minilm_path: Path) -> None:
    backbone = SentenceTransformer(str(minilm_path))  # mean pooling + Normalize, as saved
    model = build_model("sentence-transformers/all-MiniLM-L6-v2", "lwap", lwap_start="native")
    assert [type(m).__name__ for m in model][1:] == [
        "Pooling",
        "Normalize",
        "LayerwiseAttentionPooling",
        "Normalize",  # after the correction: the output stays unit-length (below)
    ]
    assert torch.allclose(encode(model), encode(backbone), atol=1e-6, rtol=0)
    random_start = build_model("sentence-transformers/all-MiniLM-L6-v2", "lwap")
    assert not torch.allclose(encode(random_start), encode(backbone), atol=1e-2)


def test_native_start_over_a_normalizing_backbone_stays_unit_length(minilm_path: Path) -> None:
    """The correction is added before the last Normalize: trained, the vectors keep norm 1."""
    model = build_model(str(minilm_path), "lwap", lwap_start="native")
    head = find_lwap(model)
    with torch.no_grad():  # a trained-looking correction: far from zero
        head.output.weight.normal_(std=0.05)
        head.output.bias.normal_(std=0.05)
    head_only = SentenceTransformer(modules=list(model)[:-1])  # the same model without the last Normalize
    assert not torch.allclose(encode(head_only).norm(dim=1), torch.ones(len(SENTENCES)), atol=1e-3)
    assert torch.allclose(encode(model).norm(dim=1), torch.ones(len(SENTENCES)), atol=1e-6)


def test_native_pooling_chosen_by_config_on_a_plain_encoder(tiny_bert: Path) -> None:
    with pytest.raises(ConfigError, match="native_pooling"):
        build_model(str(tiny_bert), "lwap", lwap_start="native")  # declares no pooling: auto cannot work
    for pooling in ("mean", "cls"):
        model = build_model(str(tiny_bert), "lwap", lwap_start="native", native_pooling=pooling)
        plain = build_model(str(tiny_bert), pooling).eval()  # cls: the MLP is training-only
        assert torch.allclose(encode(model), encode(plain), atol=1e-6, rtol=0)


@pytest.mark.parametrize(
    "options",
    [{"lwap_output": "attention"}, {"lwap_queries": "latent", "lwap_layers": [2, 4, 5]}],
    ids=["attention-output", "latent-queries-layers"],
)
def test_native_start_with_query_and_output_variants(tiny_bert: Path, options: dict) -> None:
    """The variants start where the backbone is too (W_o, b = 0), and their correction trains."""
    model = build_model(str(tiny_bert), "lwap", lwap_start="native", native_pooling="mean", **options)
    plain = build_model(str(tiny_bert), "mean")
    assert torch.equal(encode(model), encode(plain))
    head = find_lwap(model)
    width = 64 if head.output_from == "cls_concat" else 32
    assert head.output.weight.shape == (32, width) and not head.output.weight.any()
    model.train()
    SimCSELoss(model)([model.preprocess(SENTENCES * 2)], torch.zeros(len(SENTENCES) * 2)).backward()
    assert head.output.weight.grad is not None and head.output.weight.grad.abs().sum() > 0


def test_native_start_learns_a_correction_and_reloads_exactly(tiny_bert: Path, tmp_path: Path) -> None:
    model = build_model(str(tiny_bert), "lwap", lwap_start="native", native_pooling="mean")
    before = encode(model)
    model.train()
    loss = SimCSELoss(model)
    features = model.preprocess(SENTENCES * 2)
    loss([features], torch.zeros(len(SENTENCES) * 2)).backward()
    head = find_lwap(model)
    assert head.output.weight.grad is not None and head.output.weight.grad.abs().sum() > 0
    with torch.no_grad():
        head.output.weight.add_(-0.5 * head.output.weight.grad.sign())
    model.eval()
    after = encode(model)
    assert not torch.allclose(before, after, atol=1e-4)
    model.save(str(tmp_path / "native"))
    reloaded = load_model(tmp_path / "native")
    assert find_lwap(reloaded).start == "native"
    assert torch.equal(encode(reloaded), after)


def test_head_learning_rate_reaches_the_optimizer(tiny_bert: Path, tmp_path: Path) -> None:
    from sentence_transformers.sentence_transformer.trainer import SentenceTransformerTrainer
    from sentence_transformers.sentence_transformer.training_args import (
        SentenceTransformerTrainingArguments,
    )

    model = build_model(str(tiny_bert), "lwap")
    training = TrainingConfig(learning_rate=1e-4, head_learning_rate_multiplier=10.0)
    mapping = head_learning_rate_mapping(model, training)
    args = SentenceTransformerTrainingArguments(
        output_dir=str(tmp_path), learning_rate=1e-4, learning_rate_mapping=mapping, use_cpu=True
    )
    from datasets import Dataset

    trainer = SentenceTransformerTrainer(
        model=model, args=args, train_dataset=Dataset.from_dict({"text": SENTENCES}), loss=SimCSELoss(model)
    )
    optimizer = trainer.create_optimizer()
    rate = {id(p): group["lr"] for group in optimizer.param_groups for p in group["params"]}
    assert [rate[id(p)] for p in model[1].parameters()] == pytest.approx([1e-3] * 5)  # W_q/k/v, W_o, b
    backbone = [rate[id(p)] for p in model[0].parameters() if p.requires_grad]  # not BERT's frozen pooler
    assert backbone == pytest.approx([1e-4] * len(backbone))
    mean = build_model(str(tiny_bert), "mean")  # no parameters after the backbone: no head rate
    assert head_learning_rate_mapping(mean, TrainingConfig(learning_rate=1e-4)) == {}
    with pytest.raises(ConfigError, match="pooler with parameters"):
        head_learning_rate_mapping(mean, TrainingConfig(head_learning_rate_multiplier=10.0))


@pytest.mark.slow
def test_training_with_head_multiplier_and_warmup(tiny_bert: Path, tmp_path: Path) -> None:
    """Backbone untouched during the warm-up, trained after it; both settings in the summary."""
    from safetensors.torch import load_file

    start = build_model(str(tiny_bert), "lwap", max_seq_length=24)[0].auto_model.state_dict()
    runs = {}
    for steps in (3, 5):
        path = tiny_config(
            tmp_path,
            tiny_bert,
            name=f"warm{steps}",
            training={"max_steps": steps, "head_warmup_steps": 3, "head_learning_rate_multiplier": 4.0},
            output={"save_steps": 100},
        )
        runs[steps] = train(load_config(path), config_path=str(path))
        weights = load_file(str(tmp_path / f"warm{steps}" / "model" / "model.safetensors"))
        changed = any(not torch.equal(weights[k], v) for k, v in start.items() if k in weights)
        assert changed == (steps > 3), steps
    assert runs[5]["head_learning_rate"] == pytest.approx(5e-4 * 4.0)
    assert runs[5]["head_warmup_steps"] == 3


def test_head_options_need_a_pooler_with_parameters(tiny_bert: Path, tmp_path: Path) -> None:
    path = tiny_config(
        tmp_path, tiny_bert, model={"pooling": "mean"}, training={"head_learning_rate_multiplier": 2.0}
    )
    with pytest.raises(ConfigError, match="pooler with parameters"):
        train(load_config(path), config_path=str(path))
    bad = tiny_config(tmp_path, tiny_bert, name="bad", model={"lwap_start": "natve"})
    with pytest.raises(
        ConfigError, match=r"model\.lwap_start: unknown value 'natve' \(did you mean 'native'"
    ):
        load_config(bad)
