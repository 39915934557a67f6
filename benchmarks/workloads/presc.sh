#!/bin/bash
# On the GPU machine: profile or trace the workloads of prescriptions.py (issue 46's pairs, issue 47's long
# profiles). Lies beside prescriptions.py and pairs.py with gen.sh's two .deb files
# (../shared/tools/device/). Results come back as at most 8 files of at most 15 MB under $OUT.
#   bash presc.sh nsys NAME...     nsys profile -> per workload: NAME.sqlite.gz, summary CSVs, stats_default.txt
#   bash presc.sh kineto NAME...   torch.profiler Chrome traces (gzipped)
# llama_autograd is profiled with --pytorch=autograd-nvtx --python-sampling=true (template B).
HERE=$(cd "$(dirname "$0")" && pwd); MODE=$1; shift
H=/opt/nvidia/nsight-compute/2025.3.1/host
mkdir -p /tmp/libs && for f in "$HERE"/*.deb; do dpkg -x $f /tmp/libs; done
export LD_LIBRARY_PATH=/tmp/libs/usr/lib/x86_64-linux-gnu:$LD_LIBRARY_PATH
export PATH=$H/target-linux-x64:$H/linux-desktop-glibc_2_11_3-x64:$PATH
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
SUMS=cuda_gpu_kern_sum,cuda_api_sum,cuda_gpu_mem_time_sum,cuda_gpu_mem_size_sum,nvtx_sum,osrt_sum,cuda_kern_exec_sum,nvtx_gpu_proj_sum,cuda_gpu_sum
R=/tmp/res; mkdir -p $R; cd "$HERE"
export_one() {   # W D: CPU only, runs while the next workload profiles
  local W=$1 D=$2
  nsys export --type sqlite --force-overwrite=true -o $D/$W.sqlite /tmp/rep_$W.nsys-rep > /dev/null 2>&1
  nsys stats -r $SUMS -f csv -o $D/$W $D/$W.sqlite > $D/stats.log 2>&1
  nsys stats $D/$W.sqlite > $D/stats_default.txt 2>&1
  python3 step_time.py $D/$W.sqlite > $D/step_time.txt 2>&1
  gzip -9 $D/$W.sqlite
  rm -f $D/*.nsys-rep
}
START=$(date +%s); DEADLINE=${DEADLINE:-450}   # no new workload after DEADLINE seconds: the results still come back
case $MODE in
nsys)
  for W in "$@"; do
    [ $(( $(date +%s) - START )) -gt $DEADLINE ] && { echo "== deadline: $W and after not run"; break; }
    D=$R/$W; mkdir -p $D; T0=$(date +%s)
    FLAGS="-t cuda,nvtx,osrt,cublas,cudnn -s none --cpuctxsw=none"
    [ $W = llama_autograd ] && FLAGS="-t cuda,nvtx,osrt,cublas,cudnn --pytorch=autograd-nvtx --python-sampling=true --cpuctxsw=none"
    timeout 300 nsys profile $FLAGS -o /tmp/rep_$W -f true python3 prescriptions.py $W > $D/profile.log 2>&1
    if [ ! -f /tmp/rep_$W.nsys-rep ] && [ $W = llama_autograd ]; then
      FLAGS="-t cuda,nvtx,osrt,cublas,cudnn --pytorch=autograd-nvtx -s none --cpuctxsw=none"
      timeout 300 nsys profile $FLAGS -o /tmp/rep_$W -f true python3 prescriptions.py $W >> $D/profile.log 2>&1
    fi
    echo "$FLAGS" > $D/flags.txt
    echo "== $W profiled in $(( $(date +%s) - T0 ))s: $(tail -1 $D/profile.log)"
    [ -f /tmp/rep_$W.nsys-rep ] && export_one $W $D &
  done
  wait
  for W in "$@"; do cat $R/$W/step_time.txt 2>/dev/null | sed "s/^/$W: /"; done
  nsys --version > $R/versions.txt; nvidia-smi >> $R/versions.txt; python3 -c "import torch; print('torch', torch.__version__)" >> $R/versions.txt;;
kineto)
  for W in "$@"; do
    [ $(( $(date +%s) - START )) -gt $DEADLINE ] && { echo "== deadline: $W and after not run"; break; }
    T0=$(date +%s); mkdir -p $R/kineto
    KINETO_OUT=$R/kineto/$W.pt.trace.json timeout 200 python3 prescriptions.py $W kineto > $R/kineto/$W.log 2>&1
    gzip -9 $R/kineto/$W.pt.trace.json; echo "== $W traced in $(( $(date +%s) - T0 ))s: $(tail -1 $R/kineto/$W.log)"
  done;;
esac
cd /tmp && tar czf /tmp/res.tgz res && split -b 15M -d /tmp/res.tgz $OUT/res.tgz.part && ls -la $OUT
