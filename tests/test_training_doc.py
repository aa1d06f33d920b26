"""The config reference equals the schema: `lwap train --show-config`, the copy in docs/TRAINING.md ("Every
key"), and the keys, defaults and descriptions of `lwap.train.config_schema` say the same.

`python tests/test_training_doc.py` rewrites the copy in docs/TRAINING.md after a key changes.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "TRAINING.md"
BEGIN, END = "<!-- config-reference:begin -->\n```yaml\n", "```\n<!-- config-reference:end -->"


def doc_block(text: str) -> str:
    return text[text.index(BEGIN) + len(BEGIN) : text.index(END)]


def test_the_doc_holds_the_reference() -> None:
    from lwap.train.config_reference import reference

    assert doc_block(DOC.read_text(encoding="utf-8")) == reference(), "run: python tests/test_training_doc.py"


def test_show_config_prints_the_reference(capsys) -> None:
    from lwap.cli import main
    from lwap.train.config_reference import reference

    assert main(["train", "--show-config"]) == 0
    assert capsys.readouterr().out == reference()


def test_the_reference_is_the_schema() -> None:
    """Every key once, in the schema's order, with its default (a required key: its example); loaded as a
    config it is the schema's defaults; each key's description is printed above it."""
    from lwap.train.config import config_from_dict
    from lwap.train.config_reference import reference
    from lwap.train.config_schema import REQUIRED, SECTIONS, all_keys, default_of

    text = reference()
    raw = yaml.safe_load(text)
    assert [f"{section}.{key}" for section, values in raw.items() for key in values] == all_keys()
    config = config_from_dict(raw, "reference")
    for section, cls in SECTIONS.items():
        for f in dataclasses.fields(cls):
            expected = f.metadata["example"] if default_of(f) is REQUIRED else default_of(f)
            value = getattr(getattr(config, section), f.name)
            assert value == expected and type(value) is type(expected), f"{section}.{f.name}"
            first_words = " ".join(f.metadata["what"].split()[:4])
            assert first_words in " ".join(text.split()), f"{section}.{f.name}: its description"


def test_pooler_options_are_grouped_by_pooler() -> None:
    """In the model section each pooler's options follow one heading naming the pooler."""
    from lwap import registry
    from lwap.train.config_reference import reference

    model = reference().split("\nmodel:\n")[1].split("\n\n")
    for pooler in registry.POOLERS.values():
        if not pooler.options:
            continue
        group = next(block for block in model if f"# pooling {pooler.name} only:" in block)
        lines = [line.strip() for line in group.splitlines()]
        keys = [line.split(":")[0] for line in lines if not line.startswith("#")]
        assert keys == [option.name for option in pooler.options]


if __name__ == "__main__":
    from lwap.train.config_reference import reference

    text = DOC.read_text(encoding="utf-8")
    DOC.write_text(text.replace(doc_block(text), reference()), encoding="utf-8")
    print(f"rewrote the config reference in {DOC.relative_to(REPO)}", file=sys.stderr)
