"""Alignment, uniformity and anisotropy: against direct computations, Wang & Isola's torch formulas, and
the sign conventions SimCSE's Figure 2 uses (lower is better for both; uniformity is negative)."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
import torch
from eval_mirror import make_mirror

from lwap import build_model
from lwap.eval import evaluate_model
from lwap.eval.geometry import alignment, anisotropy, sts_geometry, uniformity
from lwap.eval.report import format_table
from lwap.eval.sts_data import load_sts_task


def test_formulas_equal_wang_and_isola_torch_code() -> None:
    """lalign / lunif as published (Wang & Isola 2020, Fig. 5), on normalized rows; uniformity in blocks."""
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(50, 8)), rng.normal(size=(50, 8))
    tx = torch.nn.functional.normalize(torch.tensor(x), dim=1)
    ty = torch.nn.functional.normalize(torch.tensor(y), dim=1)
    assert alignment(x, y) == pytest.approx((tx - ty).norm(p=2, dim=1).pow(2).mean().item(), rel=1e-12)
    lunif = torch.pdist(tx, p=2).pow(2).mul(-2).exp().mean().log().item()
    assert uniformity(x) == pytest.approx(lunif, rel=1e-10)
    assert uniformity(x, block=7) == pytest.approx(lunif, rel=1e-10)  # blocks do not change the value
    cosines = (tx @ tx.T)[torch.triu_indices(50, 50, offset=1).unbind()]
    assert anisotropy(x) == pytest.approx(cosines.mean().item(), rel=1e-10)


def test_sign_conventions_and_extremes() -> None:
    """Collapsed space: uniformity 0 (its maximum, the worst), anisotropy 1; orthonormal points:
    uniformity -4 (exp(-2·2)), anisotropy 0; positives that coincide: alignment 0, antipodal: 4."""
    same = np.tile([[1.0, 2.0, 3.0]], (5, 1))
    assert uniformity(same) == pytest.approx(0.0) and anisotropy(same) == pytest.approx(1.0)
    basis = np.eye(6)
    assert uniformity(basis) == pytest.approx(-4.0) and anisotropy(basis) == pytest.approx(0.0)
    assert alignment(basis, 3 * basis) == pytest.approx(0.0)  # normalized first: scale does not matter
    assert alignment(basis, -basis) == pytest.approx(4.0)
    rng = np.random.default_rng(1)
    spread = rng.normal(size=(200, 16))
    cone = spread * 0.1 + np.ones(16)  # the same points squeezed into a narrow cone: anisotropic
    assert uniformity(spread) < uniformity(cone) < 0  # more uniform = lower (more negative)
    assert anisotropy(spread) < anisotropy(cone)


def test_sts_geometry_picks_positives_and_distinct_sentences() -> None:
    vectors = {"a": np.array([1.0, 0.0]), "b": np.array([0.0, 1.0]), "c": np.array([1.0, 1.0])}
    result = sts_geometry(["a", "a", "b"], ["a", "b", "c"], [5.0, 1.0, 4.0], vectors)
    assert result["positive_pairs"] == 2 and result["sentences"] == 3  # a-a, b-c; a counted once
    assert result["sentence_pairs"] == 3
    assert result["alignment"] == pytest.approx((0.0 + (2 - 2 * np.sqrt(0.5))) / 2)
    with pytest.raises(ValueError, match="gold score >= 4"):
        sts_geometry(["a"], ["b"], [3.9], vectors)


@pytest.fixture(scope="module")
def mirror(tmp_path_factory):
    root = tmp_path_factory.mktemp("mirror")
    make_mirror(root)
    return root


def direct_geometry(model, pairs) -> dict[str, float]:
    """The three measures computed the slow, obvious way: encode, normalize, loop over pairs."""
    sentences = list(dict.fromkeys([*pairs.sentences1, *pairs.sentences2]))
    encoded = model.encode(sentences, convert_to_numpy=True).astype(np.float64)
    unit = {s: v / np.linalg.norm(v) for s, v in zip(sentences, encoded, strict=True)}
    positives = [
        (a, b) for a, b, g in zip(pairs.sentences1, pairs.sentences2, pairs.scores, strict=True) if g >= 4
    ]
    align = np.mean([np.sum((unit[a] - unit[b]) ** 2) for a, b in positives])
    distinct = list(itertools.combinations(sentences, 2))
    unif = np.log(np.mean([np.exp(-2 * np.sum((unit[a] - unit[b]) ** 2)) for a, b in distinct]))
    aniso = np.mean([unit[a] @ unit[b] for a, b in distinct])
    return {"alignment": align, "uniformity": unif, "anisotropy": aniso, "positive_pairs": len(positives)}


def test_evaluate_model_geometry_equals_direct_computation(tiny_bert, mirror, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("LWAP_DATA_DIR", str(mirror))
    model = build_model(str(tiny_bert), "mean").eval()
    results = evaluate_model(model, ["stsb", "sickr"], output_dir=tmp_path / "out")
    pairs = next(iter(load_sts_task("stsb").subsets.values()))
    expected = direct_geometry(model, pairs)
    geometry = results["geometry"]
    assert expected["positive_pairs"] > 0 and geometry["positive_pairs"] == expected["positive_pairs"]
    for measure in ("alignment", "uniformity", "anisotropy"):
        assert geometry[measure] == pytest.approx(expected[measure], rel=1e-5, abs=1e-7), measure
    assert geometry["uniformity"] < 0 <= geometry["alignment"]
    assert geometry["protocol"]["data"] == "STS-B test"

    written = json.loads((tmp_path / "out" / "results.json").read_text())
    assert written["geometry"]["uniformity"] == pytest.approx(geometry["uniformity"])
    header, row = format_table(results).splitlines()[:2]
    assert header.split()[-3:] == ["Align.", "Unif.", "Aniso."]
    assert row.split()[-2] == f"{geometry['uniformity']:.3f}"
    assert "Align." in (tmp_path / "out" / "results.md").read_text()

    bf16 = evaluate_model(model, ["stsb"], precision="bf16")["geometry"]  # the same measure, bf16 encoding
    for measure in ("alignment", "uniformity", "anisotropy"):
        assert bf16[measure] == pytest.approx(geometry[measure], abs=0.02), measure
    assert evaluate_model(model, ["sickr"])["geometry"] is None  # no STS-B test, no geometry


def test_training_evaluator_geometry_equals_direct_computation(tiny_bert, mirror, monkeypatch) -> None:
    """The STS-B dev evaluator training uses returns the split's geometry from the embeddings it scored."""
    from lwap.eval.evaluators import stsb_evaluator

    monkeypatch.setenv("LWAP_DATA_DIR", str(mirror))
    model = build_model(str(tiny_bert), "lwap").eval()
    evaluator = stsb_evaluator("dev", batch_size=8)
    metrics = evaluator(model)
    expected = direct_geometry(model, next(iter(load_sts_task("stsb", split="dev").subsets.values())))
    for measure in ("alignment", "uniformity", "anisotropy"):
        assert metrics[f"stsb-dev_{measure}"] == pytest.approx(expected[measure], rel=1e-5, abs=1e-7)
    assert evaluator.primary_metric == "stsb-dev_spearman_cosine"  # model selection is unchanged


def test_training_curves_draw_the_alignment_uniformity_trajectory(tmp_path) -> None:
    from lwap.train.training_curves import dev_geometry, plot_curves

    history = [{"loss": 1.0 - 0.1 * s, "step": s} for s in range(1, 5)]
    history += [
        {
            "step": s,
            "eval_stsb-dev_spearman_cosine": 0.5 + s / 10,
            "eval_stsb-dev_alignment": a,
            "eval_stsb-dev_uniformity": u,
        }
        for s, a, u in [(0, 0.2, -1.5), (2, 0.25, -2.0), (4, 0.27, -2.3)]
    ]
    assert dev_geometry(history) == [(0, -1.5, 0.2), (2, -2.0, 0.25), (4, -2.3, 0.27)]
    plot_curves(history, tmp_path / "with.png", "t", kept_step=2)
    plot_curves(history[:4], tmp_path / "without.png", "t")  # no geometry logged: the single panel
    from PIL import Image

    assert Image.open(tmp_path / "with.png").width > Image.open(tmp_path / "without.png").width
