"""Keep freed tensor memory in the process (glibc malloc), instead of handing it back to the OS every step.

glibc serves every allocation above 32 MiB with a fresh mmap and unmaps it on free. A training step of
all-MiniLM-L6-v2 allocates at least one such block per backward pass: the dense gradient of the 30522×384
word-embedding table (47 MB), created zero-filled by the embedding backward. Fresh pages fault in on first
touch, so that zero fill alone costs a good part of a step (docs/BENCHMARKS.md), and smaller blocks suffer
the same when the heap top is trimmed between steps. Switching mmap off (M_MMAP_MAX = 0) and raising the trim
threshold makes freed blocks reusable at memory speed. Results are unchanged (only where memory comes
from); the cost is that the process keeps its peak memory until it exits.

PyTorch has no CPU caching allocator to switch on instead; jemalloc/tcmalloc via LD_PRELOAD do the same job
but must be installed and set before Python starts, while `mallopt` works from inside `lwap train`.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import platform

M_TRIM_THRESHOLD = -1  # from glibc's malloc.h
M_MMAP_MAX = -4


def keep_freed_memory() -> bool:
    """Configure glibc malloc as described above; False (and nothing changed) where it is not glibc."""
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        libc = ctypes.CDLL(name)
        return bool(libc.mallopt(M_MMAP_MAX, 0)) and bool(libc.mallopt(M_TRIM_THRESHOLD, 2**31 - 1))
    except (OSError, AttributeError):
        return False
