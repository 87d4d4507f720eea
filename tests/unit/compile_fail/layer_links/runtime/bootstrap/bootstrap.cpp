// Fixture layer bootstrap (see ../../CMakeLists.txt).
namespace vshmem::fixture {
int ipc();
int bootstrap() { return ipc() + 1; }
}  // namespace vshmem::fixture
