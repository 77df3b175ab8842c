#!/usr/bin/env bash
# Runs every fuzz target of the module for FUZZTIME each (make fuzz).
#
# Go 1.26's fuzz coordinator can end a run that found nothing with a bare
# "context deadline exceeded" at the -fuzztime boundary, when a worker on a
# loaded machine has not answered before the deadline (go.dev/issue/75804,
# fixed in Go 1.27). Such a run wrote no failing input and printed no panic or
# t.Fatal of a target: it is run again, up to twice more. Anything else is a
# finding and fails at once: a failing input written under testdata/fuzz, any
# other failure line, or the deadline three times in a row.
set -uo pipefail
go=${GO:-go}
fuzztime=${FUZZTIME:-10s}
log=$(mktemp)
trap 'rm -f "$log"' EXIT

bare_deadline() {
	# The run failed with the coordinator's deadline as its only message.
	grep -q '^    context deadline exceeded$' "$log" &&
		! grep -q 'Failing input written to' "$log" &&
		[ "$(grep -c '^    ' "$log")" -eq 1 ]
}

for pkg in $($go list ./...); do
	for target in $($go test -list '^Fuzz' "$pkg" | grep '^Fuzz'); do
		for try in 1 2 3; do
			echo "fuzz $target ($pkg) for $fuzztime"
			$go test -run '^$' -fuzz "^$target\$" -fuzztime "$fuzztime" "$pkg" 2>&1 | tee "$log"
			[ "${PIPESTATUS[0]}" -eq 0 ] && break
			if [ "$try" -lt 3 ] && bare_deadline; then
				echo "fuzz $target: the coordinator's deadline with no failing input (go.dev/issue/75804); running it again"
				continue
			fi
			if grep -q 'Failing input written to' "$log"; then
				echo "fuzz $target: a finding; once fixed, add the input to $target's f.Add seeds (testdata/fuzz is git-ignored)"
			fi
			exit 1
		done
	done
done
