"""Build shim: setuptools reads the project metadata from pyproject.toml; the native
engine (croqvm._native) is a cffi extension built from native/ (build_native.py).

``build_py`` also ships ``native/cq_numerics.h`` beside the CUDA runtime headers
(``croqvm/cuda/rt``): generated CUDA includes it when it is compiled, at run time. A
source checkout (and an editable install) reads it from ``native/`` directly.
"""
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


class BuildPy(build_py):
    def run(self):
        super().run()
        rt = Path(self.build_lib) / "croqvm" / "cuda" / "rt"
        rt.mkdir(parents=True, exist_ok=True)
        shutil.copy2(HERE / "native" / "cq_numerics.h", rt / "cq_numerics.h")


setup(cffi_modules=["native/build_native.py:ffibuilder"], cmdclass={"build_py": BuildPy})
