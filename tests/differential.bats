#!/usr/bin/env bats
# The generated differential test (tests/differential/run, issue 54):
# --check's exit status is the run's, a failed run leaves everything as it
# was, and nothing foreseeable ends in exit 3 or 4.  `make check` runs a
# fixed seed (DIFFERENTIAL_SEED, DIFFERENTIAL_COUNT to change them);
# `make longcheck` and `make differential` run thousands more.

load helpers

@test "generated scenarios: --check says what the run does, and a failed run changes nothing" {
	require_cmd python3
	run "$BATS_TEST_DIRNAME/differential/run" --count "${DIFFERENTIAL_COUNT:-300}" \
	    --seed "${DIFFERENTIAL_SEED:-20261207}"
	printf '%s\n' "$output" | grep -v '^  by hand' | tail -40 >&3 || true
	[ "$status" -eq 0 ] || fail "$output"
	[[ $output == *" 0 failed"* ]] || fail "no summary: $output"
}
