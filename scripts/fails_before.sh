#!/usr/bin/env bash
# Shows that each defect's test fails on the code before its fix: issue 15's (and the costs
# it asked for) in scripts/fails_before.txt, later issues' in scripts/fails_before/*.txt.
# For each line NAME|COMMIT[:current]|TESTS of those files: a git worktree
# of COMMIT^ with the tests of COMMIT (":current": the tests of this checkout), then
# pytest -x on TESTS there (PYTHONPATH=<worktree>/src, so the old code is what runs).
# Prints one verdict a line: "1 failed" (or an ImportError of what the fix added) is the
# expected one. Needs the test virtualenv (./dev test once); takes ~3 minutes a file.
#   bash scripts/fails_before.sh [PYTHON] [FILE…]   (FILE: only those lists)
set -uo pipefail
cd "$(dirname "$0")/.." || exit
py="${1:-$PWD/.venv/bin/python}"
shift || true
lists=("$@")
[ "${#lists[@]}" -ne 0 ] || lists=(scripts/fails_before.txt scripts/fails_before/*.txt)
work="$(mktemp -d "${TMPDIR:-/tmp}/fails-before-XXXXXX")"
trap 'rm -rf "$work"; git worktree prune' EXIT
while IFS='|' read -r name spec tests; do
  commit=${spec%%:*}
  wt="$work/$name"
  git worktree add -f --detach "$wt" "$commit^" >/dev/null 2>&1 || { echo "$name: no $commit^"; continue; }
  if [ "${spec#*:}" = current ]; then
    rm -rf "$wt/tests" && cp -r tests "$wt/tests"
  else
    (cd "$wt" && git checkout -q "$commit" -- tests)
  fi
  # shellcheck disable=SC2086
  res=$(cd "$wt" && PYTHONPATH="$wt/src" timeout 600 "$py" -m pytest -q -p no:cacheprovider -x $tests 2>&1)
  summary=$(echo "$res" | grep -E "passed|failed|error" | tail -1)
  first=$(echo "$res" | grep -E "^E  " | head -1 | cut -c1-140)
  echo "$name on $commit^: $summary | $first"
  git worktree remove --force "$wt" >/dev/null 2>&1
done < <(cat "${lists[@]}" 2>/dev/null | grep -v '^#')
