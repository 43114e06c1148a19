"""`pip install .`: libseam, its backend plug-ins and the Python package
seam, built by CMake and put into one wheel.

The wheel's package folder holds the extension _seam, the .py files,
libseam.so.N (the extension finds it through its RUNPATH, $ORIGIN) and the
plug-ins libseam_NAME.so found next to libseam. The C dependencies
(oneDNN, OpenBLAS, protobuf-c, jansson) stay the system's: install them
first (scripts/setup.sh, Debian's packages). Without build isolation, as
Debian's pip runs offline:

    pip install --no-build-isolation .

SEAM_BUILD_DIR=DIR takes an already built CMake tree instead of building
one (the test command does, then installs the wheel into a fresh venv).
SEAM_CMAKE_ARGS adds arguments to the CMake configure.
"""
import glob
import os
import re
import shlex
import shutil
import subprocess

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))


def version():
    with open(os.path.join(HERE, "CMakeLists.txt")) as f:
        return re.search(r"project\(seam VERSION ([0-9.]+)", f.read()).group(1)


def run(cmd):
    print("setup.py:", " ".join(shlex.quote(c) for c in cmd), flush=True)
    subprocess.run(cmd, check=True)


class CMakeBuild(build_ext):
    """Builds (or takes) the CMake tree, installs it into a stage folder and
    copies the package's files from there."""

    def build_extension(self, ext):
        build = os.environ.get("SEAM_BUILD_DIR")
        temp = os.path.abspath(self.build_temp)
        if build:
            build = os.path.abspath(build)
            if not os.path.exists(os.path.join(build, "CMakeCache.txt")):
                raise RuntimeError(f"SEAM_BUILD_DIR={build} is not a CMake build folder")
        else:
            build = os.path.join(temp, "cmake")
            run(["cmake", "-S", HERE, "-B", build, "-DCMAKE_BUILD_TYPE=Release", "-DSEAM_PYTHON=ON",
                 *shlex.split(os.environ.get("SEAM_CMAKE_ARGS", ""))])
            run(["cmake", "--build", build, "-j", str(os.cpu_count() or 1)])
        stage = os.path.join(temp, "stage")
        shutil.rmtree(stage, ignore_errors=True)
        run(["cmake", "--install", build, "--prefix", stage])
        pkg_src = glob.glob(os.path.join(stage, "lib*", "**", "seam", "_seam*.so"), recursive=True)
        if len(pkg_src) != 1:
            raise RuntimeError(f"the CMake install put no single seam/_seam*.so under {stage}: {pkg_src}")
        pkg_src = os.path.dirname(pkg_src[0])
        out = os.path.dirname(os.path.abspath(self.get_ext_fullpath(ext.name)))
        os.makedirs(out, exist_ok=True)
        for f in os.listdir(pkg_src):
            if f.endswith(".py") or f.endswith(".so"):
                shutil.copy2(os.path.join(pkg_src, f), os.path.join(out, f))
        libdir = os.path.dirname(glob.glob(os.path.join(stage, "lib*", "**", "libseam.so"), recursive=True)[0])
        soname = subprocess.run(["objdump", "-p", os.path.join(libdir, "libseam.so")], capture_output=True,
                                text=True, check=True).stdout
        soname = re.search(r"SONAME\s+(\S+)", soname).group(1)
        shutil.copyfile(os.path.realpath(os.path.join(libdir, "libseam.so")), os.path.join(out, soname))
        for plugin in glob.glob(os.path.join(libdir, "libseam_*.so")):
            if not os.path.basename(plugin).startswith("libseam_report"):
                shutil.copyfile(os.path.realpath(plugin), os.path.join(out, os.path.basename(plugin)))


# setuptools' scratch away from CMake's build/: build-wheel/, or under
# SEAM_BUILD_DIR when that tree is taken
SCRATCH = os.path.join(os.path.abspath(os.environ["SEAM_BUILD_DIR"]), "wheel", "setuptools") \
    if os.environ.get("SEAM_BUILD_DIR") else os.path.join(HERE, "build-wheel")
os.makedirs(SCRATCH, exist_ok=True)

setup(
    options={"build": {"build_base": SCRATCH}, "egg_info": {"egg_base": SCRATCH}},
    version=version(),
    packages=["seam"],
    package_dir={"seam": "python/seam"},
    ext_modules=[Extension("seam._seam", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
)
