"""`lwap encode` and `lwap.encoding` on the tiny random BERT, and the README's example input on the
packaged all-MiniLM-L6-v2."""

from __future__ import annotations

import gzip
import subprocess
import sys

import numpy as np
import pytest
from conftest import REPO, SENTENCES

from lwap import build_model
from lwap.cli import main
from lwap.encoding import encode
from lwap.errors import InputError


@pytest.fixture(scope="module")
def saved_lwap(tiny_bert, tmp_path_factory):
    folder = tmp_path_factory.mktemp("encode") / "lwap-tiny"
    build_model(str(tiny_bert), "lwap").save(str(folder))
    return folder


def test_encode_file_matches_library_encode(saved_lwap, tmp_path, capsys) -> None:
    text = tmp_path / "in.txt"
    text.write_text("\n".join(SENTENCES) + "\n", encoding="utf-8")
    out = tmp_path / "out.npy"
    assert main(["encode", str(saved_lwap), "--input", str(text), "--output", str(out), "--no-progress"]) == 0
    assert "wrote 4 x 32" in capsys.readouterr().out
    from lwap import load_model

    expected = load_model(saved_lwap).encode(SENTENCES)
    np.testing.assert_allclose(np.load(out), expected, atol=1e-6)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.txt", "out.npy"]  # no temporary file left


def test_encode_small_chunks_keep_line_order(saved_lwap, tmp_path) -> None:
    from lwap import load_model
    from lwap.encoding import encode_file

    model = load_model(saved_lwap)
    lines = [f"sentence number {i} " + "word " * (i % 7) for i in range(23)]
    lines[11] = ""  # an empty line still gets its row
    (tmp_path / "in.txt").write_text("\n".join(lines), encoding="utf-8")  # no final newline
    out = str(tmp_path / "o.npy")
    rows = encode_file(model, str(tmp_path / "in.txt"), out, chunk_lines=5, show_progress_bar=False)
    assert rows == 23
    np.testing.assert_allclose(np.load(tmp_path / "o.npy"), model.encode(lines), atol=1e-5)
    (tmp_path / "in.txt.gz").write_bytes(gzip.compress((tmp_path / "in.txt").read_bytes()))
    assert encode_file(model, str(tmp_path / "in.txt.gz"), out, chunk_lines=5, show_progress_bar=False) == 23
    np.testing.assert_allclose(np.load(tmp_path / "o.npy"), model.encode(lines), atol=1e-5)


def test_encode_normalize_and_bf16(saved_lwap) -> None:
    from lwap import load_model

    model = load_model(saved_lwap)
    unit = encode(model, SENTENCES, normalize=True)
    np.testing.assert_allclose(np.linalg.norm(unit, axis=1), 1.0, atol=1e-5)
    bf16 = encode(model, SENTENCES, precision="bf16")
    fp32 = encode(model, SENTENCES)
    assert bf16.dtype == np.float32
    cosine = (bf16 * fp32).sum(1) / np.linalg.norm(bf16, axis=1) / np.linalg.norm(fp32, axis=1)
    assert cosine.min() > 0.99


def test_encode_input_errors(saved_lwap) -> None:
    from lwap import load_model

    model = load_model(saved_lwap)
    assert encode(model, []).shape == (0, 32)
    with pytest.raises(InputError, match="sentence 1 is NoneType"):
        encode(model, ["ok", None])


def test_cli_user_errors_exit_2_with_one_line(tmp_path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "lwap",
            "encode",
            str(tmp_path / "missing"),
            "--input",
            "-",
            "--output",
            "x.npy",
        ],
        capture_output=True,
        text=True,
        input="",
    )
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0
    assert "does not exist" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.slow
