#!/bin/sh
# The prefix rule (docs/internals/README.md): every function with external
# linkage defined in src/X.c or src/X_part.c (src/web/ holds the web
# module's) is named X_... (or sc_... when
# it belongs to the public API in include/surecron.h), so a name says which
# file defines it. In src/cli/ the same holds for cmd_X.c (cmd_...) and
# cli_X.c (cli_...); main.c defines main only.
#
# It reads the symbol tables of the compiled objects, not the sources, so
# macros and comments cannot fool it: pass the object directory that
# mirrors src/ (build/test/obj/src).
#
#   sh scripts/check-prefix.sh build/test/obj/src
#
# Prints each offender as "src/FILE.c: NAME" and exits 1 when there is one.
set -eu
obj=${1:?usage: check-prefix.sh OBJDIR}
[ -d "$obj" ] || { echo "check-prefix: no object directory $obj" >&2; exit 2; }

bad=$(mktemp)
pub=$(mktemp)
trap 'rm -f "$bad" "$pub"' EXIT
n=0
# Driven by the sources, so an object left from a deleted file is not read.
for src in src/*.c src/cli/*.c src/web/*.c; do
	base=$(basename "$src" .c)
	case "$src" in
	src/cli/*) o="$obj/cli/$base.o" ;;
	src/web/*) o="$obj/web/$base.o" ;;
	*) o="$obj/$base.o" ;;
	esac
	[ -f "$o" ] || { echo "check-prefix: $o missing (build first)" >&2; exit 2; }
	n=$((n + 1))
	mod=${base%%_*}
	# T: a function in the text section; W: a weak one.
	nm --defined-only -g "$o" | awk -v mod="$mod" -v src="$src" -v pub="$pub" '
		$2 == "T" || $2 == "W" {
			name = $3
			if (mod == "main") { if (name != "main") print src ": " name; next }
			if (index(name, mod "_") == 1) next
			if (index(name, "sc_") == 1) { print name >>pub; next }
			print src ": " name
		}' >>"$bad"
done
# An sc_ name must be declared in the public header.
for name in $(sort -u "$pub"); do
	grep -qw "$name" include/surecron.h ||
		echo "include/surecron.h: $name is sc_ but not declared here" >>"$bad"
done
[ "$n" -gt 0 ] || { echo "check-prefix: no objects under $obj (build first)" >&2; exit 2; }
if [ -s "$bad" ]; then
	echo "check-prefix: functions whose name does not start with their file's prefix:" >&2
	cat "$bad" >&2
	exit 1
fi
echo "check-prefix: $n objects, every external function named after its file"
