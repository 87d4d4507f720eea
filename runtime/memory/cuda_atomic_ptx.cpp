// Host-issued atomics on device memory must be atomic with respect to device atomics on the same
// word, which a copy engine cannot promise; a one-thread kernel doing atom.sys can. The kernels are
// PTX text, JIT-compiled by the driver (cuModuleLoadData), so libvshmem needs no nvcc-built
// object and runs on any sm_70+ device. A unit test runs ptxas on this text. With the inbound
// mailbox (vshmem/device/impl/proxy_mailbox.h) the provider launches vshmem_mailbox_serve instead,
// which performs whatever request (an atomic, or a copy of up to 4 KiB) is pending in the mailbox
// unless a waiting kernel claimed it. The text is generated once, from one ladder of the atomics
// for both widths and both kernels.
#include <string>

#include "runtime/memory/cuda_provider.hpp"

namespace vshmem::detail {
namespace {

// The operations of the ladders below, by the PTX they emit at a width of `b` bits (r: result,
// a: address, o: operand, c: compare).
enum class Op { kFetch, kSwap, kCompareSwap, kAdd, kAnd, kOr, kXor };
struct Rung {
  unsigned code;  // the value of the operation register that selects it
  Op op;
  const char* name;
};

std::string instruction(Op op, int b, const std::string& r, const std::string& a,
                        const std::string& o, const std::string& c) {
  const std::string w = std::to_string(b);
  switch (op) {
    case Op::kFetch: return "ld.relaxed.sys.global.b" + w + " " + r + ", [" + a + "];";
    case Op::kSwap: return "atom.sys.global.exch.b" + w + " " + r + ", [" + a + "], " + o + ";";
    case Op::kCompareSwap:
      return "atom.sys.global.cas.b" + w + " " + r + ", [" + a + "], " + c + ", " + o + ";";
    case Op::kAdd: return "atom.sys.global.add.u" + w + " " + r + ", [" + a + "], " + o + ";";
    case Op::kAnd: return "atom.sys.global.and.b" + w + " " + r + ", [" + a + "], " + o + ";";
    case Op::kOr: return "atom.sys.global.or.b" + w + " " + r + ", [" + a + "], " + o + ";";
    case Op::kXor: return "atom.sys.global.xor.b" + w + " " + r + ", [" + a + "], " + o + ";";
  }
  return "";
}

// One dispatch on the operation register `sel` over `rungs`, at width b, then one label per rung
// (label prefix `tag`) whose instruction writes `r` and continues at `done`. An unknown value
// runs `unknown` (e.g. "ret;" or a branch). One generator for every width and both kernels: the
// 4- and 8-byte ladders were written out twice each.
template <size_t N>
std::string ladder(const std::string& tag, int b, const std::string& sel, const Rung (&rungs)[N],
                   const std::string& r, const std::string& a, const std::string& o,
                   const std::string& c, const std::string& done, const std::string& unknown) {
  std::string out;
  for (const Rung& g : rungs) {
    out += "    setp.eq.u32 %p3, " + sel + ", " + std::to_string(g.code) + ";\n";
    out += "    @%p3 bra " + tag + "_" + g.name + ";\n";
  }
  out += "    " + unknown + "\n";
  for (const Rung& g : rungs) {
    out += tag + "_" + g.name + ":\n    " + instruction(g.op, b, r, a, o, c) + "\n";
    out += "    bra.uni " + done + ";\n";
  }
  return out;
}

// The standalone kernels' numbering (AtomicPtxOp) and the mailbox's (proxy::AtomicCode, where
// set and swap are one exchange).
constexpr Rung kPtxOps[] = {{0, Op::kFetch, "FETCH"},     {1, Op::kSwap, "SWAP"},
                            {2, Op::kCompareSwap, "CAS"}, {3, Op::kAdd, "ADD"},
                            {4, Op::kAnd, "AND"},         {5, Op::kOr, "OR"},
                            {6, Op::kXor, "XOR"}};
constexpr Rung kMailboxOps[] = {{0, Op::kFetch, "FETCH"}, {1, Op::kSwap, "SET"},
                                {2, Op::kSwap, "SWAP"},   {3, Op::kCompareSwap, "CAS"},
                                {4, Op::kAdd, "ADD"},     {5, Op::kAnd, "AND"},
                                {6, Op::kOr, "OR"},       {7, Op::kXor, "XOR"}};

// vshmem_atomic_b32 / _b64. Parameters: address, operand, compare, result (a u64 in device
// memory: the fetched value, zero-extended), op (AtomicPtxOp). Unknown ops store nothing and leave
// memory alone.
std::string atomic_kernel(int b) {
  const std::string k = "vshmem_atomic_b" + std::to_string(b);
  const bool narrow = b == 32;
  std::string out = ".visible .entry " + k + "(\n    .param .u64 " + k +
                    "_addr,\n    .param .u64 " + k + "_operand,\n    .param .u64 " + k +
                    "_compare,\n    .param .u64 " + k + "_result,\n    .param .u32 " + k +
                    "_op\n)\n{\n";
  out += "    .reg .pred %p<8>;\n    .reg .b32 %r<4>;\n    .reg .b64 %rd<8>;\n\n";
  out += "    ld.param.u64 %rd0, [" + k + "_addr];\n    ld.param.u64 %rd1, [" + k +
         "_operand];\n    ld.param.u64 %rd2, [" + k + "_compare];\n    ld.param.u64 %rd3, [" + k +
         "_result];\n    ld.param.u32 %r0, [" + k + "_op];\n";
  out += "    cvta.to.global.u64 %rd0, %rd0;\n    cvta.to.global.u64 %rd3, %rd3;\n";
  if (narrow) out += "    cvt.u32.u64 %r1, %rd1;\n    cvt.u32.u64 %r2, %rd2;\n";
  const std::string tag = narrow ? "B32" : "B64";
  out += ladder(tag, b, "%r0", kPtxOps, narrow ? "%r3" : "%rd4", "%rd0", narrow ? "%r1" : "%rd1",
                narrow ? "%r2" : "%rd2", tag + "_DONE", "ret;");
  out += tag + "_DONE:\n";
  if (narrow) out += "    cvt.u64.u32 %rd4, %r3;\n";
  out += "    st.global.u64 [%rd3], %rd4;\n    ret;\n}\n";
  return out;
}

// The inbound mailbox's fallback kernel: proxy::mailbox_fallback (vshmem/device/impl/
// proxy_mailbox.h) in PTX, with the Mailbox offsets that header asserts. Parameters: the mailbox
// (device-mapped host memory), the claim word (GPU memory), the launch number.
constexpr char kMailboxHead[] = R"PTX(
.visible .entry vshmem_mailbox_serve(
    .param .u64 vshmem_mailbox_serve_box,
    .param .u64 vshmem_mailbox_serve_claimed,
    .param .u64 vshmem_mailbox_serve_launch
)
{
    .reg .pred %p<4>;
    .reg .b16 %rs<2>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<24>;

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
    setp.eq.u32 %p2, %r0, 8;
    @%p2 bra MB_COPY;
    setp.eq.u32 %p2, %r1, 4;
    @%p2 bra MB4;
)PTX";

// A copy (aop 8, proxy::kMailboxCopy): compare (%rd8) bytes from operand (%rd7) to address
// (%rd6); 8-byte words, eight loads before their stores, when all three are multiples of 8.
constexpr char kMailboxTail[] = R"PTX(
MB4:
    cvt.u32.u64 %r2, %rd7;
    cvt.u32.u64 %r3, %rd8;
    mov.u32 %r4, 0;
)PTX";

constexpr char kMailboxCopy[] = R"PTX(
MB_COPY:
    cvta.to.global.u64 %rd7, %rd7;
    or.b64 %rd10, %rd6, %rd7;
    or.b64 %rd10, %rd10, %rd8;
    and.b64 %rd10, %rd10, 7;
    setp.ne.u64 %p3, %rd10, 0;
    @%p3 bra MBC_BYTES;
MBC_EIGHT:
    setp.lt.u64 %p3, %rd8, 64;
    @%p3 bra MBC_WORD;
    ld.global.u64 %rd11, [%rd7+0];
    ld.global.u64 %rd12, [%rd7+8];
    ld.global.u64 %rd13, [%rd7+16];
    ld.global.u64 %rd14, [%rd7+24];
    ld.global.u64 %rd15, [%rd7+32];
    ld.global.u64 %rd16, [%rd7+40];
    ld.global.u64 %rd17, [%rd7+48];
    ld.global.u64 %rd18, [%rd7+56];
    st.global.u64 [%rd6+0], %rd11;
    st.global.u64 [%rd6+8], %rd12;
    st.global.u64 [%rd6+16], %rd13;
    st.global.u64 [%rd6+24], %rd14;
    st.global.u64 [%rd6+32], %rd15;
    st.global.u64 [%rd6+40], %rd16;
    st.global.u64 [%rd6+48], %rd17;
    st.global.u64 [%rd6+56], %rd18;
    add.u64 %rd6, %rd6, 64;
    add.u64 %rd7, %rd7, 64;
    sub.u64 %rd8, %rd8, 64;
    bra.uni MBC_EIGHT;
MBC_WORD:
    setp.eq.u64 %p3, %rd8, 0;
    @%p3 bra MB_DONE;
    ld.global.u64 %rd11, [%rd7];
    st.global.u64 [%rd6], %rd11;
    add.u64 %rd6, %rd6, 8;
    add.u64 %rd7, %rd7, 8;
    sub.u64 %rd8, %rd8, 8;
    bra.uni MBC_WORD;
MBC_BYTES:
    setp.eq.u64 %p3, %rd8, 0;
    @%p3 bra MB_DONE;
    ld.global.u8 %rs0, [%rd7];
    st.global.u8 [%rd6], %rs0;
    add.u64 %rd6, %rd6, 1;
    add.u64 %rd7, %rd7, 1;
    sub.u64 %rd8, %rd8, 1;
    bra.uni MBC_BYTES;
)PTX";

