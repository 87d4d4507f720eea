"""`python3 -m pip install .` from the source tree installs the Python package `vshmem` (offline:
setuptools and CMake only). The package's build lives in python/setup.py; this runs it from here."""
import os
import runpy

runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "python", "setup.py"),
               run_name="__main__")
