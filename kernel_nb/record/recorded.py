"""What a recording holds: per captured launch its kernel, grid, arguments, and the bytes of its
array arguments before the launch and after it; saved to and loaded from one .npz file.

The bytes are those of the argument's memory regions (`kernel_nb.engine.arrays.Region`): arrays
that overlap (an in-place kernel given one array twice, views of one base) share a region, as
they share memory, and are rebuilt as views of one copy when the launch is replayed.
"""

from __future__ import annotations

import html
import importlib
import json
import sys
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np

from kernel_nb.engine import triton_compat
from kernel_nb.numerics import numpy_dtype
from kernel_nb.record.carried import carried_source, define

# the format of a saved recording, written in it: a loader refuses others
FORMAT = 1
_NOT_META = ("inputs", "outputs", "jit", "jit_note")


@dataclass
class LeafSpec:
    """One array argument of a recorded launch.

    Attributes:
        name: the kernel parameter.
        dtype: numpy name of the element type (ml_dtypes names for bf16 and fp8).
        shape, strides: in elements.
        region: which of the launch's regions holds its memory.
        offset: bytes from the region's start to element 0.
        space: where the caller's array was: "host" or "cuda:N".
        library: "numpy", "torch" or "cupy".
    """

    name: str
    dtype: str
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    region: int
    offset: int
    space: str
    library: str


@dataclass
class RecordedLaunch:
    """One launch as it really ran, captured by `kernel_nb.record`.

    Attributes:
        index: the launch's place among the launches the recording saw (captured or not).
        kernel: the kernel's name.
        module, qualname: where the kernel is defined (the notebook's is "__main__").
        grid: three program counts.
        values: the scalar, constexpr and None arguments by parameter name; the tuple ones as
            {"tuple": [items]} and the tensor-descriptor ones as {"descriptor": {field: value}},
            an array among them as {"array": its leaf's name}.
        options: the launch's options that are not parameters (num_warps, num_stages, ...).
        leaves: the array arguments.
        inputs: per region, its bytes before the launch.
        outputs: per region, its bytes after the launch (None: unchanged by it).
        device: where it ran, in words ("cuda:0", or "host": the stock interpreter).
        seconds: the launch's wall time, copies excluded.
        source: the text of a module that defines the kernel as it ran (`record.carried`; None:
            it could not be carried, `source_note` says why).
        jit: the kernel object (not saved: on load, the one its module and qualname give where
            its source is the one carried, else the carried source's).
        jit_note: on load, which kernel `jit` is where it is not the one that ran, or why none.
    """

    index: int
    kernel: str
    module: str
    qualname: str
    grid: tuple[int, int, int]
    values: dict[str, Any]
    options: dict[str, Any]
    leaves: list[LeafSpec]
    inputs: list[np.ndarray] = field(repr=False)
    outputs: list[np.ndarray | None] = field(repr=False)
    device: str
    seconds: float
    source: str | None = field(default=None, repr=False)
    source_note: str = ""
    jit: Any = field(default=None, repr=False, compare=False)
    jit_note: str = field(default="", repr=False, compare=False)

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in self.inputs) + sum(a.nbytes for a in self.outputs if a is not None)

    @property
    def written(self) -> list[str]:
        """The array arguments whose memory the launch changed."""
        return [leaf.name for leaf in self.leaves if self.outputs[leaf.region] is not None]

    def arguments(self, after: bool = False) -> dict[str, Any]:
        """The launch's arguments by parameter name, the arrays rebuilt as numpy arrays from the
        bytes before the launch (after it, with `after`): fresh copies, views of one copy where
        they shared memory; a tuple argument rebuilt around its arrays."""
        copies = [
            np.array(out if after and out is not None else before)
            for before, out in zip(self.inputs, self.outputs)
        ]
        arrays = {}
        for leaf in self.leaves:
            dtype = numpy_dtype(leaf.dtype)
            memory = copies[leaf.region]
            strides = tuple(s * dtype.itemsize for s in leaf.strides)
            arrays[leaf.name] = np.ndarray(leaf.shape, dtype, memory, leaf.offset, strides)
        arguments = {name: _rebuilt(value, arrays) for name, value in self.values.items()}
        arguments.update((name, array) for name, array in arrays.items() if "." not in name)
        return arguments

    def replay(
        self, options: Any = None, *, divergence: bool = False, pids: Any = None, **tolerance: Any
    ) -> Any:
        """Interpret this launch on the CPU with everything recorded (`kernel_nb.record.replay`);
        with `divergence`, also on this machine's GPU, to find where programs first diverge."""
        from kernel_nb.record.replay import replay

        return replay(self, options, divergence=divergence, pids=pids, **tolerance)

    def row(self) -> dict[str, Any]:
        return {
            "#": self.index,
            "kernel": self.kernel,
            "grid": "x".join(str(g) for g in self.grid),
            "device": self.device,
            "arrays": ", ".join(f"{leaf.name} {leaf.dtype}{list(leaf.shape)}" for leaf in self.leaves),
            "written": ", ".join(self.written) or "-",
            "MiB": f"{self.nbytes / 2**20:.2f}",
            "ms": f"{self.seconds * 1e3:.2f}",
        }


