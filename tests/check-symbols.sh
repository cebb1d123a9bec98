#!/usr/bin/env bash
# libram must export exactly the functions ram.h declares RAM_API: nothing
# without the ram_ prefix (a helper that lost `static`, a BLAS or libm symbol
# pulled in), no internal ram_* helper that lost RAM_HIDDEN, no API function
# left unimplemented.
# Usage: check-symbols.sh LIBRAM_SO RAM_H [NM]
set -euo pipefail
lib=$1 header=$2 nm=${3:-nm}

# nm -D shows versioned names (ram_x@@RAM_0) and the version node RAM_0 itself
# as an absolute symbol: compare bare function names.
exported=$("$nm" -D --defined-only "$lib" |
    awk '{ sub(/@.*/, "", $3) } $3 !~ /^RAM_[0-9]+$/ { print $3 }' | sort -u)
declared=$(grep '^RAM_API' "$header" | grep -o 'ram_[a-z0-9_]*[[:space:]]*(' |
    tr -d '( \t' | sort -u)

status=0
report() { # title, names
    [ -z "$2" ] && return 0
    echo "$1:"; sed 's/^/  /' <<<"$2"; status=1
}
report "exported without the ram_ prefix" "$(grep -v '^ram_' <<<"$exported" || true)"
report "exported but not declared RAM_API in ram.h" \
    "$(comm -23 <(echo "$exported") <(echo "$declared") | grep '^ram_' || true)"
report "declared RAM_API but not exported" "$(comm -13 <(echo "$exported") <(echo "$declared"))"
[ "$status" -eq 0 ] && echo "$(wc -l <<<"$exported") symbols exported, all declared in ram.h"
exit "$status"
