# POSIX make syntax (with POSIX.1-2024's ?=).  There is no .POSIX: target
# because it makes GNU make predefine CC=c99 and CFLAGS=-O1, which would
# replace the defaults below: CC, CFLAGS, CPPFLAGS and LDFLAGS come from the
# environment or the command line when given (as Debian's dh and
# dpkg-buildflags pass them); the values below, with the hardening flags,
# are the defaults when nothing is passed.
# -std=c11 -Wall -Wextra are always added; make WERROR=1 adds -Werror (CI and
# development builds), which a user's or a distribution's build does not get.
PREFIX = /usr/local
BINDIR = $(PREFIX)/bin
MANDIR = $(PREFIX)/share/man
BASHCOMPDIR = $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR = $(PREFIX)/share/zsh/site-functions
CC ?= cc
CFLAGS ?= -O2 -g -fstack-protector-strong -fstack-clash-protection -fPIE
CPPFLAGS ?= -D_FORTIFY_SOURCE=3
LDFLAGS ?= -pie -Wl,-z,relro,-z,now
WERROR =
PW_CFLAGS = -std=c11 -Wall -Wextra $(WERROR:1=-Werror)
INSTALL = install
BATS = bats
MUSLCC = musl-gcc
FUZZ_SECONDS = 60

all: ponywrite

ponywrite: ponywrite.c
	$(CC) $(PW_CFLAGS) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ ponywrite.c

# The README's test command: install what the suite needs when it is missing
# (tests/deps), then run it.  `make test` runs the suite alone.
check: ponywrite
	tests/deps
	BATS=$(BATS) tests/suite

test: ponywrite
	BATS=$(BATS) tests/suite

deps:
	tests/deps

# The suite as user nobody, from a copy it owns (run as root).
usercheck: ponywrite
	BATS=$(BATS) tests/usercheck

# What CI runs (.ci/run, under 20 minutes), on a fresh clone of HEAD in a
# temporary directory, as CI runs it: root, CI=true, no standard input.
# Uncommitted changes are not in it.  CI_KEEP=1 keeps the clone.
ci:
	@d=$$(mktemp -d /var/tmp/ponywrite-ci.XXXXXX) || exit 2; \
	if [ "$(CI_KEEP)" = 1 ]; then trap 'echo "make ci: kept $$d"' EXIT; \
	else trap 'rm -rf --one-file-system "$$d"' EXIT; fi; \
	trap 'exit 130' HUP INT TERM; \
	git clone -q . "$$d/ponywrite" && \
	echo "make ci: .ci/run on a clone of $$(git rev-parse --short HEAD) in $$d" && \
	(cd "$$d/ponywrite" && CI=true .ci/run </dev/null)

# Everything CI runs a sample of, in full (about two hours, root).
longcheck:
	tests/longcheck

# The generated differential test, more than make check's 300 scenarios.
differential: ponywrite
	tests/differential/run --count $${COUNT:-2000}

# The README's two commands as root in a fresh minimal Debian 12 (root).
freshcheck:
	tests/freshcheck

# The Debian package, built and checked with lintian (needs dpkg-dev,
# debhelper, lintian).
deb:
	tests/debcheck

# The same suite with its files on loop-mounted XFS and btrfs (root).
fscheck: ponywrite
	PONYWRITE="$$(pwd)/ponywrite" tests/fscheck

# A static binary for containers and initramfs, and the suite run against it.
static: ponywrite-static

ponywrite-static: ponywrite.c
	$(MUSLCC) -static -std=c11 -O2 -Wall -Wextra $(WERROR:1=-Werror) \
	    -o $@ ponywrite.c

staticcheck: ponywrite-static
	PONYWRITE="$$(pwd)/ponywrite-static" $(BATS) tests

# Hardening: sanitizers over the whole suite, valgrind, static analysis,
# fuzzing of the parsers, install/uninstall, and the security tests.
sanitize:
	tests/hardening/sanitize

lint:
	tests/hardening/lint

fuzz:
	FUZZ_SECONDS=$(FUZZ_SECONDS) tests/fuzz/run

installcheck: ponywrite
	tests/hardening/install-test

hardening: ponywrite
	tests/hardening/valgrind
	PONYWRITE="$$(pwd)/ponywrite" $(BATS) tests/hardening

# The crash matrix and its picture (crash-table.md, crash-matrix.svg).
crashtest: ponywrite
	CRASH_TABLE_OUT=crash-table.md CRASH_SVG_OUT=crash-matrix.svg \
	    PONYWRITE="$$(pwd)/ponywrite" tests/crash/run
	PONYWRITE="$$(pwd)/ponywrite" tests/fault/run

# Block-level crash test: a FUSE recorder under a loop device logs every
# write and flush; every state a power cut may leave is mounted and checked.
blockcrash: ponywrite tests/blockcrash/recorder
	mkdir -p docs
	BLOCKCRASH_TABLE_OUT=docs/blockcrash.md PONYWRITE="$$(pwd)/ponywrite" \
	    BLOCKCRASH_RECORDER="$$(pwd)/tests/blockcrash/recorder" tests/blockcrash/run

# The same matrix with --no-sync on every scenario (its table in docs/).
blockcrash-nosync: ponywrite tests/blockcrash/recorder
	mkdir -p docs
	BLOCKCRASH_NOSYNC=1 BLOCKCRASH_TABLE_OUT=docs/blockcrash-no-sync.md \
	    PONYWRITE="$$(pwd)/ponywrite" \
	    BLOCKCRASH_RECORDER="$$(pwd)/tests/blockcrash/recorder" tests/blockcrash/run

