#!/usr/bin/env bats
# Shell completion (completion/): the bash completion is loaded and asked
# what it offers at a few places on a command line; the zsh one is checked
# for syntax and options.
#
# PONYWRITE_BASH_COMPLETION, PONYWRITE_ZSH_COMPLETION: the files to test
# (default: the ones in completion/; autopkgtest tests the installed ones).

load helpers

setup()
{
	pw_setup
	BASH_COMP=${PONYWRITE_BASH_COMPLETION:-$BATS_TEST_DIRNAME/../completion/ponywrite.bash}
	ZSH_COMP=${PONYWRITE_ZSH_COMPLETION:-$BATS_TEST_DIRNAME/../completion/_ponywrite}
	[ -f "$BASH_COMP" ] || fail "no bash completion at $BASH_COMP"
}

teardown() { pw_teardown; }

# complete WORD...: print, one a line, what the bash completion offers for
# the last WORD of the command line "WORD...", in a fresh bash that loaded
# only the completion file (and bash-completion's library if COMP_LIB is set).
complete_words()
{
	bash --norc --noprofile -c '
		[ -z "$COMP_LIB" ] || . "$COMP_LIB" || exit 9
		. "$1" || exit 9
		shift
		COMP_WORDS=("$@")
		COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
		COMP_LINE="$*"
		COMP_POINT=${#COMP_LINE}
		_ponywrite ponywrite "${COMP_WORDS[COMP_CWORD]}" \
		    "${COMP_WORDS[COMP_CWORD - 1]}"
		printf "%s\n" "${COMPREPLY[@]}" | LC_ALL=C sort
	' complete "$BASH_COMP" "$@"
}

@test "bash: the completion registers itself for ponywrite" {
	run bash --norc --noprofile -c '. "$1" && complete -p ponywrite' x "$BASH_COMP"
	assert_status 0
	[ "$output" = "complete -F _ponywrite ponywrite" ] || fail "got: $output"
}

@test "bash: every option that ponywrite --help lists is offered" {
	run complete_words ponywrite -
	assert_status 0
	local offered=$output want
	for want in $("$PONYWRITE" --help | grep -o -e '--[a-z][a-z-]*' -e '^ *-[a-zA-Z]' |
	    tr -d ' ' | sort -u); do
		grep -qx -e "$want" -e "$want=" <<<"$offered" ||
		    fail "option $want not offered; offered: $offered"
	done
}

@test "bash: long options complete from a prefix" {
	run complete_words ponywrite --no-
	assert_status 0
	[ "$output" = "$(printf '%s\n' --no-dereference --no-empty --no-sync | LC_ALL=C sort)" ] ||
	    fail "got: $output"
}

@test "bash: the first operand completes as a file" {
	touch alpha.conf alps.txt beta
	run complete_words ponywrite -b al
	assert_status 0
	[ "$output" = "$(printf '%s\n' alpha.conf alps.txt)" ] || fail "got: $output"
}

@test "bash: the second operand completes as a command" {
	run complete_words ponywrite -E state.json ech
	assert_status 0
	grep -qx echo <<<"$output" || fail "echo not offered: $output"
	! grep -qx state.json <<<"$output" || fail "a file offered as a command"
}

@test "bash: option arguments: -m gives modes, -o users, -g groups, -i files" {
	run complete_words ponywrite -m 06
	grep -qx 0644 <<<"$output" || fail "-m 06: $output"
	run complete_words ponywrite --owner ro
	grep -qx root <<<"$output" || fail "--owner ro: $output"
	run complete_words ponywrite -g ro
	grep -qx root <<<"$output" || fail "-g ro: $output"
	touch source.txt
	run complete_words ponywrite -i sou
	[ "$output" = source.txt ] || fail "-i sou: $output"
	# An option's argument is not the target: the next word still is.
	run complete_words ponywrite -m 0644 sou
	[ "$output" = source.txt ] || fail "-m 0644 sou: $output"
	run complete_words ponywrite -m 0644 t ech
	grep -qx echo <<<"$output" || fail "-m 0644 t ech: $output"
}

@test "bash: after -- and after the target, options are not offered" {
	run complete_words ponywrite -- -
	! grep -q -- '^--no-sync$' <<<"$output" || fail "after --: $output"
	run complete_words ponywrite target -
	! grep -q -- '^--no-sync$' <<<"$output" || fail "after target: $output"
}

@test "bash: with bash-completion, the command's own arguments complete" {
	local lib=/usr/share/bash-completion/bash_completion
	[ -f "$lib" ] || skip "needs bash-completion"
	mkdir sub
	COMP_LIB=$lib run complete_words ponywrite out ls su
	assert_status 0
	grep -qx 'sub/\?' <<<"$output" || fail "ls su: $output"
}

@test "zsh: the completion parses and names every option" {
	require_cmd zsh
	run zsh -n "$ZSH_COMP"
	assert_status 0
	local want
	for want in $("$PONYWRITE" --help | grep -o -e '--[a-z][a-z-]*' | sort -u); do
		grep -q -e "$want" "$ZSH_COMP" || fail "zsh completion lacks $want"
	done
}
