"""The GitHub Actions workflow: valid against the workflow schema, and doing what the review loop needs.

Nothing here reaches the network: the schema is the one check-jsonschema ships
(``vendor.github-workflows``), the diff step runs in a temporary git repository, and the
comment step's script runs under node (when node is installed) against a stand-in for the
GitHub API.
"""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from tests.conftest import ROOT, write_tables

WORKFLOW = ROOT / ".github" / "workflows" / "ci.yml"


@pytest.fixture(scope="module")
def workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text())


def triggers(wf: dict) -> dict:
    return wf.get("on", wf.get(True))  # YAML 1.1 reads a bare `on` key as True


def step(wf: dict, name_starts: str) -> dict:
    (found,) = [s for s in wf["jobs"]["test-and-build"]["steps"] if s.get("name", "").startswith(name_starts)]
    return found


def check_jsonschema(path: Path) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows", str(path)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


# ---------------------------------------------------------------------------
# the schema, the triggers, the actions
# ---------------------------------------------------------------------------


def test_workflow_passes_the_schema_check(tmp_path: Path) -> None:
    proc = check_jsonschema(WORKFLOW)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "ok -- validation done" in proc.stdout
    # The check is real: the same file with a malformed trigger fails it.
    broken = tmp_path / "broken.yml"
    broken.write_text(WORKFLOW.read_text().replace("branches: [main]", "branches: 5"))
    proc = check_jsonschema(broken)
    assert proc.returncode == 1 and "branches" in proc.stdout


def test_runs_once_per_pull_request(workflow: dict) -> None:
    on = triggers(workflow)
    # pushes only to main (a pull request's branch would otherwise run twice: push and pull_request)
    assert set(on) == {"push", "pull_request"}
    assert on["push"] == {"branches": ["main"]}
    # one run per pull request (or ref); a newer push cancels a pull request's superseded run ...
    concurrency = workflow["concurrency"]
    assert concurrency["group"] == "ci-${{ github.event.pull_request.number || github.ref }}"
    assert concurrency["cancel-in-progress"] == "${{ github.event_name == 'pull_request' }}"
    # ... but never main's run, and the pages deploy queues rather than cancels
    pages = workflow["jobs"]["pages"]
    assert pages["concurrency"] == {"group": "pages", "cancel-in-progress": False}
    assert pages["if"] == "github.event_name == 'push' && github.ref == 'refs/heads/main'"


def test_current_action_majors(workflow: dict) -> None:
    uses = {s["uses"] for job in workflow["jobs"].values() for s in job["steps"] if "uses" in s}
    assert uses == {
        "actions/checkout@v6",
        "actions/setup-python@v7",
        "actions/github-script@v9",
        "actions/upload-pages-artifact@v5",
        "actions/deploy-pages@v5",
    }


def test_ci_provides_the_browser_before_the_tests(workflow: dict) -> None:
    names = [s.get("name", s.get("uses")) for s in workflow["jobs"]["test-and-build"]["steps"]]
    browser = step(workflow, "Chromium for the browser test")
    assert "playwright install --with-deps chromium" in browser["run"]
    assert 'sudo ln -sf "$chrome" /usr/bin/chromium' in browser["run"]
    assert "continue-on-error" not in browser  # no browser, no green run
    assert names.index(browser["name"]) < names.index("Test (scripts/test.sh, as .ci/run)")


def test_browser_test_fails_rather_than_skips_in_ci() -> None:
    # Evaluate the browser test's skip condition with the browser missing, in CI and outside it.
    tree = ast.parse((ROOT / "tests" / "pipeline" / "test_build.py").read_text())
    (fn,) = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test_every_page_reads_well")]
    (skipif,) = [d for d in fn.decorator_list if isinstance(d, ast.Call) and ast.unparse(d.func).endswith("skipif")]
    condition = compile(ast.Expression(skipif.args[0]), "test_build.py", "eval")
    missing = ROOT / "no-such-browser"

    def skipped(env: dict[str, str]) -> bool:
        return eval(condition, {"CHROMIUM": missing, "os": SimpleNamespace(environ=env)})

    assert skipped({}) is True
    assert skipped({"CI": "true"}) is False  # runs, and fails for want of the browser
    assert eval(condition, {"CHROMIUM": Path(sys.executable), "os": SimpleNamespace(environ={})}) is False


# ---------------------------------------------------------------------------
# the diff step: the job summary
# ---------------------------------------------------------------------------


def _git(repo: Path, *args: str) -> str:
    proc = subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, input="")
    return proc.stdout.strip()


