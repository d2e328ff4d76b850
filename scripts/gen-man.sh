#!/usr/bin/env bash
# Writes the shieldctl(1) man page (roff), generated from the help texts of a built
# shieldctl: `shieldctl help` gives the list of commands (and the overview, the global
# options and exit statuses), `shieldctl <command> --help` each command's section. So the
# man page always says what `--help` says.
#
# Usage: scripts/gen-man.sh SHIELDCTL [OUT]      (OUT absent or -: standard output)
# Environment: PREFIX (/usr/local) and SYSCONFDIR (/etc) for the FILES section;
# SOURCE_DATE_EPOCH for the date in the header (default: today).
set -euo pipefail

die() { echo "gen-man.sh: error: $*" >&2; exit 1; }
[ $# -ge 1 ] && [ $# -le 2 ] || die "usage: scripts/gen-man.sh SHIELDCTL [OUT]"
bin=$1
out=${2:--}
[ -x "$bin" ] && [ ! -d "$bin" ] || die "'$bin' is not an executable"
prefix=${PREFIX:-/usr/local}
sysconfdir=${SYSCONFDIR:-/etc}

version=$("$bin" --version) || die "'$bin --version' failed"
top=$("$bin" help) || die "'$bin help' failed"
if [ -n "${SOURCE_DATE_EPOCH:-}" ]; then
  date=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%d)
else
  date=$(date -u +%Y-%m-%d)
fi

