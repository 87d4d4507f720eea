#!/usr/bin/env python3
"""The device group copy's index arithmetic, run on the host (no GPU needed).

copy_emulation.py CXX MEMORY_CUH WORK_DIR

Takes the group copy (from `struct alignas(8) Bits128` to `// Strided element copy`) out of
include/vshmem/device/impl/memory.cuh, compiles it for the host with the alignment sanitizer
(16-byte words are an aligned type, as on the GPU, where a misaligned one faults) and runs every
thread of a group one after another: copy_bytes_at as put_group calls it (the destination is the
peer's copy, the alignment is read from the untranslated address, a multiple of 512 bytes away)
and as get_group calls it (the same for the source), for group sizes 1-1024, destination offsets
0-1023 past a 512-byte boundary, sizes 0-4096 and sources that agree with the destination modulo
16 or not. Every byte of the 8 KiB around the copy is checked, the poison included.
Then, to show the check can fail, the same with a delta 4 bytes off a multiple of 512: the copy
must stop at a misaligned 16-byte access.
"""
import os
import subprocess
import sys

HARNESS = r"""
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <type_traits>
#define __device__
#define __forceinline__ inline
struct alignas(16) uint4 { uint32_t x, y, z, w; };
namespace vshmem::device {
constexpr uint64_t kDeltaAlign = 512;
#include "copy.inc"
}  // namespace vshmem::device
int main(int argc, char** argv) {
  const uintptr_t off = argc > 1 ? strtoul(argv[1], nullptr, 0) : 0;  // delta - k * 512
  alignas(4096) static char src[8192], dst[8192];
  long bad = 0, cases = 0;
  for (int get = 0; get < 2; ++get)
    for (unsigned size : {1u, 3u, 16u, 32u, 40u, 512u, 1024u})
      for (size_t doff = 0; doff < 1024; doff += (size >= 32 ? 3 : 13))
        for (size_t n : {0ul, 1ul, 8ul, 15ul, 16ul, 17ul, 33ul, 100ul, 511ul, 512ul, 513ul,
                         1040ul, 3001ul, 4096ul})
          for (size_t skew : {0ul, 16ul, 528ul, 3ul, 8ul, 12ul}) {
            const size_t soff = (doff + skew) % 2048;
            for (int i = 0; i < 8192; ++i) {
              src[i] = static_cast<char>(i * 7 + 3 + cases);
              dst[i] = static_cast<char>(0xA5);
            }
            char* d = dst + 2048 + doff;
            const char* s = src + soff;
            const uintptr_t delta = 512ul * 12345 + off;
            const uintptr_t dlow = reinterpret_cast<uintptr_t>(d) - (get ? 0 : delta);
            const uintptr_t slow = reinterpret_cast<uintptr_t>(s) - (get ? delta : 0);
            for (unsigned r = 0; r < size; ++r)
              vshmem::device::copy_bytes_at(d, s, n, r, size, dlow, slow);
            ++cases;
            for (size_t i = 0; i < 8192; ++i) {
              const bool in = i >= 2048 + doff && i < 2048 + doff + n;
              const char want = in ? src[soff + i - 2048 - doff] : static_cast<char>(0xA5);
              if (dst[i] != want) {
                if (bad < 5)
                  printf("%s, group of %u, destination +%zu, %zu bytes, source +%zu: byte %zu\n",
                         get ? "get" : "put", size, doff, n, soff, i);
                ++bad;
                break;
              }
            }
          }
  printf("%ld cases, %ld wrong\n", cases, bad);
  return bad != 0;
}
"""


def main():
    cxx, header, work = sys.argv[1:4]
    text = open(header).read()
    a = text.index("struct alignas(8) Bits128")
    b = text.index("// Strided element copy")
    os.makedirs(work, exist_ok=True)
    with open(os.path.join(work, "copy.inc"), "w") as f:
        f.write(text[a:b])
    src = os.path.join(work, "copy_emulation.cpp")
    with open(src, "w") as f:
        f.write(HARNESS)
    exe = os.path.join(work, "copy_emulation")
    subprocess.run([cxx, "-O1", "-std=c++17", "-fsanitize=alignment",
                    "-fno-sanitize-recover=alignment", "-I", work, src, "-o", exe], check=True)
    ok = subprocess.run([exe, "0"])
    print("deltas that are multiples of 512:", "pass" if ok.returncode == 0 else "FAIL")
    off = subprocess.run([exe, "4"], capture_output=True, text=True)
    caught = off.returncode != 0 and "misaligned" in off.stderr
    print("a delta 4 bytes off:", "stopped at a misaligned access (as it must)" if caught
          else "NOT caught: the check cannot fail")
    return 0 if ok.returncode == 0 and caught else 1


if __name__ == "__main__":
    sys.exit(main())
