// The owner of the unit tests' precompiled header (cmake/VshmemTesting.cmake): a program of its own
// so that the header is compiled with the unit tests' flags. It runs no test.
