"""Model folders crafted the ways issues 39 and 49 list: a payload that must never run, weights as a pickle,
module paths out of the folder, a Router routing to the folder's own code, half a JSON file; a config.json
describing a model far larger than its weights, weights that do not fit it, a tokenizer damaged, past the
embedding table or outside the folder. Shared by
tests/test_hostile_folders.py and the path matrix (tests/test_path_matrix.py: its damaged-file columns).

Each `craft_*` turns a valid folder (a saved sentence-transformers model, or a plain Hugging Face
backbone) into a hostile one in place. Payload files write `MARKER` beside themselves (by absolute path,
so a copy transformers would import from its module cache writes it there too): a test asserts it is absent.
"""

from __future__ import annotations

import json
from pathlib import Path

MARKER = "PAYLOAD_RAN"
TRANSFORMER = "sentence_transformers.sentence_transformer.modules.Transformer"
POOLING = "sentence_transformers.sentence_transformer.modules.Pooling"
ROUTER = "sentence_transformers.sentence_transformer.modules.Router"


def payload(folder: Path, name: str, body: str = "") -> Path:
    """A Python file in `folder` that writes `folder`/MARKER when imported, then defines `body`."""
    code = (
        f"from pathlib import Path\n\nPath({str(folder / MARKER)!r}).write_text('the folder\\'s code ran')\n"
    )
    path = folder / name
    path.write_text(code + body, encoding="utf-8")
    return path


def _modules(folder: Path) -> list[dict]:
    listing = folder / "modules.json"
    if listing.is_file():
        return json.loads(listing.read_text(encoding="utf-8"))
    return [{"idx": 0, "name": "0", "path": "", "type": TRANSFORMER}]  # a plain backbone: itself


def _write_modules(folder: Path, modules: list[dict]) -> None:
    (folder / "modules.json").write_text(json.dumps(modules, indent=2), encoding="utf-8")


def craft_auto_map(folder: Path) -> None:
    """config.json names a model class from a .py file in the folder, under a model type transformers does
    not know: transformers asks "Do you wish to run the custom code? [y/N]" unless told."""
    body = (
        "from transformers import BertConfig, BertModel\n\n\n"
        "class EvilConfig(BertConfig):\n    model_type = 'evil-bert'\n\n\n"
        "class EvilModel(BertModel):\n    config_class = EvilConfig\n"
    )
    payload(folder, "evil_code.py", body)
    config_file = folder / "config.json"
    config = json.loads(config_file.read_text(encoding="utf-8"))
    config["model_type"] = "evil-bert"
    config["auto_map"] = {"AutoConfig": "evil_code.EvilConfig", "AutoModel": "evil_code.EvilModel"}
    config_file.write_text(json.dumps(config, indent=2), encoding="utf-8")


def craft_pickle_weights(folder: Path) -> None:
    """The backbone's weights as a pickle only: model.safetensors replaced by pytorch_model.bin."""
    import torch
    from safetensors.torch import load_file

    weights = folder / "model.safetensors"
    tensors = load_file(weights)
    weights.unlink()  # never write through a hard link to a fixture's file
    torch.save(tensors, folder / "pytorch_model.bin")


def craft_path_escape(folder: Path, target: str = "../..") -> None:
    """modules.json names a module path that leaves the folder (`../..`, or an absolute one)."""
    modules = _modules(folder)
    escape = {"idx": len(modules), "name": str(len(modules)), "path": target, "type": POOLING}
    _write_modules(folder, [*modules, escape])


def craft_absolute_path(folder: Path) -> None:
    craft_path_escape(folder, str(folder.parent.resolve()))


def craft_router_code(folder: Path) -> None:
    """A Router module after the Transformer, routing to a class from a .py file in the folder."""
    payload(folder, "evil_module.py", "import torch\n\n\nclass Evil(torch.nn.Module):\n    pass\n")
    router = folder / "1_Router"
    (router / "query_0_Evil").mkdir(parents=True)
    config = {
        "types": {"query_0_Evil": "evil_module.Evil"},
        "structure": {"query": ["query_0_Evil"], "document": ["query_0_Evil"]},
        "parameters": {"default_route": "query", "allow_empty_key": True},
    }
    (router / "router_config.json").write_text(json.dumps(config), encoding="utf-8")
    modules = _modules(folder)
    _write_modules(folder, [modules[0], {"idx": 1, "name": "1", "path": "1_Router", "type": ROUTER}])


