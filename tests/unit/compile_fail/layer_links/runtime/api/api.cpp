// Fixture layer api (see ../../CMakeLists.txt): the top layer, with an exported C entry point.
namespace vshmem::fixture {
int transport();
int api() { return transport() + 1; }
}  // namespace vshmem::fixture
extern "C" __attribute__((visibility("default"))) int shmem_fixture_my_pe() {
  return vshmem::fixture::api();
}
