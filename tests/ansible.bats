#!/usr/bin/env bats
# contrib/ansible (issue 25): the collection ponywrite.durable, built with
# ansible-galaxy and run by ansible-playbook against 8 hosts, each a
# separate root on this machine (local connection), 4 forks.

load helpers

setup_file()
{
	command -v ansible-playbook >/dev/null && command -v ansible-galaxy >/dev/null ||
	    return 0
	local b="$BATS_FILE_TMPDIR/collection"
	mkdir -p "$b"
	ansible-galaxy collection build "$BATS_TEST_DIRNAME/../contrib/ansible/ponywrite/durable" \
	    --output-path "$b" >/dev/null
	ansible-galaxy collection install "$b"/ponywrite-durable-*.tar.gz -p "$b/installed" >/dev/null
}

setup()
{
	pw_setup
	require_cmd ansible-playbook ansible-galaxy
	[ -d "$BATS_FILE_TMPDIR/collection/installed/ansible_collections/ponywrite/durable" ] ||
	    fail "the collection was not built"
	export ANSIBLE_COLLECTIONS_PATH="$BATS_FILE_TMPDIR/collection/installed"
	export ANSIBLE_LOCAL_TEMP="$BATS_TEST_TMPDIR/ansible-local"
	export ANSIBLE_REMOTE_TEMP="$BATS_TEST_TMPDIR/ansible-remote"
	export ANSIBLE_NOCOLOR=1 ANSIBLE_FORKS=4 ANSIBLE_HOST_KEY_CHECKING=0
	printf '[defaults]\n' > "$BATS_TEST_TMPDIR/ansible.cfg"
	export ANSIBLE_RETRY_FILES_ENABLED=0 ANSIBLE_CONFIG="$BATS_TEST_TMPDIR/ansible.cfg"
	# ponywrite on the hosts' PATH (the binary under test)
	mkdir -p "$BATS_TEST_TMPDIR/bin"
	ln -s "$PONYWRITE" "$BATS_TEST_TMPDIR/bin/ponywrite"
	export PATH="$BATS_TEST_TMPDIR/bin:$PATH"
	local i
	{
		echo "[hosts]"
		for i in 1 2 3 4 5 6 7 8; do
			mkdir -p "h$i"
			echo "h$i ansible_connection=local ansible_python_interpreter=/usr/bin/python3 root=$WORK/h$i"
		done
	} > inventory
}

teardown()
{
	chattr -R -i "$WORK" 2>/dev/null || :
	! mountpoint -q "$WORK/h4/etc" || umount "$WORK/h4/etc"
	pw_teardown
}

# play FILE [ANSIBLE-PLAYBOOK-OPTION...]: run the playbook FILE against the
# 8 hosts; status, output (stdout and stderr).
play()
{
	local f=$1
	shift
	run ansible-playbook -i inventory "$@" "$f"
}

# play_failed PATTERN: ansible-playbook exited 2 (a host failed), and its
# output matches the glob PATTERN.
play_failed()
{
	[ "$status" = 2 ] || fail "exit $status: $output"
	# shellcheck disable=SC2053 # a glob on purpose
	[[ $output == $1 ]] || fail "not '$1': $output"
}

# recap HOST: its PLAY RECAP line's counts, "ok=N changed=N failed=N".
recap()
{
	awk -v h="$1" '$1 == h && $2 == ":" {
		for (i = 3; i <= NF; i++) if ($i ~ /^(ok|changed|failed)=/) s = s " " $i
		print substr(s, 2); exit }' <<<"$output"
}

# write_play FILE CONTENT [OPTION-LINE...]: a playbook writing CONTENT to
# {{ root }}/etc/app.conf with the module's options given as YAML lines.
write_play()
{
	local f=$1 content=$2 o
	shift 2
	{
		echo "- hosts: all"
		echo "  gather_facts: false"
		echo "  tasks:"
		echo "    - ponywrite.durable.copy:"
		echo "        dest: \"{{ root }}/etc/app.conf\""
		echo "        content: \"$content\""
		for o; do echo "        $o"; done
	} > "$f"
}

