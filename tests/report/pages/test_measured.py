"""The measured page: its numbers, tables of record and the book built from the measured set."""

from __future__ import annotations

import pytest

from kvtier.inputs.assumptions import load_assumptions
from kvtier.report.pages import measured as page
from kvtier.scenario import Scenario
from tests.conftest import MEASURED_SET, ROOT, build, glued_values


@pytest.fixture(scope="module")
def numbers() -> dict:
    return page.numbers(Scenario())


# ---------------------------------------------------------------------------
# the page
# ---------------------------------------------------------------------------


def test_the_illustrative_point_measured(numbers):
    # lone block: 44.4514 ms (CUDA graph) / 104.672 µs = 424.67; in batch: 260.53 µs x 16 = 4.1685 ms / 104.672 µs
    assert numbers["measured_lone_ratio"] == pytest.approx(0.04445135879516601 / 0.00010467199981212616)
    assert numbers["measured_lone_ratio"] == pytest.approx(424.67, abs=0.01)
    assert numbers["measured_in_batch_ratio"] == pytest.approx(39.82, abs=0.01)
    # the chapter: 2 x 70e9 x 16 FLOP / (500 TFLOP/s x 25 %) = 17.92 ms over 5 MiB / 64 GB/s = 81.92 µs: 218.75
    assert numbers["chapter_ratio"] == pytest.approx(218.75)
    # the seed's lone block: 140 GB / (3.35 TB/s x 80 %) = 52.24 ms / 81.92 µs = 637.7
    assert numbers["set_lone_ratio"] == pytest.approx(637.68, abs=0.01)
    # per-chunk layout: 44.4514 ms / 2.0204 ms = 22.0 and / 1.3722 ms = 32.4
    assert (numbers["per_chunk_lone_ratio_min"], numbers["per_chunk_lone_ratio_max"]) == pytest.approx(
        (22.00, 32.39), abs=0.01
    )


def test_the_accuracy_target_is_checked_honestly(numbers):
    df = page.forward_table(Scenario())
    plain = df[df["runner"] != "transformers eager (cross-check)"]
    # 12 passes of the 70B sweep + 8 of the 8B sweep + 2 CUDA-graph passes
    assert numbers["n_passes"] == len(plain) == 22
    assert numbers["n_within"] == int((plain["blended_error_pct"].abs() <= 10).sum()) == 20
    # every 70B pass within 10 %; the misses are eager 8B passes on the launch floor
    assert numbers["worst_70b_error_pct"] < 10
    assert numbers["misses"] == "8B shapes, 1 token (eager): +12.4 %; 8B shapes, 64 tokens (eager): -30.7 %"
    # at the knee (256 tokens, 79.45 ms) the plain maximum is 65.46 ms, -17.6 %; the blend 73.22 ms, -7.8 %
    assert numbers["knee_probe_tokens"] == 256
    assert numbers["knee_probe_max_error_pct"] == pytest.approx(-17.61, abs=0.01)
    assert numbers["knee_probe_blend_error_pct"] == pytest.approx(-7.85, abs=0.01)


def test_the_residual_table_names_the_peers_and_their_versions():
    df = page.residual_table(Scenario())
    peers = df[df["model"].str.contains("llm-analysis 0.2.2|GenZ 0.0.16")]
    # four predictions in the file, llm-analysis's 4,096-token one excluded (it implies more than the peak)
    assert len(peers) == 3 and set(peers["model_provenance"]) == {"derived"}
    assert not (peers["model"].str.startswith("llm-analysis") & peers["quantity"].str.startswith("4,096")).any()
    # llm-analysis 0.2.2, 16 tokens: 29.0 ms against 44.4514 ms measured = -34.76 %
    row = peers[peers["model"].str.startswith("llm-analysis") & peers["quantity"].str.startswith("16-token")]
    assert float(row["error_pct"].iloc[0]) == pytest.approx((29.0 / 44.45135879516601 - 1) * 100)
    assert not df.duplicated(["quantity", "model"]).any()


def test_the_in_batch_reference_is_labelled_a_fitted_slope_in_sample():
    df = page.residual_table(Scenario())
    row = df[df["quantity"].str.startswith("16 more tokens")].iloc[0]
    assert "in-sample" in row["quantity"] and "1,024, 2,048 and 4,096 tokens" in row["quantity"]
    assert row["measured_provenance"].startswith("derived: least-squares slope")
    # 260.53 µs x 16 = 4.1685 ms: the slope, not a measured pass
    assert row["measured_ms"] == pytest.approx(4.1685, abs=1e-4)
    assert set(df["measured_provenance"]) == {"measured", row["measured_provenance"]}
    ratio = page.ratio_table(Scenario())
    in_batch = ratio[ratio["regime"] == "in batch"]
    assert not in_batch["case"].str.startswith("H200 measured").any()
    assert set(in_batch[in_batch["case"] == page.SLOPE_CASE]["provenance"]) == {page.SLOPE_PROVENANCE}


