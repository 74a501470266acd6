"""The workload page's sentences: the span of a trace, how long a tier keeps blocks, the first window, a sample."""

from __future__ import annotations

from kvtier.report.pages.workload import words


def test_the_span_says_the_rate_or_why_a_trace_of_one_instant_has_none():
    n = {"requests": 12_031, "duration_min": 60.0, "requests_per_s": 12_031 / 3600}
    # 12,031 requests over 60 minutes: 3.34 a second
    assert words.span_sentence(n, None) == "It holds 12,031 requests over 60.0 minutes, 3.34 a second."
    assert words.span_sentence({**n, "requests": 1}, "one request") == (
        "It holds one request, so it lasts 0 s and has no rate per second."
    )
    assert words.span_sentence({**n, "requests": 5}, "all at one timestamp") == (
        "It holds 5 requests, all at one timestamp, so it lasts 0 s and has no rate per second."
    )


def test_a_tier_keeps_blocks_for_seconds_minutes_or_hours_by_the_ninetieth_percentile_wait():
    assert words.wait_words(0.5) == "seconds, not minutes"
    assert words.wait_words(1.0) == words.wait_words(59.9) == "minutes, not seconds"
    assert words.wait_words(60.0) == "hours, not minutes"


def test_the_first_window_is_a_minute_or_whole_minutes():
    assert words.first_window(1) == "first minute"
    assert words.first_window(42.0) == "first 42 minutes"


def test_a_sample_is_said_only_when_the_policies_did_not_see_every_reference():
    assert words.sampled_words(100.0) == ""
    # 3.125 % to two significant figures: 3.1 %
    assert words.sampled_words(3.125).startswith(" The trace is too long to simulate whole, so these come from a")
    assert "sample of 3.1 % of its blocks" in words.sampled_words(3.125)


def test_a_trace_with_nothing_to_cache_has_an_empty_tier_of_every_size():
    n = {"trace": "hand", "contrast": "synthetic"}
    empty = "every block is referenced once"
    assert words.finding_sentence(n, empty, None) == (
        "The hand trace has nothing to cache (every block is referenced once): an LRU tier of any size hits nothing"
    )
    assert words.capacity_sentence(n, empty).startswith("With nothing to cache, every tier in the table below is empty")
    assert words.reuse_paragraph(n, empty, None) == (
        "There are no reuse intervals to measure: every block is referenced once (the synthetic trace's are drawn"
        " for contrast)."
    )


def mooncake_numbers(**changes: float | None) -> dict:
    """The Mooncake paragraph's numbers for one trace, t: published 10 requests of 100 and 20 tokens, a cache ratio of
    40 % and a share of 50 % at a local cache of 2 M tokens (4 blocks of 512 tokens)."""
    n = {
        "mc_local_mtokens": 2.0,
        "mc_local_blocks": 4,
        "mc_block_tokens": 512,
        "mc_ratio_where": "Table A",
        "mc_share_where": "Figure B",
        "mc_t_requests": 10.0,
        "mc_t_requests_published": 10.0,
        "mc_t_mean_input_tokens": 100.4,
        "mc_t_mean_input_tokens_published": 100.0,
        "mc_t_mean_output_tokens": 20.0,
        "mc_t_mean_output_tokens_published": 20.0,
        "mc_t_cache_ratio_pct": 40.3,
        "mc_t_cache_ratio_pct_published": 40.0,
        "mc_t_cache_ratio_blocks_pct": 38.0,
        "mc_t_hit_pct": 16.0,
        "mc_t_share_of_max_pct": 40.0,
        "mc_t_share_of_max_pct_published": 50.0,
        "mc_t_reach_mtokens": 2.5,
    }
    n.update(changes)
    for q in ("cache_ratio", "share_of_max"):
        n[f"mc_t_{q}_diff_pts"] = n[f"mc_t_{q}_pct"] - n[f"mc_t_{q}_pct_published"]
    return n


def test_the_mooncake_paragraph_says_where_the_figures_agree_and_where_not():
    text = words.mooncake_paragraph(mooncake_numbers(), ("t",), "prefix")
    # 100.4 tokens against 100 is within the paper's whole tokens; 40.3 % against 40 % within its whole percent
    assert text.startswith("The request counts and mean input and output lengths of the t traces are the paper's")
    assert (
        "40.3 % of the t trace's input tokens against the paper's 40 % (the same to the paper's whole percent)" in text
    )
    assert "Neither count" not in text  # the token count gives the published ratio
    # 40 % of the cache ratio against 50 %: 10 points below; reached at 2.5 M tokens, beyond the 2 M of the paper
    assert "40.0 % of its cache ratio, against the paper's 50 % (10.0 points below)" in text
    assert "it reaches the published shares at 2.50 M tokens on the t trace." in text
    assert "2 M tokens or 4 whole blocks of 512 tokens" in text
    assert "A request's hits count up to its first miss" in text
    assert text.endswith("serves under half of what an unbounded one would, on the t trace.")


