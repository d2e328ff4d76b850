# bash completion for shieldctl (CaptureShield).                 -*- shell-script -*-
# Installed as share/bash-completion/completions/shieldctl.
#
# The commands, subcommands and options come from the help of the shieldctl being
# completed (`shieldctl help`, `shieldctl COMMAND --help`), so they are always those of
# the installed version. Values: FILE completes *.json5 files, D (a display) the local
# X displays, `--opt a|b` in the usage line its choices, COMMAND/SUBCOMMAND (help) the
# commands.

# Reads a help text on stdin. mode=commands|subcommands (group=NAME): "name<TAB>abstract";
# mode=options: "option<TAB>METAVAR<TAB>choices<TAB>repeatable<TAB>description" ("-"
# for no METAVAR, no choices, not repeatable; "*" for repeatable); mode=positionals
# (words=N, the number of command words): the usage's arguments, e.g. "FILE...". The
# bash, zsh and fish completions embed the same program.
_shieldctl_help_awk='
function trim(s) { sub(/^ +/, "", s); sub(/ +$/, "", s); return s }
# The first sentence of s (not cut after "e.g." or "i.e.").
function sentence(s,    i, rest) {
  rest = s
  for (i = index(rest, ". "); i > 0; i = index(rest, ". ")) {
    if (substr(rest, i - 3, 3) != "e.g" && substr(rest, i - 3, 3) != "i.e") return substr(s, 1, length(s) - length(rest) + i)
    rest = substr(rest, 1, i - 1) "  " substr(rest, i + 2)
  }
  return s
}
/^[A-Z][A-Z ]*:$/ { sec = $0; next }
/^$/ { sec = ""; next }
/^USAGE: / { usage = substr($0, 8); next }
sec == "COMMANDS:" && /^  [^ ]/ {
  cur = $1
  if (mode == "commands") print $1 "\t" trim(substr($0, length($1) + 3))
  next
}
sec == "COMMANDS:" && /^    [^ ]/ {
  if (mode == "subcommands" && cur == group) print $1 "\t" trim(substr($0, length($1) + 5))
  next
}
sec == "OPTIONS:" && /^  -/ {
  line = substr($0, 3); term = line; desc = ""
  if (match(line, /  +/)) { term = substr(line, 1, RSTART - 1); desc = substr(line, RSTART + RLENGTH) }
  n = split(term, parts, /, /); first = on + 1
  for (i = 1; i <= n; i++) {
    name = parts[i]; meta = ""
    if (match(name, / /)) { meta = substr(name, RSTART + 1); name = substr(name, 1, RSTART - 1) }
    on++; oname[on] = name; ometa[on] = meta; odesc[on] = desc
    if (meta != "") valopt[name] = 1
  }
  next
}
sec == "OPTIONS:" && /^   / { for (i = first; i <= on; i++) odesc[i] = odesc[i] " " trim($0); next }
END {
  if (mode == "options") {
    for (i = 1; i <= on; i++) {
      choices = ""
      p = index(usage " ", oname[i] " ")
      if (ometa[i] != "" && p) {
        tok = substr(usage " ", p + length(oname[i]) + 1); sub(/ .*/, "", tok); gsub(/[][()]/, "", tok)
        if (tok ~ /[|]/) { choices = tok; gsub(/[|]/, " ", choices) }
      }
      rep = odesc[i] ~ /[Rr]epeat/ ? "*" : "-"
      print oname[i] "\t" (ometa[i] == "" ? "-" : ometa[i]) "\t" (choices == "" ? "-" : choices) "\t" rep "\t" sentence(odesc[i])
    }
  } else if (mode == "positionals") {
    n = split(usage, w, " "); skip = 0; out = ""
    for (i = 2 + words; i <= n; i++) {
      t = w[i]; gsub(/[][()|]/, "", t)
      if (t == "") continue
      if (t ~ /^-/) { skip = (t in valopt); continue }
      if (skip) { skip = 0; continue }
      out = out (out == "" ? "" : " ") t
    }
    print out
  }
}'

# The X displays with a local socket, as :N.
_shieldctl_displays() {
  local s
  for s in /tmp/.X11-unix/X*; do
    [[ -S $s ]] && printf ':%s\n' "${s#/tmp/.X11-unix/X}"
  done
}

# Policy files (*.json5) and directories.
_shieldctl_files() {
  if declare -F _filedir >/dev/null; then
    _filedir json5
  else
    COMPREPLY=($(compgen -f -- "$cur"))
    compopt -o filenames 2>/dev/null
  fi
}