@test "ansible, 8 hosts: create, replace, unchanged on a second run (idempotent), mode and owner" {
	write_play p.yml 'one\n' 'parents: true' 'mode: "0640"'
	play p.yml
	assert_status 0
	for i in 1 2 3 4 5 6 7 8; do
		[ "$(recap "h$i")" = "ok=1 changed=1 failed=0" ] || fail "h$i: $(recap "h$i")" "$output"
		assert_content "h$i/etc/app.conf" $'one\n'
		assert_mode "h$i/etc/app.conf" 640
	done
	play p.yml
	assert_status 0
	for i in 1 2 3 4 5 6 7 8; do
		[ "$(recap "h$i")" = "ok=1 changed=0 failed=0" ] || fail "second run, h$i: $(recap "h$i")"
	done
	write_play q.yml 'two\n' 'mode: 0600'
	play q.yml
	assert_status 0
	for i in 1 2 3 4 5 6 7 8; do
		[ "$(recap "h$i")" = "ok=1 changed=1 failed=0" ] || fail "replace, h$i: $(recap "h$i")"
		assert_content "h$i/etc/app.conf" $'two\n'
		assert_mode "h$i/etc/app.conf" 600
	done
	assert_no_litter
}

@test "ansible, check mode and diff mode: nothing written, changed and the diff reported; a failure foreseen" {
	mkdir -p h1/etc h2/etc
	echo old > h1/etc/app.conf
	echo new > h2/etc/app.conf
	snapshot h1/etc/app.conf h2/etc/app.conf
	write_play p.yml 'new\n'
	play p.yml --check --diff --limit h1,h2,h3
	# h3 has no etc/ and no parents: true, so a run would fail
	[ "$status" = 2 ] || fail "exit $status: $output"
	[ "$(recap h1)" = "ok=1 changed=1 failed=0" ] || fail "h1: $(recap h1)"
	[ "$(recap h2)" = "ok=1 changed=0 failed=0" ] || fail "h2: $(recap h2)"
	[ "$(recap h3)" = "ok=0 changed=0 failed=1" ] || fail "h3: $(recap h3)"
	[[ $output == *"-old"*"+new"* ]] || fail "no diff: $output"
	[[ $output == *"h3/etc: No such file or directory"* ]] || fail "h3's message: $output"
	assert_untouched h1/etc/app.conf h2/etc/app.conf
	[ ! -e h3/etc ] || fail "check mode made h3/etc"
}

@test "ansible: backup keeps the previous version as dest~; a failing validate leaves dest untouched" {
	for i in 1 2 3 4 5 6 7 8; do mkdir -p "h$i/etc"; echo old > "h$i/etc/app.conf"; done
	write_play p.yml 'good\n' 'backup: true' 'validate: grep -q good %s'
	play p.yml
	assert_status 0
	for i in 1 2 3 4 5 6 7 8; do
		assert_content "h$i/etc/app.conf" $'good\n'
		assert_content "h$i/etc/app.conf~" $'old\n'
	done
	snapshot h1/etc/app.conf
	write_play q.yml 'bad\n' 'validate: grep -q good %s'
	play q.yml --limit h1
	play_failed '*failed to validate*'
	assert_untouched h1/etc/app.conf
	assert_no_litter
}

