"""Prints the include folders of the nvidia-cuda-cupti / nvidia-cuda-runtime wheels, if any.

Used by CMake when no CUDA toolkit is installed, so `pip install .` builds the CUPTI backend
from headers that the wheels ship.
"""
import importlib.util
import os

dirs = []
for mod in ("nvidia.cuda_cupti", "nvidia.cuda_runtime", "nvidia.cu13", "nvidia"):
    try:
        spec = importlib.util.find_spec(mod)
    except (ImportError, ValueError):
        continue
    if spec is None or not spec.submodule_search_locations:
        continue
    for base in spec.submodule_search_locations:
        for root, _, files in os.walk(base):
            if "cupti.h" in files or "cuda.h" in files:
                if root not in dirs:
                    dirs.append(root)
print(";".join(dirs))