@pytest.fixture(scope="module")
def pr_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A checkout as the workflow sees it: origin/main holds the seed tables, HEAD the 100 GB/s ones."""
    repo = tmp_path_factory.mktemp("pr") / "repo"
    repo.mkdir()
    env = ("-c", "user.name=kvtier test", "-c", "user.email=test@example.invalid", "-c", "commit.gpgsign=false")
    _git(repo, "init", "-q", "-b", "main")
    write_tables(repo / "book" / "tables")
    _git(repo, "add", "-A")
    _git(repo, *env, "commit", "-q", "-m", "seed")
    _git(repo, "update-ref", "refs/remotes/origin/main", "HEAD")
    write_tables(repo / "book" / "tables", **{"bandwidth.mid": "100GB/s"})
    _git(repo, *env, "commit", "-q", "-am", "faster mid link")
    (repo / ".venv").symlink_to(Path(sys.prefix))  # the step calls .venv/bin/kvtier
    return repo


def run_diff_step(
    workflow: dict, repo: Path, tmp_path: Path, base_ref: str = "main"
) -> tuple[subprocess.CompletedProcess[str], str, str]:
    """Run the diff step's script as the runner would; return it, the job summary and the step outputs."""
    summary, output = tmp_path / "summary.md", tmp_path / "output"
    env = {
        "PATH": f"{Path(sys.prefix) / 'bin'}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_CONFIG_NOSYSTEM": "1",
        "BASE_REF": base_ref,
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_OUTPUT": str(output),
    }
    script = step(workflow, "Diff the tables of record")["run"]
    proc = subprocess.run(["bash", "-e", "-c", script], cwd=repo, env=env, capture_output=True, text=True, timeout=300)
    return proc, summary.read_text() if summary.exists() else "", output.read_text() if output.exists() else ""


def test_summary_step_writes_the_diff_to_the_job_summary(workflow: dict, pr_repo: Path, tmp_path: Path) -> None:
    diff_step = step(workflow, "Diff the tables of record")
    assert diff_step["if"] == "github.event_name == 'pull_request'"  # every pull request, forks included
    assert 'kvtier diff "origin/$BASE_REF" HEAD --format md' in diff_step["run"]
    proc, summary, output = run_diff_step(workflow, pr_repo, tmp_path)
    assert proc.returncode == 0, proc.stderr  # exit status 1 (something changed) does not fail the job
    lines = summary.splitlines()
    assert lines[:3] == [
        "### Tables of record changed by this pull request",
        "",
        "**Headline numbers** at the illustrative point (mid bandwidth, conservative MFU)",
    ]
    # 17.92285 ms / 81.92 µs = 218.78 -> 17.92285 ms / 52.4288 µs = 341.85 (x 100/64)
    assert (
        "| ratio, regeneration / fetch (compute-only regeneration: the chapter's in-batch model)"
        " | 218.78 | 341.85 | +56.25% |" in lines
    )
    assert lines[-1] == "</details>"
    assert output == "changed=true\n"


