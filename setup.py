"""`pip install .`: the Python module dagsgd, its native part from a CMake build, and the data it
reads (datasets/, and the plotting library of what-if reports where tools/setup has fetched it)
inside the package, where the module looks first (docs/python.md).

The native part comes from $DAGSGD_BUILD_DIR, a configured build tree (e.g. build/dev), brought
up to date; without it from build/pip, configured here for this interpreter (CMake, Ninja and
the Debian packages of tools/setup).
"""

import os
import re
import shutil
import subprocess
import sys
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

ROOT = os.path.dirname(os.path.abspath(__file__))


def version():
    with open(os.path.join(ROOT, "CMakeLists.txt"), encoding="utf-8") as f:
        return re.search(r"project\(dagsgd VERSION ([0-9.]+)", f.read()).group(1)


class NativeFromCMake(build_ext):
    """_dagsgd*.so: the module target of a CMake build tree, copied into the package."""

    def build_extension(self, ext):
        build = os.environ.get("DAGSGD_BUILD_DIR")
        if build:
            build = os.path.abspath(build)
            if not os.path.isfile(os.path.join(build, "CMakeCache.txt")):
                sys.exit(f"DAGSGD_BUILD_DIR '{build}' is not a configured CMake build tree")
        else:
            build = os.path.join(ROOT, "build", "pip")
            if not os.path.isfile(os.path.join(build, "CMakeCache.txt")):
                subprocess.check_call([
                    "cmake", "-S", ROOT, "-B", build, "-G", "Ninja",
                    "-DCMAKE_BUILD_TYPE=Release", f"-DPython_EXECUTABLE={sys.executable}",
                    "-DDAGSGD_BUILD_TESTS=OFF", "-DDAGSGD_WITH_MPI=OFF", "-DDAGSGD_WITH_CUDA=OFF"])
        subprocess.check_call(["cmake", "--build", build, "--target", "dagsgd_python", "-j", "2"])
        name = "_dagsgd" + sysconfig.get_config_var("EXT_SUFFIX")
        built = os.path.join(build, "python", "dagsgd", name)
        if not os.path.isfile(built):
            sys.exit(f"'{built}' was not built: the build tree '{build}' is for another Python "
                     f"than {sys.executable} (configure it with -DPython_EXECUTABLE)")
        dest = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copyfile(built, dest)


class WithData(build_py):
    """The package with dagsgd/data/datasets and dagsgd/data/node_modules."""

    def run(self):
        super().run()
        data = os.path.join(self.build_lib, "dagsgd", "data")
        shutil.rmtree(data, ignore_errors=True)
        shutil.copytree(os.path.join(ROOT, "datasets"), os.path.join(data, "datasets"))
        for pkg in ("vega", "vega-lite", "vega-embed"):
            src = os.path.join(ROOT, "node_modules", pkg)
            script = os.path.join(src, "build", pkg + ".min.js")
            if not os.path.isfile(script):
                continue
            dest = os.path.join(data, "node_modules", pkg)
            os.makedirs(os.path.join(dest, "build"))
            shutil.copyfile(script, os.path.join(dest, "build", pkg + ".min.js"))
            for extra in ("LICENSE", "package.json"):
                if os.path.isfile(os.path.join(src, extra)):
                    shutil.copyfile(os.path.join(src, extra), os.path.join(dest, extra))


setup(
    name="dagsgd",
    version=version(),
    description="Trace, replay and what-if analysis of synchronous data-parallel SGD",
    python_requires=">=3.9",
    package_dir={"": "python"},
    packages=["dagsgd"],
    ext_modules=[Extension("dagsgd._dagsgd", sources=[])],
    cmdclass={"build_ext": NativeFromCMake, "build_py": WithData},
    zip_safe=False,
)
