"""A ring on the host heap with NumPy: each PE sends its block to the right neighbour, N times,
so every block goes once around; run with
    VSHMEM_BACKEND=host vshmemrun -n 4 python3 examples/python/ring_numpy.py"""
import sys

import numpy as np

import vshmem

vshmem.init()
me, n = vshmem.my_pe(), vshmem.n_pes()
box = vshmem.empty(1024, np.float64)      # symmetric: same address on every PE
mine = np.random.default_rng(me).standard_normal(1024)
box[:] = mine
carry = np.empty_like(mine)
for step in range(n):
    carry[:] = box
    vshmem.barrier_all()                  # everyone has read its box before it is overwritten
    vshmem.put(box, carry, (me + 1) % n)
    vshmem.barrier_all()
ok = np.array_equal(box, mine)            # after n steps our own block is back
total = vshmem.empty(1, np.int64)
total[0] = int(ok)
vshmem.reduce(total, total, "sum")
if me == 0:
    print(f"ring: {n} PEs, {total[0]} of {n} blocks came back intact: "
          f"{'OK' if total[0] == n else 'FAILED'}")
good = int(total[0]) == n
vshmem.free(total)
vshmem.free(box)
vshmem.finalize()
sys.exit(0 if good else 1)
