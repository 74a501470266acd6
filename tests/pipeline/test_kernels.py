"""The notebooks' kernels talk over Unix sockets in a private directory, so no TCP port race."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path

import pytest
from jupyter_client import AsyncKernelManager

from kvtier.pipeline.kernels import KernelGroup, kernel_manager_class

POSIX = pytest.mark.skipif(os.name != "posix", reason="Unix sockets")


@POSIX
def test_a_kernel_binds_unix_sockets_next_to_its_connection_file(tmp_path):
    km = kernel_manager_class(tmp_path)(kernel_name="python3")

    async def start_check_stop() -> tuple[dict, list[str]]:
        await km.start_kernel()
        try:
            kc = km.client()
            kc.start_channels()
            await kc.wait_for_ready(timeout=120)
            kc.stop_channels()
            info = json.loads((tmp_path / "kernel.json").read_text())
            sockets = sorted(p.name for p in tmp_path.iterdir() if p.is_socket())
        finally:
            await km.shutdown_kernel(now=True)
        return info, sockets

    info, sockets = asyncio.run(start_check_stop())
    assert info["transport"] == "ipc"
    # ip is the connection file's path without ".json", plus "-ipc"; the five channels
    # (shell, iopub, stdin, control, heartbeat) take the first five free numbers after it
    assert info["ip"] == str(tmp_path / "kernel-ipc")
    assert sockets == [f"kernel-ipc-{n}" for n in range(1, 6)]


def test_a_directory_too_long_for_a_socket_path_keeps_tcp(tmp_path):
    # 100 bytes is the limit; "/kernel-ipc-99" adds 14, so a 90-byte directory gives 104
    long_dir = Path("/" + "d" * 89)
    assert len(str(long_dir)) == 90
    assert kernel_manager_class(long_dir) is AsyncKernelManager
    # an 86-byte directory gives exactly 100: still Unix sockets
    assert kernel_manager_class(Path("/" + "d" * 85)) is not AsyncKernelManager


@POSIX
def test_stopping_a_group_kills_its_kernels_and_every_kernel_started_later(tmp_path):
    # a failed or stopped build calls stop() from the main thread while notebooks run in others;
    # a kernel whose start was under way then must not live on either
    group = KernelGroup()
    managers = []
    for name in ("running", "late"):
        (tmp_path / name).mkdir()
        managers.append(kernel_manager_class(tmp_path / name, group)(kernel_name="python3"))

    async def start_stop_start() -> list[int | None]:
        running, late = managers
        await running.start_kernel()
        group.stop()
        await late.start_kernel()
        codes = []
        for km in managers:
            codes.append(await asyncio.wait_for(asyncio.to_thread(km.provisioner.process.wait), 60))
            await km.shutdown_kernel(now=True)
        return codes

    # SIGKILL shows as a return code of -9 (-signal number), for the kernel running and the one started after
    assert asyncio.run(start_stop_start()) == [-signal.SIGKILL, -signal.SIGKILL]


@POSIX
def test_a_kernel_shut_down_leaves_its_group(tmp_path):
    # its process id may be reused once it has ended: stop() must not signal it
    group = KernelGroup()
    km = kernel_manager_class(tmp_path, group)(kernel_name="python3")

    async def start_shutdown() -> None:
        await km.start_kernel()
        assert group._managers == [km]
        await km.shutdown_kernel(now=True)

    asyncio.run(start_shutdown())
    assert group._managers == []