# The commands, in the order of the top-level help: "  name  abstract" is a command,
# "    name  abstract" a subcommand of the command above it.
mapfile -t topics < <(printf '%s\n' "$top" | awk '
  /^[A-Z][A-Z ]*:$/ { section = $0; next }
  section == "COMMANDS:" && /^  [^ ]/ { group = $1; print $1; next }
  section == "COMMANDS:" && /^    [^ ]/ { print group " " $1; next }
  /^$/ { section = "" }')
[ ${#topics[@]} -gt 0 ] || die "no COMMANDS in the output of '$bin help'"

# Every help text, each after a "@@topic NAME" line (the top level's NAME is empty).
input=$(
  printf '@@topic \n%s\n' "$top"
  for t in "${topics[@]}"; do
    # shellcheck disable=SC2086 # "policy check" is two words on purpose
    text=$("$bin" $t --help) || die "'$bin $t --help' failed"
    printf '@@topic %s\n%s\n' "$t" "$text"
  done
)

page=$(printf '%s\n' "$input" | awk -v version="$version" -v date="$date" \
  -v prefix="$prefix" -v sysconfdir="$sysconfdir" '
# roff-escapes plain text: backslashes, dashes, a leading dot or quote. Words with a
# slash (paths) are not hyphenated; long ones (JSON examples, paths) may break after
# commas and slashes.
function esc(s,    n, i, w, out) {
  gsub(/\\/, "\\e", s)
  gsub(/-/, "\\-", s)
  if (s ~ /^[.\047]/) s = "\\&" s
  if (s ~ /\//) {
    n = split(s, w, " "); out = ""
    for (i = 1; i <= n; i++) {
      if (w[i] ~ /\//) {
        if (length(w[i]) > 40) { gsub(/,/, ",\\:", w[i]); gsub(/\//, "/\\:", w[i]) }
        w[i] = "\\%" w[i]
      }
      out = out (i > 1 ? " " : "") w[i]
    }
    s = out
  }
  return s
}
# A line that is one long word (a JSON example): on a line of its own.
function longWord(s) {
  s = trim(s)
  if (s ~ / / || length(s) <= 40) return 0
  print ".br"; print esc(s); print ".br"
  return 1
}
# "shieldctl watch [--policy FILE]..." as a synopsis with a hanging indent.
function synopsis(k,    u, cmd) {
  u = field(k, "USAGE: ")
  cmd = "shieldctl" (T[k] == "" ? "" : " " T[k])
  print ".SY \"" esc(cmd) "\""
  print esc(substr(u, length(cmd) + 2))
  print ".YS"
}
function trim(s) { sub(/^ +/, "", s); sub(/ +$/, "", s); return s }
function indent(s) { match(s, /^ */); return RLENGTH }
# An item term: options in bold, their values (metavariables) in italics.
function term(t,    n, i, w, out) {
  n = split(t, w, " "); out = ""
  for (i = 1; i <= n; i++) {
    if (w[i] ~ /^-/ || w[i] ~ /^[0-9]+$/ || boldTerms) out = out (i > 1 ? " " : "") "\\fB" esc(w[i]) "\\fR"
    else out = out (i > 1 ? " " : "") "\\fI" esc(w[i]) "\\fR"
  }
  return out
}
# "EXIT STATUS:" -> "Exit status:".
function label(h) { return substr(h, 1, 1) tolower(substr(h, 2)) }

# Renders lines [a, b] of topic k (OVERVIEW and USAGE excluded) as man text. Blocks are
# separated by blank lines; a block starting with a heading ("OPTIONS:") lists items
# ("  term   description", continued on lines indented to the description), or else
# holds literal lines (examples); any other block is a paragraph, where indented lines
# are literal.
function render(a, b, skipHeadings, noLabel,    i, line, heading, col, inItem, lit, h) {
  heading = ""; inItem = 0; lit = 0
  for (i = a; i <= b; i++) {
    line = L[i]
    if (line ~ /^OVERVIEW: / || line ~ /^USAGE: /) continue
    if (line == "") {
      if (lit) { print ".fi"; if (lit == 2) print ".RE"; lit = 0 }
      if (heading != "" && heading != "skip") print ".RE"
      heading = ""; inItem = 0; startPara = 1
      continue
    }
    if (line ~ /^[A-Z][A-Z ]*:$/) {
      heading = line
      if (skipHeadings != "" && index(skipHeadings, "|" line "|")) { heading = "skip"; continue }
      if (noLabel) print ".RS 0"
      else { print ".PP"; print "\\fB" esc(label(line)) "\\fR"; print ".RS 2" }
      blockHasItems = hasItems(i + 1)
      boldTerms = line ~ /COMMANDS:$/
      continue
    }
    if (heading == "skip") continue
    if (heading != "") {
      if (!blockHasItems) {
        if (!lit) { print ".PP"; print ".nf"; lit = 1 }
        print esc(trim(line)); continue
      }
      if (inItem && indent(line) >= col) { if (!longWord(line)) print esc(trim(line)); continue }
      # "  --display D   The X display." (the term ends at the first double space)
      h = trim(line)
      if (match(h, /   */)) {
        print ".TP"
        print term(substr(h, 1, RSTART - 1))
        print esc(substr(h, RSTART + RLENGTH))
        col = indent(line) + RSTART + RLENGTH - 1
      } else {
        print ".TP"; print term(h); col = indent(line) + 2
      }
      inItem = 1
      continue
    }
    if (startPara) { print ".PP"; startPara = 0 }
    if (line ~ /^ /) {
      if (!lit) { print ".RS 4"; print ".nf"; lit = 2 }
      print esc(trim(line)); continue
    }
    if (lit) { print ".fi"; if (lit == 2) print ".RE"; lit = 0 }
    if (!longWord(line)) print esc(line)
  }
  if (lit) { print ".fi"; if (lit == 2) print ".RE" }
  if (heading != "" && heading != "skip") print ".RE"
}
# Whether the block starting at line i holds items (a double space inside a line).
function hasItems(i) {
  for (; i <= nl && L[i] != ""; i++) if (trim(L[i]) ~ /[^ ]  +[^ ]/) return 1
  return 0
}
function field(k, prefixText,    i) {
  for (i = ts[k]; i <= te[k]; i++) if (index(L[i], prefixText) == 1) return substr(L[i], length(prefixText) + 1)
  return ""
}
# The exit statuses of topic k, in codes[] / meaning[] (first meaning wins).
function exitStatuses(k,    i, in_, h, c, d) {
  in_ = 0
  for (i = ts[k]; i <= te[k]; i++) {
    if (L[i] == "EXIT STATUS:") { in_ = 1; continue }
    if (!in_) continue
    if (L[i] == "") break
    h = trim(L[i])
    if (indent(L[i]) == 2 && match(h, /^[0-9]+ +/)) {
      c = substr(h, 1, RLENGTH); c = trim(c) + 0; d = substr(h, RLENGTH + 1)
      if (!(c in meaning)) { meaning[c] = d; who[c] = (T[k] == "" ? "" : T[k]); codes[++ncodes] = c }
      last = c
    } else if (last != "" && who[last] == T[k]) {
      meaning[last] = meaning[last] " " h
    }
  }
  last = ""
}

/^@@topic / { nt++; T[nt] = substr($0, 9); ts[nt] = nl + 1; next }
{ L[++nl] = $0; te[nt] = nl }

END {
  overview = field(1, "OVERVIEW: ")
  name = overview; sub(/\.$/, "", name)
  print ".\\\" Generated by scripts/gen-man.sh from the output of \"shieldctl help\" and"
  print ".\\\" \"shieldctl COMMAND \\-\\-help\" (" version "). Do not edit."
  print ".TH SHIELDCTL 1 \"" date "\" \"CaptureShield " version "\" \"User Commands\""
  print ".ad l"
  print ".SH NAME"
  print "shieldctl \\- " esc(name)
  print ".SH SYNOPSIS"
  for (k = 1; k <= nt; k++) synopsis(k)
  print ".SH DESCRIPTION"
  print esc(overview)
  render(ts[1], te[1], "|COMMANDS:|OPTIONS:|EXIT STATUS:|")
  print ".SH OPTIONS"
  for (i = ts[1]; i <= te[1] && L[i] != "OPTIONS:"; i++) { }
  j = i; while (j < te[1] && L[j + 1] != "") j++
  render(i, j, "", 1)
  print ".SH COMMANDS"
  for (k = 2; k <= nt; k++) {
    print ".SS \"shieldctl " esc(T[k]) "\""
    print esc(field(k, "OVERVIEW: "))
    synopsis(k)
    startPara = 1
    render(ts[k], te[k], "")
  }
  print ".SH EXIT STATUS"
  for (k = 1; k <= nt; k++) exitStatuses(k)
  # sort the codes numerically (a handful: insertion sort)
  for (i = 2; i <= ncodes; i++) { c = codes[i]; for (j = i - 1; j >= 1 && codes[j] > c; j--) codes[j + 1] = codes[j]; codes[j + 1] = c }
  for (i = 1; i <= ncodes; i++) {
    c = codes[i]
    print ".TP"; print "\\fB" c "\\fR"
    print (who[c] == "" ? "" : "\\fBshieldctl " esc(who[c]) "\\fR: ") esc(meaning[c])
  }
  print ".SH ENVIRONMENT"
  print ".TP"; print "\\fBDISPLAY\\fR"
  print "The X display, unless \\fB\\-\\-display\\fR is given."
  print ".TP"; print "\\fBXDG_CONFIG_HOME\\fR, \\fBHOME\\fR"
  print "Where the per-user policy file is (see FILES)."
  print ".SH FILES"
  print ".TP"; print "\\fI/etc/captureshield/policy.d/*.json5\\fR"
  print "System-wide policy files, loaded first, in name order."
  print ".TP"; print "\\fI$XDG_CONFIG_HOME/captureshield/policy.json5\\fR"
  print "(\\fI\\%~/.config/captureshield/policy.json5\\fR when \\fBXDG_CONFIG_HOME\\fR is not set):"
  print "the per-user policy file, loaded after the system-wide ones. With \\fB\\-\\-policy\\fR, only the files given are loaded; with no file at all, the built-in defaults apply."
  print ".TP"; print "\\fI" esc(prefix "/share/doc/captureshield/policy.example.json5") "\\fR"
  print "An example policy that sets, and explains, every key."
  print ".TP"; print "\\fI" esc(prefix "/lib/systemd/user/captureshield.service") "\\fR"
  print "The systemd user unit that runs \\fBshieldctl watch\\fR in the graphical session; enable it with \\fBsystemctl \\-\\-user enable \\-\\-now \\%captureshield.service\\fR."
  print ".TP"; print "\\fI" esc(sysconfdir "/xdg/autostart/captureshield.desktop") "\\fR"
  print "The autostart entry that starts \\fBshieldctl watch\\fR in desktop sessions."
  print ".SH SEE ALSO"
  print "\\fBsystemctl\\fR(1), \\fBsystemd.service\\fR(5), \\fBxprop\\fR(1), \\fBxwininfo\\fR(1), \\fBX\\fR(7)"
}')

if [ "$out" = - ]; then
  printf '%s\n' "$page"
else
  tmp=$(mktemp "$out.XXXXXX")
  printf '%s\n' "$page" >"$tmp"
  chmod 644 "$tmp"
  mv -f "$tmp" "$out"
fi