def test_the_energy_check_is_called_a_consistency_check_and_held_out(numbers):
    # in sample: 466.78 W x 56.024 ms = 26.151 J against 26.197 J: 0.18 % (by construction); held out: 8B graph pass
    # 466.78 W x 8.6078 ms = 4.018 J against 3.246 J: 23.8 % above
    assert numbers["energy_in_sample_error_pct"] == pytest.approx(0.177, abs=0.001)
    assert numbers["energy_held_out_j"] == pytest.approx(4.018, abs=0.001)
    assert numbers["energy_held_out_error_pct"] == pytest.approx(23.78, abs=0.01)
    assert numbers["energy_held_out_direction"] == "above"
    text = (ROOT / "notebooks" / "11_measured.md").read_text()
    assert "consistency check, not evidence" in text and "energy_held_out_j" in text


def test_the_excluded_peer_is_said_with_its_implied_rate(numbers):
    # 2 x 69,503,033,344 x 4,096 + 21.996e12 attention = 591.364e12 FLOP over 0.514 s = 1,150.5 TFLOP/s
    sentence = numbers["peer_excluded_sentence"]
    assert sentence.startswith("llm-analysis 0.2.2's 4,096-token figure, 514 ms, is left out")
    assert "implies 1,151 TFLOP/s, above the H200's 989 TFLOP/s dense peak" in sentence
    assert "the least time those peaks allow is 598 ms" in sentence
    assert "peer_llm_analysis_4096_ms" not in numbers


def test_the_borrowed_mfu_brackets_are_said_to_be_borrowed():
    text = (ROOT / "notebooks" / "11_measured.md").read_text()
    assert "borrowed as brackets for the 70B pass" in text
    measured = load_assumptions(MEASURED_SET)
    for key in ("mfu.conservative", "mfu.optimistic", "uncertainty.mfu_low", "uncertainty.mfu_high"):
        assert "not a Llama-3-70B measurement" in " ".join(measured[key].basis.split()), key
    assert "not a Llama-3-70B" not in measured["mfu.typical"].basis


def test_every_table_of_record_has_unique_keys():
    s = Scenario()
    for name, builder, key, *_shown in page.TABLES:
        df = builder(s)
        assert len(df) and not df.duplicated(list(key)).any(), name


def test_the_fetch_fit_error_over_its_points(numbers):
    # 5 MiB: 9.049 µs + 5,242,880 B / 55.14 GB/s = 104.13 µs against 104.67 µs measured: -0.52 %
    assert numbers["fit_5mib_us"] == pytest.approx(104.13, abs=0.01)
    assert numbers["fit_5mib_error_pct"] == pytest.approx(-0.52, abs=0.01)
    assert numbers["fit_max_abs_error_pct"] < 1
    # per chunk: 160 x 9.049 µs + 5 MiB / 55.14 GB/s = 1.448 + 0.095 = 1.543 ms
    assert numbers["per_chunk_model_ms"] == pytest.approx(1.543, abs=0.001)