@test "ansible: ponywrite missing on a host, an immutable and a read-only destination, two hosts failing while the others succeed" {
	require_root
	for i in 1 2 3 4 5 6 7 8; do mkdir -p "h$i/etc"; echo old > "h$i/etc/app.conf"; done
	chattr +i h3/etc/app.conf 2>/dev/null || skip "no chattr +i here"
	# h4's etc/ is read-only
	mount --bind h4/etc h4/etc 2>/dev/null ||
	    skip "cannot bind-mount h4/etc read-only (no CAP_SYS_ADMIN)"
	mount -o remount,bind,ro h4/etc
	snapshot h3/etc/app.conf h4/etc/app.conf
	write_play p.yml 'new\n'
	play p.yml
	[ "$status" = 2 ] || fail "exit $status: $output"
	[ "$(recap h3)" = "ok=0 changed=0 failed=1" ] || fail "h3: $(recap h3)"
	[[ $output == *"is immutable (chattr +i); cannot be replaced"* ]] || fail "h3's message: $output"
	[ "$(recap h4)" = "ok=0 changed=0 failed=1" ] || fail "h4: $(recap h4)"
	[[ $output == *"h4/etc"*"Read-only file system"* ]] || fail "h4's message: $output"
	assert_untouched h3/etc/app.conf h4/etc/app.conf
	umount h4/etc
	for i in 1 2 5 6 7 8; do
		[ "$(recap "h$i")" = "ok=1 changed=1 failed=0" ] || fail "h$i: $(recap "h$i")"
		assert_content "h$i/etc/app.conf" $'new\n'
	done
	chattr -i h3/etc/app.conf
	# no ponywrite on the PATH the module searches
	{
		echo "- hosts: h1"
		echo "  gather_facts: false"
		echo "  environment:"
		echo "    PATH: /nonexistent"
		echo "  tasks:"
		echo "    - ponywrite.durable.copy:"
		echo "        dest: \"{{ root }}/etc/app.conf\""
		echo "        content: \"x\""
	} > m.yml
	play m.yml
	play_failed '*ponywrite is not installed on this host*'
	assert_content h1/etc/app.conf $'new\n'
	assert_no_litter
}

@test "ansible-doc reads the modules' documentation" {
	run ansible-doc ponywrite.durable.copy
	assert_status 0
	[[ $output == *"= dest"* && $output == *"- validate"* && $output == *"- mode"* ]] ||
	    fail "ansible-doc: $output"
	run ansible-doc ponywrite.durable.batch
	assert_status 0
	# mode comes from the shared doc fragment
	[[ $output == *"= files"* && $output == *"- mode"* ]] || fail "ansible-doc batch: $output"
	run ansible-doc -t module -l ponywrite.durable
	assert_status 0
	[[ $output == *"ponywrite.durable.batch"*"ponywrite.durable.copy"* ]] || fail "ansible-doc -l: $output"
}

# The sanity tests that need no network: the others (validate-modules,
# import, pep8, pylint, yamllint, runtime-metadata, ansible-doc's) install
# their requirements in a virtual environment from the network.
@test "ansible-test sanity, the 25 tests that run offline" {
	require_cmd ansible-test
	local c="$BATS_TEST_TMPDIR/ac/ansible_collections/ponywrite" t args=()
	mkdir -p "$c"
	cp -r "$BATS_TEST_DIRNAME/../contrib/ansible/ponywrite/durable" "$c/"
	find "$c" -name __pycache__ -prune -exec rm -rf {} +
	for t in action-plugin-docs changelog compile empty-init future-import-boilerplate \
	    ignores line-endings metaclass-boilerplate no-assert no-basestring \
	    no-dict-iteritems no-dict-iterkeys no-dict-itervalues no-get-exception \
	    no-illegal-filenames no-main-display no-smart-quotes no-unicode-literals pslint \
	    replace-urlopen shebang shellcheck symlinks use-argspec-type-path use-compat-six; do
		args+=(--test "$t")
	done
	[ "${#args[@]}" = 50 ] || fail "${#args[@]} arguments"
	cd "$c/durable"
	run ansible-test sanity --python "$(/usr/bin/python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')" "${args[@]}"
	assert_status 0
	[ "$(grep -c '^Running sanity test' <<<"$output")" = 25 ] || fail "$output"
}

# batch_play FILE N CONTENT [OPTION-LINE...]: a playbook writing N files
# {{ root }}/d{1,2}/fK with CONTENT through one ponywrite.durable.batch task.
batch_play()
{
	local f=$1 n=$2 content=$3 k o
	shift 3
	{
		echo "- hosts: all"
		echo "  gather_facts: false"
		echo "  tasks:"
		echo "    - ponywrite.durable.batch:"
		for o; do echo "        $o"; done
		echo "        files:"
		for ((k = 1; k <= n; k++)); do
			echo "          - dest: \"{{ root }}/d$((k % 2 + 1))/f$k\""
			echo "            content: \"$content\""
		done
	} > "$f"
}

