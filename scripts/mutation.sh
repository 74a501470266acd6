#!/usr/bin/env bash
# Mutation testing of the formula modules with mutmut 3.8 (issue 15); not part of CI.
#
#   scripts/mutation.sh                 every module [tool.mutmut] only_mutate lists in pyproject.toml
#                                       (the formulas, units, and the inputs that hold arithmetic)
#   scripts/mutation.sh costs roofline  only these modules (kvtier/formulas/costs.py, kvtier/formulas/roofline.py):
#                                       a module's name, found in kvtier/ or one folder below
#
# MUTMUT names the mutmut to run (default: mutmut on PATH; install it with
# `pip install mutmut==3.8.1` into the environment that has kvtier and its test deps).
# MUTMUT_CHILDREN sets the parallel workers (default 1: the run shares the machine).
# mutmut works in ./mutants (git-ignored; removed first so each run starts clean) and
# prints one score line per module at the end; `mutmut results` lists the survivors and
# `mutmut show NAME` shows one.  Surviving mutants that cannot change behaviour are
# listed, with the reason, in tests/mutation-equivalents.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
MUTMUT=${MUTMUT:-mutmut}
children=${MUTMUT_CHILDREN:-1}
patterns=()
for module in "$@"; do
  path=$( (ls kvtier/"$module".py kvtier/*/"$module".py 2>/dev/null || true) | head -n 1)
  [ -n "$path" ] || { echo "mutation.sh: no module $module in kvtier/" >&2; exit 2; }
  dotted=${path%.py}
  patterns+=("${dotted//\//.}.*")
done
rm -rf mutants
start=$(date +%s)
"$MUTMUT" run --max-children "$children" "${patterns[@]}" || true
"$MUTMUT" export-cicd-stats >/dev/null
python3 - "$@" <<'PY'
import json, sys
from pathlib import Path

modules = sys.argv[1:]
equivalent = {
    line.split("|")[0].strip()
    for line in Path("tests/mutation-equivalents.txt").read_text().splitlines()
    if line.strip() and not line.startswith("#")
}
counts = {}
for meta in sorted(Path("mutants/kvtier").rglob("*.py.meta")):
    module = meta.name.removesuffix(".py.meta")
    if modules and module not in modules:
        continue
    codes = json.loads(meta.read_text())["exit_code_by_key"]
    # exit codes as mutmut/stats.py reads them: 1 and 3 killed, 36 and signals timeout/crash (killed too),
    # 0 survived, 5 and 33 no test reached the mutant
    killed = sum(1 for c in codes.values() if c in (1, 3, 36, 37, 24, -24, 152, 255, -11, -9))
    survived = sum(1 for c in codes.values() if c == 0)
    untested = sum(1 for c in codes.values() if c in (33, 5))
    listed = sum(1 for name, c in codes.items() if c == 0 and name in equivalent)
    if codes:
        counts[module] = (len(codes), killed, survived, listed, untested)
        for name, c in sorted(codes.items()):
            if c == 0 and name not in equivalent:
                print(f"survived, not listed as equivalent: {name}")
for module, (n, killed, survived, listed, untested) in counts.items():
    # score: killed / all mutants (mutmut's); net: killed / (all - survivors listed as equivalent)
    print(f"{module:14s} {n:5d} mutants  {killed:5d} killed  {survived:4d} survived ({listed} equivalent)"
          f"  {untested:3d} untested  score {100 * killed / n:5.1f} %  net {100 * killed / (n - listed):5.1f} %")
PY
echo "took $(( $(date +%s) - start )) s"
