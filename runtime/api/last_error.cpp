// shmemx_last_error: the calling thread's last error message (runtime/common/log.cpp keeps it).
#include "runtime/common/log.hpp"
#include "shmemx.h"
#include "vshmem/device_hooks.h"

using namespace vshmem;

extern "C" {

const char* shmemx_last_error(void) { return log::last_error().c_str(); }
void shmemx_clear_last_error(void) { log::clear_last_error(); }
void vshmemi_set_last_error(const char* text) { log::set_last_error(text); }

}  // extern "C"