@test "ansible, 8 hosts: ponywrite.durable.batch writes 20 files a host in one ponywrite run; unchanged on a second run; changed per file; check mode" {
	# count the runs: a ponywrite that logs its arguments
	rm "$BATS_TEST_TMPDIR/bin/ponywrite"
	printf '#!/bin/sh\necho "$*" >> "%s"\nexec "%s" "$@"\n' "$BATS_TEST_TMPDIR/calls" "$PONYWRITE" \
	    > "$BATS_TEST_TMPDIR/bin/ponywrite"
	chmod 755 "$BATS_TEST_TMPDIR/bin/ponywrite"
	batch_play b.yml 20 'v1\n' 'parents: true' 'mode: "0640"'
	play b.yml
	assert_status 0
	for i in 1 2 3 4 5 6 7 8; do
		[ "$(recap "h$i")" = "ok=1 changed=1 failed=0" ] || fail "h$i: $(recap "h$i")" "$output"
		for k in 1 2 20; do
			assert_content "h$i/d$((k % 2 + 1))/f$k" $'v1\n'
			assert_mode "h$i/d$((k % 2 + 1))/f$k" 640
		done
	done
	[ "$(grep -c -- '--batch=-' "$BATS_TEST_TMPDIR/calls")" = 8 ] ||
	    fail "ponywrite runs: $(cat "$BATS_TEST_TMPDIR/calls")"
	play b.yml
	assert_status 0
	for i in 1 2 3 4 5 6 7 8; do
		[ "$(recap "h$i")" = "ok=1 changed=0 failed=0" ] || fail "second run, h$i: $(recap "h$i")"
	done
	# one file changed on h1: reported as the one changed file
	echo other > h1/d2/f3
	snapshot h1/d2/f3
	play b.yml --check --diff --limit h1 -v
	assert_status 0
	[[ $output == *'"changed_files": ['*'h1/d2/f3"'*']'* ]] || fail "check mode: $output"
	assert_untouched h1/d2/f3
	play b.yml --limit h1 -v
	assert_status 0
	[[ $output == *'"changed_files": ['*'h1/d2/f3"'*']'* ]] || fail "run: $output"
	[[ $output != *'h1/d1/f2"'* ]] || fail "an unchanged file reported: $output"
	assert_content h1/d2/f3 $'v1\n'
	assert_no_litter
}

@test "ansible, 8 hosts: batch sends the controller's src files in one transfer a host, each file once; per-file mode; remote_src" {
	mkdir -p files
	head -c 65536 /dev/urandom > files/big
	echo small > files/small
	mkdir -p src-on-host
	echo remote > src-on-host/r
	{
		echo "- hosts: all"
		echo "  gather_facts: false"
		echo "  tasks:"
		echo "    - ponywrite.durable.batch:"
		echo "        parents: true"
		echo "        mode: \"0644\""
		echo "        files:"
		for k in 1 2 3 4 5; do
			echo "          - {dest: \"{{ root }}/etc/big$k\", src: big}"
		done
		echo "          - {dest: \"{{ root }}/etc/small\", src: small, mode: \"0600\"}"
		echo "          - {dest: \"{{ root }}/etc/text\", content: \"text\\n\"}"
		echo "    - ponywrite.durable.batch:"
		echo "        remote_src: true"
		echo "        files:"
		echo "          - {dest: \"{{ root }}/etc/r\", src: \"$WORK/src-on-host/r\"}"
	} > p.yml
	ANSIBLE_KEEP_REMOTE_FILES=1 play p.yml -vvv
	assert_status 0
	for i in 1 2 3 4 5 6 7 8; do
		[ "$(recap "h$i")" = "ok=2 changed=2 failed=0" ] || fail "h$i: $(recap "h$i")" "$output"
		for k in 1 2 3 4 5; do
			cmp files/big "h$i/etc/big$k" || fail "h$i/etc/big$k differs"
			assert_mode "h$i/etc/big$k" 644
		done
		assert_content "h$i/etc/small" $'small\n'
		assert_mode "h$i/etc/small" 600
		assert_content "h$i/etc/text" $'text\n'
		assert_content "h$i/etc/r" $'remote\n'
	done
	# one transfer of the sources a host, holding big once and small once
	[ "$(grep -c 'PUT .*/ponywrite-bundle\.[^ ]* TO .*/bundle$' <<<"$output")" = 8 ] ||
	    fail "bundles sent: $(grep PUT <<<"$output")"
	local b n=0
	while IFS= read -r b; do
		[ "$(stat -c %s "$b")" = $((65536 + 6)) ] || fail "$b: $(stat -c %s "$b") bytes"
		n=$((n + 1))
	done < <(find "$ANSIBLE_REMOTE_TEMP" -name bundle)
	[ "$n" = 8 ] || fail "$n bundles kept"
	[ "$(grep -c 'PUT ' <<<"$output")" = $((8 * 3)) ] || fail "transfers: $(grep PUT <<<"$output")"
	assert_no_litter
}