def craft_half_json(path: Path) -> None:
    """Cut a JSON file in half, as an interrupted copy leaves it."""
    data = path.read_bytes()
    path.unlink()
    path.write_bytes(data[: len(data) // 2])


# --- issue 49: sizes, shapes and tokenizers that do not fit ------------------------------------------


def _rewrite_json(path: Path, **changes: object) -> None:
    data = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    data.update(changes)
    path.unlink(missing_ok=True)  # never write through a hard link to a fixture's file
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")


def craft_huge_config(folder: Path) -> None:
    """config.json's vocabulary raised to a billion: a model of 128 GB in float32, weights of 4 MB."""
    _rewrite_json(folder / "config.json", vocab_size=10**9)


def craft_many_layers(folder: Path) -> None:
    """config.json's layer count raised to 100,000 (transformers would build the layers for minutes)."""
    _rewrite_json(folder / "config.json", num_hidden_layers=100_000)


def craft_short_embeddings(folder: Path) -> None:
    """The backbone's weights with an embedding table of 30,000 rows where config.json says 30,522."""
    from safetensors.torch import load_file, save_file

    weights = folder / "model.safetensors"
    tensors = load_file(weights)
    name = next(n for n in tensors if n.endswith("word_embeddings.weight"))
    tensors[name] = tensors[name][:30_000].clone()
    weights.unlink()
    save_file(tensors, weights, metadata={"format": "pt"})


def craft_damaged_tokenizer(folder: Path) -> None:
    """tokenizer.json cut in half, as an interrupted copy leaves it."""
    craft_half_json(folder / "tokenizer.json")


def craft_token_past_embeddings(folder: Path) -> None:
    """An added token in tokenizer.json past the embedding table of 30,522 rows (saved as id 40,000; the
    tokenizers library numbers it 30,522, the first id after the vocabulary: past the table all the same)."""
    path = folder / "tokenizer.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    token = {"content": "[HOSTILE]", "single_word": False, "lstrip": False, "rstrip": False}
    data["added_tokens"].append({"id": 40_000, **token, "normalized": False, "special": True})
    path.unlink()
    path.write_text(json.dumps(data), encoding="utf-8")


def craft_tokenizer_outside(folder: Path) -> None:
    """sentence_bert_config.json's `tokenizer_name_or_path` naming a folder outside the model folder."""
    _rewrite_json(folder / "sentence_bert_config.json", tokenizer_name_or_path=str(folder.parent.resolve()))


CRAFTS = {
    "auto-map": craft_auto_map,
    "pickle-weights": craft_pickle_weights,
    "path-escape": craft_path_escape,
    "absolute-path": craft_absolute_path,
    "router-code": craft_router_code,
    "huge-config": craft_huge_config,
    "many-layers": craft_many_layers,
    "short-embeddings": craft_short_embeddings,
    "damaged-tokenizer": craft_damaged_tokenizer,
    "token-past-table": craft_token_past_embeddings,
    "tokenizer-outside": craft_tokenizer_outside,
}
# what the one error line says for each (a regex)
SAYS = {
    "auto-map": r"auto_map names code from the folder",
    "pickle-weights": r"weights stored as a pickle",
    "path-escape": r"leaves the model folder",
    "absolute-path": r"leaves the model folder",
    "router-code": r"outside lwap and sentence-transformers",
    "huge-config": r"config\.json: the model it describes .* more than the model limit "
    r".*LWAP_MAX_MODEL_BYTES",
    "many-layers": r"config\.json: does not fit its weights: .*layers 100,000",
    "short-embeddings": r"model\.safetensors: embeddings\.word_embeddings\.weight is 30,000 x 32, but .*"
    r"config\.json describes 30,522 x 32: the weights do not fit the config",
    "damaged-tokenizer": r"tokenizer\.json: damaged tokenizer file",
    "token-past-table": r"tokenizer\.json: token '\[HOSTILE\]' has id [\d,]+, outside the embedding table of "
    r"30,522 rows",
    "tokenizer-outside": r"tokenizer_name_or_path .* names a tokenizer outside the model folder",
}