def test_summary_step_says_when_nothing_changed(workflow: dict, pr_repo: Path, tmp_path: Path) -> None:
    clean = tmp_path / "clean"
    _git(pr_repo, "worktree", "add", "-q", "--detach", str(clean), "origin/main")  # HEAD == origin/main
    (clean / ".venv").symlink_to(Path(sys.prefix))
    proc, summary, output = run_diff_step(workflow, clean, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert summary == "### Tables of record changed by this pull request\n\nNo table of record changed.\n"
    assert output == "changed=false\n"
    assert (clean / "diff.md").read_text() == ""  # the comment step reads an empty diff as "delete"


def test_summary_step_fails_on_an_error(workflow: dict, pr_repo: Path, tmp_path: Path) -> None:
    proc, summary, _ = run_diff_step(workflow, pr_repo, tmp_path, base_ref="no-such-branch")
    assert proc.returncode == 2 and "::error::kvtier diff failed with exit status 2" in proc.stdout
    assert summary == ""


# ---------------------------------------------------------------------------
# the comment step: update while non-empty, delete once empty
# ---------------------------------------------------------------------------

MARKER = "<!-- kvtier-tables-diff -->"

HARNESS = r"""
// Run a github-script `script` against a stand-in for the GitHub API; print the calls it made.
const fs = require('fs');
const [scriptPath, statePath] = process.argv.slice(2);
const state = JSON.parse(fs.readFileSync(statePath, 'utf8'));
const calls = [];
const rest = { issues: {
  listComments: async () => { throw new Error('listComments is called through paginate'); },
  createComment: async (a) => { calls.push(['create', a]); },
  updateComment: async (a) => { calls.push(['update', a]); },
  deleteComment: async (a) => { calls.push(['delete', a]); },
} };
const github = { rest, paginate: async (fn, a) => {
  if (fn !== rest.issues.listComments) throw new Error('unexpected paginate');
  calls.push(['list', a]);
  return state.comments;
} };
const context = { repo: { owner: 'o', repo: 'r' }, issue: { number: 7 } };
const core = { info: () => {}, warning: (m) => calls.push(['warning', m]) };
const AsyncFunction = Object.getPrototypeOf(async function () {}).constructor;
const run = new AsyncFunction('require', 'github', 'context', 'core', fs.readFileSync(scriptPath, 'utf8'));
run(require, github, context, core).then(
  () => console.log(JSON.stringify(calls)),
  (e) => { console.error(e); process.exit(1); },
);
"""


def run_comment_script(workflow: dict, tmp_path: Path, diff_md: str | None, comments: list[dict]) -> list:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: the comment script's behaviour is not exercised here")
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    if diff_md is not None:
        (work / "diff.md").write_text(diff_md)
    (work / "script.js").write_text(step(workflow, "Comment the diff")["with"]["script"])
    (work / "harness.js").write_text(HARNESS)
    (work / "state.json").write_text(json.dumps({"comments": comments}))
    env = {"PATH": "/usr/bin:/bin", "SUMMARY_URL": "https://example.invalid/run/1"}
    proc = subprocess.run(
        [node, "harness.js", "script.js", "state.json"], cwd=work, env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    return [c for c in json.loads(proc.stdout) if c[0] != "list"]


BOT = {"type": "Bot", "login": "github-actions[bot]"}
HUMAN = {"type": "User", "login": "reviewer"}


def test_comment_step_runs_on_every_same_repository_pull_request(workflow: dict) -> None:
    comment = step(workflow, "Comment the diff")
    assert comment["uses"] == "actions/github-script@v9"
    # not only when the diff is non-empty: an empty diff must reach the script, which deletes the comment
    assert "changed" not in comment["if"]
    assert "github.event.pull_request.head.repo.full_name == github.repository" in comment["if"]
    assert "steps.diff.outcome == 'success'" in comment["if"]
    script = comment["with"]["script"]
    assert "deleteComment" in script and "updateComment" in script and "createComment" in script


def test_comment_created_then_updated(workflow: dict, tmp_path: Path) -> None:
    calls = run_comment_script(workflow, tmp_path, "**Headline numbers**\n", [])
    assert calls == [
        [
            "create",
            {
                "owner": "o",
                "repo": "r",
                "issue_number": 7,
                "body": f"{MARKER}\n### Tables of record changed by this pull request\n\n**Headline numbers**\n",
            },
        ]
    ]
    # A later push with a different diff updates the bot's comment; a person's comment that quotes the
    # marker is left alone.
    comments = [{"id": 1, "user": HUMAN, "body": f"{MARKER} quoted"}, {"id": 2, "user": BOT, "body": f"{MARKER}\nold"}]
    calls = run_comment_script(workflow, tmp_path, "new diff\n", comments)
    assert [(c[0], c[1]["comment_id"]) for c in calls] == [("update", 2)]
    assert calls[0][1]["body"].endswith("\n\nnew diff\n")


def test_comment_deleted_when_the_diff_becomes_empty(workflow: dict, tmp_path: Path) -> None:
    comments = [
        {"id": 1, "user": HUMAN, "body": f"{MARKER} quoted"},
        {"id": 2, "user": BOT, "body": f"{MARKER}\nold"},
        {"id": 3, "user": BOT, "body": "another bot's comment"},
    ]
    calls = run_comment_script(workflow, tmp_path, "", comments)
    assert calls == [["delete", {"owner": "o", "repo": "r", "comment_id": 2}]]
    # no earlier comment, nothing changed: no call at all
    assert run_comment_script(workflow, tmp_path, "", []) == []


def test_comment_too_long_keeps_the_headline_and_points_to_the_summary(workflow: dict, tmp_path: Path) -> None:
    long = "**Headline numbers**\n\n<details><summary>All</summary>\n\n" + "| x |\n" * 20_000 + "\n</details>\n"
    (call,) = run_comment_script(workflow, tmp_path, long, [])
    body = call[1]["body"]
    assert "<details>" not in body and len(body) < 65_536
    assert body.endswith(
        "**Headline numbers**\n\nThe full list is too long for a comment:"
        " see the [job summary](https://example.invalid/run/1).\n"
    )
