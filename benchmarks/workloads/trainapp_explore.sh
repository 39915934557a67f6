#!/bin/bash
# On the GPU machine, before trainapp_batch.sh: choose the settings of the scenarios that depend on
# the card, and print them as shell assignments (source the last lines):
#  - CUDNN_NET (with SWEEP=1): the net of trainapp/vision.py that cudnn.benchmark speeds up the most (cudnn_sweep.py);
#  - MEM_MARGIN: the headroom factor at which mem_pressure's allocator retries (num_alloc_retries > 0)
#    and mem_pressure_fixed runs (8-step probes, not profiled; mem_expand_fixed's retries said too).
HERE=$(cd "$(dirname "$0")" && pwd); cd $HERE/trainapp
export PYTHONUNBUFFERED=1
[ -n "$SWEEP" ] && { python3 cudnn_sweep.py 15 2>&1 | grep -v Warning | tee /tmp/cudnn_sweep.txt >&2
  NET=$(awk '/^best/ {print $2}' /tmp/cudnn_sweep.txt); echo "CUDNN_NET=${NET:-unet}"; }
for M in 1.0 0.99; do
  MEM_MARGIN=$M STEPS=8 timeout 120 python3 run.py mem_pressure > /tmp/probe_B.log 2>&1
  B=$(grep -o "alloc retries [0-9]*, ooms [0-9]*" /tmp/probe_B.log) || tail -2 /tmp/probe_B.log >&2
  MEM_MARGIN=$M STEPS=8 timeout 120 python3 run.py mem_pressure_fixed > /tmp/probe_F.log 2>&1
  F=$(grep -o "alloc retries [0-9]*, ooms [0-9]*" /tmp/probe_F.log) || tail -2 /tmp/probe_F.log >&2
  MEM_MARGIN=$M STEPS=8 timeout 120 python3 run.py mem_expand_fixed > /tmp/probe_E.log 2>&1
  E=$(grep -o "alloc retries [0-9]*, ooms [0-9]*" /tmp/probe_E.log) || tail -2 /tmp/probe_E.log >&2
  echo "margin $M: before ${B:-failed}; fixed ${F:-failed}; expandable ${E:-failed}" >&2
  RB=$(echo "$B" | awk '{print $3}' | tr -d ,)
  if [ -n "$RB" ] && [ "$RB" -gt 0 ] && [ -n "$F" ]; then echo "MEM_MARGIN=$M"; break; fi
done
