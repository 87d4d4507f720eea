"""Runs a pytest file under torchrun with N processes: vshmem.init() finds torchrun's environment
and starts from a unique ID published through torch.distributed's store. Exits 77 (skipped) without
torch or a GPU."""
import subprocess
import sys

try:
    import torch
    if not torch.cuda.is_available():
        raise ImportError
except ImportError:
    print("skipped: torch with CUDA is not available")
    sys.exit(77)

n, test = sys.argv[1], sys.argv[2]
cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={n}",
       "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x", test]
sys.exit(subprocess.call(cmd))
