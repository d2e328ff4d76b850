# fish completion for shieldctl (CaptureShield).
# Installed as share/fish/vendor_completions.d/shieldctl.fish.
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
set -g __shieldctl_help_awk '
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
function __shieldctl_displays
    for s in /tmp/.X11-unix/X*
        test -S $s; and string replace -- /tmp/.X11-unix/X : $s
    end
end

# Every candidate for the current token, as "candidate<TAB>description".
function __shieldctl_complete
    set -l tokens (commandline -opc)
    set -l cur (commandline -ct)
    set -l bin $tokens[1]
    set -l top ($bin help 2>/dev/null | string collect); or return
    set -l commands (printf '%s\n' $top | awk -v mode=commands $__shieldctl_help_awk)

    # The command, and the subcommand of a group (`policy check`).
    set -l cmd
    set -l subs
    if test (count $tokens) -ge 2; and not string match -q -- '-*' $tokens[2]
        set cmd $tokens[2]
        set subs (printf '%s\n' $top | awk -v mode=subcommands -v group=$cmd $__shieldctl_help_awk)
        if test -n "$subs"; and test (count $tokens) -ge 3; and not string match -q -- '-*' $tokens[3]
            set -a cmd $tokens[3]
            set subs
        end
    end

    # The command itself, or the subcommand of a group.
    set -l naming 0
    test (count $cmd) -eq 0; and set naming 1
    test -n "$subs"; and test (count $tokens) -eq 2; and set naming 1
    if test $naming = 1
        if string match -q -- '-*' $cur
            $bin $cmd --help 2>/dev/null | awk -v mode=options $__shieldctl_help_awk | awk -F '\t' '{ print $1 "\t" $5 }'
        else if test -n "$subs"
            printf '%s\n' $subs
        else
            printf '%s\n' $commands
        end
        return
    end

    set -l help ($bin $cmd --help 2>/dev/null | string collect); or return
    set -l options (printf '%s\n' $help | awk -v mode=options $__shieldctl_help_awk)

    # The value of an option.
    for option in $options
        set -l f (string split \t -- $option)
        test "$f[1]" = "$tokens[-1]"; and test "$f[2]" != -; or continue
        if test "$f[3]" != -
            string split ' ' -- $f[3]
        else if test "$f[2]" = FILE
            __fish_complete_suffix .json5
        else if test "$f[2]" = D
            __shieldctl_displays
        end
        return
    end

    # Options (until `--`), else the arguments the usage line names.
    set -l positional
    set -l dashdash 0
    set -l skip 0
    for word in $tokens[(math (count $cmd) + 2)..-1]
        if test $skip = 1
            set skip 0
        else if test $dashdash = 1; or not string match -q -- '-*' $word
            set -a positional $word
        else if test "$word" = --
            set dashdash 1
        else
            for option in $options
                set -l f (string split \t -- $option)
                test "$f[1]" = "$word"; and test "$f[2]" != -; and set skip 1
            end
        end
    end
    if string match -q -- '-*' $cur; and test $dashdash = 0
        for option in $options
            set -l f (string split \t -- $option)
            printf '%s\t%s\n' $f[1] $f[5]
        end
        return
    end
    set -l args (string split -n ' ' -- (printf '%s\n' $help | awk -v mode=positionals -v words=(count $cmd) $__shieldctl_help_awk))
    set -l n (math (count $positional) + 1)
    set -l arg
    if test $n -le (count $args)
        set arg $args[$n]
    else if test (count $args) -gt 0; and string match -q -- '*...' $args[-1]
        set arg $args[-1]
    end
    switch (string replace -- '...' '' "$arg")
        case FILE
            __fish_complete_suffix .json5
        case COMMAND
            printf '%s\n' $commands
        case SUBCOMMAND
            printf '%s\n' $top | awk -v mode=subcommands -v group=$positional[-1] $__shieldctl_help_awk
    end
end

complete -c shieldctl -f -a '(__shieldctl_complete)'