@test "ansible: batch with two modes runs two ponywrite batches, both checked before either runs: a failure in the second leaves the first untouched" {
	for i in 1 2; do mkdir -p "h$i/etc"; echo old > "h$i/etc/a"; done
	snapshot h1/etc/a
	{
		echo "- hosts: h1"
		echo "  gather_facts: false"
		echo "  tasks:"
		echo "    - ponywrite.durable.batch:"
		echo "        files:"
		echo "          - {dest: \"{{ root }}/etc/a\", content: \"new\\n\", mode: \"0644\"}"
		echo "          - {dest: \"{{ root }}/missing/b\", content: \"new\\n\", mode: \"0600\"}"
	} > p.yml
	play p.yml
	play_failed '*h1/missing: No such file or directory*'
	assert_untouched h1/etc/a
	sed -i 's/hosts: h1/hosts: h2/; s|/missing/b|/etc/b|' p.yml
	play p.yml
	assert_status 0
	assert_content h2/etc/a $'new\n'
	assert_mode h2/etc/a 644
	assert_mode h2/etc/b 600
	assert_no_litter
}

@test "ansible: batch stopped by a failed rename (ponywrite's exit 4) fails as partly replaced, with the files changed and the files not replaced" {
	require_cmd strace
	# the second rename of the run fails
	rm "$BATS_TEST_TMPDIR/bin/ponywrite"
	printf '#!/bin/sh\nexec strace -f -qq -o /dev/null -e inject=rename,renameat,renameat2:error=EACCES:when=2 "%s" "$@"\n' \
	    "$PONYWRITE" > "$BATS_TEST_TMPDIR/bin/ponywrite"
	chmod 755 "$BATS_TEST_TMPDIR/bin/ponywrite"
	batch_play b.yml 3 'new\n' 'parents: true'
	mkdir -p h1/d1 h1/d2
	for k in 1 2 3; do echo old > "h1/d$((k % 2 + 1))/f$k"; done
	play b.yml --limit h1
	play_failed '*"msg": "partly replaced: *stopped after replacing 1 of 3 targets*'
	[[ $output == *'"changed": true'* ]] || fail "not changed: $output"
	local changed rest
	changed=$(sed -n 's/.*"changed_files": \[\([^]]*\)\].*/\1/p' <<<"$output")
	rest=$(sed -n 's/.*"not_replaced": \[\([^]]*\)\].*/\1/p' <<<"$output")
	[ "$(tr ',' '\n' <<<"$changed" | grep -c .)" = 1 ] || fail "changed_files: $changed"
	[ "$(tr ',' '\n' <<<"$rest" | grep -c .)" = 2 ] || fail "not_replaced: $rest"
	for k in 1 2 3; do
		f="h1/d$((k % 2 + 1))/f$k"
		if [[ $changed == *"/$f\""* ]]; then
			assert_content "$f" $'new\n'
		else
			[[ $rest == *"/$f\""* ]] || fail "$f in neither list"
			assert_content "$f" $'old\n'
		fi
	done
	assert_no_litter
}
