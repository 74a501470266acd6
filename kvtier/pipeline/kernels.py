"""The kernel a notebook runs on: Unix sockets in a private directory, not TCP ports.

A kernel on TCP gets its five ports by binding port 0 and letting go; between that and the
kernel binding them, any other process (another notebook's kernel client opening a
connection, a kernel left by a killed build) may take one, and the kernel dies with
``Address already in use`` (jupyter_client's known port race). With ``--jobs 2`` this was
seen once in a CI run. Unix sockets named in a directory of their own cannot collide.

The kernels of one build form a :class:`KernelGroup`: a build that fails or is stopped
kills them all at once, and a kernel that starts after that is killed as it starts, so no
notebook goes on writing into a staging directory the build has discarded.
"""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path
from typing import Any

from jupyter_client import AsyncKernelManager
from traitlets import default

# AF_UNIX socket paths are limited to 108 bytes on Linux and 104 on macOS, NUL included
MAX_SOCKET_PATH_BYTES = 100
SOCKET_SUFFIX = "-ipc-99"  # the longest name jupyter_client gives a socket next to kernel.json


class KernelGroup:
    """The kernels of one build, which :meth:`stop` kills all at once, from any thread.

    Every kernel a :func:`kernel_manager_class` of the group starts joins it; one that
    starts after :meth:`stop` is killed at once (its notebook then fails as on a dead kernel).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._managers: list[AsyncKernelManager] = []
        self._stopped = False

    def join(self, manager: AsyncKernelManager) -> None:
        """Add a manager whose kernel has just started; kill the kernel if the group is stopped."""
        with self._lock:
            if not self._stopped:
                self._managers.append(manager)
                return
        _kill(manager)

    def leave(self, manager: AsyncKernelManager) -> None:
        """Forget a manager whose kernel is being shut down (its process id may soon be reused)."""
        with self._lock:
            if manager in self._managers:
                self._managers.remove(manager)

    def stop(self) -> None:
        """Kill every kernel of the group (SIGKILL to its process group) and every kernel started later."""
        with self._lock:
            self._stopped = True
            managers, self._managers = self._managers, []
        for manager in managers:
            _kill(manager)


def _kill(manager: AsyncKernelManager) -> None:
    """SIGKILL the kernel of ``manager`` and its process group, if its process still runs.

    The kernel was started in a session of its own (jupyter_client does so on POSIX), so its
    process group holds the kernel and whatever it started, and nothing else.
    """
    provisioner = manager.provisioner
    process = getattr(provisioner, "process", None)
    if process is None or process.poll() is not None:  # ended (and reaped): its id may belong to another now
        return
    pgid = getattr(provisioner, "pgid", None)
    try:
        if pgid and hasattr(os, "killpg"):
            os.killpg(pgid, signal.SIGKILL)
        else:
            process.kill()
    except ProcessLookupError:
        pass


def kernel_manager_class(directory: Path, group: KernelGroup | None = None) -> type[AsyncKernelManager]:
    """A kernel manager whose kernel talks over Unix sockets in ``directory``.

    Parameters
    ----------
    directory
        A directory that only this kernel uses (made with :func:`tempfile.mkdtemp`); its
        connection file and sockets go there, and the caller removes it afterwards.
    group
        The build's kernels: the kernel joins it when it starts and leaves it when shut down.

    Returns
    -------
    type
        ``AsyncKernelManager`` itself where Unix sockets are not available (Windows) or the
        socket path would be too long (a very long ``TMPDIR``); there the port race remains.
    """
    base = AsyncKernelManager if group is None else _grouped(group)
    connection_file = directory / "kernel.json"
    socket_path = str(connection_file.with_suffix("")) + SOCKET_SUFFIX
    if os.name != "posix" or len(os.fsencode(socket_path)) > MAX_SOCKET_PATH_BYTES:
        return base

    class UnixSocketKernelManager(base):  # type: ignore[valid-type,misc]
        @default("transport")
        def _transport_default(self) -> str:
            return "ipc"

        @default("connection_file")
        def _connection_file_default(self) -> str:
            return str(connection_file)

    return UnixSocketKernelManager


def _grouped(group: KernelGroup) -> type[AsyncKernelManager]:
    """``AsyncKernelManager`` whose kernels join ``group`` when started and leave it when shut down."""

    class GroupedKernelManager(AsyncKernelManager):
        async def start_kernel(self, **kw: Any) -> None:
            await super().start_kernel(**kw)
            group.join(self)

        async def shutdown_kernel(self, now: bool = False, restart: bool = False) -> None:
            group.leave(self)
            await super().shutdown_kernel(now=now, restart=restart)

    return GroupedKernelManager