def test_the_mooncake_paragraph_names_a_gap_it_cannot_trace_and_other_traces():
    # 37 % and 38 % against 40 %: neither count within half a point; 0.6 tokens off the mean: not the paper's traces
    n = mooncake_numbers(mc_t_cache_ratio_pct=37.0, mc_t_mean_output_tokens=20.6, mc_t_share_of_max_pct=55.0)
    text = words.mooncake_paragraph(n, ("t",), "per-block")
    assert "differ from the paper's (the table): the shipped files may not be the traces it measured" in text
    assert "(3.0 points below)" in text and "(5.0 points above)" in text
    assert "Neither count gives the t trace's published ratio to its whole percent, and the paper (Table A)" in text
    assert "so the gap cannot be traced from the trace alone" in text
    assert "Every cached block of a request counts as a hit, even after a miss." in text
    assert text.endswith("serves half or more of what an unbounded one would, on every shipped trace.")
    # with no reuse, no capacity reaches a share: the sentence on the curve's steepness is left out
    assert "steep" not in words.mooncake_paragraph(mooncake_numbers(mc_t_reach_mtokens=None), ("t",), "prefix")


def test_the_prefix_property_is_said_of_lru_alone():
    # S3-FIFO keeps a block whose predecessor it evicted, so its hits need not form a prefix: the sentence names LRU
    n = {"trace": "t", "cap50_tib": 1.0, "cap95_tib": 2.0, "reuse_p90_min": 3.0}
    text = words.finding_sentence(n, None, None)
    assert text.endswith("and under LRU the hits of a request always form a prefix of its prompt")


def test_prefix_words_name_the_rule_and_the_policies_where_it_differs():
    from kvtier.report.pages.workload.words import prefix_words

    same = {f"policy_{k}_pct": 30.0 for k in ("lru", "leaf_lru", "s3fifo", "min")}
    same.update({f"policy_{k}_prefix_pct": 30.0 for k in ("lru", "leaf_lru", "s3fifo", "min")})
    assert prefix_words(same).endswith("they are the same.")
    # S3-FIFO on the conversation trace at 31,589 blocks: 90,511 and 89,868 of 288,500 references hit, per block and
    # before each first miss (tests/formulas/cache/test_policies.py): 31.37 and 31.150 %, 31.4 and 31.2 as shown
    differ = {**same, "policy_s3fifo_pct": 90_511 / 288_500 * 100, "policy_s3fifo_prefix_pct": 89_868 / 288_500 * 100}
    assert prefix_words(differ).endswith("as a prefix cache serves them: S3-FIFO 31.2 %.")


def test_the_trace_is_named_from_its_own_record_never_called_mooncakes(tmp_path):
    # issue 43: the page called any trace "the ... trace of Mooncake, ... shipped with kvtier", and said its ids were
    # chained whatever the format
    from kvtier.scenario import seed_scenario
    from tests.conftest import hand_scenario_in

    shipped = words.trace_words(seed_scenario())
    assert shipped["trace_sentence"].startswith("the conversation trace of Mooncake, Kimi's serving system (")
    assert "chained: two equal ids mean an equal prompt" in shipped["ids_sentence"]
    own = words.trace_words(hand_scenario_in(tmp_path, **{"workload.trace_format": "qwen"}))
    assert own["trace_sentence"].startswith(f"your own trace, {tmp_path / 'hand.jsonl'} (")
    assert "Mooncake" not in own["trace_sentence"]
    assert own["ids_sentence"] == (
        "Each request lists its prompt as hash ids, one per 4-token block, each naming that block's own tokens (qwen"
        " format); kvtier chains them as a prefix cache keys its blocks, so that two equal chained ids mean an equal"
        " prompt up to and including that block, and a repeated id is a block whose KV a cache could have kept."
    )


def test_the_nvme_drive_is_said_to_fetch_faster_only_where_it_does():
    # issue 43: a set where recomputing beats the drive kept "Even an NVMe Gen4 x4 drive fetches 0 times faster"
    n = {"nvme_gen4_x4_in_batch_ratio": 1234.4, "nvme_gen4_x4_lone_ratio": 3.21, "nvme_gen4_x4_busy_pct": 2.04}
    assert words._nvme_words(n) == (
        "Even an NVMe Gen4 x4 drive, 2.0 % busy, fetches 1,234 times faster than the accelerators recompute"
        " (both regimes: 3.2 times for lone passes)."
    )
    n |= {"nvme_gen4_x4_in_batch_ratio": 0.0452}  # recomputing takes 0.0452 of the fetch's time inside a batch
    assert words._nvme_words(n) == (
        "Over an NVMe Gen4 x4 drive, 2.0 % busy, recomputing would take 0.045 times as long as fetching inside a"
        " batch and 3.2 times as lone passes."
    )
