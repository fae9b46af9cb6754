# bash completion for surecron(1).
#
# Completes the commands, each command's options and the schedule names of
# the config on the line (--config FILE, else ./surecron.yaml). Everything
# comes from surecron itself, so it never goes stale: the commands from
# `surecron help`, a command's options from the usage line of `surecron
# help COMMAND`, the names from `surecron check --names`, which reads only
# the schedules and opens no store.
#
# Installed by `make install` and the Debian package into
# share/bash-completion/completions/surecron. zsh can use it too:
#   autoload -U +X bashcompinit && bashcompinit
#   source /usr/share/bash-completion/completions/surecron

# The config the line names, else the default.
_surecron_config()
{
	local i w
	for ((i = 1; i < COMP_CWORD; i++)); do
		w=${COMP_WORDS[i]}
		if [[ $w == --config ]]; then
			printf '%s\n' "${COMP_WORDS[i + 1]}"
			return
		fi
		if [[ $w == --config=* ]]; then
			printf '%s\n' "${w#--config=}"
			return
		fi
	done
	printf '%s\n' surecron.yaml
}

_surecron_names()
{
	"${COMP_WORDS[0]}" check --names --config "$(_surecron_config)" \
		2>/dev/null
}

# Options that take a value: the word after them is not a positional.
_surecron_takes_value()
{
	case $1 in
	--config | --tz | --from | --until | --since | --count | --slot | \
		--schedule | --outcome | --limit | --note | --by | --fail | \
		--down | --user | --store | --auth | --timeout | --data | -d | \
		-H | --header | --for | --pause)
		return 0 ;;
	esac
	return 1
}

_surecron()
{
	local cur prev cmd i n_pos=0 w
	local bin=${COMP_WORDS[0]}
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD - 1]}
	COMPREPLY=()

	# The command is the first word that is not an option; count the
	# positionals after it.
	cmd=""
	for ((i = 1; i < COMP_CWORD; i++)); do
		w=${COMP_WORDS[i]}
		if _surecron_takes_value "$w"; then
			((i++))
			continue
		fi
		[[ $w == -* ]] && continue
		if [[ -z $cmd ]]; then
			cmd=$w
		else
			((n_pos++))
		fi
	done

	if [[ -z $cmd ]]; then
		local cmds
		cmds=$("$bin" help 2>/dev/null |
			awk '/^Commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 }')
		mapfile -t COMPREPLY < <(compgen -W "$cmds --help --version" -- "$cur")
		return
	fi

	case $prev in
	--config)
		mapfile -t COMPREPLY < <(compgen -f -- "$cur")
		return ;;
	--schedule)
		mapfile -t COMPREPLY < <(compgen -W "$(_surecron_names)" -- "$cur")
		return ;;
	--tz)
		local zones
		zones=$(cd /usr/share/zoneinfo 2>/dev/null &&
			find . -type f -name '[A-Z]*' | sed 's|^\./||')
		mapfile -t COMPREPLY < <(compgen -W "$zones" -- "$cur")
		return ;;
	--outcome)
		# The ledger's outcome words, as ledger_outcomes (src/ledger.c)
		# lists them; tests/integ/test_completion.c holds the two equal.
		local outcomes="success failed lost stalled missed duplicate
			released decision alert acked recovered late overrun
			stale skipped paused replaced abandoned"
		mapfile -t COMPREPLY < <(compgen -W "$outcomes" -- "$cur")
		return ;;
	esac
	_surecron_takes_value "$prev" && return

	if [[ $cur == -* ]]; then
		local opts
		opts=$("$bin" help "$cmd" 2>/dev/null |
			awk 'NR == 1, /^$/' | grep -o -- '--[a-z][a-z-]*' | sort -u)
		mapfile -t COMPREPLY < <(compgen -W "$opts" -- "$cur")
		return
	fi

	case $cmd in
	help)
		[[ $n_pos -eq 0 ]] || return
		local cmds
		cmds=$("$bin" help 2>/dev/null |
			awk '/^Commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 }')
		mapfile -t COMPREPLY < <(compgen -W "$cmds" -- "$cur") ;;
	explain | status | trigger | ack | release | pause | resume)
		# The schedule is the first positional of these.
		[[ $n_pos -eq 0 ]] || return
		mapfile -t COMPREPLY < <(compgen -W "$(_surecron_names)" -- "$cur") ;;
	check | import-crontab)
		mapfile -t COMPREPLY < <(compgen -f -- "$cur") ;;
	esac
}

complete -F _surecron surecron
