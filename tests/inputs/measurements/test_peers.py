"""Peers' predictions: each its row, compared or excluded with a reason, bad files refused in one line."""

from __future__ import annotations

import json

import pytest

from kvtier.errors import KvtierError
from kvtier.inputs import measurements as ms
from kvtier.inputs.measurements import peers
from tests.conftest import ROOT

DATA = ROOT / "kvtier" / "data" / "measurements" / ms.SET_NAME


# Read and fitted afresh for each test (10 ms and 60 ms), not once per module or through the cached
# ms.load(): mutation testing (scripts/mutation.sh) then sees every test that reads or fits.
@pytest.fixture
def m() -> ms.Measurements:
    return ms.read(DATA)


@pytest.fixture
def fits(m) -> ms.Fits:
    return ms.fit(m)


PEERS = ROOT / "kvtier" / "data" / "peer-predictions.yaml"


GOOD_PEER = {
    "tool": "t",
    "version": "1",
    "shape": "llama-3-8b",
    "tokens": 16,
    "value": 8.5,
    "basis": "b",
    "source": "s",
}


def test_a_bad_peer_prediction_is_refused_in_one_line(tmp_path):
    path = tmp_path / "peers.yaml"
    path.write_text("predictions:\n  - tool: x\n    version: '1'\n    shape: llama-3-70b\n    tokens: 16\n")
    with pytest.raises(KvtierError, match=r"peers\.yaml: key 'predictions\[0\]\.value' is missing"):
        peers.read_peers(path)


def test_every_peer_prediction_is_its_row():
    import yaml

    rows = yaml.safe_load(PEERS.read_text())["predictions"]
    got = peers.read_peers(PEERS)
    assert len(got) == len(rows) == 4
    for (tool, version, shape, tokens, rec), row in zip(got, rows, strict=True):
        assert (tool, version, shape, tokens) == (row["tool"], row["version"], row["shape"], row["tokens"])
        # a time in ms becomes seconds: 29.0 ms -> 0.029 s
        assert rec.value == pytest.approx(row["value"] / 1e3, rel=1e-15)
        assert rec.kind == "time" and rec.provenance == "derived"
        assert rec.key == f"peer.{row['tool']}.{row['shape']}.{row['tokens']}"
        assert rec.text == f"{row['value']} ms"
        assert rec.basis == f"{row['tool']} {row['version']}: {row['basis']}" and rec.source == row["source"]
    assert got[0][4].value == 0.029 and got[0][4].text == "29.0 ms"


def test_the_shipped_peers_split_into_compared_and_excluded():
    # four rows in the file: llm-analysis's 4,096-token one carries `excluded`, the other three are compared
    compared = ms.peer_predictions()
    assert [(t, n) for t, _, _, n, _ in compared] == [("llm-analysis", 16), ("GenZ", 16), ("GenZ", 4096)]
    ((row, reason),) = ms.peer_exclusions()
    assert (row[0], row[3], row[4].value) == ("llm-analysis", 4096, 0.514)
    assert reason.startswith("llm-analysis 0.2.2 counts an MLP's FLOPs as 16 × hidden² per token")


def test_the_peak_bound_by_hand(m):
    shape = m.shapes["llama-3-70b"]
    # weights less the input embedding: 2 x (70,553,706,496 - 128,256 x 8,192) B = 139,006,066,688 B
    # over 4.8 TB/s = 28.9596 ms; 16 tokens of FLOPs at 989 TFLOP/s are far less
    assert ms.peak_bound_s(shape, 16) == pytest.approx(139_006_066_688 / 4.8e12, rel=1e-12)
    # 4,096 tokens: 2 x 69,503,033,344 x 4,096 = 569.3683e12 FLOP of matrix products, plus causal attention
    # 2,621,440 FLOP per token and position x 4,096 x 4,097 / 2 = 21.9961e12: 591.3644e12 / 989e12 = 597.94 ms
    attention = 2_621_440 * 4096 * 4097 / 2
    assert ms.peak_bound_s(shape, 4096) == pytest.approx((2 * 69_503_033_344 * 4096 + attention) / 989e12, rel=1e-12)
    assert ms.peak_bound_s(shape, 4096) == pytest.approx(0.59794, abs=1e-5)


