"""A fleet's tier priced: the same DRAM on each node, or in one pool of servers with network ports."""

from __future__ import annotations

import pytest

from kvtier.formulas import pool, tiering

PRICES = tiering.Prices(
    accelerator_usd_per_s=1e-3,
    hbm_share=0.5,
    hbm_bytes=80e9,
    dram_usd_per_byte=1e-8,  # 10 USD/GB
    cxl_usd_per_byte=1.2e-8,
    nvme_usd_per_byte=3e-10,
    amortisation_s=1e8,
    usd_per_j=0.0,  # no energy price: holding is the purchase written off alone
    dram_w_per_byte=1e-10,
    nvme_w_per_byte=1e-12,
    power_lone_w=467.0,
    power_batch_w=700.0,
)
POOL = pool.PoolPrices(server_usd=12_000.0, server_bytes=2e12, port_usd=4_150.0, port_bandwidth_bytes_per_s=23.75e9)


def test_servers_and_ports():
    # 5.3 TB over 2 TB servers: 3; exactly 4 TB: 2; nothing: none
    assert pool.pool_servers(5.3e12, 2e12) == 3
    assert pool.pool_servers(4e12, 2e12) == 2
    assert pool.pool_servers(0.0, 2e12) == 0
    # ports: enough for the reads, at least one a server. 100 GB/s at 23.75 GB/s a port: ceil(4.21) = 5
    assert pool.pool_ports(3, 100e9, 23.75e9) == 5
    assert pool.pool_ports(3, 4.5e9, 23.75e9) == 3
    assert pool.pool_ports(0, 4.5e9, 23.75e9) == 0


def test_a_tier_on_each_node_buys_memory_alone():
    # 4 TB of DRAM at 10 USD/GB = 40,000 USD, written off over 1e8 s: 4e-4 USD/s. Hits avoid 10 accelerator-s a
    # second (0.01 USD/s at 1e-3 USD/s) and fetching them takes 0.5 (5e-4 USD/s): net 0.01 - 5e-4 - 4e-4 = 0.0091
    got = pool.fleet_tier_cost("node", 4e12, 50e9, 10.0, 0.5, PRICES, POOL)
    assert (got.servers, got.ports) == (0, 0)
    assert got.hardware_usd == pytest.approx(40_000.0, rel=1e-12)
    assert got.hold_usd_per_s == pytest.approx(4e-4, rel=1e-12)
    assert got.net_usd_per_s == pytest.approx(0.0091, rel=1e-12)


def test_a_pool_buys_servers_and_ports_too():
    # the same 4 TB pooled: 2 servers (24,000 USD); reads of 50 GB/s need ceil(50 / 23.75) = 3 ports (12,450 USD).
    # Holding: 4e-4 + 36,450 / 1e8 = 7.645e-4 USD/s; net 0.01 - 5e-4 - 7.645e-4 = 0.0087355
    got = pool.fleet_tier_cost("pooled", 4e12, 50e9, 10.0, 0.5, PRICES, POOL)
    assert (got.servers, got.ports) == (2, 3)
    assert got.hardware_usd == pytest.approx(40_000.0 + 24_000.0 + 12_450.0, rel=1e-12)
    assert got.hold_usd_per_s == pytest.approx(7.645e-4, rel=1e-12)
    assert got.net_usd_per_s == pytest.approx(0.0087355, rel=1e-12)
    with pytest.raises(ValueError, match="choice must be one of node, pooled"):
        pool.fleet_tier_cost("shared", 4e12, 50e9, 10.0, 0.5, PRICES, POOL)
