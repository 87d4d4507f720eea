// shmemx_get_uniqueid / shmemx_set_attr_uniqueid_args: the unique-ID start (the bootstrap side is
// runtime/bootstrap/uid_bootstrap.cpp; shmemx_init_attr starts the job).
#include <cstring>

#include "runtime/bootstrap/bootstrap.hpp"
#include "runtime/common/log.hpp"
#include "shmemx.h"

using namespace vshmem;

static_assert(sizeof(shmemx_uniqueid_t) == kUniqueIdBytes, "the ID is 128 bytes");

extern "C" {

int shmemx_get_uniqueid(shmemx_uniqueid_t* uid) {
  if (uid == nullptr) {
    log::message(log::Level::kError, "shmemx_get_uniqueid: uid is NULL");
    return 1;
  }
  unsigned char bytes[kUniqueIdBytes];
  Status st = make_unique_id(bytes);
  if (!st) {
    log::message(log::Level::kError, "shmemx_get_uniqueid: %s", st.message().c_str());
    return 1;
  }
  std::memcpy(uid, bytes, sizeof(bytes));
  return 0;
}

int shmemx_set_attr_uniqueid_args(int rank, int nranks, const shmemx_uniqueid_t* uid,
                                  shmemx_init_attr_t* attr) {
  if (uid == nullptr || attr == nullptr) {
    log::message(log::Level::kError, "shmemx_set_attr_uniqueid_args: %s is NULL",
                 uid == nullptr ? "uid" : "attr");
    return 1;
  }
  if (nranks < 1 || rank < 0 || rank >= nranks) {
    log::message(log::Level::kError, "shmemx_set_attr_uniqueid_args: rank %d is outside [0, %d)",
                 rank, nranks);
    return 1;
  }
  attr->uid_rank = rank;
  attr->uid_nranks = nranks;
  std::memmove(&attr->uid, uid, sizeof(*uid));
  return 0;
}

}  // extern "C"
