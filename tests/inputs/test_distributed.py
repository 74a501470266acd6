"""The distributed path (kvtier.inputs.distributed): a trace split into files, parsed on Dask, replayed."""

from __future__ import annotations

import numpy as np
import pytest

from kvtier.errors import KvtierError
from kvtier.formulas.cache.curve import curve_error
from kvtier.formulas.cache.regen import RegenCosts
from kvtier.formulas.cache.report import report
from kvtier.formulas.cache.sampling import block_hash, sample_threshold
from kvtier.inputs import distributed, traces

pytest.importorskip("distributed")


def split(tmp_path, n_files: int = 8, n_requests: int = 1600):
    """A generated trace written whole and as ``n_files`` files of consecutive requests (named out of order)."""
    t = traces.generate_trace(n_requests, seed=4, n_prefixes=60, new_blocks=(1, 6))
    lines = list(traces.to_jsonl(t))
    whole = tmp_path / "whole.jsonl"
    whole.write_text("\n".join(lines) + "\n")
    parts = tmp_path / "parts"
    parts.mkdir()
    for k, chunk in enumerate(np.array_split(np.arange(len(lines)), n_files)):
        # the names sort in reverse of time: the reader orders the parts by their first timestamps
        (parts / f"part-{n_files - k:02d}.jsonl").write_text("\n".join(lines[i] for i in chunk) + "\n")
    return whole, parts


@pytest.fixture(scope="module")
def cluster():
    """One two-worker LocalCluster for the module's tests (it takes seconds to start)."""
    with distributed.client(workers=2) as c:
        yield c


def test_eight_files_on_a_two_worker_local_cluster_give_the_single_process_curve(tmp_path, cluster):
    whole, parts = split(tmp_path)
    rc = RegenCosts(2.0, 1e9, 2.0, 1e4, 1e14, 0.5, 2e9, 1e12, 0.8)
    single = traces.stream_lru(whole, rc=rc)
    assert len(cluster.scheduler_info()["workers"]) == 2
    read = distributed.read_parts(distributed.files(str(parts)), dask_client=cluster)
    windows = distributed.windowed(read, 60.0, 1e9, dask_client=cluster)  # a warm-up longer than the trace
    assert [p["name"] for p in read] == [str(parts / f"part-{k:02d}.jsonl") for k in range(8, 0, -1)]
    h = distributed.replay(distributed.Parts(distributed.files(str(parts)), dask_client=cluster), rc=rc)  # streamed
    # exact path: the same histograms, count for count, and the same report
    assert h.counts["blocks"].tolist() == single.counts["blocks"].tolist()
    assert h.counts["tokens"].tolist() == single.counts["tokens"].tolist()
    assert (h.n_refs, h.n_unique, h.n_requests) == (single.n_refs, single.n_unique, 1600)
    assert report(h, rc)["tiers"] == report(single, rc)["tiers"]
    # windows of 60 s, each warmed up by everything before it: every reuse is seen, so the curve is the single pass's
    assert windows.counts["blocks"].tolist() == single.counts["blocks"].tolist()


def test_files_sampled_on_the_workers_give_the_single_process_sampled_curve(tmp_path, cluster):
    whole, parts = split(tmp_path)
    rc = RegenCosts(2.0, 1e9, 2.0, 1e4, 1e14, 0.5, 2e9, 1e12, 0.8)
    rate = 0.25
    single = traces.stream_lru(whole, rc=rc, sample_rate=rate)
    read = distributed.read_parts(distributed.files(str(parts)), dask_client=cluster, sample_rate=rate)
    # only the sampled references travel: each part's kept ids are exactly those whose hash is below the threshold
    exact = distributed.read_parts(distributed.files(str(parts)))
    for sampled, full in zip(read, exact, strict=True):
        kept = block_hash(full["ids"]) < sample_threshold(rate)
        assert sampled["chunk"].ids.tolist() == full["ids"][kept].tolist()
        assert sampled["chunk"].n_refs == full["ids"].size
    h = distributed.replay(read, rc=rc, sample_rate=rate)
    # the same sampled curve as one process reading the whole file: the same hash, the same scaled distances
    assert h.counts["blocks"].tolist() == single.counts["blocks"].tolist()
    assert h.counts["tokens"].tolist() == single.counts["tokens"].tolist()
    assert h.sampled_refs == single.sampled_refs < single.n_refs
    # and the driver sampling the exact parts gives the same report to the last bit (the whole file, read in other
    # chunks, adds the recompute seconds in another order: equal to 1e-15)
    on_driver = distributed.replay(exact, rc=rc, sample_rate=rate)
    assert report(h, rc)["tiers"] == report(on_driver, rc)["tiers"]
    with pytest.raises(KvtierError, match="--window replays every reference"):
        distributed.windowed(read, 60.0, 0.0)


