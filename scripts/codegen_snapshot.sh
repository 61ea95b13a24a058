#!/usr/bin/env bash
# codegen_snapshot.sh — dump every generated source tessel makes from the
# examples, so that a refactoring of the code generators or the target
# tables can be checked byte for byte against a baseline taken before it.
#
#   scripts/codegen_snapshot.sh OUTDIR            dump into OUTDIR (created)
#   scripts/codegen_snapshot.sh --diff OLD NEW    compare two dumps: the
#       files that differ, then the same comparison with C comments removed
#       (a change that only touches the statement comments shows there as
#       none)
#
# Dumped, per examples/*.tc (all defs of the file):
#   NAME.cpu.tile / NAME.cpu.c       --target cpu --emit=tile / --emit=c
#   NAME.cuda.tile / NAME.cuda.cu    --target cuda --emit=tile / --emit=cuda
# and the same for the f16 variant the GPU benchmark runs (`float(` turned
# into `float16(`) as NAME.f16.*; per examples/tile/*.tile and
# tests/tile_golden/*.tile, every kernel through cg_c_emit and
# cg_cuda_emit (a small helper built here against build/libtessel.a) as
# tile-NAME.c / tile-NAME.cu. An emit error is dumped as its message, so a
# changed error shows too. Needs `make all` first. Keep the baseline
# outside the repository (/tmp).
set -uo pipefail
cd "$(dirname "$0")/.."

strip_comments() {  # C comments out, blank lines out
    python3 - "$1" <<'EOF'
import re, sys
t = open(sys.argv[1], errors="replace").read()
t = re.sub(r"/\*.*?\*/", "", t, flags=re.S)
t = re.sub(r"(?m)^\s*//.*$", "", t)
print("\n".join(l.rstrip() for l in t.splitlines() if l.strip()))
EOF
}

if [ "${1:-}" = "--diff" ]; then
    old=$2 new=$3
    tmpd=$(mktemp -d)
    trap 'rm -rf "$tmpd"' EXIT
    for f in "$old"/* "$new"/*; do basename "$f"; done | sort -u | while read -r n; do
        if ! cmp -s "$old/$n" "$new/$n"; then
            if [ -f "$old/$n" ] && [ -f "$new/$n" ] &&
               strip_comments "$old/$n" >"$tmpd/a" && strip_comments "$new/$n" >"$tmpd/b" &&
               cmp -s "$tmpd/a" "$tmpd/b"; then
                echo "comments only: $n"
            else
                echo "DIFFERS: $n"
            fi
        fi
    done
    exit 0
fi

out=${1:?usage: scripts/codegen_snapshot.sh OUTDIR | --diff OLD NEW}
mkdir -p "$out"
[ -x build/tessel ] && [ -f build/libtessel.a ] || { echo "run make all first" >&2; exit 1; }
export TESSEL_ROOT=$PWD TESSEL_CACHE_DIR=${TESSEL_CACHE_DIR:-/tmp/tc-snapshot}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

dump_tc() {  # FILE NAME
    local f=$1 n=$2
    build/tessel compile "$f" --target cpu --emit=tile >"$out/$n.cpu.tile" 2>&1
    build/tessel compile "$f" --target cpu --emit=c >"$out/$n.cpu.c" 2>&1
    build/tessel compile "$f" --target cuda --emit=tile >"$out/$n.cuda.tile" 2>&1
    build/tessel compile "$f" --target cuda --emit=cuda >"$out/$n.cuda.cu" 2>&1
}

for f in examples/*.tc; do
    n=$(basename "$f" .tc)
    dump_tc "$f" "$n"
    sed 's/float(/float16(/g' "$f" >"$tmp/$n.tc"
    dump_tc "$tmp/$n.tc" "$n.f16"
done

cat >"$tmp/emit_tile.c" <<'EOF'
/* every kernel of one .tile file through both generators */
#include <stdio.h>
#include <stdlib.h>
#include "codegen/codegen.h"
#include "codegen/cuda.h"
int main(int argc, char **argv)
{
    if (argc != 4) return 2;
    FILE *f = fopen(argv[1], "rb");
    if (!f) return 2;
    static char text[1 << 20];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    tsl_source src = {argv[1], text};
    tsl_arena *a = arena_create();
    tsl_diag d = {0};
    tile_module *m = NULL;
    FILE *oc = fopen(argv[2], "w"), *ou = fopen(argv[3], "w");
    if (!oc || !ou) return 2;
    if (tile_parse(a, &src, &d, &m) || tile_verify(m, &src, &d)) {
        fprintf(oc, "parse/verify: %s\n", sb_str(&d.msg));
        fprintf(ou, "parse/verify: %s\n", sb_str(&d.msg));
        return 0;
    }
    for (int i = 0; i < m->nkernels; i++) {
        strbuf c = {0}, u = {0};
        diag_reset(&d);
        if (cg_c_emit(m, m->kernels[i], &c, &d)) fprintf(oc, "// %s: error: %s\n", m->kernels[i]->name, sb_str(&d.msg));
        else fputs(sb_str(&c), oc);
        diag_reset(&d);
        if (cg_cuda_emit(m, m->kernels[i], &u, &d)) fprintf(ou, "// %s: error: %s\n", m->kernels[i]->name, sb_str(&d.msg));
        else fputs(sb_str(&u), ou);
        sb_free(&c);
        sb_free(&u);
    }
    fclose(oc);
    fclose(ou);
    return 0;
}
EOF
${CC:-cc} -std=c11 -D_GNU_SOURCE -O1 -Iinclude -Isrc "$tmp/emit_tile.c" build/libtessel.a -ldl -lm -lpthread \
    -o "$tmp/emit_tile" || exit 1
for f in examples/tile/*.tile tests/tile_golden/*.tile; do
    d=$(basename "$(dirname "$f")")
    n=$(basename "$f" .tile)
    "$tmp/emit_tile" "$f" "$out/tile-$d-$n.c" "$out/tile-$d-$n.cu"
done
echo "snapshot: $(ls "$out" | wc -l) files in $out"
