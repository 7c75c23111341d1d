# shellcheck shell=bash
# shellcheck disable=SC2154,SC2034 # root is the sourcing script's, recpid goes back to it
# bench/recorder.bash - the slow disk of bench/many and bench/scale: the
# block-level recorder of tests/blockcrash (a FUSE file whose flushes cost
# a set latency, and which counts them), sourced by both.  Needs $root (the
# project's top directory).

# build_recorder OUT LOG: compile the recorder into OUT (compiler messages
# in LOG); on failure print why and return 1.
build_recorder() {
	local fuseflags
	if [[ ! -e /dev/fuse ]] || ! command -v fusermount3 >/dev/null 2>&1; then
		echo "needs /dev/fuse and fusermount3"
		return 1
	fi
	fuseflags=$(pkg-config --cflags --libs fuse3 2>/dev/null) || fuseflags=
	# shellcheck disable=SC2086 # compiler flags, split on purpose
	if ! cc -O2 -o "$1" "$root/tests/blockcrash/recorder.c" $fuseflags 2>"$2"; then
		echo "cannot build the recorder (libfuse3-dev, pkg-config)"
		return 1
	fi
}

# start_recorder REC IMAGE DIR LATENCY: serve IMAGE as DIR/disk, each
# flush costing LATENCY; the server's pid in recpid.  0 once DIR/ctl is
# there, 1 if it did not start within 5 s.
start_recorder() {
	"$1" --flush-latency="$4" --log=/dev/null "$2" "$3" &
	recpid=$!
	for _ in $(seq 500); do [[ -e $3/ctl ]] && return 0; sleep 0.01; done
	return 1
}
