"""Session: intercepts Triton launches while it is open and restores everything when it closes."""

from __future__ import annotations

from types import TracebackType
from typing import Any

from kernel_nb.engine import Engine, NamespaceSnapshot, triton_compat
from kernel_nb.errors import KernelError, LaunchInterrupted
from kernel_nb.options import Options
from kernel_nb.trace import Launch, Trace

_ACTIVE_MARK = "__kernel_nb_session__"


class Session:
    """Runs every Triton launch made inside it on the CPU through kernel_nb's engine.

    `@triton.jit` kernels, `@triton.autotune` (the config chosen by `Options.autotune_config`,
    the first by default) and `@triton.heuristics` are intercepted at `run`, so kernels defined
    anywhere (earlier cells, other modules, installed libraries) are covered. Leaving the session
    restores Triton exactly: the same kernels compile for the GPU afterwards.

    The session owns every patch; what a launch does is `_on_launch`, which the GPU session
    (`kernel_nb.gpu.GpuSession`) overrides and nothing else.

    Attributes:
        trace: one `Launch` per interpreted launch, in order (failed launches included).
        options: the options it runs under.
    """

    def __init__(self, options: Options) -> None:
        self.options = options
        self.trace = Trace()
        self._engine: Engine | None = None
        self._seen = 0
        self._snapshot: NamespaceSnapshot | None = None
        self._triton_runs: dict[type, Any] = {}

    @property
    def launches(self) -> list[Launch]:
        return self.trace.launches

    def __enter__(self) -> Session:
        jit = triton_compat.JIT_FUNCTION
        if getattr(jit.run, _ACTIVE_MARK, False):
            raise RuntimeError("a kernel_nb session is already active: sessions cannot be nested")
        # the stock interpreter's kernels (TRITON_INTERPRET=1) are taken over as well
        self._snapshot = NamespaceSnapshot([*triton_compat.JIT_TYPES, triton_compat.AUTOTUNER])
        self._triton_runs = {cls: getattr(cls, "run", None) for cls in triton_compat.JIT_TYPES}
        session = self

        def run(kernel: Any, *args: Any, grid: Any, warmup: bool = False, **kwargs: Any) -> Any:
            if warmup:
                return None
            index = session._seen
            session._seen += 1
            selected = session.options.launch is None or index == session.options.launch
            return session._on_launch(kernel, grid, args, kwargs, selected)

        def autotuner_run(tuner: Any, *args: Any, **kwargs: Any) -> Any:
            return run_chosen_config(tuner, session.options.autotune_config, args, kwargs)

        setattr(run, _ACTIVE_MARK, True)
        for cls in triton_compat.JIT_TYPES:
            cls.run = run
        if triton_compat.INTERPRETED_RUN_PER_KERNEL:

            def launcher(kernel: Any, grid: Any) -> Any:
                return lambda *args, **kwargs: run(kernel, *args, grid=grid, **kwargs)

            triton_compat.INTERPRETED_FUNCTION.__getitem__ = launcher
        triton_compat.AUTOTUNER.run = autotuner_run
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._snapshot is not None:
            self._snapshot.restore()
            self._snapshot = None

    def _on_launch(
        self, kernel: Any, grid: Any, args: tuple[Any, ...], kwargs: dict[str, Any], selected: bool
    ) -> Any:
        """What one launch does; `selected` is False for the launches `Options.launch` leaves alone."""
        if not selected:
            return self._run_as_triton(kernel, grid, args, kwargs)
        self._interpret(kernel, grid, args, kwargs)
        return None

    def _run_as_triton(self, kernel: Any, grid: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """The launch as Triton itself would run it (the `run` the session replaced: compiled, or
        the stock interpreter's under TRITON_INTERPRET=1)."""
        return self._triton_run_of(kernel)(kernel, *args, grid=grid, warmup=False, **kwargs)

    def _triton_run_of(self, kernel: Any) -> Any:
        run = next(run for cls, run in self._triton_runs.items() if isinstance(kernel, cls))
        if run is None:  # triton 3.4's interpreter: the kernel's own run (INTERPRETED_RUN_PER_KERNEL)
            return lambda kernel, *args, warmup, **kwargs: kernel.run(*args, **kwargs)
        return run

    @property
    def _triton_run(self) -> Any:
        """Triton's compiled launch (`JITFunction.run`), as the session found it."""
        return self._triton_runs[triton_compat.JIT_FUNCTION]

    def _interpret(self, kernel: Any, grid: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Launch:
        if self._engine is None:
            self._engine = Engine(self.options)
        try:
            launch = self._engine.launch(kernel, grid, args, kwargs, len(self.trace.launches))
        except (KernelError, LaunchInterrupted) as error:
            if error.launch is not None:
                self.trace.launches.append(error.launch)
            raise
        self.trace.launches.append(launch)
        return launch


def interpret(options: Options | None = None, **overrides: Any) -> Session:
    """A session that interprets every Triton launch made inside it.

    Args:
        options: the options; keyword arguments override single fields (`interpret(pids=((0, 0, 0),))`).

    Returns:
        The session, a context manager; `session.trace` holds the launches.
    """
    import dataclasses

    options = options or Options()
    if overrides:
        options = dataclasses.replace(options, **overrides)
    return Session(options)


def run_chosen_config(tuner: Any, choice: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Run an @triton.autotune kernel with one of its configs, without benchmarking the others.

    Raises:
        ValueError: there is no config of that index.
    """
    configs = tuner.configs
    if not 0 <= choice < len(configs):
        raise ValueError(f"autotune_config={choice} but {tuner.fn} has {len(configs)} configs")
    config = configs[choice]
    tuner.nargs = dict(zip(tuner.arg_names, args))
    tuner.best_config = config
    if config.pre_hook is not None:
        config.pre_hook({**tuner.nargs, **kwargs, **config.all_kwargs()})
    try:
        return tuner.fn.run(*args, **kwargs, **config.all_kwargs())
    finally:
        tuner.nargs = None
