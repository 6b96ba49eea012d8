"""Build shim: setuptools reads the project metadata from pyproject.toml."""
from setuptools import setup

setup()
