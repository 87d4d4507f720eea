// Fixture layer common (see ../../CMakeLists.txt).
namespace vshmem::fixture {
int common() { return 1; }
}  // namespace vshmem::fixture
