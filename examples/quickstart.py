"""Profiles a few scopes; on a GPU machine with PyTorch, also some kernels."""

import proton

try:
    import torch

    cuda = torch.cuda.is_available()
except ImportError:
    cuda = False

proton.start("quickstart")
for step in range(3):
    with proton.scope("step", {"bytes": 1024}):
        with proton.cpu_timed_scope("data"):
            batch = [i * i for i in range(10000)]
        if cuda:
            x = torch.randn(1024, 1024, device="cuda")
            with proton.scope("matmul"):
                y = x @ x
            with proton.state("reduce"):
                y.sum()
proton.finalize()
print("wrote quickstart.hatchet")
