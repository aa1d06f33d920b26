"""Where each data file comes from: the data mirror, the sample packaged with lwap, or the Hugging Face hub.

A file the code names by its path in the mirror (e.g. `stsb/senteval-tokenized/sts-dev.csv`) is read from

1. the data mirror (`$LWAP_DATA_DIR`, `lwap.paths`) when it holds the file;
2. else the sample packaged with lwap (`lwap/sample_data/`), when it holds all of the file or, for a
   training file, at least the first lines a config asks for; so the quick start runs from the package
   alone;
3. else the Hugging Face hub, for users online: the file's hub copy (`hf_hub_download`, or the
   `datasets` cache), which a cached earlier download also serves offline;
4. else one `DataError` line naming what is missing and both ways to provide it (the mirror, or the hub).

Hub downloads go through huggingface_hub / datasets, which write to a temporary name and rename when
complete, so a failed download leaves nothing half-written; offline, nothing is attempted.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

from lwap.errors import DataError
from lwap.paths import DATA_DIR_VARIABLE, describe_data_dir, expand_data_path, find_data_dir, mirror_relative

OFFLINE_VARIABLES = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")


@dataclass(frozen=True)
class PackagedSample:
    """A file under lwap/sample_data that holds a mirror file, or its first `lines` lines."""

    file: str
    lines: int | None = None  # None: the complete mirror file
    description: str = ""


@dataclass(frozen=True)
class HubFile:
    """A file of a hub dataset repository that can stand in for a mirror file."""

    repo_id: str
    filename: str
    difference: str = ""  # how it differs from the mirror's file (said when it is used)

    def __str__(self) -> str:
        return f"{self.repo_id}/{self.filename}"


# mirror path -> what lwap ships (lwap/sample_data/*/SOURCE.md give source and license)
PACKAGED_SAMPLES: dict[str, PackagedSample] = {
    "wiki/wiki_sentences_1m.txt.gz": PackagedSample(
        "wiki/wiki_sentences_16k.txt.gz", 16_000, "its first 16,000 sentences"
    ),
    "stsb/senteval-tokenized/sts-dev.csv": PackagedSample(
        "stsb/senteval-tokenized/sts-dev.csv.gz", None, "STS-B dev, complete"
    ),
}
# mirror path of a training file -> its hub copy (the one the paper configs name)
HUB_TRAINING_FILES: dict[str, HubFile] = {
    "wiki/wiki_sentences_1m.txt.gz": HubFile(
        "princeton-nlp/datasets-for-simcse",
        "wiki1m_for_simcse.txt",
        "SimCSE's original wiki1m, which the mirror's file stands in for: other sentences, other figures",
    ),
}
_said: set[str] = set()


def sample_folder() -> Path:
    """lwap/sample_data of the installed package (a plain folder: lwap is never imported from a zip)."""
    return Path(__file__).resolve().parent / "sample_data"


def hub_offline() -> bool:
    """Whether the user has switched the hub off (then only cached hub copies can serve)."""
    return any(os.environ.get(v, "").strip().lower() in ("1", "true", "yes", "on") for v in OFFLINE_VARIABLES)


def note(message: str) -> None:
    """Say once per process what the user should know that is no error (stderr: stdout stays data): where
    data comes from when it is not the mirror, a config key that loads but is retired or unused."""
    if message not in _said:
        _said.add(message)
        print(f"lwap: {message}", file=sys.stderr, flush=True)


def local_file(relative: str, first_lines: int | None = None) -> Path | None:
    """The mirror's `relative` file, else the packaged sample of it, else None.

    `first_lines`: the reader uses only that many lines (a training file with `max_examples`), so a sample
    of the file's first lines serves; None = the whole file is needed.
    """
    mirror = find_data_dir()
    if mirror is not None and (mirror / relative).exists():
        return mirror / relative
    sample = PACKAGED_SAMPLES.get(relative)
    if sample is None:
        return None
    covers = sample.lines is None or (first_lines is not None and first_lines <= sample.lines)
    path = sample_folder() / sample.file
    if not covers or not path.is_file():
        return None
    where = "the data mirror has no copy" if mirror is not None else describe_data_dir()
    note(f"{relative}: using the sample packaged with lwap ({sample.description}; {where})")
    return path


def missing_error(what: str, relative: str, hub: str | None, failure: str | None = None) -> DataError:
    """One line: `what` is in neither the mirror nor the package, and how to provide it."""
    where = f"{what} ({relative}) is in neither the data mirror ({describe_data_dir()}) nor the lwap package"
    mirror = f"set {DATA_DIR_VARIABLE} to the data mirror"
    if hub is None:
        return DataError(f"{where}, and has no copy on the Hugging Face hub: {mirror}")
    if hub_offline():
        return DataError(
            f"{where}, and the Hugging Face hub is offline (HF_HUB_OFFLINE=1) with no cached copy of {hub}: "
            f"{mirror}, or go online (unset HF_HUB_OFFLINE) to download {hub}"
        )
    return DataError(
        f"{where}, and reading {hub} from the Hugging Face hub failed ({failure}): {mirror}, "
        "or check the connection to the hub"
    )


def first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def hub_file(source: HubFile, *, what: str, relative: str) -> Path:
    """Download (or find in the hub cache) one file of a hub dataset; `missing_error` if that fails."""
    from huggingface_hub import hf_hub_download

    if not hub_offline():
        note(f"{what}: {relative} is not in the data mirror or the package; reading {source} from the hub")
    try:
        path = Path(hf_hub_download(source.repo_id, source.filename, repo_type="dataset"))
    except Exception as error:  # offline, not found, network, auth: huggingface_hub raises many types
        raise missing_error(what, relative, str(source), first_line(error)) from None
    if source.difference:
        note(f"{what}: {source} is {source.difference}")
    return path


def training_file(value: str, max_examples: int | None) -> Path:
    """The file a config's `data.train` names: `$LWAP_DATA_DIR/...` through the fallbacks, else as written."""
    relative = mirror_relative(value)
    if relative is None:
        return expand_data_path(value)
    found = local_file(relative, first_lines=max_examples)
    if found is not None:
        return found
    hub = HUB_TRAINING_FILES.get(relative)
    if hub is None:
        raise missing_error("training data (data.train)", relative, None)
    return hub_file(hub, what="training data (data.train)", relative=relative)