_shieldctl() {
  local cur prev words cword split=false
  if declare -F _init_completion >/dev/null; then
    _init_completion -s || return
  else
    COMPREPLY=()
    words=("${COMP_WORDS[@]}")
    cword=$COMP_CWORD
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD - 1]}
    # `--opt=value` is split at the = by readline.
    if [[ $cur == = ]]; then
      cur="" split=true
    elif [[ $prev == = ]] && ((cword >= 2)); then
      prev=${COMP_WORDS[COMP_CWORD - 2]} split=true
    fi
  fi

  local bin=${words[0]} IFS=$'\n'
  local top
  top=$("$bin" help 2>/dev/null) || return
  local commands
  commands=$(awk -v mode=commands "$_shieldctl_help_awk" <<<"$top" | cut -f1)

  # The command, and the subcommand of a group (`policy check`).
  local cmd=() subs=""
  if ((cword > 1)) && [[ ${words[1]} != -* ]]; then
    cmd=("${words[1]}")
    subs=$(awk -v mode=subcommands -v group="${words[1]}" "$_shieldctl_help_awk" <<<"$top" | cut -f1)
    if [[ -n $subs ]] && ((cword > 2)) && [[ ${words[2]} != -* ]]; then
      cmd+=("${words[2]}")
      subs=""
    fi
  fi

  # The command itself, or the subcommand of a group.
  if ((${#cmd[@]} == 0)) || { [[ -n $subs ]] && ((cword == 2)); }; then
    local list=$commands help_of=()
    [[ -n $subs ]] && list=$subs help_of=("${cmd[@]}")
    if [[ $cur == -* ]]; then
      COMPREPLY=($(compgen -W "$("$bin" "${help_of[@]}" --help 2>/dev/null |
        awk -v mode=options "$_shieldctl_help_awk" | cut -f1)" -- "$cur"))
    else
      COMPREPLY=($(compgen -W "$list" -- "$cur"))
    fi
    return
  fi

  local help options
  help=$("$bin" "${cmd[@]}" --help 2>/dev/null) || return
  options=$(awk -v mode=options "$_shieldctl_help_awk" <<<"$help")

  # The value of an option.
  local name meta choices rep desc
  while IFS=$'\t' read -r name meta choices rep desc; do
    [[ $name == "$prev" && $meta != - ]] || continue
    if [[ $choices != - ]]; then
      COMPREPLY=($(compgen -W "${choices// /$'\n'}" -- "$cur"))
    elif [[ $meta == FILE ]]; then
      _shieldctl_files
    elif [[ $meta == D ]]; then
      COMPREPLY=($(compgen -W "$(_shieldctl_displays)" -- "$cur"))
    fi
    return
  done <<<"$options"
  $split && return

  # Options (until `--`), else the arguments the usage line names.
  local i positional=() dashdash=false skip=false
  for ((i = 1 + ${#cmd[@]}; i < cword; i++)); do
    if $skip; then
      skip=false
    elif $dashdash || [[ ${words[i]} != -* ]]; then
      positional+=("${words[i]}")
    elif [[ ${words[i]} == -- ]]; then
      dashdash=true
    elif [[ ${words[i]} != *=* ]]; then
      # An option that takes a value: the next word is its value.
      while IFS=$'\t' read -r name meta choices rep desc; do
        [[ $name == "${words[i]}" && $meta != - ]] && skip=true
      done <<<"$options"
    fi
  done
  if [[ $cur == -* ]] && ! $dashdash; then
    COMPREPLY=($(compgen -W "$(cut -f1 <<<"$options")" -- "$cur"))
    return
  fi
  local args
  IFS=' ' read -r -a args <<<"$(awk -v mode=positionals -v words=${#cmd[@]} "$_shieldctl_help_awk" <<<"$help")"
  local n=${#positional[@]} arg=""
  if ((n < ${#args[@]})); then
    arg=${args[n]}
  elif ((${#args[@]} > 0)) && [[ ${args[-1]} == *... ]]; then
    arg=${args[-1]}
  fi
  case ${arg%...} in
    FILE) _shieldctl_files ;;
    COMMAND) COMPREPLY=($(compgen -W "$commands" -- "$cur")) ;;
    SUBCOMMAND)
      COMPREPLY=($(compgen -W "$(awk -v mode=subcommands -v group="${positional[n - 1]}" \
        "$_shieldctl_help_awk" <<<"$top" | cut -f1)" -- "$cur"))
      ;;
  esac
}

complete -F _shieldctl shieldctl
