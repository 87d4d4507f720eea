// LD_PRELOAD shim over the real PMIx_Get that keeps values the way OpenPMIx 5's client does
// (gds/hash): the first value a process fetches for a peer's key is served again on every later
// PMIx_Get of that key, even after the peer put a new value and all fenced (openpmix issues 3368,
// 3738). Debian's PMIx 4.2 serves the new value, so without this shim CI cannot see what the PMIx
// bootstrap plugin meets on Ubuntu 24.04 (Open MPI 4.1.6 on OpenPMIx 5).
//
// VSHMEM_TEST_PMIX_CACHE selects the behaviour, for keys starting with "vshmem." only:
//   until-refresh  a PMIx_Get with PMIX_GET_REFRESH_CACHE=true fetches again (OpenPMIx >= 5.0.2)
//   always         the first copy is served forever, refresh or not (issue 3738)
//   unsupported    the first copy is served forever and a get with PMIX_GET_REFRESH_CACHE
//                  fails with PMIX_ERR_NOT_SUPPORTED (Open MPI 4.1.6 on Ubuntu 24.04)
// Unset or anything else: every call goes straight to PMIx.
#include <dlfcn.h>
#include <pmix.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace {

using GetFn = pmix_status_t (*)(const pmix_proc_t*, const char[], const pmix_info_t[], size_t,
                                pmix_value_t**);

std::mutex g_mutex;
std::map<std::string, std::vector<char>> g_kept;  // "nspace/rank/key" -> bytes

pmix_value_t* byte_value(const std::vector<char>& bytes) {
  auto* v = static_cast<pmix_value_t*>(std::calloc(1, sizeof(pmix_value_t)));
  v->type = PMIX_BYTE_OBJECT;
  v->data.bo.size = bytes.size();
  v->data.bo.bytes = static_cast<char*>(std::malloc(bytes.empty() ? 1 : bytes.size()));
  if (!bytes.empty()) std::memcpy(v->data.bo.bytes, bytes.data(), bytes.size());
  return v;
}

bool asks_refresh(const pmix_info_t info[], size_t ninfo) {
  for (size_t i = 0; i < ninfo; ++i) {
    if (PMIX_CHECK_KEY(&info[i], PMIX_GET_REFRESH_CACHE) && PMIX_INFO_TRUE(&info[i])) return true;
  }
  return false;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) pmix_status_t PMIx_Get(const pmix_proc_t* proc,
                                                                         const char key[],
                                                                         const pmix_info_t info[],
                                                                         size_t ninfo,
                                                                         pmix_value_t** val) {
  static GetFn real = reinterpret_cast<GetFn>(::dlsym(RTLD_NEXT, "PMIx_Get"));
  if (real == nullptr) return PMIX_ERR_NOT_SUPPORTED;
  const char* mode = std::getenv("VSHMEM_TEST_PMIX_CACHE");
  const bool until_refresh = mode != nullptr && std::strcmp(mode, "until-refresh") == 0;
  const bool unsupported = mode != nullptr && std::strcmp(mode, "unsupported") == 0;
  const bool always = unsupported || (mode != nullptr && std::strcmp(mode, "always") == 0);
  if ((!until_refresh && !always) || proc == nullptr || key == nullptr ||
      std::strncmp(key, "vshmem.", 7) != 0) {
    return real(proc, key, info, ninfo, val);
  }
  const std::string id =
      std::string(proc->nspace) + "/" + std::to_string(proc->rank) + "/" + std::string(key);
  if (unsupported && asks_refresh(info, ninfo)) return PMIX_ERR_NOT_SUPPORTED;
  const bool refresh = until_refresh && asks_refresh(info, ninfo);
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    auto it = g_kept.find(id);
    if (it != g_kept.end() && !refresh) {
      *val = byte_value(it->second);
      return PMIX_SUCCESS;
    }
  }
  pmix_status_t rc = real(proc, key, info, ninfo, val);
  if (rc == PMIX_SUCCESS && *val != nullptr && (*val)->type == PMIX_BYTE_OBJECT) {
    std::lock_guard<std::mutex> lock(g_mutex);
    const char* b = (*val)->data.bo.bytes;
    g_kept[id].assign(b, b + (*val)->data.bo.size);
  }
  return rc;
}
