// Fixture layer memory (see ../../CMakeLists.txt).
#ifdef PLANT_VIOLATION
// The api layer's exported C API, declared here instead of included (as if a log line wanted
// the PE number): the include check cannot see it, the link check must.
extern "C" int shmem_fixture_my_pe();
#endif
namespace vshmem::fixture {
int common();
int memory() {
#ifdef PLANT_VIOLATION
  return common() + shmem_fixture_my_pe();
#else
  return common() + 1;
#endif
}
}  // namespace vshmem::fixture
