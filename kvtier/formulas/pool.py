"""What a fleet's tier costs and saves: the same DRAM on each serving node, or in one pool of servers over RDMA.

A tier on each node is DRAM in the accelerators' own hosts: its price is the memory alone.  A pooled tier is
DRAM in servers of its own, which every instance reads over its accelerators' RDMA NICs: its price is the
memory, the servers that hold it (:attr:`PoolPrices.server_usd` each, :attr:`PoolPrices.server_bytes` of DRAM
apiece) and one network port per link it serves from (a NIC, its switch port and the optics at each end), as many
as its reads need at :attr:`PoolPrices.port_bandwidth_bytes_per_s` a port and at least one a server.  The
accelerators' own NICs are the fleet's RDMA network already, so the pool adds only its side.  Purchases are
written off over the amortisation period; the memory also draws its power (:func:`kvtier.formulas.tiering.
hold_usd_per_byte_s`); the pool servers' own power has no published figure here and is not counted.

Against those, each choice saves the prefill its hits avoid inside a batch, less the accelerator time its
fetches take, both at the accelerator's price (:func:`fleet_tier_cost`).  SI units: B, B/s, s, USD, USD/s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from kvtier.formulas import tiering

CHOICES: tuple[str, ...] = ("node", "pooled")
"""Where a fleet's tier lives: DRAM in each serving node's host, or one pool of servers read over RDMA."""


@dataclass(frozen=True)
class PoolPrices:
    """What a pooled tier's servers and network cost.

    Attributes
    ----------
    server_usd : float
        One pool server without its DRAM: chassis, CPUs, board, power supplies (USD).
    server_bytes : float
        DRAM one pool server holds (B).
    port_usd : float
        One network port of the pool: a NIC, its switch port and the optics at both ends of its link (USD).
    port_bandwidth_bytes_per_s : float
        What one port delivers to the fleet, one direction (B/s).
    """

    server_usd: float
    server_bytes: float
    port_usd: float
    port_bandwidth_bytes_per_s: float


@dataclass(frozen=True)
class FleetTierCost:
    """One choice of tier for a fleet, priced per second of its traffic (USD/s) and bought outright (USD).

    ``servers`` and ``ports`` are 0 for a tier on each node; ``net_usd_per_s`` is the recomputation avoided less
    the fetches and the holding.
    """

    choice: str
    capacity_bytes: float
    read_bytes_per_s: float
    servers: int
    ports: int
    memory_usd: float
    servers_usd: float
    ports_usd: float
    hold_usd_per_s: float
    fetch_usd_per_s: float
    recompute_avoided_usd_per_s: float
    net_usd_per_s: float

    @property
    def hardware_usd(self) -> float:
        """Everything the choice buys (USD): its memory, and a pool's servers and ports."""
        return self.memory_usd + self.servers_usd + self.ports_usd


def pool_servers(capacity_bytes: float, server_bytes: float) -> int:
    """Servers a pool of ``capacity_bytes`` needs: ``ceil(capacity / server_bytes)`` (count; 0 for an empty pool)."""
    if capacity_bytes <= 0:
        return 0
    return math.ceil(capacity_bytes / server_bytes)


def pool_ports(servers: int, read_bytes_per_s: float, port_bandwidth_bytes_per_s: float) -> int:
    """Ports a pool serves its reads from: enough for ``read_bytes_per_s``, at least one per server (count)."""
    if servers == 0:
        return 0
    return max(servers, math.ceil(read_bytes_per_s / port_bandwidth_bytes_per_s))


def fleet_tier_cost(
    choice: str,
    capacity_bytes: float,
    read_bytes_per_s: float,
    avoided_accelerator_s_per_s: float,
    fetch_accelerator_s_per_s: float,
    prices: tiering.Prices,
    pool: PoolPrices,
) -> FleetTierCost:
    """A fleet's tier of ``capacity_bytes`` in all, on each node or pooled (:data:`CHOICES`), priced.

    Parameters
    ----------
    choice : str
        ``node`` or ``pooled``.
    capacity_bytes : float
        The tier's bytes over the whole fleet (B).
    read_bytes_per_s : float
        What the fleet reads from it (B/s); sizes a pool's ports.
    avoided_accelerator_s_per_s, fetch_accelerator_s_per_s : float
        Accelerator-seconds per second its hits avoid recomputing (inside a batch) and its fetches take.
    prices : kvtier.formulas.tiering.Prices
        The accelerator's price, DRAM's price and power, the energy price and the amortisation period.
    pool : PoolPrices
        The pool's servers and ports.
    """
    if choice not in CHOICES:
        raise ValueError(f"choice must be one of {', '.join(CHOICES)}, not {choice!r}")
    servers = pool_servers(capacity_bytes, pool.server_bytes) if choice == "pooled" else 0
    ports = pool_ports(servers, read_bytes_per_s, pool.port_bandwidth_bytes_per_s)
    servers_usd, ports_usd = servers * pool.server_usd, ports * pool.port_usd
    memory = tiering.hold_usd_per_byte_s(prices)["dram"] * capacity_bytes  # bought and powered
    hold = memory + (servers_usd + ports_usd) / prices.amortisation_s
    accel = prices.accelerator_usd_per_s
    avoided, fetch = avoided_accelerator_s_per_s * accel, fetch_accelerator_s_per_s * accel
    return FleetTierCost(
        choice=choice,
        capacity_bytes=capacity_bytes,
        read_bytes_per_s=read_bytes_per_s,
        servers=servers,
        ports=ports,
        memory_usd=capacity_bytes * prices.dram_usd_per_byte,
        servers_usd=servers_usd,
        ports_usd=ports_usd,
        hold_usd_per_s=hold,
        fetch_usd_per_s=fetch,
        recompute_avoided_usd_per_s=avoided,
        net_usd_per_s=avoided - fetch - hold,
    )
