"""The measured page's residuals: the peers named with their versions."""

from __future__ import annotations

import pytest

from kvtier.report.pages.measured import residuals
from kvtier.scenario import Scenario


def test_the_residual_table_names_the_peers_and_their_versions():
    df = residuals.residual_table(Scenario())
    peers = df[df["model"].str.contains("llm-analysis 0.2.2|GenZ 0.0.16")]
    # four predictions in the file, llm-analysis's 4,096-token one excluded (it implies more than the peak)
    assert len(peers) == 3 and set(peers["model_provenance"]) == {"derived"}
    assert not (peers["model"].str.startswith("llm-analysis") & peers["quantity"].str.startswith("4,096")).any()
    # llm-analysis 0.2.2, 16 tokens: 29.0 ms against 44.4514 ms measured = -34.76 %
    row = peers[peers["model"].str.startswith("llm-analysis") & peers["quantity"].str.startswith("16-token")]
    assert float(row["error_pct"].iloc[0]) == pytest.approx((29.0 / 44.45135879516601 - 1) * 100)
    assert not df.duplicated(["quantity", "model"]).any()
