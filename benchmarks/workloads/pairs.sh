#!/bin/bash
# On the GPU machine: profile, trace or time the workloads of pairs.py.
#   bash pairs.sh nsys NAME...    nsys profile + the CSV reports, SQLite export, nsys analyze; -> $OUT/nsys_*.tgz
#   bash pairs.sh kineto NAME...  torch.profiler Chrome traces (gzipped) -> $OUT/kineto.tgz
#   bash pairs.sh time NAME...    bare wall time per step, as JSON lines -> $OUT/times.jsonl
# pairs.py lies beside this script, with a copy of ../shared/tools/device/ (gen.sh's two .deb files, workloads.py).
# A name of the form shared:NAME runs ../shared/tools/device/workloads.py NAME instead.
HERE=$(cd "$(dirname "$0")" && pwd); MODE=$1; shift
H=/opt/nvidia/nsight-compute/2025.3.1/host
mkdir -p /tmp/libs && for f in "$HERE"/*.deb; do dpkg -x $f /tmp/libs; done
export LD_LIBRARY_PATH=/tmp/libs/usr/lib/x86_64-linux-gnu:$LD_LIBRARY_PATH
export PATH=$H/target-linux-x64:$H/linux-desktop-glibc_2_11_3-x64:$PATH
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
REPORTS=cuda_gpu_trace,cuda_gpu_kern_sum,cuda_api_sum,cuda_gpu_mem_time_sum,cuda_gpu_mem_size_sum,nvtx_sum,osrt_sum,cuda_kern_exec_sum,nvtx_gpu_proj_sum,cuda_gpu_sum,cuda_api_trace,nvtx_pushpop_trace
cd "$HERE"
cmd() { case $1 in shared:*) echo "python3 workloads.py ${1#shared:}";; *) echo "python3 pairs.py $1";; esac; }
base() { echo "${1#shared:}"; }
export_one() {   # W D: the reports of one profile (CPU only: runs while the next workload profiles)
  local W=$1 D=$2
  nsys export --type sqlite --force-overwrite=true -o $D/$W.sqlite /tmp/rep_$W.nsys-rep > /dev/null 2>&1
  nsys stats -r $REPORTS -f csv -o $D/$W $D/$W.sqlite > $D/stats.log 2>&1
  nsys stats $D/$W.sqlite > $D/stats_default.txt 2>&1
  nsys analyze $D/$W.sqlite > $D/analyze.txt 2>&1
  for f in $D/*_trace.csv; do [ $(stat -c %s $f) -gt 1000000 ] && gzip -9 $f; done
  gzip -9 $D/$W.sqlite
}
case $MODE in
nsys)
  R=/tmp/fx; mkdir -p $R
  for N in "$@"; do
    W=$(base $N); D=$R/$W; mkdir -p $D; T0=$(date +%s)
    timeout 200 nsys profile -t cuda,nvtx,osrt,cublas,cudnn -s none --cpuctxsw=none -o /tmp/rep_$W -f true $(cmd $N) > $D/profile.log 2>&1
    echo "== $W profiled in $(( $(date +%s) - T0 ))s: $(tail -1 $D/profile.log)"
    [ -f /tmp/rep_$W.nsys-rep ] && export_one $W $D &
  done
  wait
  nsys --version > $R/versions.txt; nvidia-smi >> $R/versions.txt; python3 -c "import torch; print('torch', torch.__version__)" >> $R/versions.txt
  cd $R && du -sh * && tar czf $OUT/nsys_a.tgz versions.txt $(ls -d */ | head -6) && tar czf $OUT/nsys_b.tgz $(ls -d */ | tail -n +7)
  ls -la $OUT;;
kineto)
  R=/tmp/kineto; mkdir -p $R
  for N in "$@"; do
    W=$(base $N); T0=$(date +%s)
    case $N in shared:*) KINETO_OUT=$R/$W.pt.trace.json timeout 200 $(cmd $N) kineto > $R/$W.log 2>&1;;
                      *) KINETO_OUT=$R/$W.pt.trace.json timeout 200 $(cmd $N) kineto > $R/$W.log 2>&1;; esac
    gzip -9 $R/$W.pt.trace.json; echo "== $W traced in $(( $(date +%s) - T0 ))s: $(tail -1 $R/$W.log)"
  done
  cd $R && tar czf $OUT/kineto.tgz * && ls -la $OUT;;
time)
  for N in "$@"; do timeout 200 python3 pairs.py $N time 2>&1 | tee -a $OUT/times.jsonl | tail -2; done;;
esac
