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
