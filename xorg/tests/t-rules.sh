#!/usr/bin/env bash
# CaptureShield Xorg tests: the rule table (module/RULES.md) matches the code. Every bit of
# enum cs_rule (module/cs.h) has exactly one row; each row's constant is a bit of the enum
# and its name the one options.c gives that constant (DisableRules); each file a row names
# exists in module/ and mentions the row's CS_RULE_ constant (as a whole word: DAEMON is
# not DAEMONROLE). Then the controls: the same check must fail on a table with a row
# dropped, a file that does not exist, and a file that does not mention the constant.
# Needs no X server (so it does not source t-lib.sh); prints "N passed, N failed" and
# exits 1 on a failure, as t-lib.sh's summary does.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
MOD=${CS_MODULE_DIR:-$here/../module}
TMP=$(mktemp -d /tmp/csrules.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   - $*"; }
bad() { fail=$((fail + 1)); echo "FAIL - $*"; }

# the bits of enum cs_rule, one a line
rule_bits() {
  sed -n '/^enum cs_rule {/,/^};/p' "$MOD/cs.h" | grep -oE '^[[:space:]]+CS_RULE_[A-Z0-9_]+' |
    sed 's/^[[:space:]]*//'
}
# "name CONSTANT" for every {"name", CS_RULE_X} pair of options.c
option_names() {
  grep -oE '\{"[a-z0-9]+", CS_RULE_[A-Z0-9_]+\}' "$MOD/options.c" |
    sed -E 's/^\{"([a-z0-9]+)", (CS_RULE_[A-Z0-9_]+)\}$/\1 \2/'
}
# "name|CONSTANT|file file ..." for every row of TABLE
table_rows() {
  grep -E '^\| `' "$1" | awk -F' [|] ' '{
    name = $1; sub(/^\| `/, "", name); sub(/`$/, "", name)
    c = $2; gsub(/`/, "", c)
    f = $3; gsub(/`/, "", f); gsub(/,/, " ", f)
    print name "|" c "|" f }'
}

# check TABLE: one line per problem found (none: the table matches the code)
check() {
  local table=$1 bit n rows name c files f want
  rows=$(table_rows "$table")
  for bit in $(rule_bits); do
    n=$(printf '%s\n' "$rows" | awk -F'|' -v c="$bit" '$2 == c' | wc -l)
    [ "$n" -eq 1 ] || echo "$bit: $n rows (wanted 1)"
  done
  while IFS='|' read -r name c files; do
    [ -n "$c" ] || continue
    rule_bits | grep -qx "$c" || echo "row $name: $c is no bit of enum cs_rule"
    want=$(option_names | awk -v c="$c" '$2 == c { print $1 }')
    [ "$name" = "$want" ] || echo "row $c: named '$name', options.c names it '$want'"
    [ -n "${files// /}" ] || echo "row $c: no file"
    for f in $files; do
      if [ ! -f "$MOD/$f" ]; then
        echo "row $c: $f does not exist"
      elif ! grep -qw "$c" "$MOD/$f"; then
        echo "row $c: $f does not mention $c"
      fi
    done
  done <<< "$rows"
}

nbits=$(rule_bits | wc -l)
[ "$nbits" -ge 20 ] && ok "enum cs_rule read from cs.h: $nbits bits" ||
  bad "enum cs_rule read from cs.h: $nbits bits (the parser lost it)"
nnames=$(option_names | wc -l)
[ "$nnames" -eq "$nbits" ] && ok "options.c names every bit ($nnames names)" ||
  bad "options.c: $nnames names for $nbits bits"

problems=$(check "$MOD/RULES.md")
if [ -z "$problems" ]; then
  ok "RULES.md: a row for each of the $nbits rule bits, every file exists and mentions its constant"
else
  while IFS= read -r p; do bad "RULES.md: $p"; done <<< "$problems"
fi

# controls: each broken table must be caught, naming what is wrong
control() {
  local what=$1 table=$2 pattern=$3 out
  out=$(check "$table")
  if printf '%s\n' "$out" | grep -q -- "$pattern"; then
    ok "control, $what: caught ($(printf '%s\n' "$out" | grep -- "$pattern" | head -1))"
  else
    bad "control, $what: not caught [${out:-no problem found}]"
  fi
}
grep -v '^| `record` ' "$MOD/RULES.md" > "$TMP/dropped.md"
control "the row of CS_RULE_RECORD dropped" "$TMP/dropped.md" 'CS_RULE_RECORD: 0 rows'
sed 's/^\(| `copyarea` | `CS_RULE_COPYAREA` | \)`copy.c`/\1`nosuchfile.c`/' "$MOD/RULES.md" > "$TMP/nofile.md"
control "a file that does not exist" "$TMP/nofile.md" 'nosuchfile.c does not exist'
sed 's/^\(| `render` | `CS_RULE_RENDER` | \)`render.c`/\1`render.c`, `module.c`/' "$MOD/RULES.md" > "$TMP/nomention.md"
control "a file that does not mention the constant" "$TMP/nomention.md" \
  'module.c does not mention CS_RULE_RENDER'
sed 's/^\(| `daemon` | `CS_RULE_DAEMON` | \)`defences.c`/\1`identity.c`/' "$MOD/RULES.md" > "$TMP/word.md"
control "a longer constant is no mention (DAEMONROLE is not DAEMON)" "$TMP/word.md" \
  'identity.c does not mention CS_RULE_DAEMON$'
sed 's/^| `title` | `CS_RULE_TITLE`/| `titles` | `CS_RULE_TITLE`/' "$MOD/RULES.md" > "$TMP/name.md"
control "a row named otherwise than options.c" "$TMP/name.md" "named 'titles'"
{ cat "$MOD/RULES.md"; echo '| `bogus` | `CS_RULE_BOGUS` | `cs.h` | - |'; } > "$TMP/bogus.md"
control "a row for a constant that is no bit" "$TMP/bogus.md" 'CS_RULE_BOGUS is no bit'

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
