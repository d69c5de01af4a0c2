"""Where NVIDIA's CUDA wheels are, for llama.cpp's CUDA module and ONNX Runtime's CUDA provider.

``pip install ingle[cuda]`` brings CUDA's runtime and cuBLAS as NVIDIA's wheels
(``nvidia-cuda-runtime``, ``nvidia-cublas``: CUDA 13, whose compiler built the module), with
cuRAND, cuFFT, NVRTC and cuDNN for ONNX Runtime's GPU build, which put their libraries in
``site-packages/nvidia/cu13/lib`` and ``nvidia/cudnn/lib`` (CUDA 12's: ``nvidia/*/lib``),
directories the dynamic loader does not search. ingle loads them itself before the CUDA module
(core/src/backends/llama/gpu.rs) and the CUDA provider (core/src/backends/onnx/cuda.rs) from the
directories named in
``INGLE_CUDA_PATH``; this adds the wheels' directories to it, as PyTorch and onnxruntime-gpu find
the same wheels. Without them nothing changes: a system CUDA is used where there is one, else the
CUDA module is skipped and a GPU is used through Vulkan, or none.
"""

import importlib
import os
from typing import List


def _wheel_library_dirs() -> List[str]:
    try:
        # A namespace package: one entry per site-packages that has NVIDIA wheels. Imported by
        # name: it is optional (`ingle[cuda]`) and has no type information.
        nvidia = importlib.import_module("nvidia")
    except ImportError:
        return []
    dirs: List[str] = []
    for root in getattr(nvidia, "__path__", []):
        # CUDA 13's wheels share nvidia/cu13/lib; CUDA 12's and cuDNN have one directory each.
        for part in ("cu13", "cuda_runtime", "cublas", "cudnn"):
            lib = os.path.join(root, part, "lib")
            if os.path.isdir(lib):
                dirs.append(lib)
    return dirs


def add_to_search_path() -> None:
    dirs = _wheel_library_dirs()
    if not dirs:
        return
    given = [d for d in os.environ.get("INGLE_CUDA_PATH", "").split(os.pathsep) if d]
    os.environ["INGLE_CUDA_PATH"] = os.pathsep.join(given + [d for d in dirs if d not in given])

