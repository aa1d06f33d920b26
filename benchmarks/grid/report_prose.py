"""The repository's own prose in its report (docs/RESULTS.md): how it names its commands, its intro (the
budgets, timings and backbones of these grids) and a note on each backbone it made or adapted."""

from __future__ import annotations

from lwap.compare.prose import Wording

WORDING = Wording(
    "python benchmarks/grid/compare_poolers.py", "compare_poolers.py", "benchmarks/results/compare/"
)

# What a backbone's sections are called where its name alone would mislead (issue 36: the first
# from-scratch BERT never left the unigram plateau; its sections stay, named for what they measure).
BACKBONE_TITLES = {"bert-mlm-4l256": "bert-mlm-4l256, an MLM model on the unigram plateau"}


BACKBONE_NOTES = {
    "minilm-l6-mlm": """\
`../shared/models/minilm-l6-mlm/` is all-MiniLM-L6-v2 continued with masked-language-model training on
the Wikipedia mirror (its SOURCE.md says how): a last layer last trained for token prediction, as in the
LWAP paper's regime. **It is a proxy, not bert-base**: 6 layers, H = 384, short MLM training
(perplexity 79), its lower layers and its [CLS] still carry part of all-MiniLM-L6-v2's contrastive
training (untouched [CLS] scores far above bert-base's), so absolute numbers are not comparable with the
paper's or SimCSE's bert-base tables; the rankings are what this answers. Same budgets as the MiniLM grid
(the config files named in each section); its untouched rows are the backbone with mean pooling, with
its plain last [CLS] and with the first-last average (SimCSE's "BERT [CLS]" and "BERT (first-last avg.)").""",
    "bert-mlm-4l256": """\
`benchmarks/backbones/bert-mlm-4l256/` is a BERT made here from random weights with masked-language
modelling only (`benchmarks/backbone/pretrain_mlm.py`; its SOURCE.md and docs/PRETRAIN.md): no sentence-level
objective ever touched any of its layers, which is the LWAP paper's regime. **It is small and early in
MLM training, not bert-base**: 4 layers, H = 256, 11 M parameters, 12.9 M tokens of Wikipedia in 800
steps (1.7 CPU-hours), held-out MLM perplexity 901 against 1,453 for a unigram model, where bert-base's
is single digits. Its untouched last [CLS] is near useless for STS, as bert-base's is (SimCSE's
"BERT [CLS]" row), and its mean and first-last average are far above it. Its budget is the one
`benchmarks/backbone/budget_probe.py` chose by a rule fixed before the backbone existed (the first
budget under which plain SimCSE `cls` beats every untouched row by 2 points, else the largest tried;
`benchmarks/results/compare/budget/bert-mlm-4l256/README.md`), the same for every pooler and seed, with
`weighted` over the top half of its 4 layers (`model.weighted_layer_start=3`), as on the 6-layer
backbones; each section names the settings. **No budget tried met that bar**, so each regime runs the
largest tried: the supervised one already uses every SNLI triplet of the mirror 3 times, and the
unsupervised one costs half a CPU-hour a cell. Trained `cls` gains over the untouched [CLS] row (much
when supervised, little when not) but stays below the untouched first-last average, which SimCSE's
bert-base clears by 36 points unsupervised (76.25 against 39.70 in its paper); each section's budget
check has the numbers. A pooler gap on this backbone is measured under an under-trained SimCSE. **Kept for
what it is, an MLM model on the unigram plateau**: issue 36's `bert-prenorm-4l256-sentences`, pretrained
past that plateau (docs/PRETRAIN.md, "The long run"), replaces it as the stand-in for the paper's regime.""",
    "bert-prenorm-4l256-sentences": """\
`benchmarks/backbones/bert-prenorm-4l256-sentences/` is issue 36's backbone: made here from random
weights with masked-language modelling only (`benchmarks/pretrain_long_run.sh`, retired: commit 06d4c1a
has it; its SOURCE.md and docs/PRETRAIN.md, "The long run"), pre-LayerNorm (transformers'
`roberta-prelayernorm`), 4 layers, H = 256, 11 M parameters, 150 M tokens of the Wikipedia mirror one
sentence a row, without dropout (Cramming's recipe; exported with SimCSE's 0.1), 10.9 CPU-hours. Held-out
MLM loss 3.511 (perplexity 33.5) against 7.339 for a unigram model on the same masked tokens: it has left
the plateau bert-mlm-4l256 sits on, though far from BERT-Mini's pretraining (BERT's recipe: about 43 B
tokens, some 280 times more). Poolers that read several layers see its middle layers layer-normed
(`NormalizeHiddenStates`, pre-registered in docs/COMPARE.md). No grid runs on it before the gate (issue
36): trained `cls` and `mean` at least 5 (unsupervised) and 10 (supervised) above every untouched row on
Avg. (all), under budgets fixed before the backbone existed. It passed supervised and failed unsupervised
("the gate" below, with the diagnosis), so its grid is supervised only, under the gate's first budget
(`long`).""",
}

INTRO = """\
First backbone (the sections without a backbone name): the packaged all-MiniLM-L6-v2 (6 layers,
H = 384). It was already trained contrastively with mean pooling on a billion pairs, so its sections
measure what a short SimCSE run does to an already strong sentence encoder with each pooler (new heads —
`lwap`'s attention, `cls`'s MLP — start random), not what the LWAP paper measured (bert-base from MLM
pre-training). The other backbones, each introduced in its own "the backbone" section, come closer to
the paper's regime: a last layer trained for token prediction.

Budget (identical for every pooler and seed; only `model.pooling` and `training.seed` differ, so a seed
gives every pooler the same data order):
- unsupervised: `configs/compare/unsup-minilm.yaml`, 200 steps × 64 Wikipedia sentences, lr 3e-5, bf16;
- supervised: `configs/compare/sup-minilm.yaml`, 1 epoch = 99 steps × 64 SNLI triplets, lr 2e-5, bf16;
- both: τ = 0.05, max length 32, STS-B dev every 50 / 33 steps, the best checkpoint kept (SimCSE's
  model selection), then `lwap eval --tasks all --precision bf16 --max-seq-length 256` (senteval data;
  cosine Spearman × 100; 256 tokens = the backbone's own inference length, for every row).

Time on 2 quiet cores: an unsupervised cell about 5.3 minutes (training ~3 min, evaluation ~2.4 min, most
of it the SciFact corpus at 256 tokens), a supervised one about 4.1, so a regime's 18 cells take about 95
and 75 minutes (each section's grid line gives the measured median).

Cells show mean ± standard deviation over seeds (a plain number where a pooler has one seed so far).
STS12–16 columns use `all` aggregation (SimCSE); Avg. (wmean) averages the seven tasks with STS12–16
under `wmean` (the LWAP paper's). "dev before → best" is STS-B dev Spearman × 100 at step 0 and of the
kept checkpoint."""

NO_OTHER_BACKBONE = """\
No other backbone has been run: no MLM-only backbone existed under `../shared/models/` when the
grid ran. When one appears, `{prog} run --regime unsup --backbone
../shared/models/NAME [--set KEY=VALUE ...]` gives it its own sections here."""
