"""Installs the package the CMake build assembled in build/python/accel (the SWIG
module _core.so, its core.py and the pure-Python layer): build first, then
`pip install ./bindings/python`. ACCEL_PYTHON_BUILD names another build's python/ folder."""
import os
import re

from setuptools import setup
from setuptools.dist import Distribution

here = os.path.dirname(os.path.abspath(__file__))
built = os.environ.get("ACCEL_PYTHON_BUILD", os.path.join(here, "..", "..", "build", "python"))
package = os.path.relpath(os.path.join(built, "accel"), here)
if not os.path.exists(os.path.join(here, package, "core.py")):
    raise SystemExit(f"no built binding in {os.path.join(here, package)}: run scripts/build.sh first")
with open(os.path.join(here, "..", "..", "include", "accel", "accel.h")) as f:
    version = ".".join(re.findall(r'#define ACCEL_VERSION_(?:MAJOR|MINOR|PATCH) +(\d+)', f.read()))


class BinaryDistribution(Distribution):
    def has_ext_modules(self):  # _core.so makes the wheel platform-specific
        return True


setup(version=version or "0.0.0", packages=["accel"], package_dir={"accel": package},
      package_data={"accel": ["_core*.so", "*.pyi", "py.typed"]}, distclass=BinaryDistribution)
