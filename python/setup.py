"""`python3 -m pip install ./python`, or `python3 -m pip install .` from the source tree's root
(whose setup.py runs this one): offline, setuptools and CMake only.

Builds vshmem with CMake (the extension needs libvshmem, and in CUDA builds the device library's
device link), then installs the package with libvshmem, its bootstrap plugins and vshmemrun inside
it (the extension finds libvshmem next to itself). Environment:
  VSHMEM_CMAKE_ARGS  extra CMake arguments, e.g. "-DVSHMEM_WITH_CUDA=OFF -DCMAKE_CUDA_ARCHITECTURES=90"
  VSHMEM_BUILD_DIR   an existing, configured build tree to build in (default: build/ under python/)
"""
import glob
import os
import shlex
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


class CMakeExtension(Extension):
    def __init__(self):
        super().__init__("vshmem._vshmem", sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build = os.environ.get("VSHMEM_BUILD_DIR") or os.path.join(HERE, "build", "cmake")
        args = ["-DCMAKE_BUILD_TYPE=Release", f"-DPython3_EXECUTABLE={sys.executable}",
                "-DVSHMEM_BUILD_TESTS=OFF", "-DVSHMEM_BUILD_BENCH=OFF",
                "-DVSHMEM_BUILD_EXAMPLES=OFF"]
        args += shlex.split(os.environ.get("VSHMEM_CMAKE_ARGS", ""))
        if not os.path.exists(os.path.join(build, "CMakeCache.txt")):
            subprocess.check_call(["cmake", "-S", ROOT, "-B", build] + args)
        jobs = str(os.cpu_count() or 2)
        subprocess.check_call(["cmake", "--build", build, "-j", jobs, "--target", "vshmem_python",
                               "vshmemrun"])
        for plugin in ("vshmem_bootstrap_mpi", "vshmem_bootstrap_pmix"):
            # Optional plugins: built when their libraries were found.
            subprocess.call(["cmake", "--build", build, "-j", jobs, "--target", plugin],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        out = os.path.dirname(os.path.abspath(self.get_ext_fullpath(ext.name)))
        os.makedirs(out, exist_ok=True)
        built = glob.glob(os.path.join(build, "python", "vshmem", "_vshmem*.so"))
        if not built:
            raise RuntimeError("the CMake build made no vshmem/_vshmem*.so (is pybind11 found?)")
        shutil.copy2(built[0], self.get_ext_fullpath(ext.name))
        for lib in glob.glob(os.path.join(build, "lib", "libvshmem.so*")):
            shutil.copy2(lib, out, follow_symlinks=True)
        plugins = glob.glob(os.path.join(build, "plugins", "*.so"))
        if plugins:
            os.makedirs(os.path.join(out, "plugins"), exist_ok=True)
            for p in plugins:
                shutil.copy2(p, os.path.join(out, "plugins"))
        os.makedirs(os.path.join(out, "bin"), exist_ok=True)
        shutil.copy2(os.path.join(build, "bin", "vshmemrun"), os.path.join(out, "bin"))


# Paths relative to where pip runs the setup script: python/ here, the root for the root's setup.py.
_pkg = os.path.relpath(os.path.join(HERE, "vshmem")).replace(os.sep, "/")

setup(
    name="vshmem",
    version="0.1.0",
    description="Symmetric NumPy arrays and PyTorch tensors over vshmem",
    packages=["vshmem"],
    package_dir={"vshmem": _pkg},
    # setuptools' own scratch space under python/build (the root's build/ is CMake's).
    options={"build": {"build_base": os.path.relpath(os.path.join(HERE, "build", "setuptools"))},
             "egg_info": {"egg_base": os.path.relpath(HERE)}},
    ext_modules=[CMakeExtension()],
    cmdclass={"build_ext": CMakeBuild},
    python_requires=">=3.8",
    zip_safe=False,
)
