#include "runtime/api/settings_check.hpp"

#include <algorithm>
#include <cstring>
#include <map>

#include "runtime/bootstrap/bootstrap_internal.hpp"
#include "runtime/common/log.hpp"

namespace vshmem::detail {
namespace {

constexpr size_t kValueBytes = 48;  // per setting on the wire; longer values are cut (and say so)

}  // namespace

Status check_settings_agree(Bootstrap& bootstrap, const std::vector<SharedSetting>& settings) {
  const int n = bootstrap.size();
  const size_t record = settings.size() * kValueBytes;
  if (n == 1 || record == 0) return Status::ok();
  std::vector<char> mine(record, '\0');
  for (size_t i = 0; i < settings.size(); ++i) {
    std::string v = settings[i].value;
    if (v.size() >= kValueBytes) v = v.substr(0, kValueBytes - 4) + "...";
    std::memcpy(mine.data() + i * kValueBytes, v.data(), v.size());
  }
  std::vector<char> all(record * static_cast<size_t>(n));
  VSHMEM_RETURN_IF_ERROR(bootstrap.allgather(mine.data(), all.data(), record));
  std::string problems;
  for (size_t i = 0; i < settings.size(); ++i) {
    // Value -> the PEs that have it, in order of first appearance.
    std::vector<std::pair<std::string, std::vector<int>>> groups;
    for (int pe = 0; pe < n; ++pe) {
      const char* v = all.data() + static_cast<size_t>(pe) * record + i * kValueBytes;
      std::string value(v, strnlen(v, kValueBytes));
      auto it = std::find_if(groups.begin(), groups.end(),
                             [&](const auto& g) { return g.first == value; });
      if (it == groups.end()) {
        groups.push_back({value, {pe}});
      } else {
        it->second.push_back(pe);
      }
    }
    if (groups.size() == 1) continue;
    std::string parts;
    for (const auto& [value, pes] : groups) {
      parts +=
          log::format("%sPE%s %s %s %s", parts.empty() ? "" : ", ", pes.size() > 1 ? "s" : "",
                      format_pe_list(pes).c_str(), pes.size() > 1 ? "have" : "has", value.c_str());
    }
    problems += log::format("%s%s differs between PEs (%s)", problems.empty() ? "" : "; ",
                            settings[i].name.c_str(), parts.c_str());
  }
  if (problems.empty()) return Status::ok();
  return error(Code::kInvalidArgument,
               problems +
                   "; it must be the same on every PE (set it in the launcher's "
                   "environment for all of them)");
}

}  // namespace vshmem::detail
