"""Prints the include folders of the nvidia-cuda-cupti / nvidia-cuda-runtime wheels, if any.

Used by CMake when no CUDA toolkit is installed, so `pip install .` builds the CUPTI backend
from headers that the wheels ship (CUDA 13 wheels: nvidia/cu13/include; CUDA 12 wheels:
nvidia/cuda_cupti/include and nvidia/cuda_runtime/include).
"""
import os
import sys

CANDIDATES = ("nvidia/cu13/include", "nvidia/cuda_cupti/include", "nvidia/cuda_runtime/include")

found = []
for entry in sys.path:
    for rel in CANDIDATES:
        path = os.path.join(entry or ".", rel)
        has_header = any(os.path.isfile(os.path.join(path, h)) for h in ("cupti.h", "cuda.h"))
        if has_header and path not in found:
            found.append(path)
print(";".join(found))
