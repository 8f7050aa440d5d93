"""The flags of ``%%tkernel`` and ``%tkernel``: one table, and everything generated from it.

Each `Flag` names the `Options` or `GpuOptions` field it sets (or the magic's own setting), so the
argparse decorators, the mapping onto the two option classes, the listing of ``%tkernel`` and the
defaults the line magic keeps cannot disagree about which flags exist.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from IPython.core.error import UsageError
from IPython.core.magic_arguments import argument, magic_arguments

from kernel_nb.gpu.session import GpuOptions
from kernel_nb.options import Options, format_bytes, parse_bytes, parse_pids

# Where a flag's value goes: an `Options` field, a `GpuOptions` field, a setting of the magic kept
# between cells (quiet, ir), or the one cell it is written on (mode, name, reset).
Target = Literal["options", "gpu", "magic", "cell"]


def _budget(text: str) -> int:
    try:
        return parse_bytes(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _pids(text: str) -> Any:
    try:
        return parse_pids(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _one_pid(text: str) -> tuple[int, int, int]:
    pids = _pids(text)
    if pids == "all" or len(pids) != 1:
        raise argparse.ArgumentTypeError(f"--pid takes one program id such as 3 or 1,0,0, got {text!r}")
    return pids[0]


def _names(text: str) -> tuple[str, ...]:
    return tuple(name.strip() for name in text.split(",") if name.strip())


def _pid_text(pids: Any) -> str:
    return pids if pids == "all" else ";".join(",".join(map(str, p)) for p in pids)


def _on_when(value: object) -> Callable[[object], str]:
    """How a switch shows: "on" when the field holds what the flag sets."""
    return lambda current: "on" if current == value else "off"


@dataclass(frozen=True)
class Flag:
    """One flag of the magic.

    Attributes:
        name: as written on the line ("--pids"), or a positional argument's name ("mode").
        target: where its value goes (see `Target`).
        dest: the field (or setting) it sets; argparse stores the parsed value under this name.
        help: the help text (argparse's %-formatting applies: write %% for %).
        parse: argparse's keywords besides `dest` and `help`: type, metavar, choices, action, ...
        convert: turns the parsed value into the field's value.
        show: how ``%tkernel`` lists the current default.
        modes: the cell modes the flag belongs to (None: every mode).
        default: the default of a setting of the magic; a field of `Options` or `GpuOptions` has the
            default its class gives it.
    """

    name: str
    target: Target
    dest: str
    help: str
    parse: dict[str, Any] = field(default_factory=dict)
    convert: Callable[[Any], Any] = lambda value: value
    show: Callable[[Any], str] = str
    modes: tuple[str, ...] | None = None
    default: Any = None


FLAGS: tuple[Flag, ...] = (
    Flag(
        "mode",
        "cell",
        "mode",
        "interpret: run every launch in the cell on the CPU, recording everything (the default); "
        "gpu: run them compiled on the GPU; compare: both, from identical inputs.",
        {"nargs": "?", "choices": ("interpret", "gpu", "compare")},
    ),
    Flag(
        "--pids",
        "options",
        "pids",
        "programs whose values are kept: all, 3, 0:4, 1,0,0, or several joined by ';' (default all).",
        {"type": _pids, "metavar": "SEL"},
        show=_pid_text,
    ),
    Flag(
        "--budget",
        "options",
        "budget_bytes",
        "bytes of values kept per launch, e.g. 512M, 1G, 1000000; programs past it keep summaries.",
        {"type": _budget, "metavar": "BYTES"},
        show=format_bytes,
    ),
    Flag(
        "--no-capture",
        "options",
        "capture",
        "record no statement values, only memory events, findings and outputs.",
        {"action": "store_const", "const": False},
        show=_on_when(False),
    ),
    Flag(
        "--launch",
        "options",
        "launch",
        "interpret only the N-th launch (0-based); others run as usual.",
        {"type": int, "metavar": "N"},
        show=lambda launch: "every launch" if launch is None else str(launch),
    ),
    Flag(
        "--break",
        "options",
        "breakpoints",
        "stop in the debugger at this line of the kernel's source (may be repeated).",
        {"type": int, "action": "append", "metavar": "LINE"},
        convert=tuple,
        show=lambda lines: ", ".join(map(str, lines)) or "none",
    ),
    Flag(
        "--pid",
        "options",
        "break_pid",
        "with --break: stop only in this program, e.g. 1,0,0.",
        {"type": _one_pid, "metavar": "PID"},
        show=lambda pid: "every program" if pid is None else ",".join(map(str, pid)),
    ),
    Flag(
        "--numerics",
        "options",
        "numerics",
        "gpu: compute what an NVIDIA GPU computes (tf32 dots, bf16/fp8 rounding, saturating casts; "
        "the default); stock: Triton's interpreter as it is.",
        {"choices": ("gpu", "stock")},
    ),
    Flag(
        "--poison",
        "options",
        "poison",
        "comma-separated array arguments to treat as uninitialised: filled with NaN (integers: their "
        "maximum) before the launch; reads of elements nothing wrote are reported.",
        {"metavar": "ARGS"},
        convert=_names,
        show=lambda names: ",".join(names) or "none",
    ),
    Flag(
        "--order",
        "options",
        "order",
        "the order programs run in; reverse or shuffle expose programs that depend on each other.",
        {"choices": ("serial", "reverse", "shuffle")},
    ),
    Flag(
        "--seed",
        "options",
        "seed",
        "with --order shuffle: the shuffle's seed.",
        {"type": int, "metavar": "N"},
    ),
    Flag(
        "--no-detect",
        "options",
        "detect",
        "run no bug detectors (NaN origin, undefined operations, races, coverage, uninitialised reads).",
        {"action": "store_const", "const": False},
        show=_on_when(False),
    ),
    Flag(
        "--shadow",
        "options",
        "shadow",
        "also compute every floating-point value in fp64 from the inputs: per statement the fp64 "
        "value, the error of the real one against it and the error its own arithmetic made (in "
        "ulps), findings where precision is lost, and launch.reference(name) per buffer.",
        {"action": "store_const", "const": "fp64"},
        show=_on_when("fp64"),
    ),
    Flag(
        "--serial",
        "options",
        "strategy",
        "run programs one at a time (the reference), never batched.",
        {"action": "store_const", "const": "serial"},
        show=_on_when("serial"),
    ),
    Flag(
        "--device",
        "gpu",
        "device",
        "gpu, compare: the CUDA device (default 0).",
        {"type": int, "metavar": "N"},
        modes=("gpu", "compare"),
    ),
    Flag(
        "--keep",
        "gpu",
        "keep",
        "compare: whose results the cell goes on with (default gpu).",
        {"choices": ("gpu", "cpu")},
        modes=("compare",),
    ),
    Flag(
        "--tolerance",
        "gpu",
        "tolerance",
        "compare: dtype judges each buffer by its dtype's rule (the default); shadow runs an fp64 "
        "shadow and judges each element by what the kernel's own arithmetic can promise there.",
        {"choices": ("dtype", "shadow")},
        modes=("compare",),
    ),
    Flag(
        "--rtol",
        "gpu",
        "rtol",
        "compare: relative tolerance for every buffer.",
        {"type": float, "metavar": "X"},
        show=lambda rtol: "per dtype" if rtol is None else str(rtol),
        modes=("compare",),
    ),
    Flag(
        "--atol",
        "gpu",
        "atol",
        "compare: absolute tolerance for every buffer (replaces the scaled one).",
        {"type": float, "metavar": "X"},
        show=lambda atol: "per dtype" if atol is None else str(atol),
        modes=("compare",),
    ),
    Flag(
        "--exact-probe",
        "gpu",
        "exact_probe",
        "compare: compile the GPU side without fp fusion, so that the statement probe computes"
        " exactly what the compared run computes.",
        {"action": "store_const", "const": True},
        show=_on_when(True),
        modes=("compare",),
    ),
    Flag(
        "--ir",
        "magic",
        "ir",
        "interpret: also compile each kernel for a CUDA target (no GPU needed) and show its IR.",
        {"action": "store_const", "const": True},
        show=_on_when(True),
        default=False,
    ),
    Flag(
        "--target",
        "gpu",
        "target",
        "with --ir: the target, e.g. cuda:80 (default: this GPU's, else cuda:90).",
        {"metavar": "T"},
        show=lambda target: "this GPU's, else cuda:90" if target is None else target,
        modes=("interpret",),
    ),
    Flag(
        "--quiet",
        "magic",
        "quiet",
        "display nothing (the trace is still bound to _tk).",
        {"action": "store_const", "const": True},
        show=_on_when(True),
        default=False,
    ),
    Flag("--name", "cell", "name", "also bind the trace to this variable.", {"metavar": "NAME"}),
    Flag(
        "--reset",
        "cell",
        "reset",
        "line magic only: forget the defaults set by %%tkernel FLAGS.",
        {"action": "store_true"},
    ),
)

# Flags whose value the line magic keeps as the default of later cells.
DEFAULTS = tuple(flag for flag in FLAGS if flag.target != "cell")


def with_flags(func: Callable[..., Any]) -> Callable[..., Any]:
    """The ``@magic_arguments`` and ``@argument`` decorators of every flag, in the table's order."""
    # IPython builds the parser from the decorators in reverse order of application.
    for flag in reversed(FLAGS):
        # argparse names a positional argument's value after the argument itself.
        keywords = {"dest": flag.dest} if flag.name.startswith("-") else {}
        func = argument(flag.name, help=flag.help, **keywords, **flag.parse)(func)
    decorated: Callable[..., Any] = magic_arguments()(func)
    return decorated


@dataclass(frozen=True)
class Defaults:
    """What a ``%%tkernel`` cell starts from before its own flags apply (set with ``%tkernel FLAGS``).

    Attributes:
        options: the `Options` of the cell's launches.
        gpu: the `GpuOptions` fields of the gpu, compare and ir modes (its `mode` is unused).
        magic: the magic's own settings, quiet and ir.
    """

    options: Options
    gpu: GpuOptions = field(default_factory=GpuOptions)
    magic: dict[str, Any] = field(
        default_factory=lambda: {flag.dest: flag.default for flag in FLAGS if flag.target == "magic"}
    )

    def value(self, flag: Flag) -> Any:
        """The current default of `flag`."""
        if flag.target == "options":
            return getattr(self.options, flag.dest)
        if flag.target == "gpu":
            return getattr(self.gpu, flag.dest)
        return self.magic[flag.dest]

    def reset(self) -> Defaults:
        """The defaults before any ``%tkernel FLAGS``; the debugger the magic was made with stays."""
        return Defaults(Options(debugger=self.options.debugger))


def given(args: argparse.Namespace, target: Target, mode: str | None = None) -> dict[str, Any]:
    """The fields of `target` that the flags on a line set (those of `mode`, when one is given)."""
    return {
        flag.dest: flag.convert(getattr(args, flag.dest))
        for flag in FLAGS
        if flag.target == target
        and getattr(args, flag.dest) is not None
        and (mode is None or flag.modes is None or mode in flag.modes)
    }


def cell_options(args: argparse.Namespace, defaults: Defaults) -> Options:
    """The `Options` of a line's flags over the defaults.

    Raises:
        UsageError: --pid without --break, or a value `Options` refuses.
    """
    changes = given(args, "options")
    if args.break_pid is not None and not changes.get("breakpoints", defaults.options.breakpoints):
        raise UsageError("--pid picks the program that --break stops in: give --break LINE as well")
    try:
        return dataclasses.replace(defaults.options, **changes)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def cell_gpu_options(mode: str, args: argparse.Namespace, defaults: Defaults) -> GpuOptions:
    """The cell's `GpuOptions`: its flags over the defaults of the flags that belong to `mode`.

    Raises:
        UsageError: a flag given to a mode it does not belong to, --target without --ir, or a bad value.
    """
    for flag in FLAGS:
        if flag.modes is not None and getattr(args, flag.dest) is not None and mode not in flag.modes:
            where = " or ".join(f"%%tkernel {m}" for m in flag.modes)
            raise UsageError(f"{flag.name} belongs to {where}, not to %%tkernel {mode}")
    if args.target is not None and not ir_of(args, defaults):
        raise UsageError("--target picks the target of --ir: write %%tkernel interpret --ir --target cuda:80")
    kept = {
        flag.dest: defaults.value(flag)
        for flag in FLAGS
        if flag.target == "gpu" and flag.modes is not None and mode in flag.modes
    }
    try:
        return GpuOptions(mode=mode, **{**kept, **given(args, "gpu", mode)})  # type: ignore[arg-type]
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def ir_of(args: argparse.Namespace, defaults: Defaults) -> bool:
    """Whether the line asks for --ir, itself or through the defaults."""
    return bool(defaults.magic["ir"] if args.ir is None else args.ir)


def quiet_of(args: argparse.Namespace, defaults: Defaults) -> bool:
    """Whether the line asks for --quiet, itself or through the defaults."""
    return bool(defaults.magic["quiet"] if args.quiet is None else args.quiet)


def new_defaults(args: argparse.Namespace, defaults: Defaults) -> Defaults:
    """The defaults after ``%tkernel FLAGS`` (after ``--reset`` first, if it is among them).

    Raises:
        UsageError: a mode or --name on the line, or a value the options refuse.
    """
    if args.mode is not None:
        raise UsageError(
            f"%tkernel {args.mode} needs a cell: write %%tkernel {args.mode} as the cell's first line"
        )
    if args.name is not None:
        raise UsageError("--name names one cell's trace: give it to %%tkernel, not to %tkernel")
    if args.reset:
        defaults = defaults.reset()
    options = cell_options(args, defaults)
    magic = {**defaults.magic, **given(args, "magic")}
    try:
        gpu = dataclasses.replace(defaults.gpu, **given(args, "gpu"))
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return Defaults(options, gpu, magic)


def describe_defaults(defaults: Defaults) -> str:
    """What ``%tkernel`` alone prints: the defaults a ``%%tkernel`` cell starts from, every flag's."""
    lines = ["%%tkernel defaults (set with %tkernel FLAGS, forget with %tkernel --reset):"]
    lines += [f"  {flag.name:<13} {flag.show(defaults.value(flag))}" for flag in DEFAULTS]
    return "\n".join(lines)
