"""The lane-accurate reference interpreter (ARCHITECTURE.md "The machine model")."""
from .host import run_function

__all__ = ["run_function"]
