"""The two worker processes ("plain", "levers") that build and run the variants, and the parent's side."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.speed.speedbench.profiling import profile_variant
from benchmarks.speed.speedbench.settings import TRAIN_SENTENCES, read_sentences
from benchmarks.speed.speedbench.variants import Built, Variant


def worker(conn: Any, variants: list[Variant], threads: int, keep_memory: bool) -> None:
    """A worker process: builds its variants lazily and answers ("run", key, n) / ("profile", key, n)."""
    import traceback

    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if keep_memory:
        from lwap.train.allocator import keep_freed_memory

        keep_freed_memory()
    import torch
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    torch.set_num_threads(threads)
    workdir = Path(tempfile.mkdtemp(prefix="lwap-speed-"))
    texts = read_sentences(TRAIN_SENTENCES)
    built = {v.key: Built(v, texts, workdir, threads) for v in variants}
    try:
        while True:
            command, key, n, seed = conn.recv()
            try:
                if command == "run":
                    steps = built[key].run(n, seed).steps
                    conn.send(("ok", ([(s.seconds, s.forwards) for s in steps], vars(built[key].shapes))))
                elif command == "profile":
                    conn.send(("ok", profile_variant(built[key], n)))
                else:
                    conn.send(("ok", None))
                    return
            except Exception:
                conn.send(("error", traceback.format_exc()))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


class Workers:
    """The two worker processes ("plain", "levers") and a blocking call into either."""

    def __init__(self, variants: list[Variant], threads: int) -> None:
        import multiprocessing

        context = multiprocessing.get_context("spawn")
        self.conns, self.processes = {}, []
        for name in ("plain", "levers"):
            mine = [v for v in variants if v.process == name]
            if not mine:
                continue
            parent, child = context.Pipe()
            process = context.Process(target=worker, args=(child, mine, threads, name == "levers"))
            process.start()
            self.conns[name] = parent
            self.processes.append(process)

    def call(self, variant: Variant, command: str, n: int, seed: int = 0) -> Any:
        conn = self.conns[variant.process]
        conn.send((command, variant.key, n, seed))
        status, payload = conn.recv()
        if status != "ok":
            raise RuntimeError(f"{variant.key}: worker failed:\n{payload}")
        return payload

    def close(self) -> None:
        for conn in self.conns.values():
            conn.send(("close", "", 0, 0))
            conn.recv()
        for process in self.processes:
            process.join(timeout=60)
