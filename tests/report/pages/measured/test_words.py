"""The measured page's sentences: the peer left out, with its implied rate, and the duplex loss."""

from __future__ import annotations

import pytest

from kvtier.report.pages import measured as page
from kvtier.report.pages.measured import words
from kvtier.scenario import Scenario


@pytest.fixture(scope="module")
def numbers() -> dict:
    return page.numbers(Scenario())


def test_the_excluded_peer_is_said_with_its_implied_rate(numbers):
    # 2 x 69,503,033,344 x 4,096 + 21.996e12 attention = 591.364e12 FLOP over 0.514 s = 1,150.5 TFLOP/s
    sentence = numbers["peer_excluded_sentence"]
    assert sentence.startswith("llm-analysis 0.2.2's 4,096-token figure, 514 ms, is left out")
    assert "implies 1,151 TFLOP/s, above the H200's 989 TFLOP/s dense peak" in sentence
    assert "the least time those peaks allow is 598 ms" in sentence
    assert "peer_llm_analysis_4096_ms" not in numbers


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
    assert words.duplex_sentence(0.2).startswith("writing evicted blocks out leaves fetching others in at its rate")
    assert words.duplex_sentence(-3.0).startswith("fetching ran 3.0 % faster")
