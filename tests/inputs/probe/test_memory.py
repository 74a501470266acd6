"""kvtier.inputs.probe.memory: the free memory is the least of the machine's, the cgroup's and the address space's."""

from __future__ import annotations

from kvtier.inputs.probe import memory


def test_free_memory_is_the_least_of_machine_cgroup_and_address_space(monkeypatch):
    monkeypatch.setattr(memory, "_meminfo_available", lambda: 20e9)
    monkeypatch.setattr(memory, "_cgroup_available", lambda: None)
    monkeypatch.setattr(memory, "_address_space_available", lambda: 3e9)
    assert memory.cpu_free_bytes() == 3e9
    monkeypatch.setattr(memory, "_address_space_available", lambda: None)
    assert memory.cpu_free_bytes() == 20e9
    monkeypatch.setattr(memory, "_cgroup_available", lambda: -1.0)  # a cgroup over its limit: nothing free
    assert memory.cpu_free_bytes() == 0.0