def test_windows_with_a_short_warm_up_lose_only_the_reuses_reaching_past_it(tmp_path):
    whole, parts = split(tmp_path, n_files=4, n_requests=800)
    read = distributed.read_parts(distributed.files(str(parts)))
    single = distributed.replay(read)
    short = distributed.windowed(read, 20.0, 0.0)  # no warm-up: every window starts cold
    err = curve_error(single, short)
    # a window never hits what the single pass misses: its curve lies below at every capacity, by a measured gap
    assert short.hit_ratio() < single.hit_ratio() and err["max_abs"] > 0
    assert all(short.hit_ratio(c) <= single.hit_ratio(c) + 1e-12 for c in (1, 10, 100, 1000))
    assert short.n_refs == single.n_refs  # every reference is counted once, in its own window


def test_parts_that_overlap_in_time_are_refused(tmp_path):
    a = tmp_path / "a.jsonl"
    b = tmp_path / "b.jsonl"
    a.write_text(
        '{"timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": [1]}\n'
        '{"timestamp": 5000, "input_length": 1, "output_length": 1, "hash_ids": [1]}\n'
    )
    b.write_text('{"timestamp": 1000, "input_length": 1, "output_length": 1, "hash_ids": [2]}\n')
    with pytest.raises(KvtierError) as err:
        distributed.read_parts([a, b], block_tokens=1)
    assert str(err.value) == f"{b}: starts at 1 s, before {a} ends (5 s); the parts of a trace must not overlap in time"


def test_a_directory_of_folders_is_read_to_any_depth_in_path_order(tmp_path):
    # one folder a day, one file an hour: every file under the directory, sorted by path
    for day in ("2026-12-02", "2026-12-01"):
        (tmp_path / day).mkdir()
        for hour in ("01", "00"):
            (tmp_path / day / f"{hour}.jsonl").write_text("{}\n")
    got = distributed.files(str(tmp_path))
    assert got == [str(tmp_path / d / f"{h}.jsonl") for d in ("2026-12-01", "2026-12-02") for h in ("00", "01")]
    # a glob naming the folders reads them the same way
    assert distributed.files(str(tmp_path / "2026-*")) == got


def test_windows_too_many_to_replay_are_refused_before_any_is_allocated(tmp_path):
    # issue 43: --window 1e-9 over a trace of seconds asked for the edges of about 10**12 windows (1.49 TiB)
    whole, parts = split(tmp_path, n_files=2, n_requests=200)
    read = distributed.read_parts(distributed.files(str(parts)))
    span = read[-1]["timestamps_s"][-1] - read[0]["timestamps_s"][0]
    with pytest.raises(KvtierError, match=r"^--window 1e-09: the parts span .* more than 10,000 windows of 1e-09 s"):
        distributed.windowed(read, 1e-9, 0.0)
    assert span / 1e-9 > distributed.MAX_WINDOWS


class _Future:
    def __init__(self, value):
        self.value = value

    def result(self):
        return self.value


class _Client:
    """A client that runs each task when it is submitted and records how many parsed parts are in flight."""

    def __init__(self, log):
        self.log = log

    def scheduler_info(self):
        return {"workers": {"a": {}, "b": {}}}

    def map(self, fn, items, **kw):
        return [_Future(fn(i, **{k: v for k, v in kw.items() if k != "pure"})) for i in items]

    def gather(self, futures):
        return [f.result() for f in futures]

    def submit(self, fn, item, **kw):
        self.log.append(("submit", item))
        return _Future(fn(item, **{k: v for k, v in kw.items() if k != "pure"}))


