"""Device regions of heterogeneous programs (LANGUAGE.md §14.2.1; Croqtile's hetero
target, tests/gpu/end2end/hetero_cpu_gpu*.co): ``parallel[.async] by 1 : device(cpu|gpu)``
around host code. croqvm runs every device on one machine, so a region is its body, run
by the host where it stands."""
from __future__ import annotations

from croqvm.lang import ast

from .consteval import const_value

DEVICES = ("cpu", "gpu")


def check_device_region(ck, s: ast.DeviceRegion):
    if ck.in_parallel or ck.fn.device:
        ck.error(s.level.span, "a 'device(...)' level is the outermost level: it can not "
                               "stand inside a parallel-by.")
    if s.device not in DEVICES:
        ck.error(s.level.span, f"unknown device '{s.device}': croqvm knows 'cpu' and 'gpu'.")
    if s.level.names or s.level.tuple_name:
        ck.error(s.level.span, "a 'device(...)' level has no parallel variable.",
                 hint="write 'parallel by 1 : device(...)'")
    bounds = s.level.bounds
    if len(bounds) != 1 or const_value(bounds[0]) != 1:
        ck.error(s.level.span, "croqvm runs one instance of a 'device(...)' level: write "
                               "'by 1'.")
    ck.body(s.body)


RULES = {ast.DeviceRegion: check_device_region}
