"""Model folders crafted the ways issue 39 lists: a payload that must never run, weights as a pickle, module
paths out of the folder, a Router routing to the folder's own code, half a JSON file. Shared by
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


CRAFTS = {
    "auto-map": craft_auto_map,
    "pickle-weights": craft_pickle_weights,
    "path-escape": craft_path_escape,
    "absolute-path": craft_absolute_path,
    "router-code": craft_router_code,
}
# what the one error line says for each (a regex)
SAYS = {
    "auto-map": r"auto_map names code from the folder",
    "pickle-weights": r"weights stored as a pickle",
    "path-escape": r"leaves the model folder",
    "absolute-path": r"leaves the model folder",
    "router-code": r"outside lwap and sentence-transformers",
}
