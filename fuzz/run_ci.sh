#!/usr/bin/env bash
# Run each fuzz harness for a short budget with the saved seed corpus (CI; see fuzz/README.md).
#
#   FUZZ_SECONDS=60 fuzz/run_ci.sh          # per harness; default 60
#   FUZZ_SEED=0 fuzz/run_ci.sh              # a random seed (explore) instead of the fixed one
#
# CI uses a fixed seed: the inputs tried are then the same sequence on every run (a slower machine
# tries a prefix of it), so a red CI is a regression in the code, reproducible with the same seed,
# not the luck of the draw. Exploring with random seeds is the long run's job (fuzz/README.md).
#
# Exits non-zero if a harness crashes (the input is kept in fuzz/crashes/), 0 otherwise.
# Skips (exit 0) when atheris is not installed: it has no wheel for every platform.
set -uo pipefail
cd "$(dirname "$0")/.."

budget="${FUZZ_SECONDS:-60}"
seed="${FUZZ_SEED:-1}"
if ! python -c "import atheris" >/dev/null 2>&1; then
    echo "fuzz: atheris is not installed; skipping the fuzz run (pip install -e \".[fuzz]\")"
    exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p fuzz/crashes
status=0
for harness in bytes graphs; do
    # libFuzzer adds new inputs to its first corpus folder: give it a copy, keep the repo's as is
    cp -r "fuzz/corpus/$harness" "$work/$harness"
    log="$work/$harness.log"
    python "fuzz/fuzz_$harness.py" "$work/$harness" \
        -max_total_time="$budget" -seed="$seed" -timeout=30 -rss_limit_mb=2560 -max_len=65536 \
        -artifact_prefix="fuzz/crashes/$harness-" -print_final_stats=1 >"$log" 2>&1
    rc=$?
    runs="$(grep -Eo 'Done [0-9]+ runs' "$log" | grep -Eo '[0-9]+' || true)"
    if [ "$rc" -ne 0 ]; then
        status=1
        echo "fuzz_$harness: CRASH (exit $rc, seed $seed); input saved under fuzz/crashes/$harness-*"
        grep -Ev '^#[0-9]+' "$log" | tail -40
    else
        echo "fuzz_$harness: ok, ${runs:-?} runs in ${budget} s (seed $seed), corpus $(ls "$work/$harness" | wc -l) inputs"
    fi
done
exit "$status"
