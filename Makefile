.POSIX:

PREFIX = /usr/local
BINDIR = $(PREFIX)/bin
MANDIR = $(PREFIX)/share/man
CC = cc
CFLAGS = -std=c11 -O2 -g -Wall -Wextra -Werror \
	-D_FORTIFY_SOURCE=3 -fstack-protector-strong -fPIE
LDFLAGS = -pie -Wl,-z,relro,-z,now
BATS = bats

all: ponywrite

ponywrite: ponywrite.c
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ ponywrite.c

check: ponywrite
	mandoc -Tlint -Wwarning ponywrite.1
	PONYWRITE="$$(pwd)/ponywrite" $(BATS) tests

crashtest: ponywrite
	CRASH_TABLE_OUT=crash-table.md PONYWRITE="$$(pwd)/ponywrite" \
	    tests/crash/run
	PONYWRITE="$$(pwd)/ponywrite" tests/fault/run

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
	rm -f ponywrite

.PHONY: all check crashtest readme-tables install uninstall clean
