#!/bin/bash
# bash device/gm.sh NAME... : nsys profile --gpu-metrics-devices=all, SQLite export, gzipped into $OUT
HERE=$(cd "$(dirname "$0")" && pwd)
H=/opt/nvidia/nsight-compute/2025.3.1/host
mkdir -p /tmp/libs && for f in "$HERE"/*.deb; do dpkg -x $f /tmp/libs; done
export LD_LIBRARY_PATH=/tmp/libs/usr/lib/x86_64-linux-gnu:$LD_LIBRARY_PATH
export PATH=$H/target-linux-x64:$H/linux-desktop-glibc_2_11_3-x64:$PATH
cd "$HERE"
for W in "$@"; do
  echo "== $W"; T0=$(date +%s)
  timeout 150 nsys profile -t cuda,nvtx,osrt -s none --cpuctxsw=none --gpu-metrics-devices=all -o /tmp/rep_$W -f true \
    python3 gm_workloads.py $W > /tmp/$W.log 2>&1; tail -5 /tmp/$W.log
  timeout 120 nsys export --type sqlite --force-overwrite=true -o /tmp/${W}_gm.sqlite /tmp/rep_$W.nsys-rep > /dev/null 2>&1
  ls -la /tmp/${W}_gm.sqlite /tmp/rep_$W.nsys-rep
  gzip -9 -c /tmp/${W}_gm.sqlite > $OUT/${W}_gm.sqlite.gz
  echo "$W took $(( $(date +%s) - T0 ))s"
done
nsys --version > $OUT/versions.txt; nvidia-smi -q | grep -iE "Product Name|Link Gen|Link Width|Driver Version" -A2 >> $OUT/versions.txt
python3 -c "import torch; print('torch', torch.__version__)" >> $OUT/versions.txt
ls -la $OUT
