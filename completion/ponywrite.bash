# bash completion for ponywrite(1)
#
# Installed as ponywrite in bash-completion's completions directory
# (/usr/share/bash-completion/completions), or sourced directly.
# Options stop at the first operand: the first operand is the target (a
# file), the second one is a command (command mode), and what follows is
# completed as that command's arguments.  With -t or --batch every operand
# is a file.

# Set COMPREPLY to compgen's words, one a line (names may hold spaces).
_ponywrite_reply()
{
	mapfile -t COMPREPLY < <(compgen "$@")
}

_ponywrite()
{
	local cur prev i word operands=0 first_operand=0 many=0 optarg=0
	local opts='-a --append -b --backup -C --if-changed -E --no-empty
	    -g --group -i --input -l --lock -m --mode -o --owner -p --parents
	    -P --no-dereference -S --suffix -t --target-directory= -v --verbose
	    -w --wait -z --null --batch= --check --in-place --no-sync --print-changed --help
	    --version'

	COMPREPLY=()
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD - 1]}

	# Find the operands before the word being completed.
	for ((i = 1; i < COMP_CWORD; i++)); do
		word=${COMP_WORDS[i]}
		if ((optarg)); then
			optarg=0
			continue
		fi
		if ((operands == 0)); then
			case $word in
			--) operands=0 first_operand=$((i + 1)); break ;;
			--group|--input|--mode|--owner|--suffix|--wait)
				optarg=1; continue ;;
			--batch=*) many=1; continue ;;
			--batch|--target-directory) many=1 optarg=1; continue ;;
			--target-directory=*) many=1; continue ;;
			--*) continue ;;
			-*t) many=1 optarg=1; continue ;;
			-*[gimoSw]) optarg=1; continue ;;
			-?*) continue ;;
			esac
			first_operand=$i
			break
		fi
	done
	if ((first_operand)); then
		operands=$((COMP_CWORD - first_operand))
	fi

	# A cluster of short options (-pm) takes its last letter's argument.
	[[ $prev == -[!-]?* ]] && prev=-${prev: -1}
	if ((first_operand == 0)); then
		case $prev in
		-i|--input)
			_ponywrite_reply -f -- "$cur"
			compopt -o filenames 2>/dev/null || :
			return
			;;
		-t|--target-directory)
			_ponywrite_reply -d -- "$cur"
			compopt -o filenames 2>/dev/null || :
			return
			;;
		-o|--owner)
			_ponywrite_reply -u -- "$cur"
			return
			;;
		-g|--group)
			_ponywrite_reply -g -- "$cur"
			return
			;;
		-m|--mode)
			_ponywrite_reply -W '0644 0600 0640 0664 0755 0700
			    u+x go-w a+r' -- "$cur"
			return
			;;
		-S|--suffix)
			_ponywrite_reply -W '\~ .bak .orig' -- "$cur"
			return
			;;
		-w|--wait)
			return
			;;
		esac
		case $cur in
		--batch=*)
			_ponywrite_reply -f -P --batch= -- "${cur#--batch=}"
			return
			;;
		--target-directory=*)
			_ponywrite_reply -d -P --target-directory= -- \
			    "${cur#--target-directory=}"
			return
			;;
		-*)
			_ponywrite_reply -W "$opts" -- "$cur"
			[[ ${COMPREPLY[0]-} == *= ]] && { compopt -o nospace 2>/dev/null || :; }
			return
			;;
		esac
	fi

	if ((many || operands == 0)); then
		_ponywrite_reply -f -- "$cur"
		compopt -o filenames 2>/dev/null || :
	elif ((operands == 1)); then
		_ponywrite_reply -c -- "$cur"
	elif declare -F _command_offset >/dev/null; then
		# bash-completion: complete the command's own arguments.
		_command_offset $((first_operand + 1))
	else
		_ponywrite_reply -f -- "$cur"
		compopt -o filenames 2>/dev/null || :
	fi
}
complete -F _ponywrite ponywrite
