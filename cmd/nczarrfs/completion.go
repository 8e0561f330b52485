package main

import (
	"fmt"

	"github.com/urfave/cli/v2"
)

func completionCommand() *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print a shell completion script (bash or zsh)",
		ArgsUsage: "bash|zsh",
		Description: `Prints a script that completes nczarrfs's commands and flags (and file names
for SOURCE and MOUNTPOINT) in bash or zsh.

Examples:
   source <(nczarrfs completion bash)                        # this shell
   nczarrfs completion bash > /etc/bash_completion.d/nczarrfs # every bash
   nczarrfs completion zsh > "${fpath[1]}/_nczarrfs"          # zsh`,
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return fmt.Errorf("completion needs a shell, bash or zsh; see nczarrfs completion --help")
			}
			script, ok := completionScripts[c.Args().First()]
			if !ok {
				return fmt.Errorf("no completion for shell %q (bash or zsh); see nczarrfs completion --help", c.Args().First())
			}
			_, err := fmt.Fprint(c.App.Writer, script)
			return err
		},
	}
}

// The scripts ask nczarrfs itself: the words typed so far followed by
// --generate-bash-completion print the candidates (commands, or the
// flags of a command when the word being completed starts with "-").
// Other words after the command are file names, which the shell completes.
var completionScripts = map[string]string{
	"bash": `# bash completion for nczarrfs
_nczarrfs_complete() {
	local cur=${COMP_WORDS[COMP_CWORD]}
	# Past the command, words that are not flags are files (SOURCE,
	# MOUNTPOINT): no candidates, so that bash completes file names.
	if ((COMP_CWORD > 1)) && [[ $cur != -* && ${COMP_WORDS[1]} != help ]]; then
		COMPREPLY=()
		return 0
	fi
	local -a words=("${COMP_WORDS[@]:0:COMP_CWORD}")
	# "help COMMAND" completes the commands, as the first word does.
	((COMP_CWORD > 1)) && [[ ${COMP_WORDS[1]} == help ]] && words=("${COMP_WORDS[0]}")
	[[ $cur == -* ]] && words+=("$cur")
	local candidates
	candidates=$("${words[0]}" "${words[@]:1}" --generate-bash-completion 2>/dev/null) || return 0
	COMPREPLY=($(compgen -W "$candidates" -- "$cur"))
}
complete -o bashdefault -o default -F _nczarrfs_complete nczarrfs
`,
	"zsh": `#compdef nczarrfs
# zsh completion for nczarrfs
_nczarrfs() {
	local -a args candidates
	if (( CURRENT > 2 )) && [[ ${words[CURRENT]} != -* && ${words[2]} != help ]]; then
		_files  # SOURCE, MOUNTPOINT
		return
	fi
	args=("${(@)words[1,CURRENT-1]}")
	(( CURRENT > 2 )) && [[ ${words[2]} == help ]] && args=("${words[1]}")
	[[ ${words[CURRENT]} == -* ]] && args+=("${words[CURRENT]}")
	candidates=("${(@f)$("${args[1]}" "${(@)args[2,-1]}" --generate-bash-completion 2>/dev/null)}")
	candidates=("${(@)candidates:#}")
	if (( ${#candidates} )); then
		compadd -a candidates
	else
		_files
	fi
}
if [[ ${zsh_eval_context[-1]} == loadautofunc ]]; then
	_nczarrfs "$@"  # autoloaded from fpath
else
	compdef _nczarrfs nczarrfs  # sourced
fi
`,
}