@dataclass
class Recording:
    """The launches a `kernel_nb.record` block captured, and those it saw and left out.

    Attributes:
        launches: the captured launches, in order.
        seen: how many launches the block saw, captured or not.
        skipped: per launch left out, (its index, its kernel, why).
        benchmark_launches: the launches autotuners made to time their configs (not captured, and
            not counted in `seen`).
    """

    launches: list[RecordedLaunch] = field(default_factory=list)
    seen: int = 0
    skipped: list[tuple[int, str, str]] = field(default_factory=list)
    benchmark_launches: int = 0

    def __len__(self) -> int:
        return len(self.launches)

    def __iter__(self) -> Any:
        return iter(self.launches)

    def __getitem__(self, index: int) -> RecordedLaunch:
        return self.launches[index]

    @property
    def nbytes(self) -> int:
        return sum(launch.nbytes for launch in self.launches)

    def table(self) -> str:
        """The captured launches a line each, then what was left out."""
        rows = [launch.row() for launch in self.launches]
        head = f"{len(self.launches)} of {self.seen} launches captured, {self.nbytes / 2**20:.2f} MiB"
        lines = [head]
        if rows:
            keys = list(rows[0])
            widths = {k: max(len(k), *(len(str(r[k])) for r in rows)) for k in keys}
            lines.append("  ".join(k.ljust(widths[k]) for k in keys))
            lines += ["  ".join(str(r[k]).ljust(widths[k]) for k in keys) for r in rows]
        lines += [f"left out #{i} {kernel}: {why}" for i, kernel, why in self.skipped]
        if self.benchmark_launches:
            lines.append(
                f"left out: {self.benchmark_launches} launches autotuners made to time their configs"
            )
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.table()

    def _repr_html_(self) -> str:
        rows = [launch.row() for launch in self.launches]
        out = [f"<p>{html.escape(self.table().splitlines()[0])}</p>"]
        if rows:
            head = "".join(f"<th>{html.escape(k)}</th>" for k in rows[0])
            body = "".join(
                "<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in r.values()) + "</tr>"
                for r in rows
            )
            out.append(f"<table><tr>{head}</tr>{body}</table>")
        out += [f"<p>left out #{i} {html.escape(k)}: {html.escape(w)}</p>" for i, k, w in self.skipped]
        if self.benchmark_launches:
            out.append(
                f"<p>left out: {self.benchmark_launches} launches autotuners made to time their configs</p>"
            )
        if rows:
            out.append(
                "<p><code>[i].replay()</code> interprets launch i on the CPU and compares it with what ran</p>"
            )
        return "".join(out)

    def save(self, path: str | Path) -> Path:
        """Write the recording to one .npz file (each kernel by module and name, and its source
        where it could be carried)."""
        target = Path(path).with_suffix(".npz")
        arrays: dict[str, np.ndarray] = {}
        launches = []
        for n, launch in enumerate(self.launches):
            for r, data in enumerate(launch.inputs):
                arrays[f"{n}.in.{r}"] = data
            for r, written in enumerate(launch.outputs):
                if written is not None:
                    arrays[f"{n}.out.{r}"] = written
            meta = {f.name: getattr(launch, f.name) for f in fields(launch) if f.name not in _NOT_META}
            meta["leaves"] = [asdict(leaf) for leaf in launch.leaves]
            meta["regions"] = len(launch.inputs)
            launches.append(meta)
        meta = {
            "format": FORMAT,
            "seen": self.seen,
            "skipped": self.skipped,
            "benchmark_launches": self.benchmark_launches,
            "launches": launches,
        }
        try:
            text = json.dumps(meta)
        except TypeError as exc:
            raise ValueError(f"the recording holds a value a saved recording cannot: {exc}") from None
        arrays["meta"] = np.frombuffer(text.encode(), np.uint8)
        np.savez(target, **arrays)  # type: ignore[arg-type]
        return target

    @staticmethod
    def load(path: str | Path) -> Recording:
        """A saved recording; each launch's kernel is looked up where it was defined (a kernel of
        a notebook: in this process's `__main__`, where the notebook that defines it runs), and
        defined from the source it carries where it is not there or differs from what ran; left
        None where neither gives it (`replay` then says why)."""
        with np.load(Path(path), allow_pickle=False) as saved:
            meta = json.loads(bytes(saved["meta"]).decode())
            if meta.get("format") != FORMAT:
                raise ValueError(f"{path}: a recording of format {meta.get('format')}, not {FORMAT}")
            recording = Recording(
                seen=meta["seen"],
                skipped=[tuple(s) for s in meta["skipped"]],
                benchmark_launches=meta["benchmark_launches"],
            )
            for n, item in enumerate(meta["launches"]):
                regions = item.pop("regions")
                inputs = [saved[f"{n}.in.{r}"] for r in range(regions)]
                outputs = [saved.get(f"{n}.out.{r}") for r in range(regions)]
                leaves = [
                    LeafSpec(**{**leaf, "shape": tuple(leaf["shape"]), "strides": tuple(leaf["strides"])})
                    for leaf in item.pop("leaves")
                ]
                launch = RecordedLaunch(
                    **{**item, "grid": tuple(item["grid"])}, leaves=leaves, inputs=inputs, outputs=outputs
                )
                launch.jit, launch.jit_note = _kernel_of(launch)
                recording.launches.append(launch)
        return recording