def test_the_pageable_paragraph_names_the_cold_rate_a_pool_sees(numbers):
    # the probe's rates: 1 MiB in 98.53 us = 10.64 GB/s, 16 MiB the fastest at 15.13 GB/s, then 256 MiB at 8.79 GB/s
    assert (numbers["pageable_1mib_gbps"], numbers["pageable_peak_gbps"]) == pytest.approx((10.64, 15.13), abs=0.01)
    assert (numbers["pageable_peak_mib"], numbers["pageable_big_mib"]) == (16, 256)
    assert numbers["pageable_big_gbps"] == pytest.approx(8.79, abs=0.01)
    # the fit: 26.37 % and 16.38 % of the pinned 55.14 GB/s = 14.54 and 9.03 GB/s, 15.26 us per copy
    assert numbers["pageable_warm_gbps"] == pytest.approx(0.2637 * 55.14, rel=1e-3)
    assert numbers["pageable_cold_gbps"] == pytest.approx(0.1638 * 55.14, rel=1e-3)
    assert numbers["pageable_overhead_us"] == pytest.approx(15.26, abs=0.01)
    # the cache, assumed 128 MiB, bracketed by the copies at 64 MiB (warm) and 256 MiB (cold)
    assert (numbers["cache_low_mib"], numbers["host_cache_mib"], numbers["cache_high_mib"]) == (64, 128, 256)
    # a 5 MiB block from a pool: 9.049 + 15.26 us + 5,242,880 / 9.032 GB/s = 24.31 + 580.5 = 604.8 us; from a
    # buffer in the cache: 24.31 + 5,242,880 / 14.54 GB/s = 384.8 us (the probe measured 405.2 us)
    assert numbers["pageable_pool_block_us"] == pytest.approx(604.8, abs=0.1)
    assert numbers["pageable_cache_block_us"] == pytest.approx(384.8, abs=0.1)
    # out of sample: the eight copies of 256 KiB to 1 GiB within 8.3 % (16 MiB the worst), the 4 KiB one +26.7 %
    assert numbers["pageable_goal_n"] == 8 and numbers["pageable_goal_kib"] == 256
    assert numbers["pageable_goal_loo_worst_abs_pct"] == pytest.approx(8.3, abs=0.05)
    assert numbers["pageable_goal_loo_worst_case"] == "16 MiB"
    assert numbers["val_small_pageable_loo_worst_case"] == "4 KiB"
    assert numbers["val_small_pageable_loo_worst_abs_pct"] == pytest.approx(26.7, abs=0.05)
    text = (ROOT / "notebooks" / "11_measured.md").read_text()
    assert "its fetches see the DRAM rate" in text and "{glue:text}`pageable_pool_block_us:.0f` µs" in text


@pytest.mark.book
def test_the_book_builds_from_the_measured_set(tmp_path):
    out = tmp_path / "measured"
    proc = build(out, "--assumptions", str(MEASURED_SET), "--jobs", "2")
    assert proc.returncode == 0, proc.stderr
    glued = glued_values(out / "notebooks" / "11_measured.ipynb")
    # the set's in-batch ratio: 2 x 70,553,706,496 x 16 FLOP / (989 TFLOP/s x 55.93 %) = 4.0816 ms
    # over 9.049 µs + 5 MiB / 55.14 GB/s = 104.13 µs: 39.20, the measured slope's 39.8 within 2 %
    assert glued["set_in_batch_ratio"] == pytest.approx(39.20, abs=0.01)
    assert glued["set_name"] == "h200-measured"
    ratio = glued_values(out / "notebooks" / "04_ratio.ipynb")
    assert ratio


def test_the_tables_of_record_do_not_depend_on_the_assumption_set():
    # a rerun with other assumptions must leave the record of a measurement alone; only the page's
    # comparison adds this set's two rows
    other = Scenario(load_assumptions(sets={"bandwidth.mid": "100GB/s", "peak_flops": "989TFLOP/s"}))
    for name, builder, _key, *_shown in page.TABLES:
        assert builder(other).equals(builder(Scenario())), name
    assert len(page.comparison_table(other)) == len(page.ratio_table(other)) + 2


def test_the_intro_says_which_pages_the_measured_set_changes_most():
    from kvtier.report.pages import measured

    change = measured.changes_under_measured_set()
    # both sets' illustrative in-batch ratio: the seed's 17.92 ms / 81.92 us = 218.75; the H200 set's is far lower
    assert change["seed_ratio"] == pytest.approx(218.75, rel=1e-12)
    assert change["h200_ratio"] < 50 and change["h200_lone_ratio"] < change["seed_lone_ratio"]
    counts = dict(change["ranked"])
    assert counts["09_models"] >= 0 and counts["07_roofline"] > 0
    assert [c for _, c in change["ranked"]] == sorted(counts.values(), reverse=True)
    sentence = measured.numbers(Scenario())["measured_set_sentence"]
    assert sentence.startswith("Rebuilt with it instead of the seed set, the pages that change most are ")
    # the pages and their titles come from the registry (each page's TITLE), not from imports of them
    from kvtier.report.pages import PAGES

    assert change["titles"] == {p.notebook: p.title for p in PAGES if p.notebook in measured.COMPARED}
    assert [stem for stem, _ in change["ranked"]] == sorted(measured.COMPARED, key=lambda stem: -counts[stem])
    top = [change["titles"][stem] for stem, count in change["ranked"] if count][:4]
    assert sentence.startswith(f"Rebuilt with it instead of the seed set, the pages that change most are {top[0]}, ")
    assert f"{top[-2]} and {top[-1]} (" in sentence
    assert "from 218.75 to " in sentence
    assert (
        "{glue:text}`../notebooks/11_measured.ipynb::measured_set_sentence:s`"
        in (ROOT / "book" / "intro.md").read_text()
    )