def test_cli_stdin_and_invalid_utf8(saved_lwap, tmp_path) -> None:
    out = tmp_path / "s.npy"
    ok = subprocess.run(
        [
            sys.executable,
            "-m",
            "lwap",
            "encode",
            str(saved_lwap),
            "--input",
            "-",
            "--output",
            str(out),
            "--no-progress",
        ],
        input="one\ntwo\n",
        capture_output=True,
        text=True,
    )
    assert ok.returncode == 0, ok.stderr
    assert np.load(out).shape == (2, 32)
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"fine\n\xff\xfe broken\n")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "lwap",
            "encode",
            str(saved_lwap),
            "--input",
            str(bad),
            "--output",
            str(tmp_path / "b.npy"),
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2 and "line 2 is not valid UTF-8" in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.txt", "s.npy"]  # no b.npy, nor a partial one


DISK_LIMIT_DRIVER = """
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit fail with EFBIG instead of killing
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))  # no file may grow past 4 KiB: a full disk
from lwap.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.slow
def test_disk_full_is_one_line_and_leaves_no_partial_file(saved_lwap, tmp_path) -> None:
    text = tmp_path / "in.txt"
    text.write_text("\n".join(f"sentence {i}" for i in range(200)) + "\n", encoding="utf-8")
    out = tmp_path / "full.npy"
    command = ["encode", str(saved_lwap), "--input", str(text), "--output", str(out), "--no-progress"]
    result = subprocess.run(
        [sys.executable, "-c", DISK_LIMIT_DRIVER, *command, "--batch-size", "16"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2, result.stderr
    assert "cannot write embeddings" in result.stderr and "Traceback" not in result.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["in.txt"]  # neither full.npy nor a partial one


def test_the_readmes_example_sentences_encode_with_the_packaged_backbone(tmp_path, capsys) -> None:
    """README's Encode example reads examples/sentences.txt: ten rows, and each of its four paraphrase
    pairs (lines 1-2, 3-4, 5-6, 7-8) is the other's nearest neighbour under the packaged all-MiniLM-L6-v2."""
    sentences = REPO / "examples" / "sentences.txt"
    assert f"--input {sentences.relative_to(REPO)}" in (REPO / "README.md").read_text(encoding="utf-8")
    out = tmp_path / "embeddings.npy"
    backbone = "sentence-transformers/all-MiniLM-L6-v2"
    command = [
        "encode",
        backbone,
        "--input",
        str(sentences),
        "--output",
        str(out),
        "--normalize",
        "--no-progress",
    ]
    assert main(command) == 0
    assert f"wrote 10 x 384 embeddings to {out}" in capsys.readouterr().out
    embeddings = np.load(out)
    similarity = embeddings @ embeddings.T
    np.fill_diagonal(similarity, -1.0)
    nearest = similarity.argmax(axis=1)
    assert nearest[:8].tolist() == [1, 0, 3, 2, 5, 4, 7, 6]


@pytest.mark.slow
@pytest.mark.parametrize(("signame", "code"), [("SIGTERM", 143), ("SIGHUP", 129)])
def test_a_signal_mid_encode_cleans_up_like_ctrl_c(saved_lwap, tmp_path, signame, code) -> None:
    """Issue 65: what a scheduler sends (SIGTERM) or a closed terminal (SIGHUP) ends `lwap encode` as
    Ctrl-C does: no partial .npy, no spooled standard input left, one line, exit 128 + the signal."""
    import os
    import signal
    import time

    spool, out = tmp_path / "tmp", tmp_path / "out"
    spool.mkdir()
    out.mkdir()
    command = [sys.executable, "-m", "lwap", "encode", str(saved_lwap), "--input", "-"]
    command += ["--output", str(out / "e.npy"), "--no-progress", "--batch-size", "1"]
    env = {**os.environ, "TMPDIR": str(spool), "HF_HUB_OFFLINE": "1"}
    process = subprocess.Popen(
        command, stdin=subprocess.PIPE, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, env=env, text=True
    )
    process.stdin.write("a sentence\n" * 20)  # stdin left open: lwap is spooling it when the signal comes
    process.stdin.flush()
    deadline = time.monotonic() + 120
    while not any(spool.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert any(spool.iterdir()), "lwap never started spooling standard input"
    process.send_signal(getattr(signal, signame))
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == code, stderr
    assert stderr.strip() == f"lwap encode: stopped by {signame}"
    assert not any(spool.iterdir()) and not any(out.iterdir())
