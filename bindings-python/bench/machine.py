"""What the benchmarks need to know of the machine (shared by the bench_*.py scripts)."""

import os


def physical_cores():
    """Physical cores (not hyperthreads), as llama.cpp and ONNX Runtime are given threads."""
    cores = set()
    try:
        with open("/proc/cpuinfo") as f:
            phys = None
            for line in f:
                if line.startswith("physical id"):
                    phys = line.split(":")[1].strip()
                elif line.startswith("core id"):
                    cores.add((phys, line.split(":")[1].strip()))
    except OSError:
        pass
    return len(cores) or os.cpu_count() or 1
