"""Adding a page touches the files CONTRIBUTING.md names, and nothing else is needed for it to work.

In a copy of the project, the test writes a throwaway page exactly as CONTRIBUTING.md's "Adding a
page" list says (one file per item, with ``NN_NAME`` and ``NAME`` filled in), then runs what
it says to run after (``scripts/parameters.py``), and checks in the copy that the registry,
the build plan, the layout and layer checks and the page's own test all take the page.  So the
count of files it names cannot drift from what adding a page really takes.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT

STEM, NAME = "14_throwaway", "throwaway"

PAGE_MODULE = '''"""A throwaway page: the block's size in KiB (written by tests/test_adding.py)."""

from __future__ import annotations

from typing import Any

from kvtier.scenario import Scenario

NOTEBOOK = "14_throwaway"
TITLE = "the throwaway page"
KEYS: tuple[str, ...] = ("model", "kv_dtype", "block_tokens")
TABLES = ()
FIGURES = ()


def numbers(s: Scenario) -> dict[str, Any]:
    """The block's size (KiB)."""
    return {"block_kib": s.block_bytes / 1024}
'''

PAGE_TEST = '''"""The throwaway page, by hand."""

from kvtier.report.pages import throwaway


def test_the_block_is_5120_kib(seed_scenario):
    # 16 tokens x 327,680 B = 5,242,880 B = 5,120 KiB
    assert throwaway.numbers(seed_scenario) == {"block_kib": 5120.0}
'''


def notebook_text() -> str:
    """A page notebook: the front matter of an existing page, an empty parameters cell (the tool fills it)."""
    front = (ROOT / "notebooks" / "01_block_unit.md").read_text(encoding="utf-8").split("---\n")[1]
    return f"""---
{front}---

# A throwaway page

One block is {{glue:text}}`block_kib:,.0f` KiB.

```{{code-cell}}
:tags: [parameters, remove-cell]

```

```{{code-cell}}
:tags: [remove-cell]

from kvtier.report import notebook
from kvtier.report.pages import {NAME} as page

notebook.setup()
s = notebook.scenario_from_parameters(globals(), "{STEM}")
notebook.glue_numbers(page.numbers(s))
```
"""


def listed_page_files() -> list[str]:
    """The files the "Adding a page" list of CONTRIBUTING.md names, with its placeholders filled in."""
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    section = text[text.index("### Adding a page") :]
    section = section[: section.index("\n### ", 4)]
    files = re.findall(r"^\d+\. \*\*`([^`]+)`\*\*", section, re.MULTILINE)
    return [f.replace("NN_NAME", STEM).replace("NAME", NAME) for f in files]


def copy_checkout(dest: Path) -> Path:
    """The tracked files of the checkout, copied to ``dest`` (the working tree's versions)."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in filter(None, listed.decode().split("\0")):
        src = ROOT / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    return dest


def run(copy: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """A Python command in the copy, importing the copy's kvtier and tests."""
    env = {**os.environ, "PYTHONPATH": str(copy)}
    return subprocess.run([sys.executable, *args], cwd=copy, env=env, capture_output=True, text=True, timeout=900)


def test_a_new_page_takes_the_files_contributing_names_and_works(tmp_path):
    files = listed_page_files()
    assert files == [
        f"notebooks/{STEM}.md",
        f"kvtier/report/pages/{NAME}.py",
        "_toc.yml",
        f"tests/report/pages/test_{NAME}.py",
    ], "the list in CONTRIBUTING.md changed: change this test's pages to match, then check the count below"
    copy = copy_checkout(tmp_path / "copy")
    # one edit per file CONTRIBUTING.md names, and no other; the page goes after the last one in the contents
    last = "      - file: notebooks/13_cost\n"
    assert last in (copy / "_toc.yml").read_text()
    writes = {
        f"notebooks/{STEM}.md": notebook_text(),
        f"kvtier/report/pages/{NAME}.py": PAGE_MODULE,
        "_toc.yml": (copy / "_toc.yml").read_text().replace(last, f"{last}      - file: notebooks/{STEM}\n"),
        f"tests/report/pages/test_{NAME}.py": PAGE_TEST,
    }
    assert sorted(writes) == sorted(files)
    for name, text in writes.items():
        (copy / name).write_text(text, encoding="utf-8")
    # what CONTRIBUTING.md says to run after: the parameters cell is generated, not typed
    tool = run(copy, "scripts/parameters.py")
    assert tool.returncode == 0, tool.stderr
    cell = (copy / "notebooks" / f"{STEM}.md").read_text()
    assert 'block_tokens: str = "16 tokens"' in cell and 'model: str = "llama-3-70b"' in cell
    # the registry and the build's plan take the page; its number is right
    probe = run(
        copy,
        "-c",
        "from kvtier.inputs.assumptions import seed\n"
        "from kvtier.pipeline.build import plan\n"
        "from kvtier.report.pages import page_of\n"
        "from pathlib import Path\n"
        f"print(page_of('{STEM}').title, [j.name for j in plan(Path('.'), seed())].count('{STEM}'))",
    )
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.split("\n")[0] == "the throwaway page 1"
    # the project's own checks accept it as it stands, with the four files and nothing else
    checks = run(
        copy,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "-v",
        "tests/test_layout.py",
        "tests/test_layers.py",
        f"tests/report/pages/test_{NAME}.py",
        "tests/report/pages/test_pages.py",
        "-k",
        f"{NAME} or {STEM} or every or registry or contracts",
    )
    assert checks.returncode == 0, checks.stdout[-3000:]
    for ran in (  # the checks that see the new page ran, and passed
        f"tests/report/pages/test_{NAME}.py::test_the_block_is_5120_kib PASSED",
        f"tests/test_layout.py::test_every_module_has_its_test_file[kvtier/report/pages/{NAME}.py] PASSED",
        "tests/test_layers.py::test_the_import_contracts_are_kept PASSED",
    ):
        assert ran in checks.stdout, ran
