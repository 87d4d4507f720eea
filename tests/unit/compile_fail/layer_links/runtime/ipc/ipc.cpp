// Fixture layer ipc (see ../../CMakeLists.txt).
namespace vshmem::fixture {
int memory();
int ipc() { return memory() + 1; }
}  // namespace vshmem::fixture
