"""Rank awareness: one profile file per process of a multi-process job.

A process is one rank of a job when torch.distributed is initialized, or when a launcher set
its environment:

    torchrun / torch.distributed.run   RANK, WORLD_SIZE, LOCAL_RANK
    mpirun (Open MPI)                   OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE, ..._LOCAL_RANK
    mpirun (MPICH, Intel MPI)           PMI_RANK, PMI_SIZE
    srun (Slurm)                        SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID

(first match wins, in that order: torchrun under srun gives each worker its own RANK). A job of
one process (world size 1) is not treated as one: its file keeps the plain name.

Each rank's output name is ``{name}.rank{rank}``, so ``-n ddp`` writes ``ddp.rank0.hatchet``,
``ddp.rank1.hatchet``, ... and the same suffix reaches every file of the session
(``ddp.rank1.chrome_trace``, ``ddp.rank1.hatchet_msgpack``, ``ddp.rank1.part_3.hatchet``). Another
scheme: ``PROTON_RANK_PATTERN`` (or ``proton --rank-pattern``), or a name that itself holds a
placeholder (``-n 'out/{host}-{rank}'``). Placeholders: ``{name} {rank} {world_size}
{local_rank} {host}``; a pattern must hold ``{rank}`` (or ``{host}`` and ``{local_rank}``) so
ranks never share a file.

The file records the rank, world size, local rank, host, device and launcher (the C++ writers
read what ``publish`` hands to ``_proton.set_run_info``; src/io/run_info.h says where in each
format). See docs/multiprocess.md.
"""

import os
import socket
import sys
from dataclasses import dataclass
from typing import Optional

DEFAULT_PATTERN = "{name}.rank{rank}"
PATTERN_ENV = "PROTON_RANK_PATTERN"
_KNOWN_EXTENSIONS = (".hatchet_msgpack", ".hatchet", ".chrome_trace")


@dataclass(frozen=True)
class Rank:
    rank: int
    world_size: int
    local_rank: int  # -1 when the launcher does not say
    launcher: str
    host: str = ""


def _env_int(env, key) -> Optional[int]:
    value = env.get(key)
    if value is None or value.strip() == "":
        return None
    try:
        return int(value)
    except ValueError:
        return None


# (launcher, rank key, world size key, local rank key), in priority order.
_LAUNCHERS = (
    ("torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK"),
    ("mpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"),
    ("mpi", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"),
    ("slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"),
)


def _from_torch() -> Optional[Rank]:
    # Never import torch for this: only a program that already uses it can have a process group.
    torch = sys.modules.get("torch")
    dist = getattr(torch, "distributed", None) if torch is not None else None
    try:
        if dist is None or not dist.is_available() or not dist.is_initialized():
            return None
        rank, size = int(dist.get_rank()), int(dist.get_world_size())
    except Exception:  # a half-torn-down process group must not stop profiling
        return None
    local = _env_int(os.environ, "LOCAL_RANK")
    return Rank(rank, size, -1 if local is None else local, "torch.distributed")


def detect(env=None) -> Optional[Rank]:
    """This process's rank, or None when it is not one rank of a job of several."""
    from_env = env is not None
    env = os.environ if env is None else env
    found = None if from_env else _from_torch()
    if found is None:
        for launcher, rank_key, size_key, local_key in _LAUNCHERS:
            rank, size = _env_int(env, rank_key), _env_int(env, size_key)
            if rank is None or size is None:
                continue
            local = _env_int(env, local_key)
            found = Rank(rank, size, -1 if local is None else local, launcher)
            break
    if found is None or found.world_size <= 1 or not 0 <= found.rank < found.world_size:
        return None
    return Rank(found.rank, found.world_size, found.local_rank, found.launcher,
                socket.gethostname())


def _check_pattern(pattern: str) -> None:
    if "{rank}" in pattern or ("{host}" in pattern and "{local_rank}" in pattern):
        return
    raise ValueError(f"rank name pattern {pattern!r} must contain {{rank}} (or {{host}} and "
                     "{local_rank}), or every rank would write the same file")


def output_name(name: str, rank: Optional[Rank], pattern: Optional[str] = None) -> str:
    """The session name this rank writes under (extensions are added by the writers)."""
    has_placeholder = "{rank}" in name or "{host}" in name
    if rank is None:
        # Outside a job a name with placeholders is filled with rank 0, so a script keeps working.
        if not has_placeholder:
            return name
        rank = Rank(0, 1, 0, "", socket.gethostname())
    for ext in _KNOWN_EXTENSIONS:
        if name.endswith(ext):
            name = name[: -len(ext)]
            break
    if has_placeholder:
        pattern, name = name, ""
    elif pattern is None:
        from . import _proton  # PROTON_* variables are read by the native module

        pattern = _proton.env_value(PATTERN_ENV) or DEFAULT_PATTERN
    _check_pattern(pattern)
    try:
        return pattern.format(name=name, rank=rank.rank, world_size=rank.world_size,
                              local_rank=max(rank.local_rank, 0), host=rank.host)
    except (KeyError, IndexError, ValueError) as e:
        raise ValueError(f"bad rank name pattern {pattern!r}: {e!r} (placeholders: {{name}} "
                         "{rank} {world_size} {local_rank} {host})") from None


def _device() -> str:
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None) if torch is not None else None
    try:
        if cuda is not None and cuda.is_initialized():
            return str(cuda.current_device())
    except Exception:
        pass
    return ""


def publish(rank: Optional[Rank]) -> None:
    """Hands this process's rank block to the writers (nothing for a single process)."""
    from . import _proton

    if rank is None:
        return
    _proton.set_run_info(rank.rank, rank.world_size, rank.local_rank, rank.host, _device(),
                         rank.launcher)


_warned_late = False
_started_as_rank = False


def session_name(name: str) -> str:
    """Called by ``start``: detects the rank, publishes it, and returns the name to use."""
    global _started_as_rank
    rank = detect()
    publish(rank)
    _started_as_rank |= rank is not None
    return output_name(name, rank)


def before_finalize() -> None:
    """Called by ``finalize``: records the device (known by now) and warns, once, when
    torch.distributed came up only after ``start`` with no launcher environment, since every
    rank then writes the same file."""
    global _warned_late
    rank = detect()
    publish(rank)
    if rank is not None and not _started_as_rank and not _warned_late:
        _warned_late = True
        print("proton: torch.distributed was initialized after proton.start() and no launcher "
              "set RANK/WORLD_SIZE, so every rank writes the same file; start the session after "
              "init_process_group, run under torchrun/srun/mpirun, or name the output "
              "'{name}.rank{rank}' (docs/multiprocess.md)", file=sys.stderr)
