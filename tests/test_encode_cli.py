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


def encode_stdin(model, out, tmp, env: dict[str, str]) -> subprocess.Popen:
    """`lwap encode --input -` in a process of its own, spooling into `tmp` (TMPDIR)."""
    import os

    command = [sys.executable, "-m", "lwap", "encode", str(model), "--input", "-", "--output", str(out)]
    return subprocess.Popen(
        [*command, "--no-progress"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "TMPDIR": str(tmp), "HF_HUB_OFFLINE": "1", **env},
    )


def feed(process: subprocess.Popen, chunks) -> tuple[int, str]:
    """Write `chunks` to the process's standard input until it stops reading, and wait for it to end:
    (the bytes it took, its standard error)."""
    import contextlib

    written = 0
    with contextlib.suppress(BrokenPipeError):
        for chunk in chunks:
            process.stdin.write(chunk)
            written += len(chunk)
    with contextlib.suppress(BrokenPipeError):
        process.stdin.close()
    stderr = process.stderr.read().decode()
    process.wait(timeout=300)
    return written, stderr


@pytest.mark.slow
def test_standard_input_is_read_under_the_line_limit_not_spooled_whole_first(saved_lwap, tmp_path) -> None:
    """Issue 65: one 256 MiB line on standard input is refused once the line bound (1 MiB) is read: lwap
    stops reading (the writer's pipe breaks) instead of first copying all of it to a temporary file."""
    tmp, out = tmp_path / "tmp", tmp_path / "e.npy"
    tmp.mkdir()
    process = encode_stdin(saved_lwap, out, tmp, {})
    written, stderr = feed(process, [b"a fine line\n", *(b"x" * 2**20 for _ in range(256))])
    assert process.returncode == 2, stderr
    assert stderr.strip() == (
        "lwap encode: error: standard input:2: the line is longer than the line limit of 1,048,576 bytes "
        "(set LWAP_MAX_LINE_BYTES to raise it, if the file is meant to have lines this long)"
    )
    assert written < 128 * 2**20, "standard input was read on past the refused line"
    assert not any(tmp.iterdir()) and not out.exists()


@pytest.mark.slow
def test_standard_input_past_its_size_limit_is_one_line(saved_lwap, tmp_path) -> None:
    tmp, out = tmp_path / "tmp", tmp_path / "e.npy"
    tmp.mkdir()
    process = encode_stdin(saved_lwap, out, tmp, {"LWAP_MAX_STDIN_BYTES": "1000"})
    _, stderr = feed(process, [b"sentence %03d of twenty\n" % i for i in range(100)])  # 23 bytes a line
    assert process.returncode == 2, stderr
    assert stderr.strip() == (
        "lwap encode: error: standard input: 1,012 bytes or more, more than the standard input limit of "
        "1,000 bytes (set LWAP_MAX_STDIN_BYTES to raise it, if the file is meant to be this large)"
    )
    assert not any(tmp.iterdir()) and not out.exists()
    within = encode_stdin(saved_lwap, out, tmp, {"LWAP_MAX_STDIN_BYTES": "1012"})
    feed(within, [b"sentence %03d of twenty\n" % i for i in range(44)])
    assert within.returncode == 0 and np.load(out).shape == (44, 32)
    assert not any(tmp.iterdir())


@pytest.mark.slow
def test_a_full_spool_folder_is_one_line_and_leaves_no_spool(saved_lwap, tmp_path) -> None:
    """Standard input spooled onto a real full disk: a 64 KiB tmpfs as TMPDIR (root only, else skipped)."""
    tmp, out = tmp_path / "tmp", tmp_path / "e.npy"
    tmp.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(tmp)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({mounted.stderr.decode().strip()})")
    try:
        process = encode_stdin(saved_lwap, out, tmp, {})
        _, stderr = feed(process, [b"a sentence that fills the disk\n" * 1000 for _ in range(10)])  # 310 KB
        assert process.returncode == 2, stderr
        assert stderr.strip() == (
            f"lwap encode: error: standard input: cannot spool it to {tmp} (No space left on device); set "
            "TMPDIR to a folder with room, or give --input a file"
        )
        assert not any(tmp.iterdir()) and not out.exists()
    finally:
        subprocess.run(["umount", "-l", str(tmp)], check=False)
