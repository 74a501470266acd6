"""The kernel a notebook runs on: Unix sockets in a private directory, not TCP ports.

A kernel on TCP gets its five ports by binding port 0 and letting go; between that and the
kernel binding them, any other process (another notebook's kernel client opening a
connection, a kernel left by a killed build) may take one, and the kernel dies with
``Address already in use`` (jupyter_client's known port race). With ``--jobs 2`` this was
seen once in a CI run. Unix sockets named in a directory of their own cannot collide.
"""

from __future__ import annotations

import os
from pathlib import Path

from jupyter_client import AsyncKernelManager
from traitlets import default

# AF_UNIX socket paths are limited to 108 bytes on Linux and 104 on macOS, NUL included
MAX_SOCKET_PATH_BYTES = 100
SOCKET_SUFFIX = "-ipc-99"  # the longest name jupyter_client gives a socket next to kernel.json


def kernel_manager_class(directory: Path) -> type[AsyncKernelManager]:
    """A kernel manager whose kernel talks over Unix sockets in ``directory``.

    Parameters
    ----------
    directory
        A directory that only this kernel uses (made with :func:`tempfile.mkdtemp`); its
        connection file and sockets go there, and the caller removes it afterwards.

    Returns
    -------
    type
        ``AsyncKernelManager`` itself where Unix sockets are not available (Windows) or the
        socket path would be too long (a very long ``TMPDIR``); there the port race remains.
    """
    connection_file = directory / "kernel.json"
    socket_path = str(connection_file.with_suffix("")) + SOCKET_SUFFIX
    if os.name != "posix" or len(os.fsencode(socket_path)) > MAX_SOCKET_PATH_BYTES:
        return AsyncKernelManager

    class UnixSocketKernelManager(AsyncKernelManager):
        @default("transport")
        def _transport_default(self) -> str:
            return "ipc"

        @default("connection_file")
        def _connection_file_default(self) -> str:
            return str(connection_file)

    return UnixSocketKernelManager
