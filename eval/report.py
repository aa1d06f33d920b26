"""Turn `evaluate_model`'s results into the stdout table, results.json, results.md and the layer PNG."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from lwap.checks.files import atomic_path, write_json_atomically, write_text_atomically
from lwap.eval.sts_data import DISPLAY_NAMES

RESULTS_JSON = "results.json"
RESULTS_MD = "results.md"
LAYER_PNG = "layer_attention.png"
PAIR_SCORES = "pair_scores.npz"
SEARCH_COLUMNS = (("ndcg@10", "nDCG@10"), ("mrr@10", "MRR@10"), ("recall@100", "R@100"))
GEOMETRY_COLUMNS = (("alignment", "Align."), ("uniformity", "Unif."), ("anisotropy", "Aniso."))


def table_columns(results: dict[str, Any]) -> list[tuple[str, float, list[float] | None]]:
    """(header, score, 95% interval or None) per column: STS tasks, their average, then search metrics."""
    columns: list[tuple[str, float, list[float] | None]] = [
        (DISPLAY_NAMES.get(name, name), entry["score"], entry.get("ci95"))
        for name, entry in results["sts"].items()
    ]
    if results["sts"]:
        columns.append(("Avg.", results["sts_average"], None))
    for name, entry in results.get("pairs", {}).items():  # a user's scored pairs files (not in Avg.)
        columns.append((f"{name} (pairs)", entry["score"], entry.get("ci95")))
    for name, entry in results["search"].items():
        columns += [(f"{name} {label}", entry[key], None) for key, label in SEARCH_COLUMNS]
    geometry = results.get("geometry")
    if geometry:
        columns += [(label, geometry[key], None) for key, label in GEOMETRY_COLUMNS]
    return columns


def _value(header: str, value: float) -> str:
    """Scores x100 to 2 decimals; the geometry measures (of order 0.1-3, unscaled) to 3."""
    return f"{value:.3f}" if header in dict(GEOMETRY_COLUMNS).values() else f"{value:.2f}"


def _model_label(results: dict[str, Any]) -> str:
    name = results["model"]["name"].rstrip("/\\")
    return os.path.basename(name) or name


def _caption(results: dict[str, Any]) -> str:
    protocol = results["protocol"]
    sts = protocol["sts"]
    parts = [
        f"{sts['data_variant']} data",
        f"STS12-16 aggregation '{sts['aggregation']}'",
        "cosine Spearman x100",
        f"{protocol['precision']}",
        "engine mteb" if protocol["engine"].startswith("mteb") else "engine lwap",
        f"{results['timing_seconds']['total']:.0f} s",
    ]
    return ", ".join(parts)


def format_table(results: dict[str, Any]) -> str:
    """The one-row text table printed by `lwap eval` (a 95% CI row is added when bootstrapped)."""
    columns = table_columns(results)
    label = _model_label(results)
    has_ci = any(ci for _, _, ci in columns)
    ci_label = "95% CI (half-width)"
    model_width = max(len("model"), len(label), len(ci_label) if has_ci else 0)
    widths = [max(len(header), 6) for header, _, _ in columns]
    header = "  ".join(
        ["model".ljust(model_width), *(h.rjust(w) for (h, _, _), w in zip(columns, widths, strict=True))]
    )
    row = "  ".join(
        [
            label.ljust(model_width),
            *(_value(h, v).rjust(w) for (h, v, _), w in zip(columns, widths, strict=True)),
        ]
    )
    lines = [header, row]
    if has_ci:
        cells = [
            (f"±{(ci[1] - ci[0]) / 2:.2f}" if ci else "").rjust(w)
            for (_, _, ci), w in zip(columns, widths, strict=True)
        ]
        lines.append("  ".join([ci_label.ljust(model_width), *cells]).rstrip())
    lines.append(f"({_caption(results)})")
    return "\n".join(lines)


def format_markdown(results: dict[str, Any]) -> str:
    """results.md: the same row as a Markdown table, the protocol, and per-subset STS12–16 scores."""
    columns = table_columns(results)
    out = [f"# lwap eval: {results['model']['name']}", ""]
    out.append("| model | " + " | ".join(h for h, _, _ in columns) + " |")
    out.append("| --- | " + " | ".join("---:" for _ in columns) + " |")
    out.append(f"| {_model_label(results)} | " + " | ".join(_value(h, v) for h, v, _ in columns) + " |")
    if any(ci for _, _, ci in columns):
        cells = [f"[{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "" for _, _, ci in columns]
        out.append("| 95% CI | " + " | ".join(cells) + " |")
    out += [
        "",
        f"Protocol: {_caption(results)}. Versions: "
        + ", ".join(f"{k} {v}" for k, v in results["versions"].items())
        + ".",
        "",
    ]
    if results.get("geometry"):
        geometry = results["geometry"]
        out += [
            f"Geometry (Align., Unif., Aniso.; lower is better for each): {geometry['protocol']['data']}, "
            f"{geometry['sentences']:,} distinct sentences ({geometry['sentence_pairs']:,} pairs), "
            f"{geometry['positive_pairs']:,} positive pairs "
            f"(gold >= 4). {geometry['protocol']['alignment']}; {geometry['protocol']['uniformity']}; "
            f"{geometry['protocol']['anisotropy']}.",
            "",
        ]
    semeval = {n: e for n, e in results["sts"].items() if "subsets" in e and len(e["subsets"]) > 1}
    if semeval:
        out += [
            "## STS12–16 by subset (Spearman x100, pairs)",
            "",
            "| task | all | wmean | subsets |",
            "| --- | ---: | ---: | --- |",
        ]
        for name, entry in semeval.items():
            subsets = ", ".join(
                f"{s} {v['spearman']:.2f} ({v['pairs']})" for s, v in entry["subsets"].items()
            )
            all_ = f"{entry['all']:.2f}" if "all" in entry else "—"
            wmean = f"{entry['wmean']:.2f}" if "wmean" in entry else "—"
            out.append(f"| {DISPLAY_NAMES.get(name, name)} | {all_} | {wmean} | {subsets} |")
        out.append("")
    if results.get("layer_attention") and results["layer_attention"]["sentences"]:
        profile = results["layer_attention"]
        out += [
            f"## Layer attention (mean over {profile['sentences']:,} STS-B test sentences)",
            "",
            "| layer | " + " | ".join("emb" if i == 0 else str(i) for i in profile["layers"]) + " |",
            "| --- | " + " | ".join("---:" for _ in profile["layers"]) + " |",
            "| attention | " + " | ".join(f"{w:.3f}" for w in profile["mean_attention"]) + " |",
            "",
            f"![layer attention]({LAYER_PNG})",
            "",
        ]
    return "\n".join(out)


def write_outputs(
    results: dict[str, Any], output_dir: Path, cosines: dict[str, Any] | None = None
) -> list[Path]:
    """results.json, results.md, (LWAP models evaluated on STS-B) layer_attention.png and (given
    `cosines`, each STS pair's cosine keyed TASK/SUBSET) pair_scores.npz in `output_dir`."""
    from lwap.errors import ConfigError, OutputWriteError

    if output_dir.exists() and not output_dir.is_dir():
        raise ConfigError(f"output {output_dir}: is a file, expected a folder")
    try:
        output_dir.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ConfigError(f"output {output_dir}: cannot create the folder ({error.strerror})") from None
    try:
        return _write_files(results, output_dir, cosines)
    except OutputWriteError:  # a full disk, a quota, a read-only file system: already names the file
        raise
    except OSError as error:
        raise ConfigError(f"output {output_dir}: cannot write results ({error.strerror or error})") from None


def _write_pair_scores(cosines: dict[str, Any], path: Path) -> Path:
    """Each pair's cosine as float32 arrays in one compressed .npz (about 70 kB for the 7 STS tasks)."""
    import numpy as np

    with atomic_path(path) as partial, partial.open("wb") as handle:
        arrays = {key: np.asarray(value, dtype=np.float32) for key, value in cosines.items()}
        np.savez_compressed(handle, **arrays)
    return path


def _write_files(results: dict[str, Any], output_dir: Path, cosines: dict[str, Any] | None) -> list[Path]:
    written = []
    if cosines is not None:
        written.append(_write_pair_scores(cosines, output_dir / PAIR_SCORES))
    profile = results.get("layer_attention")
    if profile and profile["sentences"]:
        from lwap.eval.layer_profile import plot_layer_attention

        title = f"{_model_label(results)}: which layers LWAP attends to (STS-B test)"
        written.append(plot_layer_attention(profile, output_dir / LAYER_PNG, title))
    md = output_dir / RESULTS_MD
    write_text_atomically(md, format_markdown(results))
    written.append(md)
    path = output_dir / RESULTS_JSON
    files = [str(p) for p in [*written, path]]
    write_json_atomically({**results, "files": files}, path)
    return [*written, path]
