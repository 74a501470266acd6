"""The measured page's numbers: every figure its prose quotes, by glue name, gathered from its parts."""

from __future__ import annotations

from typing import Any

from kvtier.inputs import measurements as ms
from kvtier.report import words
from kvtier.report.pages.measured.changes import changes_under_measured_set
from kvtier.report.pages.measured.engines import engine_numbers
from kvtier.report.pages.measured.fetch import fetch_numbers, layout_numbers, layout_table
from kvtier.report.pages.measured.forward import (
    forward_numbers,
    interior_numbers,
    knee_probe_tokens,
)
from kvtier.report.pages.measured.ratio import point_numbers
from kvtier.report.pages.measured.shipped import (
    BLOCK_BYTES,
    BLOCK_TOKENS,
    SHAPE8,
    SHAPE70,
    measurements,
)
from kvtier.report.pages.measured.validation import validation_numbers
from kvtier.report.pages.measured.words import duplex_sentence, measured_set_sentence
from kvtier.scenario import Scenario
from kvtier.units import MIB


def numbers(s: Scenario) -> dict[str, Any]:
    """Every number the measured page quotes: measurements, fits, residuals, the illustrative point."""
    out: dict[str, Any] = {
        **fetch_numbers(s),
        **layout_numbers(s),
        **forward_numbers(s),
        **interior_numbers(s),
        **point_numbers(s),
        **overlap_numbers(),
        **energy_numbers(),
        **context_numbers(s),
    }
    out["measured_set_sentence"] = measured_set_sentence(changes_under_measured_set())
    out["copy_method_sentence"] = words.copy_method_sentence(s)
    out.update(validation_numbers(s))
    out.update(engine_numbers(s))
    return out


def overlap_numbers() -> dict[str, Any]:
    """Copies beside a forward pass, and copies both ways at once: what each slows (ms, GB/s, percent)."""
    m = measurements()
    graph70 = m.v("forward16_llama-3-70b_graph")
    alone, busy = m.v("overlap_forward_alone"), m.v("overlap_forward_with_copies")
    moved = m.v("overlap_copies_per_run") * busy / m.v("overlap_copies_s")
    h2d_alone, h2d_busy = m.v("bidirectional_h2d_alone_s"), m.v("bidirectional_h2d_together_s")
    d2h_busy = m.v("bidirectional_d2h_together_s")
    each = m.v("bidirectional_bytes")
    out: dict[str, Any] = dict(
        overlap_alone_ms=alone * 1e3,
        overlap_busy_ms=busy * 1e3,
        overlap_slowdown_pct=(busy / alone - 1) * 100,
        overlap_copy_gbps=m.v("overlap_copy_rate") / 1e9,
        overlap_blocks_per_pass=moved,
        overlap_cost_per_block_us=(busy - alone) / moved * 1e6,
        overlap_regen_over_cost=graph70 / ((busy - alone) / moved),
        duplex_mib=each / MIB,
        duplex_alone_gbps=each / h2d_alone / 1e9,
        duplex_h2d_gbps=each / h2d_busy / 1e9,
        duplex_d2h_gbps=each / d2h_busy / 1e9,
        duplex_total_gbps=(each / h2d_busy + each / d2h_busy) / 1e9,
        duplex_h2d_loss_pct=(1 - h2d_alone / h2d_busy) * 100,
    )
    out["duplex_sentence"] = duplex_sentence(out["duplex_h2d_loss_pct"])
    return out


def energy_numbers() -> dict[str, Any]:
    """The measured energy of a pass and of a fetch, and the energy model held out on the 8B pass (J, W, percent)."""
    m = measurements()
    e70, e8, ef = (
        m.v("energy_forward16_llama-3-70b_j"),
        m.v("energy_forward16_llama-3-8b_j"),
        m.v("energy_fetch_5mib_j"),
    )
    out: dict[str, Any] = dict(
        energy_70b_j=e70,
        energy_70b_w=m.v("power_forward16_llama-3-70b_w"),
        energy_8b_j=e8,
        energy_fetch_mj=ef * 1e3,
        energy_fetch_w=m.v("power_fetch_w"),
        energy_idle_w=m.v("power_idle_w"),
        energy_ratio=e70 / ef,
        energy_ratio_8b=e8 / ef,
    )
    check = ms.energy_check(m)
    out.update(
        energy_in_sample_error_pct=abs(check["in_sample_error_pct"]),
        energy_held_out_j=check["held_out_j"],
        energy_held_out_measured_j=check["held_out_measured_j"],
        energy_held_out_error_pct=abs(check["held_out_error_pct"]),
        energy_held_out_direction="above" if check["held_out_error_pct"] > 0 else "below",
        energy_held_out_power_w=check["held_out_power_w"],
    )
    return out


def context_numbers(s: Scenario) -> dict[str, Any]:
    """What the page says of the measurements themselves: the block, the sweeps' reach, the runs counted."""
    m = measurements()
    shape70 = m.shapes[SHAPE70]
    lay = layout_table(s).set_index("layout")
    chunked = lay[lay["transfers"] == m.chunks]
    sweep_tokens = {shape: [p.tokens for p in m.sweeps[shape]] for shape in ms.SHAPES}
    return dict(
        block_mib=BLOCK_BYTES / MIB,
        lone_tokens=BLOCK_TOKENS,
        layers_70b=shape70.layers,
        sweep_min_tokens=min(min(t) for t in sweep_tokens.values()),
        sweep_70b_max_tokens=max(sweep_tokens[SHAPE70]),
        sweep_8b_max_tokens=max(sweep_tokens[SHAPE8]),
        compute_fit_min_tokens=ms.COMPUTE_FIT_MIN_TOKENS,
        matmul_n=int(m.v("matmul_n")),
        knee_probe_tokens=knee_probe_tokens(),
        peer_far_tokens=max(p[3] for p in ms.peer_predictions()),
        pageable_loss_pct=(1 - m.v("fetch_5mib_h2d_pinned") / m.v("fetch_5mib_h2d_pageable")) * 100,
        n_per_chunk_runs=len(chunked),
        n_evicted=len(m.evicted),
    )
