// Host-issued atomics on device memory must be atomic with respect to device atomics on the same
// word, which a copy engine cannot promise; a one-thread kernel doing atom.sys can. The kernels are
// PTX text, JIT-compiled by the driver (cuModuleLoadData), so libvshmem needs no nvcc-built
// object and runs on any sm_70+ device. A unit test runs ptxas on this text.
#include "runtime/memory/cuda_provider.hpp"

namespace vshmem::detail {
namespace {

// Parameters: address, operand, compare, result (a u64 in device memory: the fetched value,
// zero-extended), op (AtomicPtxOp). Unknown ops store nothing and leave memory alone.
constexpr char kAtomicPtx[] = R"PTX(
.version 7.0
.target sm_70
.address_size 64

.visible .entry vshmem_atomic_b32(
    .param .u64 vshmem_atomic_b32_addr,
    .param .u64 vshmem_atomic_b32_operand,
    .param .u64 vshmem_atomic_b32_compare,
    .param .u64 vshmem_atomic_b32_result,
    .param .u32 vshmem_atomic_b32_op
)
{
    .reg .pred %p<8>;
    .reg .b32 %r<4>;
    .reg .b64 %rd<8>;

    ld.param.u64 %rd0, [vshmem_atomic_b32_addr];
    ld.param.u64 %rd1, [vshmem_atomic_b32_operand];
    ld.param.u64 %rd2, [vshmem_atomic_b32_compare];
    ld.param.u64 %rd3, [vshmem_atomic_b32_result];
    ld.param.u32 %r0, [vshmem_atomic_b32_op];
    cvta.to.global.u64 %rd0, %rd0;
    cvta.to.global.u64 %rd3, %rd3;
    cvt.u32.u64 %r1, %rd1;
    cvt.u32.u64 %r2, %rd2;

    setp.eq.u32 %p0, %r0, 0;
    @%p0 bra B32_FETCH;
    setp.eq.u32 %p1, %r0, 1;
    @%p1 bra B32_SWAP;
    setp.eq.u32 %p2, %r0, 2;
    @%p2 bra B32_CAS;
    setp.eq.u32 %p3, %r0, 3;
    @%p3 bra B32_ADD;
    setp.eq.u32 %p4, %r0, 4;
    @%p4 bra B32_AND;
    setp.eq.u32 %p5, %r0, 5;
    @%p5 bra B32_OR;
    setp.eq.u32 %p6, %r0, 6;
    @%p6 bra B32_XOR;
    ret;

B32_FETCH:
    ld.relaxed.sys.global.b32 %r3, [%rd0];
    bra.uni B32_DONE;
B32_SWAP:
    atom.sys.global.exch.b32 %r3, [%rd0], %r1;
    bra.uni B32_DONE;
B32_CAS:
    atom.sys.global.cas.b32 %r3, [%rd0], %r2, %r1;
    bra.uni B32_DONE;
B32_ADD:
    atom.sys.global.add.u32 %r3, [%rd0], %r1;
    bra.uni B32_DONE;
B32_AND:
    atom.sys.global.and.b32 %r3, [%rd0], %r1;
    bra.uni B32_DONE;
B32_OR:
    atom.sys.global.or.b32 %r3, [%rd0], %r1;
    bra.uni B32_DONE;
B32_XOR:
    atom.sys.global.xor.b32 %r3, [%rd0], %r1;
B32_DONE:
    cvt.u64.u32 %rd4, %r3;
    st.global.u64 [%rd3], %rd4;
    ret;
}

.visible .entry vshmem_atomic_b64(
    .param .u64 vshmem_atomic_b64_addr,
    .param .u64 vshmem_atomic_b64_operand,
    .param .u64 vshmem_atomic_b64_compare,
    .param .u64 vshmem_atomic_b64_result,
    .param .u32 vshmem_atomic_b64_op
)
{
    .reg .pred %p<8>;
    .reg .b32 %r<2>;
    .reg .b64 %rd<8>;

    ld.param.u64 %rd0, [vshmem_atomic_b64_addr];
    ld.param.u64 %rd1, [vshmem_atomic_b64_operand];
    ld.param.u64 %rd2, [vshmem_atomic_b64_compare];
    ld.param.u64 %rd3, [vshmem_atomic_b64_result];
    ld.param.u32 %r0, [vshmem_atomic_b64_op];
    cvta.to.global.u64 %rd0, %rd0;
    cvta.to.global.u64 %rd3, %rd3;

    setp.eq.u32 %p0, %r0, 0;
    @%p0 bra B64_FETCH;
    setp.eq.u32 %p1, %r0, 1;
    @%p1 bra B64_SWAP;
    setp.eq.u32 %p2, %r0, 2;
    @%p2 bra B64_CAS;
    setp.eq.u32 %p3, %r0, 3;
    @%p3 bra B64_ADD;
    setp.eq.u32 %p4, %r0, 4;
    @%p4 bra B64_AND;
    setp.eq.u32 %p5, %r0, 5;
    @%p5 bra B64_OR;
    setp.eq.u32 %p6, %r0, 6;
    @%p6 bra B64_XOR;
    ret;

B64_FETCH:
    ld.relaxed.sys.global.b64 %rd4, [%rd0];
    bra.uni B64_DONE;
B64_SWAP:
    atom.sys.global.exch.b64 %rd4, [%rd0], %rd1;
    bra.uni B64_DONE;
B64_CAS:
    atom.sys.global.cas.b64 %rd4, [%rd0], %rd2, %rd1;
    bra.uni B64_DONE;
B64_ADD:
    atom.sys.global.add.u64 %rd4, [%rd0], %rd1;
    bra.uni B64_DONE;
B64_AND:
    atom.sys.global.and.b64 %rd4, [%rd0], %rd1;
    bra.uni B64_DONE;
B64_OR:
    atom.sys.global.or.b64 %rd4, [%rd0], %rd1;
    bra.uni B64_DONE;
B64_XOR:
    atom.sys.global.xor.b64 %rd4, [%rd0], %rd1;
B64_DONE:
    st.global.u64 [%rd3], %rd4;
    ret;
}
)PTX";

}  // namespace

const char* atomic_ptx() { return kAtomicPtx; }

}  // namespace vshmem::detail
