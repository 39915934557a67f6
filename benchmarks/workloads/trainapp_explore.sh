#!/bin/bash
# On the GPU machine, before trainapp_batch.sh: choose the settings of the scenarios that depend on
# the card, and print them as shell assignments (source the last lines):
#  - CUDNN_NET: the net of trainapp/vision.py that cudnn.benchmark speeds up the most (cudnn_sweep.py);
#  - MEM_MARGIN: the headroom factor at which mem_pressure's allocator retries (num_alloc_retries > 0)
#    and mem_pressure_fixed (expandable segments) runs without running out of memory (10-step probes,
#    not profiled).
HERE=$(cd "$(dirname "$0")" && pwd); cd $HERE/trainapp
export PYTHONUNBUFFERED=1
python3 cudnn_sweep.py 15 2>&1 | grep -v Warning | tee /tmp/cudnn_sweep.txt >&2
NET=$(awk '/^best/ {print $2}' /tmp/cudnn_sweep.txt); echo "CUDNN_NET=${NET:-unet}"
for M in 1.08 1.03 1.15; do
  B=$(MEM_MARGIN=$M STEPS=10 timeout 120 python3 run.py mem_pressure 2>&1 | grep -o "alloc retries [0-9]*" | awk '{print $3}')
  F=$(MEM_MARGIN=$M STEPS=10 timeout 120 python3 run.py mem_pressure_fixed 2>&1 | grep -o "alloc retries [0-9]*, ooms [0-9]*")
  echo "margin $M: before retries ${B:-failed}; fixed ${F:-failed}" >&2
  if [ -n "$B" ] && [ "$B" -gt 0 ] && [ -n "$F" ]; then echo "MEM_MARGIN=$M"; break; fi
done
