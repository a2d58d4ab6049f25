"""How fast strided device-to-host copies of narrow rows are (the instrumentation copy-back's
shape: a few dozen bytes from each CTA's slice), against one contiguous copy of the same
slices. Needs a GPU and torch (for memory); drives cuMemcpy2DAsync through ctypes.

    python bench/probes/copy2d_probe.py
"""

import ctypes
import json
import time

import torch


class Memcpy2D(ctypes.Structure):
    _fields_ = [("srcXInBytes", ctypes.c_size_t), ("srcY", ctypes.c_size_t),
                ("srcMemoryType", ctypes.c_int), ("srcHost", ctypes.c_void_p),
                ("srcDevice", ctypes.c_uint64), ("srcArray", ctypes.c_void_p),
                ("srcPitch", ctypes.c_size_t),
                ("dstXInBytes", ctypes.c_size_t), ("dstY", ctypes.c_size_t),
                ("dstMemoryType", ctypes.c_int), ("dstHost", ctypes.c_void_p),
                ("dstDevice", ctypes.c_uint64), ("dstArray", ctypes.c_void_p),
                ("dstPitch", ctypes.c_size_t),
                ("WidthInBytes", ctypes.c_size_t), ("Height", ctypes.c_size_t)]


def main():
    cuda = ctypes.CDLL("libcuda.so.1")
    torch.cuda.init()
    slice_bytes, rows_per_launch = 8320, 132
    results = []
    for launches in (1, 16, 64):
        rows = rows_per_launch * launches
        dev = torch.zeros(rows * slice_bytes, dtype=torch.uint8, device="cuda")
        host = torch.empty(rows * slice_bytes, dtype=torch.uint8, pin_memory=True)
        stream = torch.cuda.Stream()
        for width in (16, 56, 256, slice_bytes):
            c = Memcpy2D()
            c.srcMemoryType, c.srcDevice, c.srcPitch = 2, dev.data_ptr(), slice_bytes  # DEVICE
            c.dstMemoryType, c.dstHost, c.dstPitch = 1, host.data_ptr(), width  # HOST
            c.WidthInBytes, c.Height = width, rows
            best = float("inf")
            for _ in range(5):
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                rc = cuda.cuMemcpy2DAsync_v2(ctypes.byref(c), ctypes.c_void_p(stream.cuda_stream))
                stream.synchronize()
                best = min(best, time.perf_counter() - t0)
                assert rc == 0, rc
            results.append({"launches": launches, "rows": rows, "width": width,
                            "us": best * 1e6, "us_per_launch": best * 1e6 / launches,
                            "GB/s": rows * width / best / 1e9})
            print(json.dumps(results[-1]))


if __name__ == "__main__":
    main()
