"""Reading profiles from Python, without pandas or hatchet.

``read(path)`` parses a Hatchet profile (JSON or ``.hatchet_msgpack``, ours or
triton.profiler's) with the viewer's own C++ reader and returns a :class:`Profile`: a tree of
:class:`Node` objects with names, paths and metrics. It shows what ``proton-viewer`` shows:
launch-metadata frames are hidden (unless ``show_metadata=True``, as ``--show-metadata``),
``node.name`` is the viewer's short name (demangled C++ kernels without template and parameter
lists) and ``node.full_name`` the whole demangled name (``--full-names``).

Metric names are those of ``proton-viewer -m``: raw names such as ``"time (ns)"`` (``"time"``
finds it too: case and unit are ignored) and derived ones such as ``"time/ms"``,
``"avg_time/us"``, ``"tflop16/s"``, ``"util"`` or ``"time/%"``; the values are the ones the
viewer prints (inclusive for plain metrics, as stored for ``(exc)``/``(pty)`` ones)::

    import proton.profiles
    prof = proton.profiles.read("matmul.hatchet")
    for node in prof:                       # pre-order, root first
        print(node.path, node["time/ms"])
    gemm = prof.find("forward/matmul_kernel")
    df = prof.to_pandas(["time/ms", "util"])  # needs pandas

A file the viewer cannot read raises :class:`ProfileError` with the viewer's message
(``path:offset: reason``) and the byte ``offset``. ``proton.viewer`` holds the hatchet-based
functions of ``triton.profiler.viewer``; this module is its dependency-free sibling.
"""

import json
import math
import os
import re
import struct
from typing import Dict, Iterator, List, Optional, Sequence, Tuple, Union

from . import _proton

__all__ = ["Node", "Profile", "ProfileError", "parse", "read"]


class ProfileError(ValueError):
    """A profile that cannot be read: ``path`` and byte ``offset`` where known."""

    def __init__(self, message: str, path: Optional[str] = None, offset: Optional[int] = None):
        super().__init__(message)
        self.path = path
        self.offset = offset


_OFFSET = re.compile(r":(\d+): ")


def _error(e: ValueError, path: Optional[str]) -> ProfileError:
    message = str(e)
    offset = None
    rest = message[len(path):] if path is not None and message.startswith(path) else message
    found = _OFFSET.match(rest) if path is not None else re.match(r"(\d+): ", rest)
    if found:
        offset = int(found.group(1))
    return ProfileError(message, path, offset)


def read(path: Union[str, "os.PathLike[str]"], show_metadata: bool = False) -> "Profile":
    """Reads a Hatchet profile (JSON or msgpack). Raises :class:`ProfileError` for a bad file
    and for a path that is not a profile (a directory, a FIFO, compressed or binary data)."""
    path = os.fspath(path)
    try:
        data = _proton.ProfileData.load(path, show_metadata)
    except ValueError as e:
        raise _error(e, path) from None
    return Profile(data, path)


def parse(text: Union[str, bytes], show_metadata: bool = False) -> "Profile":
    """Parses a Hatchet profile (JSON or msgpack bytes) held in memory (errors carry the byte
    offset, no path)."""
    raw = text.encode() if isinstance(text, str) else bytes(text)
    try:
        data = _proton.ProfileData.parse(raw, show_metadata)
    except ValueError as e:
        raise _error(e, None) from None
    return Profile(data, None)


# The reader's "no value here" (src/viewer/profile.h kAbsentBits): a NaN with its own payload, so
# that a metric whose value is NaN reads back as float("nan") and an absent one as None.
_ABSENT = struct.pack("<Q", 0x7FF80000AB5E0001)


def _absent(x: float) -> bool:
    return x != x and struct.pack("<d", x) == _ABSENT


def _value(x: float, integral: bool):
    if x != x:
        return None if struct.pack("<d", x) == _ABSENT else math.nan
    return int(x) if integral and x.is_integer() else x


