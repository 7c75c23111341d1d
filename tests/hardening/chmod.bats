#!/usr/bin/env bats
# ponywrite -m MODE gives the mode chmod(1) (GNU coreutils) gives, on the
# same starting mode under the same umask; and rejects what chmod rejects.
# (--no-sync: the mode, not the flush, is what is compared.)
# This is the end-to-end check of the model in tests/fuzz/fuzz_mode.c.

# stderr is set by bats' run --separate-stderr.
# shellcheck disable=SC2154

PONYWRITE=${PONYWRITE:-$BATS_TEST_DIRNAME/../../ponywrite}
load ../helpers

MODES=(
	0 7 644 0644 0755 4755 07777 00000644
	'u+x' 'go-w' 'a=r' 'g=u' 'o=u' 'u=g' '+X' 'a-x,+X' '=r' '=' 'a=' '+t'
	'o+t' 'u+t' 'u+s' 'g+s' 'o+s' '+s' '-w' '=rwx' 'go=' 'ug=rwx,o=' '+u'
	'-g' '=o' 'u=rwx,g=u-w,o=g' 'u+r-w=x' 'ugo+rw' 'a+rwxXst' 'u-s,g-s,-t'
	'o-rwx,u+rw' 'g=o,o=g' '=X' 'u=rwX,go=rX'
)
INVALID=(
	'' 8 0648 17777 'u' 'ugo' 'u+x,' ',u+x' 'u+x,,g+w' 'x' 'u!x' '+q' ' 644'
	'644 ' '0x1ff' 'u=go' 'u+gw' 'a=ur' 'a+r x' 99999999999999999999 'u=gx'
	'u=5' 'a+7,o-1'
)
# Not compared: GNU's extension of an operator followed by octal digits
# ("+7", "=640", "-0"), which POSIX does not have and ponywrite rejects.

setup()
{
	pw_setup
	chmod --version 2>/dev/null | grep -q 'GNU coreutils' ||
	    skip "needs GNU chmod"
}

teardown()
{
	pw_teardown
}

@test "-m gives what chmod(1) gives, for every base mode and umask" {
	# One file per mode for chmod (c.N) and for ponywrite (p.N); the umask
	# set in this shell; the modes read with one stat: few processes.
	local um base i n=${#MODES[@]} bad='' want got
	for um in 022 077 000 027; do
		for base in 0644 0755 0000 7777 0600 2750; do
			rm -f c.* p.*
			for ((i = 0; i < n; i++)); do printf x >"c.$i"; printf x >"p.$i"; done
			chmod "$base" c.* p.*
			umask "$um"
			for ((i = 0; i < n; i++)); do
				chmod -- "${MODES[i]}" "c.$i" || fail "chmod rejects ${MODES[i]}"
				"$PONYWRITE" --no-sync -m "${MODES[i]}" "p.$i" </dev/null ||
				    fail "ponywrite -m '${MODES[i]}' failed"
			done
			umask 022
			mapfile -t want < <(for ((i = 0; i < n; i++)); do echo "c.$i"; done | xargs stat -c %a)
			mapfile -t got < <(for ((i = 0; i < n; i++)); do echo "p.$i"; done | xargs stat -c %a)
			[ "${#want[@]}" = "$n" ] && [ "${#got[@]}" = "$n" ] || fail "stat failed"
			for ((i = 0; i < n; i++)); do
				[ "${got[i]}" = "${want[i]}" ] ||
				    bad="$bad
umask $um, mode $base, -m '${MODES[i]}': chmod gives ${want[i]}, ponywrite ${got[i]}"
			done
		done
	done
	[ -z "$bad" ] || fail "differences:$bad"
	assert_no_litter
}

@test "-m on a new file starts from 0666 & ~umask, as chmod on a new file" {
	local um m want got bad=
	for um in 022 077 002; do
		for m in "${MODES[@]}"; do
			rm -f c p
			(umask "$um" && : >c && chmod -- "$m" c)
			want=$(stat -c %a c)
			(umask "$um" && exec "$PONYWRITE" --no-sync -m "$m" p) </dev/null ||
			    fail "ponywrite -m '$m' failed"
			got=$(stat -c %a p)
			[ "$got" = "$want" ] ||
			    bad="$bad
umask $um, new file, -m '$m': chmod gives $want, ponywrite $got"
		done
	done
	[ -z "$bad" ] || fail "differences:$bad"
}

@test "-m rejects every mode chmod(1) rejects: exit 2, nothing done" {
	local m bad=
	echo old >t
	snapshot t
	for m in "${INVALID[@]}"; do
		printf x >c
		! chmod -- "$m" c 2>/dev/null || fail "chmod accepts '$m'"
		run --separate-stderr "$PONYWRITE" -m "$m" t < <(echo new)
		if [ "$status" -ne 2 ]; then
			bad="$bad
-m '$m': status $status (chmod rejects it)"
			# Put t back for the next mode.
			echo old >t.new && mv t.new t && snapshot t
			continue
		fi
		case $stderr in
		"ponywrite: invalid mode: '$m'"$'\n'*) ;;
		*) bad="$bad
-m '$m': message: $stderr" ;;
		esac
		assert_untouched t
	done
	[ -z "$bad" ] || fail "accepted or misreported:$bad"
	assert_no_litter
}
