#!/usr/bin/env bash
# CaptureShield Xorg tests: the protocol inventory (docs/protocol-inventory.md, the summary
# in docs/security.md). A headless Xorg with the module says which extensions it offers
# (xdpyinfo -queryExtensions); every one of them must have its XML (xcb-proto's, or
# xorg/inventory/xml/) and rows in xorg/inventory/classes.tsv, every request and event of
# each must have a row, every row must name rules of xorg/README.md's DisableRules list
# (or "always") and tests that exist, and the docs must be what scripts/gen-inventory.py
# writes now. The checker's own controls: a copy of classes.tsv with one row removed, an
# offered extension the inventory does not list, a rule and a test that do not exist, and
# a changed classification must each fail. No byte-order test (the table notes it).
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/t-lib.sh"
TOP=$(cd "$here/../.." && pwd)
GEN=$TOP/scripts/gen-inventory.py
CLASSES=$TOP/xorg/inventory/classes.tsv
for b in python3 xdpyinfo; do
  command -v "$b" >/dev/null || { echo "Error: $b missing (scripts/install-deps.sh xorg)" >&2; exit 1; }
done
[ -f /usr/share/xcb/xproto.xml ] || { echo "Error: xcb-proto missing (scripts/install-deps.sh xorg)" >&2; exit 1; }
[ -f "$OUT/libcaptureshield.so" ] || { echo "Error: $OUT/libcaptureshield.so not built" >&2; exit 1; }

mod_conf "$TMP/A.conf"
start_xorg A "$TMP/A.conf"
echo "# server: $XDISPLAY_A (module: ${CS_MODDIR:-$OUT})"
if grep -q "CAPTURESHIELD: active" "$LOG_A"; then ok "the module is active"; else bad "the module is not active"; fi

# the extensions the running server offers, by name ("Generic Event Extension" has spaces)
xdpyinfo -display "$XDISPLAY_A" -queryExtensions >"$TMP/xdpyinfo" 2>&1
sed -n 's/^    \(.*[^ ]\)  *(opcode: .*/\1/p' "$TMP/xdpyinfo" >"$TMP/offered"
n=$(wc -l <"$TMP/offered")
want=$(sed -n 's/^number of extensions: *//p' "$TMP/xdpyinfo")
if [ "$n" -gt 0 ] && [ "$n" = "$want" ]; then
  ok "the server offers $n extensions: $(tr '\n' ',' <"$TMP/offered" | sed 's/,$//')"
else
  bad "read $n extension names of ${want:-?} from xdpyinfo [$(head -3 "$TMP/xdpyinfo" | tr '\n' ' ')]"
fi

# (a) (b) (c): every offered extension listed with its XML and rows, every request and
# event classified, every rule and test real
if out=$(python3 "$GEN" --check --offered "$TMP/offered" 2>&1); then
  ok "every request and event of the core protocol and the $n extensions is classified; rules and tests exist  [$out]"
else
  bad "the inventory does not cover what the server offers:"
  echo "$out" | sed 's/^/    /'
fi

# (d): the docs are what the generator writes now
mkdir -p "$TMP/docs"
if python3 "$GEN" --out "$TMP/docs" 2>"$TMP/gen.err"; then
  for f in protocol-inventory.md security.md; do
    if diff -u "$TOP/docs/$f" "$TMP/docs/$f" >"$TMP/$f.diff"; then
      ok "docs/$f is what scripts/gen-inventory.py writes"
    else
      bad "docs/$f differs from the generator's output (run scripts/gen-inventory.py):"
      head -20 "$TMP/$f.diff" | sed 's/^/    /'
    fi
  done
else
  bad "the generator failed: $(cat "$TMP/gen.err")"
fi
# the counts, for the log (docs/security.md has them per extension)
sed -n 's/^\([0-9]* requests and [0-9]* events\)[^:]*:[^)]*): \(.*\)/# \1: \2/p' "$TOP/docs/security.md"