def test_no_compared_peer_prediction_implies_more_than_the_h200s_peaks(m):
    # llm-analysis 29.0 ms and GenZ 29.5 ms >= 28.96 ms (16 tokens); GenZ 629 ms >= 597.94 ms (4,096 tokens)
    for tool, _version, shape, tokens, rec in ms.peer_predictions():
        assert rec.value >= ms.peak_bound_s(m.shapes[shape], tokens), (tool, tokens)
    # and an exclusion is one: llm-analysis's 514 ms < 597.94 ms, 591.36e12 FLOP / 0.514 s = 1,150.5 TFLOP/s
    for (tool, _version, shape, tokens, rec), _reason in ms.peer_exclusions():
        assert rec.value < ms.peak_bound_s(m.shapes[shape], tokens), (tool, tokens)


def test_an_empty_exclusion_is_refused(tmp_path):
    path = tmp_path / "peers.yaml"
    path.write_text(
        "predictions:\n  - {tool: t, version: '1', shape: llama-3-70b, tokens: 16, value: 30, basis: b, source: s,"
        " excluded: ''}\n"
    )
    with pytest.raises(KvtierError, match=r"peers\.yaml: key 'predictions\[0\]\.excluded' must be a sentence"):
        peers.read_peers(path)


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"predictions": []}, "key 'predictions' must be a non-empty list"),
        ([1, 2], "key 'predictions' must be a non-empty list"),
        ({"predictions": ["x"]}, "key 'predictions[0]' must be a mapping"),
        (
            {"predictions": [GOOD_PEER, {**GOOD_PEER, "shape": "gpt-2"}]},
            "key 'predictions[1].shape' must be one of llama-3-70b, llama-3-8b",
        ),
        ({"predictions": [{**GOOD_PEER, "tokens": 0}]}, "key 'predictions[0].tokens' must be a positive whole number"),
        (
            {"predictions": [{**GOOD_PEER, "tokens": 1.5}]},
            "key 'predictions[0].tokens' must be a positive whole number",
        ),
        ({"predictions": [{**GOOD_PEER, "value": 0}]}, "key 'predictions[0].value' must be a positive time in ms"),
        ({"predictions": [{**GOOD_PEER, "value": True}]}, "key 'predictions[0].value' must be a positive time in ms"),
        ({"predictions": [{**GOOD_PEER, "value": "8 ms"}]}, "key 'predictions[0].value' must be a positive time in ms"),
        (
            {"predictions": [{k: v for k, v in GOOD_PEER.items() if k != "tool"}]},
            "key 'predictions[0].tool' is missing",
        ),
    ],
)
def test_whole_messages_for_bad_peer_predictions(tmp_path, document, message):
    path = tmp_path / "peers.yaml"
    path.write_text(json.dumps(document))  # JSON is YAML
    with pytest.raises(KvtierError) as info:
        peers.read_peers(path)
    assert str(info.value) == f"{path}: {message}"


def test_a_one_token_peer_prediction_is_accepted(tmp_path):
    # the smallest positive values: 1 token, a value just above 0 ms
    path = tmp_path / "peers.yaml"
    path.write_text(json.dumps({"predictions": [{**GOOD_PEER, "tokens": 1, "value": 0.001}]}))
    ((*_, tokens, rec),) = peers.read_peers(path)
    assert tokens == 1 and rec.value == 1e-6


def test_a_missing_peer_file_is_named(tmp_path):
    with pytest.raises(KvtierError) as info:
        peers.read_peers(tmp_path / "peers.yaml")
    assert str(info.value) == f"{tmp_path / 'peers.yaml'}: peer predictions file not found"
