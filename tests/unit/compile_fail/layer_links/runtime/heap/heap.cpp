// Fixture layer heap (see ../../CMakeLists.txt).
namespace vshmem::fixture {
int bootstrap();
int heap() { return bootstrap() + 1; }
}  // namespace vshmem::fixture