# the checker's controls: each must fail, naming what is wrong
# control CASE_NAME WANT_IN_OUTPUT CHECKER_ARGS...
control() {
  local name=$1 want=$2 out; shift 2
  if out=$(python3 "$GEN" --check "$@" 2>&1); then
    bad "control: $name: the checker passed"
  elif echo "$out" | grep -qF -- "$want"; then
    ok "control: $name: the checker fails  [$(echo "$out" | grep -F -- "$want" | head -1)]"
  else
    bad "control: $name: the checker failed without naming it  [$(echo "$out" | head -3 | tr '\n' ' ')]"
  fi
}
# one row removed: a request (DAMAGE Create) and a generic event (XI2 RawKeyPress)
awk -F'\t' '!($1 == "DAMAGE" && $2 == "request" && $3 == "Create")' "$CLASSES" >"$TMP/no-row.tsv"
[ "$(wc -l <"$TMP/no-row.tsv")" -eq $(( $(wc -l <"$CLASSES") - 1 )) ] || bad "control: the row to remove was not found"
control "classes.tsv without the row of DAMAGE Create" "UNCLASSIFIED: DAMAGE request Create" \
  --classes "$TMP/no-row.tsv" --offered "$TMP/offered"
awk -F'\t' '!($1 == "XInputExtension" && $2 == "generic-event" && $3 == "RawKeyPress")' "$CLASSES" >"$TMP/no-ev.tsv"
control "classes.tsv without the row of XI2 RawKeyPress" "UNCLASSIFIED: XInputExtension generic-event RawKeyPress" \
  --classes "$TMP/no-ev.tsv" --offered "$TMP/offered"
# an extension the server offers that the inventory does not list
{ cat "$TMP/offered"; echo "NEW-EXTENSION"; } >"$TMP/offered+1"
control "a server offering an extension the inventory does not list" "OFFERED: the server offers 'NEW-EXTENSION'" \
  --offered "$TMP/offered+1"
# set_col EXT KIND NAME COLUMN VALUE <classes >copy: one field of one row changed
# (columns: 1 extension, 2 kind, 3 name, 4 number, 5 classes, 6 rules, 7 status, 8 test)
set_col() {
  awk -F'\t' -v OFS='\t' -v e="$1" -v k="$2" -v n="$3" -v c="$4" -v v="$5" \
    '$1 == e && $2 == k && $3 == n { $c = v } { print }'
}
# a rule that is not a DisableRules name, a test that does not exist
set_col core request GetImage 6 getimage,norule <"$CLASSES" >"$TMP/rule.tsv"
control "a row naming rule 'norule'" "rule 'norule' is not a DisableRules name" --classes "$TMP/rule.tsv"
set_col core request GetImage 8 "t-nosuch.sh: case" <"$CLASSES" >"$TMP/test.tsv"
control "a row naming test file t-nosuch.sh" "no file t-nosuch.sh" --classes "$TMP/test.tsv"
set_col core request GetImage 8 "t-paths.sh: no such case here" <"$CLASSES" >"$TMP/case.tsv"
control "a row naming a case t-paths.sh does not contain" "t-paths.sh does not contain" --classes "$TMP/case.tsv"
# a changed classification: the docs written from it differ from the committed ones
set_col core request GrabPointer 7 guarded <"$CLASSES" | set_col core request GrabPointer 6 input \
  >"$TMP/changed.tsv"
mkdir -p "$TMP/docs2"
if python3 "$GEN" --classes "$TMP/changed.tsv" --out "$TMP/docs2" 2>"$TMP/gen2.err" &&
   ! diff -q "$TOP/docs/security.md" "$TMP/docs2/security.md" >/dev/null; then
  ok "control: GrabPointer (a GAP) reclassified as guarded: the generated docs differ from the committed ones"
else
  bad "control: a changed classification went unnoticed [$(cat "$TMP/gen2.err")]"
fi
summary
