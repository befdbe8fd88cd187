"""The ``perfcmp`` command line: the typer app assembled from one module per command
(``perfcmp.commands``), and ``main``, which maps errors and signals to exit codes.

Every user mistake ends as one line on stderr, ``perfcmp: error: <path>: <what>``, with the
documented exit code (2 for usage, input and output errors) and no traceback; bugs still show one.
SIGINT and SIGTERM become ``signals.Stopped`` wherever the program is, so every ``finally``
runs (the read worker is stopped, temporary files are removed) before ``perfcmp: interrupted``
(exit 130) or ``perfcmp: terminated`` (exit 143).
"""

from __future__ import annotations

import functools
import os
import signal
import sys
import threading

# only light modules here: typer loads once a command line needs parsing, and the analysis
# (pandas, numpy) with the command that runs
from perfcmp.base.errors import PerfcmpError, UsageError
from perfcmp.base.heap import map_large_blocks_apart
from perfcmp.base.signals import MESSAGES, Stopped, stop_on_signals
from perfcmp.base.version import __version__

VERSION = ["--version"]


@functools.cache
def build_app():
    """The typer app: the ``perfcmp`` group with its ``--version``, and one command per module of
    ``perfcmp.commands``, in the order ``--help`` lists them."""
    import typer

    from perfcmp.commands import compare, golden, history, render
    from perfcmp.commands.common import Group, OneSpelling

    def show_version(value: bool) -> None:
        if value:
            print(f"perfcmp {__version__}")
            raise typer.Exit()

    app = typer.Typer(cls=Group, add_completion=True, pretty_exceptions_enable=False, no_args_is_help=True,
                      help="Compare two AI-training performance profiles (GPU Kineto traces, Ascend NPU exports).")

    @app.callback()
    def _group(
        version: bool = typer.Option(False, "--version", callback=show_version, is_eager=True,
                                     help="Print perfcmp's version and exit."),
    ) -> None:
        """perfcmp: where two training profiles spent time and memory differently, and why."""

    app.command(cls=OneSpelling, epilog=compare.COMPARE_EXAMPLES)(compare.compare)
    app.command("render", cls=OneSpelling, epilog=render.RENDER_EXAMPLES)(render.render_result)
    app.add_typer(golden.golden, name="golden")
    app.command(cls=OneSpelling)(history.history)
    return app


def __getattr__(name: str):
    if name == "app":  # perfcmp.cli.app, for typer's test runner and completion
        return build_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code."""
    if (sys.argv[1:] if argv is None else argv) == VERSION:  # answered before typer loads (start-up time)
        print(f"perfcmp {__version__}")
        return 0
    map_large_blocks_apart()
    import typer

    from perfcmp.budget import under_a_cap

    try:
        under_a_cap()
        with stop_on_signals():
            code = build_app()(args=argv, prog_name="perfcmp", standalone_mode=False)
    except Stopped as stop:
        return _stopped(stop.signum)
    except PerfcmpError as exc:
        return _fail(str(exc), exc.exit_code)
    except MemoryError:  # outside a read (which names its input): the environment, not a bug
        return _fail(_short_of_memory("to finish"), UsageError.exit_code)
    except ImportError as exc:
        if not _memory_failure(exc):  # a broken installation: a bug report wants the traceback
            raise
        return _fail(_short_of_memory("to load perfcmp's libraries"), UsageError.exit_code)
    except typer.Exit as exc:
        if isinstance(exc.__cause__, KeyboardInterrupt):  # typer's own Ctrl-C handling (no handler of ours)
            return _stopped(signal.SIGINT)
        return exc.exit_code
    except typer.TyperException as exc:  # the command-line parser's usage errors
        message = exc.format_message()
        if message.lstrip().startswith("Usage:"):  # no arguments at all: the help is the answer
            print(message, file=sys.stderr)
            return UsageError.exit_code
        return _fail(message, UsageError.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        return _stopped(signal.SIGINT)
    return code if isinstance(code, int) else 0


def run() -> None:
    """The console script's entry point (and ``python -m perfcmp``'s): ``main``, then the process
    ends at once with its exit code.

    The interpreter's own shutdown frees every object the run made, one by one (31-35 ms after the
    real GPU pair's comparison, 4 % of its run; more after a large one), and runs nothing perfcmp
    needs: every file is written and renamed, every temporary file removed and every worker
    waited for before ``main`` returns. So the buffered streams are flushed and the process ends
    (``os._exit``); when a stream cannot be flushed (a closed pipe) or another thread still runs,
    the usual shutdown happens instead, as it did before."""
    code = main()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        raise SystemExit(code) from None
    if threading.active_count() == 1:
        os._exit(code)
    raise SystemExit(code)


def _short_of_memory(what: str) -> str:
    from perfcmp.budget import MB, address_space_limit, available_memory

    cap, free = address_space_limit(), available_memory()
    limits = ([f"the address-space limit is {cap / MB:.0f} MB"] if cap is not None else []) + \
        ([f"{free / MB:.0f} MB of memory is free"] if free is not None else [])
    return f"not enough memory {what}" + (f" ({', '.join(limits)})" if limits else "") + \
        "; try --jobs 1, or raise the limit (ulimit -v)"


def _memory_failure(exc: ImportError) -> bool:
    """An import that failed for want of memory (the loader cannot map a library's segments)."""
    text = str(exc).lower()
    return isinstance(exc.__cause__ or exc.__context__, MemoryError) or any(
        s in text for s in ("failed to map segment", "cannot allocate memory", "out of memory"))


def _stopped(signum: int) -> int:
    print(f"perfcmp: {MESSAGES[signum]}", file=sys.stderr)
    return 128 + signum


def _fail(message: str, code: int) -> int:
    print(f"perfcmp: error: {' '.join(message.split())}", file=sys.stderr)
    return code


if __name__ == "__main__":
    run()