def test_the_duplex_sentence_follows_the_host_to_device_loss(numbers):
    # host to device: 54.99 GB/s alone, 50.42 GB/s with device to host busy: 1 - 50.42 / 54.99 = 8.31 % lost
    assert numbers["duplex_h2d_loss_pct"] == pytest.approx(
        (1 - numbers["duplex_h2d_gbps"] / numbers["duplex_alone_gbps"]) * 100
    )
    assert numbers["duplex_h2d_loss_pct"] == pytest.approx(8.31, abs=0.01)
    assert numbers["duplex_sentence"] == (
        "writing evicted blocks out slows fetching others in, by 8.3 % of the host-to-device rate,"
        " but does not stop it."
    )
    assert page._duplex_sentence(0.2).startswith("writing evicted blocks out leaves fetching others in at its rate")
    assert page._duplex_sentence(-3.0).startswith("fetching ran 3.0 % faster")


# ---------------------------------------------------------------------------
# the figures (issue 25: stacked panels, colour never alone, captions that conclude)
# ---------------------------------------------------------------------------


def test_the_ratio_figure_puts_each_regime_in_its_own_panel_and_hatches_what_was_not_measured():
    import matplotlib.pyplot as plt

    fig, caption = page.ratio_figure(Scenario())
    lone, batch = fig.axes[:2]
    # the regime is the panel, not only the colour: 7 lone-block rows above, 6 in-batch rows below
    assert (lone.get_title(loc="left"), batch.get_title(loc="left")) == ("a. a lone block", "b. inside a batch")
    # one bar container per row, in the table's order: the top row first
    hatched = {
        ax.get_title(loc="left"): [bool(c.patches[0].get_hatch()) for c in ax.containers] for ax in (lone, batch)
    }
    # measured on the H200 (solid): the CUDA-graph, eager, strided and two per-chunk passes of a lone block; inside a
    # batch every row is a fit (the slope fitted to measured passes, the model) or an assumption set (hatched)
    assert hatched["a. a lone block"] == [True, False, False, False, False, False, True]
    assert hatched["b. inside a batch"] == [True] * 6
    # 44.4514 ms / 104.672 µs = 425 (lone, CUDA graph); 260.53 µs x 16 / 104.672 µs = 39.8 (in a batch); per layer
    # chunk the fetch takes 1.37 to 2.02 ms: 22 to 32 as a lone block, 2.1 to 3.0 inside a batch, both lower
    assert caption.startswith(
        "On one H200 a lone block costs 425 times its fetch and a block inside a batch 40 times; fetched as one copy"
        " per layer chunk, the ratios drop to 22 to 32 and 2.1 to 3.0."
    )
    plt.close(fig)


def test_the_fetch_caption_says_how_the_fit_misses_the_small_copies():
    import matplotlib.pyplot as plt

    fig, caption = page.fetch_figure(Scenario())
    # the fit (9.05 µs + bytes / 55.14 GB/s) is below every copy under 1 MiB: the 16 KiB copy's 25 µs against its
    # 9.3 µs is 63 % short, the widest miss; pageable copies of 1 MiB and up take 3.5 to 6.3 times the pinned ones
    assert "floor it undershoots by up to 63 %" in caption
    assert "pageable copies take 3.5 to 6.3 times as long." in caption
    plt.close(fig)


def test_the_forward_caption_chooses_its_verb_by_the_sign_of_the_peer_errors():
    assert page._misses([-41.2, -34.4]) == "fall 34 to 41 % short"
    assert page._misses([12.0, 30.0]) == "overshoot by 12 to 30 %"
    assert page._misses([-5.0, 8.0]) == "land -5 to +8 % off"


def test_the_held_out_outlier_is_shown_with_its_own_scatter(numbers):
    # probe2.json, 8B, 64 tokens: median 36.873 ms, fastest 26.956 ms of 10 -> 36.873 / 26.956 - 1 = 36.8 %;
    # the other sweep points within 15 %: the worst is 1 token, 22.722 / 21.428 - 1 = 6.04 %
    assert numbers["val_p8_outliers"] == "the 64 tokens, eager pass (-41 %)"
    assert numbers["val_p8_outlier_spread"] == (
        "over 10 repetitions its median, 36.9 ms, sits 37 % above its fastest, 27.0 ms"
    )
    assert numbers["val_p8_outlier_spread_pct"] == pytest.approx(36.79, abs=0.01)
    assert numbers["val_p8_rest_spread_pct"] == pytest.approx(6.04, abs=0.01)
