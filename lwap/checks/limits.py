"""How large each kind of thing lwap reads may be: one table, and one way to raise a limit.

Every file lwap reads may be damaged or hostile (docs/RELIABILITY.md, "Bounded reading"): a JSON file
that is /dev/zero, one line of 6 GiB in a gzipped data file, a config.json describing a model of a
trillion parameters. Each kind has a limit in bytes, checked before the bytes are read (or the model
built), with a default that fits every real file by a wide margin. A user with a reason raises it with
the environment variable the refusal names: `LWAP_MAX_JSON_BYTES=100000000 lwap eval ...`.

Environment variables rather than config keys or flags: the same limit holds for every command and
for the library (`lwap.load_model` has no config), and a limit is a property of the machine and the
user's files, not of one experiment.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from lwap.errors import ConfigError

MiB = 2**20
GiB = 2**30


@dataclass(frozen=True)
class Limit:
    """The most bytes one kind of input may have; `variable` (an environment variable) raises it."""

    what: str  # how the refusal names the kind, e.g. "JSON file"
    variable: str
    default: int

    def value(self) -> int:
        """The limit in force: the variable if set (read at each check: a test or a user may set it
        late), else the default. ConfigError if the variable is not a positive whole number of bytes."""
        text = os.environ.get(self.variable, "").strip()
        if not text:
            return self.default
        try:
            value = int(text.replace("_", ""))
        except ValueError:
            value = 0
        if value < 1:
            raise ConfigError(
                f"{self.variable}={text!r}: expected a positive number of bytes (default {self.default})"
            )
        return value

    def refusal(self, label: str, size: int, unit: str = "bytes") -> str:
        """The one-line message for `label` of `size` past the limit: names the limit and how to raise it."""
        return (
            f"{label}: {size:,} {unit}, more than the {self.what} limit of {self.value():,} bytes "
            f"(set {self.variable} to raise it, if the file is meant to be this large)"
        )


# whole files lwap parses in memory (cells, summaries, results, manifests, modules.json, config.json,
# trainer_state.json, tokenizer_config.json): a 16 MiB JSON file parses in well under 1 GiB
JSON_FILE = Limit("JSON file", "LWAP_MAX_JSON_BYTES", 16 * MiB)
# training configs (a complete one is about 3 KB)
YAML_FILE = Limit("YAML file", "LWAP_MAX_YAML_BYTES", MiB)
# metrics.csv of a run, read back by `lwap card` (100,000 logged steps are about 5 MiB)
CSV_FILE = Limit("CSV file", "LWAP_MAX_CSV_BYTES", 16 * MiB)
# one line of a data file (training data, evaluation data, `lwap encode` input, a JSON line): read
# with this bound, so an enormous line costs the bound, not the line
LINE = Limit("line", "LWAP_MAX_LINE_BYTES", MiB)
# all of `lwap encode --input -`: standard input is spooled to a temporary file (TMPDIR) so its lines can be
# counted before the .npy is written; this bounds what the spool may take of that disk
STANDARD_INPUT = Limit("standard input", "LWAP_MAX_STDIN_BYTES", 8 * GiB)
# tokenizer.json, vocab.txt, merges.txt, sentencepiece models in a model folder (the largest common
# tokenizers, multilingual ones, are about 35 MiB)
TOKENIZER_FILE = Limit("tokenizer file", "LWAP_MAX_TOKENIZER_BYTES", 128 * MiB)
# the model a backbone's config.json describes, in float32 bytes (4 per parameter), and its weights
MODEL = Limit("model", "LWAP_MAX_MODEL_BYTES", 32 * GiB)

LIMITS = (JSON_FILE, YAML_FILE, CSV_FILE, LINE, STANDARD_INPUT, TOKENIZER_FILE, MODEL)

# not bytes and not raisable: how many values the aliases of one YAML document may expand to (an alias
# bomb of ten nested aliases nine times each is 3.5 billion; a complete training config is about 120)
YAML_EXPANDED_VALUES = 100_000
