"""How a node process runs and ends: one entry point for every node (quiet on Ctrl-C, exit code 2 after a
fatal line) and an executor stopped before any node is destroyed."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from typing import Any

import rclpy
from rclpy.executors import Executor, ExternalShutdownException

from ..errors import EmbodiedError

__all__ = ["run_node", "stop_executor"]


def stop_executor(executor: Executor, spinning: threading.Thread | None = None, timeout: float = 10.0) -> None:
    """Stop ``executor`` and let the callbacks it started finish, before any node is destroyed.

    rclpy's shutdown does not wait for a MultiThreadedExecutor's worker threads: a node destroyed
    under a running callback leaves "The following exception was never retrieved: cannot use
    Destroyable ..." at exit. ``spinning``: the thread running ``executor.spin``, joined first (no
    callback is handed to the workers after that).
    """
    executor.shutdown(timeout_sec=timeout)
    if spinning is not None:
        spinning.join(timeout)
    workers = getattr(executor, "_executor", None)  # the worker pool: rclpy offers no public wait
    if workers is not None and (spinning is None or not spinning.is_alive()):
        workers.shutdown(wait=True)


def run_node(name: str, make_node: Callable[[], Any], make_executor: Callable[[], Executor],
             args: list[str] | None = None) -> None:
    """Spin the node ``make_node`` builds until its ``failed`` future completes or Ctrl-C; a bad parameter
    (EmbodiedError) is one fatal line. Exits with code 2 after a fatal line or a failure."""
    rclpy.init(args=args)
    node = executor = None
    code = 0
    try:
        node = make_node()
        executor = make_executor()
        executor.add_node(node)
        executor.spin_until_future_complete(node.failed)
        code = 2 if node.failed.done() else 0
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except EmbodiedError as err:  # a bad parameter: one line
        rclpy.logging.get_logger(name).fatal(str(err))
        code = 2
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not interrupt the clean-up
        if executor is not None:
            stop_executor(executor)
        if node is not None:
            node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()
    if code:
        raise SystemExit(code)
