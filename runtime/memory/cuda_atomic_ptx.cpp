// Host-issued atomics on device memory must be atomic with respect to device atomics on the same
// word, which a copy engine cannot promise; a one-thread kernel doing atom.sys can. The kernels are
// PTX text, JIT-compiled by the driver (cuModuleLoadData), so libvshmem needs no nvcc-built
// object and runs on any sm_70+ device. A unit test runs ptxas on this text. With the inbound
// mailbox (vshmem/device/impl/proxy_mailbox.h) the provider launches vshmem_mailbox_serve instead,
// which performs whatever request is pending in the mailbox unless a waiting kernel claimed it.
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
// The inbound mailbox's fallback kernel: proxy::mailbox_fallback (vshmem/device/impl/
// proxy_mailbox.h) in PTX, with the Mailbox offsets that header asserts. Parameters: the mailbox
// (device-mapped host memory), the claim word (GPU memory), the launch number.
.visible .entry vshmem_mailbox_serve(
    .param .u64 vshmem_mailbox_serve_box,
    .param .u64 vshmem_mailbox_serve_claimed,
    .param .u64 vshmem_mailbox_serve_launch
)
{
    .reg .pred %p<4>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<12>;

    ld.param.u64 %rd0, [vshmem_mailbox_serve_box];
    ld.param.u64 %rd1, [vshmem_mailbox_serve_claimed];
    ld.param.u64 %rd2, [vshmem_mailbox_serve_launch];
    cvta.to.global.u64 %rd0, %rd0;
    cvta.to.global.u64 %rd1, %rd1;
    ld.acquire.sys.global.u64 %rd3, [%rd0];
    setp.eq.u64 %p0, %rd3, 0;
    @%p0 bra MB_RAN;
    sub.u64 %rd4, %rd3, 1;
    atom.global.cas.b64 %rd5, [%rd1], %rd4, %rd3;
    setp.ne.u64 %p1, %rd5, %rd4;
    @%p1 bra MB_RAN;
    st.release.sys.global.u64 [%rd0+64], %rd3;
    ld.volatile.global.u32 %r0, [%rd0+8];
    ld.volatile.global.u32 %r1, [%rd0+12];
    ld.volatile.global.u64 %rd6, [%rd0+16];
    ld.volatile.global.u64 %rd7, [%rd0+24];
    ld.volatile.global.u64 %rd8, [%rd0+32];
    cvta.to.global.u64 %rd6, %rd6;
    mov.u64 %rd9, 0;
    setp.eq.u32 %p2, %r1, 4;
    @%p2 bra MB4;

    setp.eq.u32 %p3, %r0, 0;
    @%p3 bra MB8_FETCH;
    setp.eq.u32 %p3, %r0, 1;
    @%p3 bra MB8_SWAP;
    setp.eq.u32 %p3, %r0, 2;
    @%p3 bra MB8_SWAP;
    setp.eq.u32 %p3, %r0, 3;
    @%p3 bra MB8_CAS;
    setp.eq.u32 %p3, %r0, 4;
    @%p3 bra MB8_ADD;
    setp.eq.u32 %p3, %r0, 5;
    @%p3 bra MB8_AND;
    setp.eq.u32 %p3, %r0, 6;
    @%p3 bra MB8_OR;
    setp.eq.u32 %p3, %r0, 7;
    @%p3 bra MB8_XOR;
    bra.uni MB_DONE;
MB8_FETCH:
    ld.relaxed.sys.global.b64 %rd9, [%rd6];
    bra.uni MB_DONE;
MB8_SWAP:
    atom.sys.global.exch.b64 %rd9, [%rd6], %rd7;
    bra.uni MB_DONE;
MB8_CAS:
    atom.sys.global.cas.b64 %rd9, [%rd6], %rd8, %rd7;
    bra.uni MB_DONE;
MB8_ADD:
    atom.sys.global.add.u64 %rd9, [%rd6], %rd7;
    bra.uni MB_DONE;
MB8_AND:
    atom.sys.global.and.b64 %rd9, [%rd6], %rd7;
    bra.uni MB_DONE;
MB8_OR:
    atom.sys.global.or.b64 %rd9, [%rd6], %rd7;
    bra.uni MB_DONE;
MB8_XOR:
    atom.sys.global.xor.b64 %rd9, [%rd6], %rd7;
    bra.uni MB_DONE;

MB4:
    cvt.u32.u64 %r2, %rd7;
    cvt.u32.u64 %r3, %rd8;
    mov.u32 %r4, 0;
    setp.eq.u32 %p3, %r0, 0;
    @%p3 bra MB4_FETCH;
    setp.eq.u32 %p3, %r0, 1;
    @%p3 bra MB4_SWAP;
    setp.eq.u32 %p3, %r0, 2;
    @%p3 bra MB4_SWAP;
    setp.eq.u32 %p3, %r0, 3;
    @%p3 bra MB4_CAS;
    setp.eq.u32 %p3, %r0, 4;
    @%p3 bra MB4_ADD;
    setp.eq.u32 %p3, %r0, 5;
    @%p3 bra MB4_AND;
    setp.eq.u32 %p3, %r0, 6;
    @%p3 bra MB4_OR;
    setp.eq.u32 %p3, %r0, 7;
    @%p3 bra MB4_XOR;
    bra.uni MB4_END;
MB4_FETCH:
    ld.relaxed.sys.global.b32 %r4, [%rd6];
    bra.uni MB4_END;
MB4_SWAP:
    atom.sys.global.exch.b32 %r4, [%rd6], %r2;
    bra.uni MB4_END;
MB4_CAS:
    atom.sys.global.cas.b32 %r4, [%rd6], %r3, %r2;
    bra.uni MB4_END;
MB4_ADD:
    atom.sys.global.add.u32 %r4, [%rd6], %r2;
    bra.uni MB4_END;
MB4_AND:
    atom.sys.global.and.b32 %r4, [%rd6], %r2;
    bra.uni MB4_END;
MB4_OR:
    atom.sys.global.or.b32 %r4, [%rd6], %r2;
    bra.uni MB4_END;
MB4_XOR:
    atom.sys.global.xor.b32 %r4, [%rd6], %r2;
MB4_END:
    cvt.u64.u32 %rd9, %r4;

MB_DONE:
    st.volatile.global.u64 [%rd0+72], %rd9;
    st.release.sys.global.u64 [%rd0+80], %rd3;
MB_RAN:
    st.release.sys.global.u64 [%rd0+88], %rd2;
    ret;
}
)PTX";

}  // namespace

const char* atomic_ptx() { return kAtomicPtx; }

}  // namespace vshmem::detail