def test_parts_are_streamed_in_time_order_with_at_most_the_workers_in_flight(tmp_path):
    # issue 43 (20): the client gathered every part before the first was fed (2.29 GB where one file read
    # line by line took 0.50 GB).  Five files named against their times; the order comes from their first
    # lines; on a two-worker client at most two parsed parts wait at any time, and this process holds one
    whole, parts = split(tmp_path, n_files=5, n_requests=500)
    log = []
    stream = distributed.Parts(distributed.files(str(parts)), dask_client=_Client(log))
    order = [str(parts / f"part-{k:02d}.jsonl") for k in range(5, 0, -1)]
    assert stream.names == order and stream.ahead == 2 and log == []  # ordered before any file is parsed whole
    for k, part in enumerate(stream):
        log.append(("fed", part["name"]))
        # parts 0 and 1 were submitted at the start and one more as each is taken, before it is yielded: when
        # part k is fed, k + 3 were submitted (at most 5), so two wait on the cluster and one is held here
        assert sum(1 for what, _ in log if what == "submit") == min(k + 3, 5)
    assert [name for what, name in log if what == "fed"] == order
    # in this process, without a client, each file is parsed only when the one before it has been taken
    calls = []
    real = distributed.parse_part
    local = distributed.Parts(distributed.files(str(parts)))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(distributed, "parse_part", lambda p, **kw: calls.append(p) or real(p, **kw))
        it = iter(local)
        next(it)
        assert calls == [order[0]]
    single = traces.stream_lru(whole)
    h = distributed.replay(distributed.Parts(distributed.files(str(parts)), dask_client=_Client([])))
    assert h.counts["blocks"].tolist() == single.counts["blocks"].tolist() and h.n_requests == 500


def test_a_part_with_no_request_is_refused_before_any_is_parsed(tmp_path):
    a = tmp_path / "a.jsonl"
    a.write_text('{"timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": [1]}\n')
    (tmp_path / "b.jsonl").write_text("\n\n")
    with pytest.raises(KvtierError, match=r"b\.jsonl: the trace holds no requests$"):
        distributed.Parts([a, tmp_path / "b.jsonl"], block_tokens=1)


def _sigint_ignored() -> bool:
    import signal

    return signal.getsignal(signal.SIGINT) == signal.SIG_IGN


def test_the_local_workers_ignore_ctrl_c_and_leave_it_to_the_command(cluster):
    # issue 43 (25): Ctrl-C in a shell reaches the whole process group; each worker printed a KeyboardInterrupt
    # traceback (68 lines in all) before the command's one line. The workers ignore SIGINT (dask_setup, preloaded)
    assert cluster.run(_sigint_ignored) == {w: True for w in cluster.scheduler_info()["workers"]}
    assert not _sigint_ignored()  # this process still stops on Ctrl-C


def test_parts_that_start_at_the_same_instant_go_shortest_first(tmp_path):
    # second round: a.jsonl (0 s to 5 s) and b.jsonl (all at 0 s) start together; ordered by name, b was refused as
    # starting "before a ends". Where a part fits its first block of lines its last timestamp breaks the tie
    a = tmp_path / "a.jsonl"
    b = tmp_path / "b.jsonl"
    a.write_text(
        '{"timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": [1]}\n'
        '{"timestamp": 5000, "input_length": 1, "output_length": 1, "hash_ids": [1]}\n'
    )
    b.write_text('{"timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": [2]}\n' * 2)
    parts = distributed.Parts([a, b], block_tokens=1)
    assert parts.names == [str(b), str(a)]
    assert distributed.first_stamp(str(a), 1, "mooncake") == (0.0, 5.0)
    h = distributed.replay(parts, block_tokens=1)
    assert (h.n_requests, h.n_refs) == (4, 4)
