"""Runs the command when torch with a usable GPU is importable; exits 77 (skipped) otherwise."""
import os
import sys

try:
    import torch
    ok = torch.cuda.is_available()
except ImportError:
    ok = False
if not ok:
    print("skipped: torch with CUDA is not available")
    sys.exit(77)
os.execvp(sys.argv[1], sys.argv[1:])
