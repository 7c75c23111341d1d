.POSIX:

PREFIX = /usr/local
BINDIR = $(PREFIX)/bin
MANDIR = $(PREFIX)/share/man
CC = cc
CFLAGS = -std=c11 -O2 -g -Wall -Wextra -Werror \
	-D_FORTIFY_SOURCE=3 -fstack-protector-strong -fPIE
LDFLAGS = -pie -Wl,-z,relro,-z,now
BATS = bats
MUSLCC = musl-gcc
FUZZ_SECONDS = 60

all: ponywrite

ponywrite: ponywrite.c
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ ponywrite.c

check: ponywrite
	mandoc -Tlint -Wwarning ponywrite.1
	PONYWRITE="$$(pwd)/ponywrite" $(BATS) tests

# The same suite with its files on loop-mounted XFS and btrfs (root).
fscheck: ponywrite
	PONYWRITE="$$(pwd)/ponywrite" tests/fscheck

# A static binary for containers and initramfs, and the suite run against it.
static: ponywrite-static

ponywrite-static: ponywrite.c
	$(MUSLCC) -static -std=c11 -O2 -Wall -Wextra -Werror -o $@ ponywrite.c

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

crashtest: ponywrite
	CRASH_TABLE_OUT=crash-table.md PONYWRITE="$$(pwd)/ponywrite" \
	    tests/crash/run
	PONYWRITE="$$(pwd)/ponywrite" tests/fault/run

# Block-level crash test: a FUSE recorder under a loop device logs every
# write and flush; every state a power cut may leave is mounted and checked.
blockcrash: ponywrite tests/blockcrash/recorder
	mkdir -p docs
	BLOCKCRASH_TABLE_OUT=docs/blockcrash.md PONYWRITE="$$(pwd)/ponywrite" \
	    BLOCKCRASH_RECORDER="$$(pwd)/tests/blockcrash/recorder" tests/blockcrash/run

tests/blockcrash/recorder: tests/blockcrash/recorder.c
	$(CC) $(CFLAGS) `pkg-config --cflags fuse3` $(LDFLAGS) -o $@ \
	    tests/blockcrash/recorder.c `pkg-config --libs fuse3`

# Mutation testing: every mutant of tests/mutate/mutants.py through the
# suites; the table goes to docs/mutation.md.  MUTATE_SAMPLE=8 runs a sample
# chosen from the commit id, as CI does.
MUTATE_SAMPLE =
mutate:
	if [ -n "$(MUTATE_SAMPLE)" ]; then tests/mutate/run --sample $(MUTATE_SAMPLE); \
	else mkdir -p docs && tests/mutate/run --table docs/mutation.md; fi

# Paste the tables that crashtest and bench/run wrote into README.md.
readme-tables:
	if [ -f crash-table.md ]; then tests/embed crash-table crash-table.md; fi
	if [ -f bench-table.md ]; then tests/embed bench-table bench-table.md; fi

install: ponywrite
	mkdir -p "$(DESTDIR)$(BINDIR)" "$(DESTDIR)$(MANDIR)/man1"
	cp ponywrite "$(DESTDIR)$(BINDIR)/ponywrite"
	chmod 755 "$(DESTDIR)$(BINDIR)/ponywrite"
	cp ponywrite.1 "$(DESTDIR)$(MANDIR)/man1/ponywrite.1"
	chmod 644 "$(DESTDIR)$(MANDIR)/man1/ponywrite.1"

uninstall:
	rm -f "$(DESTDIR)$(BINDIR)/ponywrite" "$(DESTDIR)$(MANDIR)/man1/ponywrite.1"

clean:
	rm -f ponywrite ponywrite-static ponywrite-asan

.PHONY: all check fscheck static staticcheck sanitize lint fuzz installcheck hardening \
	crashtest blockcrash mutate readme-tables install uninstall clean
