// Fixture layer transport (see ../../CMakeLists.txt).
namespace vshmem::fixture {
int heap();
int transport() { return heap() + 1; }
}  // namespace vshmem::fixture
