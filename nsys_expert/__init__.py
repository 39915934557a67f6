"""nsys-expert: a rule-based expert system for GPU performance (Nsight Systems / Nsight Compute)."""
__version__ = "0.1.0"
