"""YAML as lwap reads it: the safe loader (no Python tags), errors naming the file and line, and aliases
bounded.

An alias bomb (ten anchors, each a list of nine aliases of the one before) is a few hundred bytes that
PyYAML builds in microseconds, as shared lists; but any walk over the value, such as the config check
printing it in an error message, visits 3.5 billion items and never ends while memory climbs. So the
document is composed into nodes first, the values its aliases expand to are counted on that graph (each
node once), and only a document under lwap.checks.limits.YAML_EXPANDED_VALUES is built. Aliases
themselves stay allowed: a config may share a list.
"""

from __future__ import annotations

from typing import Any

from lwap.checks.limits import YAML_EXPANDED_VALUES
from lwap.errors import DataError


class AliasError(DataError):
    """Aliases that expand past the bound, or contain themselves (invalid YAML is a plain DataError)."""


def parse_yaml(text: str, label: str) -> Any:
    """The YAML value of `text` (safe loader: no Python tags); DataError `LABEL: line L: invalid YAML
    (...)` otherwise, and for aliases that expand to more than lwap.checks.limits.YAML_EXPANDED_VALUES values
    (the module docstring says why) or that contain themselves. Used for config files (`lwap.checks.files.
    read_yaml`) and `--set` values alike.
    """
    import yaml

    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_aliases(node, label)
        return loader.construct_document(node)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f": line {mark.line + 1}" if mark is not None else ""
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise DataError(f"{label}{where}: invalid YAML ({problem})") from None
    except RecursionError:
        raise DataError(f"{label}: invalid YAML (nested too deeply)") from None
    finally:
        loader.dispose()


def _check_aliases(root: Any, label: str) -> None:
    """DataError if the YAML node graph under `root` expands to more than YAML_EXPANDED_VALUES values
    or an alias contains itself. Counted bottom-up with each node's count kept, so a graph of a few
    hundred nodes that expands to billions costs a few hundred steps."""
    import yaml

    counts: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        if id(node) in counts:
            continue
        if isinstance(node, yaml.ScalarNode):
            counts[id(node)] = 1
            continue
        if isinstance(node, yaml.MappingNode):
            children = [part for pair in node.value for part in pair]
        else:
            children = list(node.value)
        if children_done:
            open_nodes.discard(id(node))
            counts[id(node)] = 1 + sum(counts[id(child)] for child in children)
            if counts[id(node)] > YAML_EXPANDED_VALUES:
                line = node.start_mark.line + 1
                raise AliasError(
                    f"{label}: line {line}: YAML aliases expand to more than {YAML_EXPANDED_VALUES:,} "
                    "values (an alias bomb?); write the values out"
                )
            continue
        if id(node) in open_nodes:
            raise AliasError(f"{label}: line {node.start_mark.line + 1}: a YAML alias that contains itself")
        open_nodes.add(id(node))
        stack.append((node, True))
        stack += [(child, False) for child in children if id(child) not in counts]
        for child in children:
            if id(child) in open_nodes:
                raise AliasError(
                    f"{label}: line {child.start_mark.line + 1}: a YAML alias that contains itself"
                )
