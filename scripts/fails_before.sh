#!/usr/bin/env bash
# Shows that a regression test fails on the code before its fix: a git worktree of
# COMMIT^ (the fix's parent) with the tests of this checkout, then pytest on TESTS there
# (PYTHONPATH=<worktree>/src, so the old code is what runs). The expected verdict is
# "1 failed" (or an ImportError of what the fix added); a pass means the test cannot
# tell the fix from its absence. Needs the test virtualenv (./dev test once).
#   bash scripts/fails_before.sh COMMIT TEST [TEST…]
#   e.g. bash scripts/fails_before.sh HEAD tests/unit/test_prune.py::test_x
set -uo pipefail
cd "$(dirname "$0")/.." || exit
if [ "$#" -lt 2 ]; then
  echo "usage: bash scripts/fails_before.sh COMMIT TEST [TEST…]" >&2
  exit 2
fi
commit=$1
shift
py="${PYTHON:-$PWD/.venv/bin/python}"
work="$(mktemp -d "${TMPDIR:-/tmp}/fails-before-XXXXXX")"
trap 'git worktree remove --force "$work/tree" >/dev/null 2>&1; rm -rf "$work"; git worktree prune' EXIT
git worktree add -f --detach "$work/tree" "$commit^" >/dev/null 2>&1 || {
  echo "no $commit^" >&2
  exit 2
}
rm -rf "$work/tree/tests" && cp -r tests "$work/tree/tests"
res=$(cd "$work/tree" && PYTHONPATH="$work/tree/src" timeout 600 "$py" -m pytest -q -p no:cacheprovider "$@" 2>&1)
echo "$res" | grep -E "^E  " | head -3 | cut -c1-160
echo "on $commit^: $(echo "$res" | grep -E "passed|failed|error" | tail -1)"
