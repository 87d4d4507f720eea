// Element types and reduction operations as the package passes them (codes shared with
// vshmem/_dtypes.py).
#pragma once

namespace vshmem::python {

enum class Dtype : int {
  kInt8 = 0,
  kInt16,
  kInt32,
  kInt64,
  kUint8,
  kUint16,
  kUint32,
  kUint64,
  kFloat32,
  kFloat64,
  kFloat16,
  kBfloat16,
};
constexpr int kDtypeCount = 12;
enum class ReduceOp : int { kSum = 0, kProd, kMin, kMax, kAnd, kOr, kXor };
constexpr int kReduceOpCount = 7;

}  // namespace vshmem::python
