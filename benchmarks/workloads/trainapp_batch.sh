#!/bin/bash
# On the GPU machine: several trainapp.sh runs in one call, packed within what a call returns (8 files,
# 64 MB): "bash trainapp_batch.sh SECONDS MODE:NAME,NAME... ..." (at most 8 groups). Each group runs with
# its share of the time left (DEADLINE) and comes back as one tar (MODE_FIRSTNAME.tar), kept in the
# order given while the total stays under 62 MB; a group left out is said, with its step times.
HERE=$(cd "$(dirname "$0")" && pwd); TOTAL=$1; shift
export RES=/tmp/res NOPACK=1; T0=$(date +%s); N=$#; USED=0
for spec in "$@"; do
  MODE=${spec%%:*}; NAMES=${spec#*:}; LEFT=$(( TOTAL - ($(date +%s) - T0) ))
  [ $LEFT -lt 30 ] && { echo "== no time left for $spec"; continue; }
  DEADLINE=$(( LEFT / N - 30 )) bash $HERE/trainapp.sh $MODE ${NAMES//,/ } 2>&1 | grep -v "^WARNING"; N=$((N - 1))
  f=$OUT/${MODE}_${NAMES%%,*}.tar; (cd $RES && tar cf $f $(for W in ${NAMES//,/ }; do [ -d $MODE/$W ] && echo $MODE/$W; done))
  SZ=$(stat -c %s $f 2>/dev/null || echo 0)
  if [ $(( USED + SZ )) -gt 62000000 ]; then rm -f $f; echo "== left out: $spec ($SZ bytes)"; else USED=$(( USED + SZ )); fi
done
ls -la $OUT