# Device flushes of the many-files forms for N = 1, 3, 10, 100, 1000 files,
# 100 in 10 directories and 1000 in 50, on ext4, XFS, btrfs, ext2 and ext4
# without a journal.
blockcrash-flushes: ponywrite tests/blockcrash/recorder
	mkdir -p docs
	BLOCKCRASH_FLUSHCOUNT=1 BLOCKCRASH_PROFILES="ext4 xfs btrfs ext2 ext4-nojournal" \
	    BLOCKCRASH_TABLE_OUT=docs/batch-flushes.md PONYWRITE="$$(pwd)/ponywrite" \
	    BLOCKCRASH_RECORDER="$$(pwd)/tests/blockcrash/recorder" tests/blockcrash/run

# What is guaranteed where (docs/guarantees.md): the block-level test of one
# file and of a batch on every file system this machine mounts, the kernel's
# and FUSE servers', with what ponywrite --check says on each.
GUARANTEE_PROFILES = ext4 ext4-writeback ext4-noauto_da_alloc ext4-fast_commit \
	ext4-data_journal ext4-journal_async_commit ext3 ext2 ext4-nojournal xfs \
	btrfs ext4-overlay ext2-overlay ext4-nojournal-overlay \
	ext4-overlay-hidden ext2-overlay-hidden ext4-bindfs \
	ext4-fuse-overlayfs ext4-sshfs ext2-bindfs ext2-fuse-overlayfs ext2-sshfs \
	ext4-nojournal-bindfs ext4-nojournal-fuse-overlayfs ext4-nojournal-sshfs \
	exfat-fuse ntfs-3g
guarantees: ponywrite tests/blockcrash/recorder
	mkdir -p docs
	BLOCKCRASH_PROFILES="$(GUARANTEE_PROFILES)" BLOCKCRASH_BATCH_PROFILES=all \
	    BLOCKCRASH_SCENARIOS="replace batch-two-dirs" BLOCKCRASH_CONTROLS=none \
	    BLOCKCRASH_ERRORS=0 BLOCKCRASH_GUARANTEES_OUT=docs/guarantees.md \
	    PONYWRITE="$$(pwd)/ponywrite" \
	    BLOCKCRASH_RECORDER="$$(pwd)/tests/blockcrash/recorder" tests/blockcrash/run

tests/blockcrash/recorder: tests/blockcrash/recorder.c
	$(CC) $(PW_CFLAGS) $(CPPFLAGS) $(CFLAGS) `pkg-config --cflags fuse3` $(LDFLAGS) -o $@ \
	    tests/blockcrash/recorder.c `pkg-config --libs fuse3`

# Mutation testing: every mutant of tests/mutate/mutants.py through the
# suites; the table goes to docs/mutation.md.  MUTATE_SAMPLE=2 runs a sample
# chosen from the commit id, as CI does.
MUTATE_SAMPLE =
mutate:
	if [ -n "$(MUTATE_SAMPLE)" ]; then tests/mutate/run --sample $(MUTATE_SAMPLE); \
	else mkdir -p docs && tests/mutate/run --table docs/mutation.md; fi

# docs/: the tables and pictures that make crashtest and bench/run wrote
# here (bench/run with BENCH_TABLE_OUT=bench-table.md
# BENCH_SVG_OUT=bench-chart.svg), copied unedited.
docs:
	if [ -f crash-table.md ]; then cp crash-table.md docs/crash-matrix.md; fi
	if [ -f crash-matrix.svg ]; then cp crash-matrix.svg docs/crash-matrix.svg; fi
	if [ -f bench-table.md ]; then cp bench-table.md docs/benchmark.md; fi
	if [ -f bench-chart.svg ]; then cp bench-chart.svg docs/benchmark.svg; fi

readme-tables: docs

install: ponywrite
	$(INSTALL) -d "$(DESTDIR)$(BINDIR)" "$(DESTDIR)$(MANDIR)/man1" \
	    "$(DESTDIR)$(BASHCOMPDIR)" "$(DESTDIR)$(ZSHCOMPDIR)"
	$(INSTALL) -m 755 ponywrite "$(DESTDIR)$(BINDIR)/ponywrite"
	$(INSTALL) -m 644 ponywrite.1 "$(DESTDIR)$(MANDIR)/man1/ponywrite.1"
	$(INSTALL) -m 644 completion/ponywrite.bash \
	    "$(DESTDIR)$(BASHCOMPDIR)/ponywrite"
	$(INSTALL) -m 644 completion/_ponywrite "$(DESTDIR)$(ZSHCOMPDIR)/_ponywrite"

uninstall:
	rm -f "$(DESTDIR)$(BINDIR)/ponywrite" \
	    "$(DESTDIR)$(MANDIR)/man1/ponywrite.1" \
	    "$(DESTDIR)$(BASHCOMPDIR)/ponywrite" \
	    "$(DESTDIR)$(ZSHCOMPDIR)/_ponywrite"

clean:
	rm -f ponywrite ponywrite-static ponywrite-asan

.PHONY: all check test deps ci longcheck differential freshcheck deb fscheck static staticcheck sanitize \
	lint fuzz installcheck hardening usercheck crashtest blockcrash blockcrash-nosync blockcrash-flushes guarantees mutate docs readme-tables install \
	uninstall clean
