#!/usr/bin/env bash
# compare_row.sh FILE — the table cells of one `tessel bench --compare A B`
# output (docs/tune.md): "A ms | B ms | A/B | lo..hi | verdict", or dashes
# where the comparison did not run (its error is in FILE). Used by
# bench/tune_cpu.sh and bench/tune_gpu.sh for their tuned-vs-default rows.
set -uo pipefail
f=$1
a=$(awk '/^  A +median/ {print $3; exit}' "$f" 2>/dev/null)
b=$(awk '/^  B +median/ {print $3; exit}' "$f" 2>/dev/null)
r=$(awk '/^  A\/B / {print $2; exit}' "$f" 2>/dev/null)
iv=$(sed -n 's/^  interval *\([0-9.]*x\) \.\. \([0-9.]*x\) .*/\1..\2/p' "$f" 2>/dev/null | head -n1)
v=$(sed -n 's/^  interval .*: //p' "$f" 2>/dev/null | head -n1)
if [ -z "$r" ]; then
    why=$(grep -m1 -o 'error: .*' "$f" 2>/dev/null | cut -c1-60)
    echo "- | - | - | - | ${why:-not run}"
else
    echo "${a:--} | ${b:--} | $r | ${iv:--} | ${v:--}"
fi
