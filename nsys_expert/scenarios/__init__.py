"""From the situation to the right profile, and from a diagnosis to what to collect next.

- ``playbook.yaml``: the playbook's templates as data (``../shared/playbook.md``, templates A-G and the
  ncu templates), the option explanations (en / zh), the wrapper scripts, the report names by era;
- ``commands``: the one command builder (Command, quoting, nsys stats / export / profile, ncu, the
  kernel regex);
- ``plans``: one function per scenario, ``build(scenario, Options(...))`` -> :class:`Plan`;
- ``next_steps``: the rules a diagnosis could not evaluate -> the commands that collect what they lack.

Nothing here runs a process or touches the file system; ``cli_profiling`` does that.

=====================  =====  ==========================================================
quick                  A      single GPU, first look: CUDA + NVTX + OS runtime
pytorch                B      full PyTorch analysis (``--pytorch`` modes, Python backtraces)
torchrun               C      multi-GPU torchrun: a wrapper that profiles only chosen ranks
deepspeed              D      DeepSpeed: a ``%p`` wrapper script launched with ``--no_python``
nvtx-range             E1     capture only an NVTX-marked region
cuda-profiler-range    E2     capture between cudaProfilerStart / cudaProfilerStop
long-run               F      skip warm-up, sample a while, let the job go on
stats                  G      export every report nsys-expert's rules read (+ SQLite)
mpi                    --     mpirun / srun wrapper: GPU and NIC metrics on local rank 0 only
ncu-kernel             ncu A  one hot kernel, full metric set
ncu-roofline           ncu B  roofline: compute- vs memory-bound
ncu-training-step      ncu C  the kernels of one training step (launch skip / count)
ncu-compare            ncu D  before / after reports of two versions
=====================  =====  ==========================================================
"""
from .commands import Command, Opt, era_of, kernel_regex, ncu_exports, nsys_stats, quote, report_name
from .next_steps import ncu_target, next_steps
from .plans import (ALIASES, COLLECTABLE, DEFAULT_APP, NCU_HELP, NSYS_HELP, OPTION_DOC, PYTORCH_MODES, SCENARIOS,
                    SITUATIONS, STATS_REPORTS, TRACE_DOC, TRACE_VALUES, VERB_DOC, Options, Plan, WrapperFile, build,
                    command_line, explain_option, export_commands, export_lines, profile_command)

__all__ = ["Command", "Opt", "era_of", "kernel_regex", "ncu_exports", "nsys_stats", "quote", "report_name",
           "ncu_target", "next_steps", "ALIASES", "COLLECTABLE", "DEFAULT_APP", "NCU_HELP", "NSYS_HELP", "OPTION_DOC",
           "PYTORCH_MODES", "SCENARIOS", "SITUATIONS", "STATS_REPORTS", "TRACE_DOC", "TRACE_VALUES", "VERB_DOC",
           "Options", "Plan", "WrapperFile", "build", "command_line", "explain_option", "export_commands",
           "export_lines", "profile_command"]
