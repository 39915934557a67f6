#!/bin/bash
# On the GPU machine: profile the scenarios of trainapp/ (issues 54 and 55). Lies beside trainapp/ with
# gen.sh's two .deb files (../shared/tools/device/) in DEB (default: this folder).
#   bash trainapp.sh nsys NAME...    nsys profile (-t cuda,nvtx,osrt,cublas,cudnn): NAME.sqlite.gz,
#                                    summary CSVs, stats_default.txt, step_time.txt
#   bash trainapp.sh tplb NAME...    the playbook's template B (CUDA and Python backtraces, Python
#                                    sampling, autograd NVTX), STEPS=${STEPS:-8}: NAME.sqlite.gz
#   bash trainapp.sh kineto NAME...  torch.profiler, with_stack=True: NAME.pt.trace.json.gz
# Results: $OUT/res.tgz.partNN (15 MB parts).
HERE=$(cd "$(dirname "$0")" && pwd); MODE=$1; shift
DEB=${DEB:-$HERE}
H=/opt/nvidia/nsight-compute/2025.3.1/host
mkdir -p /tmp/libs && for f in "$DEB"/*.deb; do dpkg -x $f /tmp/libs; done
export LD_LIBRARY_PATH=/tmp/libs/usr/lib/x86_64-linux-gnu:$LD_LIBRARY_PATH
export PATH=$H/target-linux-x64:$H/linux-desktop-glibc_2_11_3-x64:$PATH
export PYTHONUNBUFFERED=1
SUMS=cuda_gpu_kern_sum,cuda_api_sum,cuda_gpu_mem_time_sum,cuda_gpu_mem_size_sum,nvtx_sum,osrt_sum,cuda_kern_exec_sum,nvtx_gpu_proj_sum,cuda_gpu_sum
R=${RES:-/tmp/res}/$MODE; mkdir -p $R; cd "$HERE/trainapp"
START=$(date +%s); DEADLINE=${DEADLINE:-480}
export_one() {   # W D
  local W=$1 D=$2
  nsys export --type sqlite --force-overwrite=true -o $D/$W.sqlite /tmp/rep_$W.nsys-rep > /dev/null 2>&1
  if [ $MODE = nsys ]; then
    nsys stats -r $SUMS -f csv -o $D/$W $D/$W.sqlite > $D/stats.log 2>&1
    nsys stats $D/$W.sqlite > $D/stats_default.txt 2>&1
  else
    python3 - $D/$W.sqlite > $D/schema.txt 2>&1 <<'PY'
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
for (t,) in con.execute("select name from sqlite_master where type='table' order by name"):
    n = con.execute(f"select count(*) from [{t}]").fetchone()[0]
    cols = [r[1] for r in con.execute(f"pragma table_info([{t}])")]
    print(t, n, cols)
    if "CALLCHAIN" in t.upper() or t in ("COMPOSITE_EVENTS", "DIAGNOSTIC_EVENT"):
        for r in con.execute(f"select * from [{t}] limit 12"):
            print("   ", r)
PY
  fi
  python3 ${STEP_TIME:-$HERE/step_time.py} $D/$W.sqlite > $D/step_time.txt 2>&1
  ls -la $D/$W.sqlite >> $D/step_time.txt
  gzip -6 $D/$W.sqlite; rm -f /tmp/rep_$W.nsys-rep
}
for W in "$@"; do
  [ $(( $(date +%s) - START )) -gt $DEADLINE ] && { echo "== deadline: $W and after not run"; break; }
  D=$R/$W; mkdir -p $D; T0=$(date +%s)
  case $MODE in
  nsys|tplb)
    FLAGS="-t cuda,nvtx,osrt,cublas,cudnn -s none --cpuctxsw=none"
    [ $MODE = tplb ] && FLAGS="-t cuda,nvtx,osrt,cublas,cudnn --cudabacktrace=all --python-backtrace=cuda --python-sampling=true --pytorch=autograd-nvtx --cpuctxsw=none" && export STEPS=${STEPS:-8}
    FLAGS="$FLAGS $NSYS_EXTRA"; echo "$FLAGS" > $D/flags.txt
    timeout 240 nsys profile $FLAGS -o /tmp/rep_$W -f true python3 run.py $W > $D/profile.log 2>&1
    echo "== $W profiled in $(( $(date +%s) - T0 ))s: $(tail -1 $D/profile.log)"
    [ -f /tmp/rep_$W.nsys-rep ] && export_one $W $D & ;;
  kineto)
    KINETO_OUT=$D/$W.pt.trace.json timeout 200 python3 run.py $W kineto > $D/run.log 2>&1
    gzip -6 $D/$W.pt.trace.json; echo "== $W traced in $(( $(date +%s) - T0 ))s: $(tail -1 $D/run.log)";;
  esac
done
wait
for W in "$@"; do head -3 $R/$W/step_time.txt 2>/dev/null | sed "s/^/$W: /"; done
nsys --version > $R/versions.txt; nvidia-smi >> $R/versions.txt; python3 -c "import torch, sys; print('torch', torch.__version__, sys.version)" >> $R/versions.txt
du -sh $R/*
[ -n "$NOPACK" ] && exit 0
cd ${RES:-/tmp/res} && tar cf /tmp/res_$MODE.tar $MODE && split -b 15M -d /tmp/res_$MODE.tar $OUT/res_$MODE.tar.part && ls -la $OUT