class Node:
    """One frame of the call tree. ``node[name]`` is a metric value (None where absent)."""

    __slots__ = ("_profile", "index")

    def __init__(self, profile: "Profile", index: int):
        self._profile = profile
        self.index = index

    @property
    def name(self) -> str:
        """The name ``proton-viewer`` prints (C++ kernel names demangled and shortened)."""
        return self._profile._names[self.index]

    @property
    def full_name(self) -> str:
        """The whole demangled name, as ``proton-viewer --full-names`` prints it."""
        return self._profile._full_names[self.index]

    @property
    def stored_name(self) -> str:
        """The name as the file spells it (mangled C++ names stay mangled)."""
        return self._profile._stored_names[self.index]

    @property
    def type(self) -> str:
        return self._profile._types[self.index]

    @property
    def parent(self) -> Optional["Node"]:
        p = self._profile._parents[self.index]
        return None if p < 0 else Node(self._profile, p)

    @property
    def children(self) -> List["Node"]:
        return [Node(self._profile, c) for c in self._profile._children[self.index]]

    @property
    def path(self) -> Tuple[str, ...]:
        """Names from below the root down to this node (the root's path is ``()``)."""
        return self._profile._path(self.index)

    @property
    def depth(self) -> int:
        return len(self.path)

    @property
    def metrics(self) -> Dict[str, object]:
        """Raw metrics present on this node or below, as the viewer shows them."""
        out = {}
        for m, (name, _, integral) in enumerate(self._profile._metric_info):
            v = self._profile._shown(m)[self.index]
            if not _absent(v):
                out[name] = _value(v, integral)
        return out

    @property
    def exclusive(self) -> Dict[str, object]:
        """The values stored on this node itself (the file's numbers)."""
        out = {}
        for m, (name, _, integral) in enumerate(self._profile._metric_info):
            v = self._profile._stored(m)[self.index]
            if not _absent(v):
                out[name] = _value(v, integral)
        return out

    @property
    def text(self) -> Dict[str, str]:
        """String-valued metrics of the node (``device_id``, ``device_type``, properties)."""
        return dict(self._profile._data.text(self.index))

    @property
    def is_kernel(self) -> bool:
        return "device_id" in self.text

    def __getitem__(self, metric: str):
        return self._profile.column(metric)[self.index]

    def get(self, metric: str, default=None):
        try:
            v = self[metric]
        except KeyError:
            return default
        return default if v is None else v

    def walk(self) -> Iterator["Node"]:
        """This node and everything below it, in pre-order."""
        stack = [self.index]
        children = self._profile._children
        while stack:
            i = stack.pop()
            yield Node(self._profile, i)
            stack.extend(reversed(children[i]))

    def __eq__(self, other):
        return isinstance(other, Node) and other._profile is self._profile and \
            other.index == self.index

    def __hash__(self):
        return hash((id(self._profile), self.index))

    def __repr__(self):
        return f"<proton.profiles.Node {'/'.join(self.path) or self.name!r}>"


