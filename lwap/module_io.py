"""The save/load base of lwap's sentence-transformers modules: JSON config + safetensors, never pickle.

`Module.load_torch_weights` falls back to `pytorch_model.bin` (a pickle) when no safetensors file is
found; lwap's modules refuse that path instead, so a tampered folder cannot run code on load.
Modules without parameters write only their config.
Each save also copies the module's code into the model folder's root (lwap.portable says why), so a folder
saved anywhere, by lwap or by sentence-transformers alone after loading it with `trust_remote_code=True`,
carries it. Imports only what sentence-transformers brings, since this file is one of those copies; so its
error is a plain FileNotFoundError (lwap.load_model reports it as a ModelLoadError).
"""

from __future__ import annotations

import inspect
import os
import shutil
from pathlib import Path
from typing import Any, TypeVar

from safetensors.torch import load_model, save_model
from sentence_transformers.sentence_transformer.modules import Module
from transformers.dynamic_module_utils import get_relative_import_files

from .worker_pickling import keep_hidden_states_in_workers

M = TypeVar("M", bound="SafetensorsModule")
WEIGHTS_FILE = "model.safetensors"
_HUB_KEYS = ("token", "cache_folder", "revision", "local_files_only")


class SafetensorsModule(Module):
    """A module saved as its `config_keys` (JSON) and its parameters (safetensors only)."""

    def save(self, output_path: str, *args: Any, **kwargs: Any) -> None:
        self.save_config(output_path)
        if any(True for _ in self.parameters()):
            save_model(self, os.path.join(output_path, WEIGHTS_FILE))
        folder = Path(output_path).resolve()
        if folder.name.endswith(f"_{type(self).__name__}"):  # sentence-transformers' ROOT/i_Name folders
            code = inspect.getfile(type(self))
            for source in (code, *get_relative_import_files(code)):
                shutil.copyfile(source, folder.parent / Path(source).name)

    @classmethod
    def load(cls: type[M], model_name_or_path: str, subfolder: str = "", **kwargs: Any) -> M:
        hub_kwargs = {key: kwargs[key] for key in _HUB_KEYS if key in kwargs}
        module = cls(**cls.load_config(model_name_or_path, subfolder=subfolder, **hub_kwargs))
        if not any(True for _ in module.parameters()):
            return module
        weights = cls.load_file_path(model_name_or_path, WEIGHTS_FILE, subfolder=subfolder, **hub_kwargs)
        if weights is None:
            raise FileNotFoundError(
                f"{model_name_or_path}/{subfolder}: no {WEIGHTS_FILE} (lwap loads safetensors only)"
            )
        load_model(module, weights, strict=True)
        return module

    def on_model_ready(self, model: Any) -> None:
        """sentence-transformers calls this once the model is built or loaded (multi-process encoding)."""
        keep_hidden_states_in_workers(model)