constexpr char kMailboxEnd[] = R"PTX(
MB_DONE:
    st.volatile.global.u64 [%rd0+72], %rd9;
    st.release.sys.global.u64 [%rd0+80], %rd3;
MB_RAN:
    st.release.sys.global.u64 [%rd0+88], %rd2;
    ret;
}
)PTX";

std::string mailbox_kernel() {
  std::string out = kMailboxHead;
  // 8 bytes: operand %rd7, compare %rd8, old value %rd9.
  out += ladder("MB8", 64, "%r0", kMailboxOps, "%rd9", "%rd6", "%rd7", "%rd8", "MB_DONE",
                "bra.uni MB_DONE;");
  out += kMailboxTail;
  // 4 bytes: operand %r2, compare %r3, old value %r4, zero-extended into %rd9 at MB4_END.
  out += ladder("MB4", 32, "%r0", kMailboxOps, "%r4", "%rd6", "%r2", "%r3", "MB4_END",
                "bra.uni MB4_END;");
  out += "MB4_END:\n    cvt.u64.u32 %rd9, %r4;\n    bra.uni MB_DONE;\n";
  out += kMailboxCopy;
  out += kMailboxEnd;
  return out;
}

std::string make_ptx() {
  std::string out = "\n.version 7.0\n.target sm_70\n.address_size 64\n\n";
  out += atomic_kernel(32);
  out += "\n";
  out += atomic_kernel(64);
  out += mailbox_kernel();
  return out;
}

}  // namespace

const char* atomic_ptx() {
  static const std::string ptx = make_ptx();
  return ptx.c_str();
}

}  // namespace vshmem::detail
