"""The benchmark workloads. Each one times a region that the child process repeats.

A workload is built in three steps so that every profiler variant sees the same thing:
`setup()` before any profiler starts (allocate, compile, warm up), `after_start()` once the
profiler runs (CUDA graphs are captured there, as profilers ask), then `region()` is the timed
body. `kernels` is how many kernels one region launches where that is known exactly; the
report turns time differences into microseconds per kernel with it.

`statistic` is how one process's timed regions become its time (bench/report.py computes it
from every region, which the JSON keeps): "q1", the lower quartile, for workloads bound by the
launching CPU thread, where interference from the rest of the machine only adds time; the
median for the others, whose region time follows the GPU's clocks (docs/bench.md says why).
"""



class _Torch:
    """torch, imported on first use: `bench/run.py --help` and the report tests need no torch."""

    def __getattr__(self, name):
        import torch as module

        return getattr(module, name)


torch = _Torch()

LAUNCHES = 5000


def capture_add_graph(x, nodes):
    """A CUDA graph of `nodes` launches of `x.add_(1.0)`, captured the usual torch way: one
    run on a side stream first (allocator pools, lazy initialization), then the capture. Also
    used by bench/graph_memory.py and the GPU tests' graph subprocesses."""

    def body():
        for _ in range(nodes):
            x.add_(1.0)

    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        body()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        body()
    return graph


class Workload:
    name = ""
    kernels = None  # kernels per region, where known exactly
    statistic = "median"  # per-process statistic of the timed regions: "median" or "q1"

    def setup(self):
        pass

    def after_start(self):
        pass

    def region(self):
        raise NotImplementedError


class TinyTorch(Workload):
    """5,000 `x + y` on one-element tensors: pure launch overhead."""

    name = "tiny_torch"
    kernels = LAUNCHES
    statistic = "q1"  # launch-bound: one CPU thread's time

    def setup(self):
        self.x = torch.ones(1, device="cuda")
        self.y = torch.ones(1, device="cuda")

    def region(self):
        self.region_n(LAUNCHES)

    def region_n(self, n):
        x, y = self.x, self.y
        for _ in range(n):
            x + y


class TinyTorchDeep(TinyTorch):
    """The same 5,000 launches made 20 Python frames down: what a Python call path costs."""

    name = "tiny_torch_deep"
    depth = 20

    def region(self):
        _at_depth(self.depth, super().region)


def _at_depth(depth, fn):
    # Each level is a real Python frame on the launching thread's stack.
    return fn() if depth <= 1 else _at_depth(depth - 1, fn)


class TinyTriton(Workload):
    """5,000 launches of a one-block Triton add kernel."""

    name = "tiny_triton"
    kernels = LAUNCHES
    statistic = "q1"  # launch-bound: one CPU thread's time

    def setup(self):
        self.kernel = _triton_add_kernel()
        self.x = torch.ones(128, device="cuda")
        self.y = torch.ones(128, device="cuda")
        self.out = torch.empty_like(self.x)
        self.region()  # compiles once; later processes load it from Triton's cache

    def region(self):
        self.region_n(LAUNCHES)

    def region_n(self, n):
        kernel, x, y, out = self.kernel, self.x, self.y, self.out
        for _ in range(n):
            kernel[(1,)](x, y, out, 128, BLOCK=128)


class MlpTraining(Workload):
    """Training steps of an 8-layer MLP (width 1024, batch 256): forward, backward, SGD."""

    name = "mlp_train"
    steps = 20

    def setup(self):
        layers = []
        for _ in range(8):
            layers += [torch.nn.Linear(1024, 1024), torch.nn.ReLU()]
        self.model = torch.nn.Sequential(*layers).cuda()
        self.opt = torch.optim.SGD(self.model.parameters(), lr=1e-3)
        self.inp = torch.randn(256, 1024, device="cuda")
        self.region()

    def region(self):
        for _ in range(self.steps):
            self.opt.zero_grad(set_to_none=True)
            self.model(self.inp).square().mean().backward()
            self.opt.step()


class BigGemm(Workload):
    """4096x4096x4096 bf16 matrix products: GPU-bound, the profiler should vanish."""

    name = "gemm_bf16"
    kernels = None  # cuBLAS may split one product into several kernels
    products = 50

    def setup(self):
        self.a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
        self.b = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
        self.out = torch.empty_like(self.a)
        self.region()

    def region(self):
        for _ in range(self.products):
            torch.matmul(self.a, self.b, out=self.out)


class GraphReplay(Workload):
    """Replays of a CUDA graph of 100 small kernels (one launch fans out to 100 kernels)."""

    name = "cuda_graph"
    nodes = 100
    replays = 50
    kernels = nodes * replays

    def setup(self):
        self.x = torch.zeros(1024, device="cuda")
        for _ in range(self.nodes):
            self.x.add_(1.0)  # warm up before capture

    def after_start(self):
        # Captured after the profiler starts: profilers map graph nodes back to their capture.
        self.graph = capture_add_graph(self.x, self.nodes)

    def region(self):
        for _ in range(self.replays):
            self.graph.replay()


class GraphReplayBeforeStart(GraphReplay):
    """The same replays of a graph captured before the profiler starts: no capture sites, so
    kernels go to the launch site and the profiler cannot know the fan-out in advance."""

    name = "cuda_graph_pre"

    def setup(self):
        super().setup()
        GraphReplay.after_start(self)

    def after_start(self):
        pass


def _triton_add_kernel():
    import triton
    import triton.language as tl

    @triton.jit
    def tiny_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask),
                 mask=mask)

    return tiny_add


ALL = {w.name: w for w in (TinyTorch, TinyTorchDeep, TinyTriton, MlpTraining, BigGemm, GraphReplay,
                           GraphReplayBeforeStart)}
