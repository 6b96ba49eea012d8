"""Build shim: setuptools reads the project metadata from pyproject.toml; the native
engine (croqvm._native) is a cffi extension built from native/ (build_native.py)."""
from setuptools import setup

setup(cffi_modules=["native/build_native.py:ffibuilder"])
