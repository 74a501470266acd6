"""The measurements of record: the files their checksums name, the shapes, lookups that say what exists."""

from __future__ import annotations

import hashlib

import pytest

from kvtier.errors import KvtierError
from kvtier.inputs import hardware
from kvtier.inputs import measurements as ms
from tests.conftest import ROOT

DATA = ROOT / "kvtier" / "data" / "measurements" / ms.SET_NAME


SHARED = ROOT.parent / "shared" / "measurements" / ms.SET_NAME


# Read and fitted afresh for each test (10 ms and 60 ms), not once per module or through the cached
# ms.load(): mutation testing (scripts/mutation.sh) then sees every test that reads or fits.
@pytest.fixture
def m() -> ms.Measurements:
    return ms.read(DATA)


@pytest.fixture
def fits(m) -> ms.Fits:
    return ms.fit(m)


def test_every_file_is_the_copy_its_checksum_names():
    lines = (DATA / "SHA256SUMS").read_text().splitlines()
    listed = {line.split("  ", 1)[1]: line.split("  ", 1)[0] for line in lines}
    on_disk = {p.relative_to(DATA).as_posix() for p in DATA.rglob("*") if p.is_file() and p.name != "SHA256SUMS"}
    assert set(listed) == on_disk
    for name, digest in listed.items():
        assert hashlib.sha256((DATA / name).read_bytes()).hexdigest() == digest, name


@pytest.mark.skipif(not SHARED.is_dir(), reason="the shared measurement store is not beside this checkout")
def test_the_copy_equals_the_shared_store():
    for path in SHARED.rglob("*"):
        if path.is_file():
            rel = path.relative_to(SHARED).as_posix()
            copy = DATA / (rel + ".txt" if rel.startswith("method/") else rel)
            assert copy.read_bytes() == path.read_bytes(), rel


def test_the_shapes_are_llama_3s_with_their_exact_parameter_counts(m):
    # per layer: q 8192x8192 + k, v 2 x 8192x1024 + o 8192x8192 + MLP 3 x 8192x28672 + 2 norms x 8192
    #   = 67,108,864 + 16,777,216 + 67,108,864 + 704,643,072 + 16,384 = 855,654,400
    # x 80 layers = 68,452,352,000; + embeddings and head 2 x 128,256 x 8192 = 2,101,346,304; + final norm 8192
    assert m.shapes["llama-3-70b"].params == 68_452_352_000 + 2_101_346_304 + 8192 == 70_553_706_496
    assert m.shapes["llama-3-8b"].params == 8_030_261_248
    # KV per token: 2 x 80 layers x 8 KV heads x 128 x 2 B = 327,680 B (320 KiB)
    assert m.shapes["llama-3-70b"].kv_bytes_per_token == 327_680


def test_the_h200_constants_are_the_hardware_presets():
    acc = hardware.accelerator("h200")
    assert (ms.H200_PEAK_FLOP_PER_S, ms.H200_MEM_BANDWIDTH) == (acc.peak_flop_per_s, acc.mem_bandwidth_bytes_per_s)


def test_the_shapes_other_properties(m):
    # Llama-3-8B: 2 x 8.030e9 B of weights; attention FLOPs per position 2 x 32 layers x 32 heads x 2 x 128
    # = 524,288; KV per token 2 x 32 x 8 x 128 x 2 B = 131,072 B
    shape = m.shapes["llama-3-8b"]
    assert [s.name for s in m.shapes.values()] == ["llama-3-70b", "llama-3-8b"]
    assert shape.weight_bytes == 2 * 8_030_261_248
    assert shape.attention_flops_per_position == 524_288
    assert shape.kv_bytes_per_token == 131_072
    # logits for one of 16 tokens instead of all 16: the other 15 skip the head's
    # 2 x vocab x hidden each, 15 x 2 x 128,256 x 4096 = 15,760,097,280 FLOP fewer
    # from position 0 by default: 2 x 16 x 8,030,261,248 + 524,288 x 16 x 17 / 2 = 256,968,359,936 + 71,303,168
    full = float(shape.flops(16))
    assert full == 2 * 16 * 8_030_261_248 + 524_288 * 136
    assert full - float(shape.flops(16, logits_tokens=1)) == 15 * 2 * 128_256 * 4096


def test_lookups_that_miss_say_what_exists(m):
    with pytest.raises(KvtierError) as info:
        m.record("fetch_1gib")
    known = "batching_blocks, batching_copy_per_block, batching_one_copy, "
    assert str(info.value).startswith(f"no measured value 'fetch_1gib'; known: {known}")
    with pytest.raises(KvtierError) as info:
        m.copy("h2d_pinned", 12345)
    assert str(info.value) == "no measured h2d_pinned copy of 12345 bytes in the set h200-2026-11-30"
    assert m.copy("d2d", 4096).kind == "d2d"
    assert [c.n_bytes for c in m.copies_of("d2d")][:3] == [4096, 16384, 65536]  # 4 KiB x 4^k, smallest first
