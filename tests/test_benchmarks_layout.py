"""benchmarks/ as docs/DEVELOPING.md describes it: folders named for why a script is rerun and no loose
script, one way for scripts to import each other, and every script path the tree names (docs, committed
results, model folders' SOURCE.md, code) either still there or a retired study's script, which
benchmarks/README.md names with the commit that still has it."""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

from conftest import REPO

from benchmarks.speed.speed_before_after import speed_script

SCRIPT_FOLDERS = ("speed", "baselines", "grid", "backbone", "owntask", "elastic")
BOOTSTRAP = (
    'if __package__ in (None, ""):  # run as a file: the repository root on sys.path, as `python -m` would\n'
    "    sys.path.insert(0, str(Path(__file__).resolve().parents[{}]))\n"
)
SKIPPED = {".git", ".venv", "outputs", "runs", "__pycache__", ".pytest_cache", ".ruff_cache", "build", "dist"}
TEXT = {".md", ".py", ".sh", ".json", ".yaml", ".toml", ".txt", ".csv"}
SCRIPT_PATH = re.compile(r"(?<![\w/.-])benchmarks/[\w./-]*?\.(?:py|sh)(?![\w-])")


def sources() -> list[Path]:
    return sorted((REPO / "benchmarks").rglob("*.py"))


def test_benchmarks_is_a_few_folders_and_no_loose_script() -> None:
    top = {p.name for p in (REPO / "benchmarks").iterdir() if p.name not in SKIPPED}
    assert top == {*SCRIPT_FOLDERS, "backbones", "results", "__init__.py", "README.md"}
    for folder in SCRIPT_FOLDERS:
        assert (REPO / "benchmarks" / folder / "__init__.py").is_file()
        assert (REPO / "benchmarks" / folder / "README.md").is_file()
    assert not [p for p in (REPO / "benchmarks" / "results").rglob("*") if p.suffix in (".py", ".sh")]


def test_a_script_run_as_a_file_starts_with_the_one_bootstrap_and_nothing_else_touches_sys_path() -> None:
    runnable = []
    for path in sources():
        text = path.read_text(encoding="utf-8")
        depth = len(path.relative_to(REPO).parts) - 1  # one folder down: the root is parents[2]
        if 'if __name__ == "__main__":' in text:
            runnable.append(path.name)
            assert BOOTSTRAP.format(depth) in text, path
            text = text.replace(BOOTSTRAP.format(depth), "")
        assert "sys.path.insert" not in text and "sys.path.append" not in text, path
        assert "spec_from_file_location" not in text, path
    assert {"compare_poolers.py", "speed.py", "gpu_speed.py", "pretrain_mlm.py"} <= set(runnable)
    for path in sorted((REPO / "tests").glob("*.py")):
        if path.name != Path(__file__).name:
            text = path.read_text(encoding="utf-8")
            assert "sys.path.insert" not in text and "spec_from_file_location" not in text, path


def test_scripts_import_each_other_only_as_absolute_benchmarks_modules() -> None:
    """No relative import, and no bare name of a sibling (`import gpu_section`, `from budget_probe ...`):
    that would work only with the script's own folder on sys.path, the way this layout replaced."""
    siblings = {p.stem for p in sources()} | {p.name for p in (REPO / "benchmarks").rglob("*") if p.is_dir()}
    for path in sources():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                assert node.level == 0, f"{path}: a relative import"
                names = [node.module or ""]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                assert name.split(".")[0] not in siblings, f"{path}: `{name}` is not benchmarks.<folder>.<x>"


RETIRED_AT = "06d4c1a"  # the last commit of the flat layout, which still has the retired scripts


def retired_scripts() -> set[str]:
    """The retired studies' scripts, as benchmarks/README.md lists them beside the commit that has them."""
    text = (REPO / "benchmarks" / "README.md").read_text(encoding="utf-8")
    section = text.split("## Retired studies", 1)[1].split("\n## ", 1)[0]
    assert f"**{RETIRED_AT}**" in section
    return {f"benchmarks/{name}" for name in re.findall(r"`([\w.-]+\.(?:py|sh))`", section)}


def test_every_script_path_named_in_the_tree_resolves_or_is_a_retired_script() -> None:
    """Committed results and model folders name the script they were made with by today's path; a
    retired study's script is one benchmarks/README.md lists. Anything else is a stale name."""
    retired = retired_scripts()
    stale = []
    for path in REPO.rglob("*"):
        relative = path.relative_to(REPO)
        if path.suffix not in TEXT or not path.is_file() or SKIPPED & set(relative.parts):
            continue
        if any(part.endswith(".egg-info") for part in relative.parts):
            continue
        for named in set(SCRIPT_PATH.findall(path.read_text(encoding="utf-8", errors="replace"))):
            if named not in retired and not (REPO / named).exists():
                stale.append(f"{relative}: {named}")
    assert not stale, "script paths that name nothing:\n" + "\n".join(sorted(stale))


def test_the_retired_scripts_are_gone_and_in_the_commit_the_readme_names() -> None:
    retired = retired_scripts()
    assert len(retired) == 9 and "benchmarks/train_compile.py" in retired
    assert not [name for name in retired if (REPO / name).exists()]
    known = subprocess.run(["git", "cat-file", "-e", f"{RETIRED_AT}^{{commit}}"], cwd=REPO).returncode == 0
    if not known:  # a shallow clone: the commit is not here to look in
        return
    for name in sorted(retired):
        where = f"{RETIRED_AT}:{name}"
        found = subprocess.run(["git", "cat-file", "-e", where], cwd=REPO, capture_output=True)
        assert found.returncode == 0, f"{name} is not in commit {RETIRED_AT}"


def test_speed_before_after_finds_speed_py_in_a_checkout_of_either_layout(tmp_path: Path) -> None:
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "speed.py").write_text("", encoding="utf-8")
    assert speed_script(tmp_path) == tmp_path / "benchmarks" / "speed.py"  # a checkout from before the move
    assert speed_script(REPO) == REPO / "benchmarks" / "speed" / "speed.py"


def test_no_source_file_is_over_600_lines() -> None:
    """The house's size rule (issue 47): a file past 600 lines is split by what its parts do."""
    rooms = ("lwap", "train", "eval", "compare", "benchmarks", "tests", "configs")
    files = [p for room in rooms for p in (REPO / room).rglob("*.py") if not SKIPPED & set(p.parts)]
    assert len(files) > 100
    lines = {str(p.relative_to(REPO)): len(p.read_text(encoding="utf-8").splitlines()) for p in files}
    assert not {name: n for name, n in lines.items() if n > 600}


def test_the_developers_layout_names_every_folder() -> None:
    """docs/DEVELOPING.md's Layout names every top-level folder and every folder of benchmarks/ (issue 47)."""
    text = (REPO / "docs" / "DEVELOPING.md").read_text(encoding="utf-8")
    layout = text.split("## Layout", 1)[1].split("\n## ", 1)[0]
    tracked = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True)
    folders = {tuple(line.split("/")[:2]) for line in tracked.stdout.splitlines() if "/" in line}
    top = {first for first, _ in folders if not first.startswith(".")}
    benchmarks = REPO / "benchmarks"
    inside = {name for first, name in folders if first == "benchmarks" and (benchmarks / name).is_dir()}
    assert {"lwap", "train", "eval", "compare", "configs", "tests", "benchmarks"} <= top
    assert not [name for name in sorted(top | inside) if f"`{name}/`" not in layout]
