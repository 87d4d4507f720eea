"""A bf16 all-reduce of torch tensors on the GPU heap, on torch's stream, checked against torch.
    vshmemrun -n 2 python3 examples/python/allreduce_torch.py
    torchrun --nproc-per-node=2 examples/python/allreduce_torch.py"""
import sys

import torch

import vshmem

vshmem.init()
me, n = vshmem.my_pe(), vshmem.n_pes()
torch.cuda.set_device(vshmem._state.heap_device)
x = vshmem.empty(1 << 20, torch.bfloat16, device="cuda")      # a torch.Tensor, symmetric
x.copy_(torch.full((1 << 20,), float(me + 1)))
vshmem.barrier_all(stream=torch.cuda.current_stream())
vshmem.all_reduce(x, x, "sum", stream=torch.cuda.current_stream())
torch.cuda.synchronize()
expect = n * (n + 1) / 2
ok = bool((x.float() == expect).all())
print(f"PE {me}: all-reduce of {n} PEs = {x[0].item()} (expected {expect}): "
      f"{'OK' if ok else 'FAILED'}")
vshmem.free(x)
vshmem.finalize()
sys.exit(0 if ok else 1)
