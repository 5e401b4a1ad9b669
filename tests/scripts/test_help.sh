#!/usr/bin/env bash
# --help and --version of averaging_bench or sgd_bench: options are typed (INT,
# FLOAT, or the accepted names in braces, never TEXT), grouped by concern under
# headers, and --version prints "<program> <version> (git <40-hex commit or
# unknown>)" and exits 0 without writing anything.
#
#   tests/scripts/test_help.sh BINARY ENGINE
source "$(dirname "$0")/common.sh"
source "$(dirname "$0")/cli_common.sh"

[ $# -eq 2 ] || die "usage: test_help.sh BINARY mpi|smpi"
cli_init "$(basename "$1")" "$1" "$2"

# has_line REGEX WHAT: some line of the help matches the extended REGEX.
has_line() {
  if grep -Eq -- "$1" "$OUT"; then ok "--help: $2"; else bad "--help: no line matching '$1' ($2)"; fi
}

# The catalog's protocols, in its order, as --list-protocols gives them.
run_app catalog --list-protocols
catalog=$(awk 'NR > 1 {print $1}' "$OUT" | paste -sd, -)
[ -n "$catalog" ] || bad "--list-protocols: no protocols"
before=$(snapshot)
run_app help --help
[ "$RC" -eq 0 ] || { bad "--help: exit code $RC"; show_logs; }
for group in Protocol Failures Problem Schedule Output; do has_line "^$group:" "group $group"; done
if grep -Eq -- '--[a-z-]+ TEXT' "$OUT"; then bad "--help shows TEXT: $(grep -E -- '--[a-z-]+ TEXT' "$OUT" | head -3)"; else
  ok "--help: no option typed TEXT"; fi
has_line "--protocol \\{$catalog\\}" "--protocol lists the catalog (--list-protocols)"
has_line '--failure \{transient,permanent,churn,trace\}' "--failure lists its names"
has_line '--fail-rate FLOAT' "--fail-rate is a FLOAT"
has_line '--dim INT' "--dim is an INT"
has_line '--seed INT' "--seed is an INT"
has_line '--collective \{auto,ring,doubling,tree,butterfly,mpi\}' "--collective lists its names"
has_line '--groups \{view,comm\}' "--groups lists its names"
has_line '--topology \{ring,[^ ]*file:PATH\}' "--topology lists its forms"
# The catalog gives --topology to every protocol that takes it, swarm included.
if tr -s ' \n' ' ' <"$OUT" | grep -Eq -- '--topology [^]]*\[--protocol [a-z, -]*swarm'; then
  ok "--help: --topology names swarm"; else bad "--help: --topology does not name swarm"; fi
if [ "$APP" = sgd_bench ]; then
  has_line '--objective \{quadratic,logistic,softmax,mlp\}' "--objective lists its names"
  has_line '--lr FLOAT' "--lr is a FLOAT"
  has_line '--lr-schedule \{constant,inverse,step\}' "--lr-schedule lists its names"
  has_line '--steps INT' "--steps is an INT"
else
  has_line '--rounds INT' "--rounds is an INT"
  has_line '--target FLOAT' "--target is a FLOAT"
fi
# A bad value given with --help does not hide the help.
run_app help_bad --help --dim abc
[ "$RC" -eq 0 ] && grep -q '^Usage:' "$OUT" && ok "--help with a bad --dim: help, exit 0" ||
  { bad "--help with a bad --dim: exit $RC"; show_logs; }

run_app version --version
line=$(cat "$OUT")
if [ "$RC" -eq 0 ] && [[ "$line" =~ ^$APP\ [0-9]+\.[0-9]+(\.[0-9]+)*\ \(git\ ([0-9a-f]{40}(-dirty)?|unknown)\)$ ]] &&
  [ ! -s "$ERR" ]; then
  ok "--version: \"$line\", exit 0"
else
  bad "--version: exit $RC, stdout '$line'"
  show_logs
fi
[ "$before" = "$(snapshot)" ] && ok "no file written" || bad "files changed in the working folder"
finish
