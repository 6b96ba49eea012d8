"""Device regions (LANGUAGE.md §14.2.1): the body, lowered where the region stands. An
asynchronous region runs to completion there, one of the schedules the program allows
(as ``parallel.async`` launches do, §14.2)."""
from __future__ import annotations

from croqvm.lang import ast

from .state import Lowerer


def lower_device_region(lw: Lowerer, s: ast.DeviceRegion) -> None:
    lw.body(s.body)


TABLE = {ast.DeviceRegion: lower_device_region}
