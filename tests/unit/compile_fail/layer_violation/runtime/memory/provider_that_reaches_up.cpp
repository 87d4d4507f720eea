// A memory-layer file that includes the api layer: cmake/CheckLayers.cmake must reject it
// (tests/unit/config.cmake runs it on this tree and expects the failure).
#include "runtime/api/runtime.hpp"
#include "runtime/common/status.hpp"