def _rebuilt(value: Any, arrays: dict[str, np.ndarray]) -> Any:
    """A recorded value (see `RecordedLaunch.values`) with its arrays put back."""
    if isinstance(value, dict) and "array" in value:
        return arrays[value["array"]]
    if isinstance(value, dict) and "tuple" in value:
        return tuple(_rebuilt(item, arrays) for item in value["tuple"])
    if isinstance(value, dict) and "descriptor" in value:
        # Triton's TensorDescriptor takes a torch tensor: one over the rebuilt array's memory
        try:
            import torch
        except ImportError:
            raise ValueError(
                "a tensor-descriptor argument is rebuilt around a torch tensor: install torch"
            ) from None
        fields = dict(value["descriptor"])
        fields["base"] = torch.from_numpy(_rebuilt(fields["base"], arrays))
        return triton_compat.tensor_descriptor_type()(**fields)
    return value


def _kernel_of(launch: RecordedLaunch) -> tuple[Any | None, str]:
    """The kernel a loaded launch replays (see `RecordedLaunch.jit`), and a note where it is not
    the one that ran or there is none."""
    found = find_kernel(launch.module, launch.qualname)
    where = f"{launch.module}.{launch.qualname}"
    if launch.source is None:
        if found is None:
            return (
                None,
                f"{where} is not defined in this process and its source was not carried ({launch.source_note})",
            )
        return found, ""
    if found is not None and carried_source(found)[0] == launch.source:
        return found, ""
    try:
        return define(launch.kernel, launch.source), ""
    except Exception as exc:  # the carried text needs what this machine lacks
        why = f"its carried source does not run here ({type(exc).__name__}: {exc})"
        if found is None:
            return None, f"{where} is not defined in this process and {why}"
        return found, f"{where} as defined here, which differs from the kernel that ran: {why}"


def find_kernel(module: str, qualname: str) -> Any | None:
    """The JITFunction under `module`.`qualname` (through autotune and heuristics, which a replay
    does not run again), imported where need be; None where there is none."""
    try:
        found: Any = sys.modules.get(module) or importlib.import_module(module)
        for part in qualname.split("."):
            found = getattr(found, part)
        return triton_compat.innermost_jit(found)
    except (ImportError, AttributeError):
        return None