class Profile:
    """A read profile: ``root``, iteration over nodes, ``find(path)``, metric columns."""

    def __init__(self, data, path: Optional[str]):
        self._data = data
        self.path = path
        self._names = data.display_names(False)
        self._full_names = data.display_names(True)
        self._stored_names = data.names()
        self._types = data.types()
        self._parents = data.parents()
        self._children: List[List[int]] = [[] for _ in self._names]
        for i, p in enumerate(self._parents):
            if p >= 0:
                self._children[p].append(i)
        self._metric_info = data.metrics()
        self._paths: Dict[int, Tuple[str, ...]] = {}
        self._stored_cache: Dict[int, List[float]] = {}
        self._shown_cache: Dict[int, List[float]] = {}
        self._columns: Dict[str, List[object]] = {}
        self.warnings: List[str] = []

    # -- structure --------------------------------------------------------------------------
    @property
    def root(self) -> Node:
        return Node(self, 0)

    def __len__(self) -> int:
        return len(self._names)

    def __iter__(self) -> Iterator[Node]:
        return self.root.walk()

    def _path(self, index: int) -> Tuple[str, ...]:
        path = self._paths.get(index)
        if path is None:
            names = []  # iterative: trees may be deeper than Python's recursion limit
            i = index
            while self._parents[i] >= 0:
                names.append(self._names[i])
                i = self._parents[i]
            path = tuple(reversed(names))
            self._paths[index] = path
        return path

    def find(self, path: Union[str, Sequence[str]]) -> Optional[Node]:
        """The node at ``path`` below the root, or None.

        ``path`` is a sequence of frame names, or one string joining them with "/". Frame names
        may hold "/" themselves (file paths): a string is matched against the names present,
        so ``"/src/train.py:12@main/matmul"`` finds ``matmul`` under that frame. A frame is
        found by its ``name``, ``full_name`` or ``stored_name``; a sibling whose stored name is
        the one asked for wins over one whose shortened name only matches. Where siblings share a
        name (merged files, a diff) the first match is taken.
        """
        if not isinstance(path, str):
            index = 0
            for name in path:
                kids = self._children[index]
                index = next((c for c in kids if self._stored_names[c] == name),
                             next((c for c in kids if name in self._spellings(c)), -1))
                if index < 0:
                    return None
            return Node(self, index)
        found = self._match(0, path)
        return None if found is None else Node(self, found)

    def _match(self, index: int, rest: str) -> Optional[int]:
        stack = [(index, rest)]  # depth-first, without recursion: trees may be very deep
        while stack:
            index, rest = stack.pop()
            if not rest:
                return index
            tries = []
            for child in self._children[index]:
                for name in self._spellings(child):
                    if rest == name:
                        return child
                    if rest.startswith(name + "/"):
                        tries.append((child, rest[len(name) + 1:]))
            stack.extend(reversed(tries))
        return None

    def _spellings(self, index: int) -> Tuple[str, ...]:
        names = (self._names[index], self._full_names[index], self._stored_names[index])
        return tuple(dict.fromkeys(names))  # distinct, in that order

    def __getitem__(self, path: Union[str, Sequence[str]]) -> Node:
        node = self.find(path)
        if node is None:
            raise KeyError(f"no frame {path!r} in {self.path or 'the profile'}")
        return node

    # -- metrics ----------------------------------------------------------------------------
    @property
    def metric_names(self) -> List[str]:
        """The raw metric names of the file, as stored."""
        return [name for name, _, _ in self._metric_info]

    @property
    def default_metric(self) -> Optional[str]:
        """What ``proton-viewer`` shows without ``-m`` (None for a profile without metrics)."""
        return self._data.default_metric()

    @property
    def devices(self) -> List[dict]:
        return self._data.devices()

    # -- analysis ---------------------------------------------------------------------------
    def advise(self) -> List[dict]:
        """The analyzer's findings, ranked as ``proton-viewer --advise --format json`` lists
        them (docs/advise.md): dicts with ``rule``, ``severity``, ``frame`` (names below the
        root), ``evidence``, ``seen``, ``why``, ``suggestion`` and ``saving_ns`` (or None)."""
        return json.loads(self._data.advise(True, 0, ""))

    def advice_text(self, top: int = 10) -> str:
        """The first ``top`` findings and the hints, as ``proton-viewer --advise`` prints them."""
        return self._data.advise(False, max(1, int(top)), self.path or "the profile")

    def _stored(self, m: int) -> List[float]:
        if m not in self._stored_cache:
            self._stored_cache[m] = self._data.stored(m)
        return self._stored_cache[m]

    def _shown(self, m: int) -> List[float]:
        if m not in self._shown_cache:
            self._shown_cache[m] = self._data.inclusive(m)
        return self._shown_cache[m]

    def column(self, metric: str) -> List[object]:
        """Values of ``metric`` (a ``-m`` request) for every node, by node index.

        Raises KeyError with the viewer's message when the metric cannot be found or derived.
        """
        cached = self._columns.get(metric)
        if cached is None:
            try:
                columns, warnings = self._data.derive([metric])
            except KeyError as e:
                raise KeyError(e.args[0] if e.args else metric) from None
            _, values, integral = columns[0]
            self.warnings.extend(w for w in warnings if w not in self.warnings)
            cached = [_value(v, integral) for v in values]
            self._columns[metric] = cached
        return cached

    def to_pandas(self, metrics: Optional[Sequence[str]] = None):
        """A DataFrame, one row per node in pre-order: ``path``, ``name``, ``depth``,
        ``type``, then one column per metric (default: every raw metric). Needs pandas."""
        try:
            import pandas as pd
        except ImportError:
            raise ImportError("Profile.to_pandas() needs pandas: pip install pandas") from None
        names = self.metric_names if metrics is None else list(metrics)
        order = [n.index for n in self]
        rows = {
            "path": ["/".join(self._path(i)) for i in order],
            "name": [self._names[i] for i in order],
            "depth": [len(self._path(i)) for i in order],
            "type": [self._types[i] for i in order],
        }
        for name in names:
            column = self.column(name)
            rows[name] = [column[i] for i in order]
        return pd.DataFrame(rows)

    def __repr__(self):
        return f"<proton.profiles.Profile {self.path or '<memory>'}: {len(self)} nodes>"
