"""The bytecode verifier: what every engine may assume about a Module (STYLE.md §2, rule 6).

ARCHITECTURE.md "The bytecode": decoding validates types, index ranges, nesting, register
counts and resource limits before anything runs, and engines trust the result; a
violation an engine meets later is a verifier bug, fixed here with a test. This module
checks the module and function level; ``verify_decls`` a Code's side tables;
``verify_code`` its instructions (a one-pass validator after WebAssembly's) with the
rules the opcode table states per opcode, ``verify_mma`` those of MMA instructions;
``verify_base`` holds what they share.

What a verified module guarantees, besides the Python types of every value and that every
enumerated field holds one of its enum's values (``schema``):
- every span lies in its source file (lines and columns that exist), so messages can quote it;
- every index an instruction or table holds is in range (-1 only where the opcode table's
  "?" or the model allows it), every opcode is known and unused operand slots are 0;
- IF/ELSE/LOOP/END nest, each opener stores the index of its ELSE/END and each END its
  opener's, BREAK_IF/CONTINUE_IF sit inside a LOOP (EXECUTION.md §4); every ONCE is
  followed by its effect block (``IF`` on its result, no ELSE, straight-line code without
  blocking, collective or ONCE instructions);
- register dtypes follow the table (``Op.types``): arithmetic, logic, shifts and
  comparisons take computation types only and tie their operands and result, so only CVT
  and the memory ops convert; CONST loads a constant of its register's dtype; index,
  extent, origin, padding, grid, block-size, lane, block-index and event-slot registers
  are s32; UPDATE computes in its value's dtype, the computation type of the element's
  and the value's;
- every constant holds a value of its dtype: an int in range, 0/1 for bool, a float the
  dtype represents exactly;
- host-only ops are only in host code, kernel-only ops only in kernels; lane sets are
  straight-line register code, and every collective site names one;
- index lists match the rank of what they index wherever the module states it: shape
  registers, the parameter or (kernel) launch-bound host buffer behind a slot, the
  future's declared shape;
- DMAs copy between one element type and rank (§9.2) and fill futures of their element
  type, rank, destination storage and async-ness; SWAP exchanges futures of one type;
  DMA-owned buffers have shape registers;
- MMA ops name fragments of the right role and element type, views of rank 2 and, where
  the module states them statically, tile extents that agree (``verify_mma``);
- parameters, symbolic dimensions, launch bindings and return opcodes agree with the
  function's signature (§14.3);
- a kernel's block size is static (1..1024) or 0, and then every launch of it names an
  s32 host register holding it (a launch of a static one names none);
- limits: grid rank 1..3, at most 65536 registers per Code, static
  shared memory (buffers with constant extents plus 8-byte event slots) at most 228 KiB.

Every failure is ``BytecodeError("malformed .cqb: function 'f', kernel 0 ('k'),
instruction 12 (IF): ...")``.
"""
from __future__ import annotations

from croqvm.core.dtypes import BY_CODE
from croqvm.core.source import line_starts
from croqvm.core.limits import (EVENT_SLOT_BYTES, MAX_BLOCK_SIZE, MAX_SHARED_BYTES, buffer_bytes,
                           shared_limit_message)

from . import schema
from .module import FORMAT_VERSION, Function, Module, ParamKind, RetKind, Storage
from .verify_base import MAX_GRID_RANK, CodeCtx, Where, known_registers, lookup, want_reg
from .verify_decls import check_code, want_dtype

MAX_EXTENT = 2**31 - 1             # a static extent is an 'int' (s32, LANGUAGE.md §3.1)
_VERIFIED = "_verified"            # a key of a Module's __dict__: see ``verified``


def verify(module: Module) -> None:
    """Raise BytecodeError unless ``module`` is well-formed, Python types included."""
    if isinstance(module, Module):      # it may have changed since it last passed
        module.__dict__.pop(_VERIFIED, None)
    for _ in schema.plain_pieces(module):    # the types, a function at a time
        pass
    check_semantics(module)


def check_semantics(module: Module) -> None:
    """Everything but the Python types, which ``schema`` has checked; a module that
    passes is ``verified``."""
    module.__dict__.pop(_VERIFIED, None)
    top = Where("module")
    if module.version != FORMAT_VERSION:
        top.fail(f"format version {module.version}, expected {FORMAT_VERSION}")
    lines = [_Lines(text) for _, text in module.sources]
    for s, span in enumerate(module.spans):
        _check_span(top.at(f"span {s}"), module, lines, span)
    _check_calls(top, module)
    _check_cxx(top, module)
    seen = set()
    for fn in module.functions:
        if fn.name in seen:
            Where(f"function '{fn.name}'").fail("a second function of this name")
        seen.add(fn.name)
        _check_function(module, fn)
    module.__dict__[_VERIFIED] = True


def verified(module: Module) -> bool:
    """Whether ``module`` passed the verifier: ``verify``, or the decoder and the encoder,
    which check the types as they go (croqvm.bytecode.cqb). Whoever verifies a module
    hands it over finished, so an engine given a verified one need not verify it again."""
    return module.__dict__.get(_VERIFIED, False)


def _check_calls(top: Where, module: Module) -> None:
    """Each span lies in at most one call, and following calls outwards ends (a span is
    never inside itself)."""
    caller = {}
    for i, (span, call) in enumerate(module.calls):
        at = top.at(f"call {i}")
        lookup(at, "span", span, module.spans)
        lookup(at, "span", call, module.spans)
        if span in caller:
            at.fail(f"span {span} is inside two calls")
        caller[span] = call
    for span in caller:
        seen = {span}
        while span in caller:
            span = caller[span]
            if span in seen:
                top.fail(f"the calls around span {span} form a cycle")
            seen.add(span)


def _check_cxx(top: Where, module: Module) -> None:
    """C++ functions (§6.10.4): named once, of scalar dtypes, with source text to compile."""
    names = set()
    for i, fn in enumerate(module.cxx):
        at = top.at(f"C++ function {i} ('{fn.name}')")
        if not fn.name.isidentifier() or fn.name in names:
            at.fail("a name that is not an identifier, or a second function of this name")
        names.add(fn.name)
        for code in fn.params + ([fn.ret] if fn.ret != -1 else []):
            if code not in BY_CODE:
                at.fail(f"dtype code {code} is not a dtype")
    if module.cxx and not module.cxx_source:
        top.fail("C++ functions without their source text")


class _Lines:
    """The lines of a source text as ``text.split("\\n")`` sees them, by their lengths
    alone (a source of megabytes is not copied line by line)."""

    def __init__(self, text: str):
        self.starts, self.size = line_starts(text), len(text)

    def __len__(self) -> int:
        return len(self.starts)

    def width(self, n: int) -> int:
        """The length of line ``n`` (0-based) without its newline."""
        end = self.starts[n + 1] - 1 if n + 1 < len(self.starts) else self.size
        return end - self.starts[n]


def _check_span(at: Where, module: Module, lines: list, span) -> None:
    """A span lies in its source file, so that every message can quote it: lines 1..n,
    columns from 1 to one past the end of their line, and its end not before its start."""
    f, line, col, end_line, end_col = span
    lookup(at, "source file", f, module.sources)
    text = lines[f]
    if not 1 <= line <= end_line <= len(text) or \
            not 1 <= col <= text.width(line - 1) + 1 or \
            not 1 <= end_col <= text.width(end_line - 1) + 1 or \
            (line == end_line and end_col < col):
        at.fail(f"{tuple(span)} does not lie in source file {f} ({len(text)} lines)")


def _check_function(module: Module, fn: Function) -> None:
    where = Where(f"function '{fn.name}'")
    host = CodeCtx(module, fn, fn.host, None, where.at("host"))
    lookup(where, "span", fn.span, module.spans)
    if fn.ret_kind != RetKind.VOID:
        want_dtype(where.at("return dtype"), fn.ret_dtype)
    for k, kernel in enumerate(fn.kernels):
        _check_kernel(host.beside(kernel.code, kernel,
                                  where.at(f"kernel {k} ('{kernel.name}')")), k)
    check_code(host)
    for p, param in enumerate(fn.params):
        _check_param(host, where.at(f"parameter {p} ('{param.name}')"), p, param)
    names = set()
    for name, reg in fn.dims:
        at = where.at(f"symbolic dimension '{name}'")
        if name in names:
            at.fail("bound twice")
        names.add(name)
        want_reg(host, at, reg, "index", "register")


def _check_param(host: CodeCtx, at: Where, p: int, param) -> None:
    if param.kind == ParamKind.STREAM:
        return      # ignored by every engine (§14.3.1)
    dtype = want_dtype(at, param.dtype)
    if param.kind == ParamKind.SCALAR:
        if param.shape:
            at.fail(f"a scalar parameter with shape {param.shape}")
        if want_reg(host, at, param.slot, "any", "slot") is not dtype:
            at.fail(f"slot r{param.slot} is not a {dtype.name} register")
        return
    if not param.shape:
        at.fail("a buffer parameter needs a shape of rank >= 1")
    for item in param.shape:
        if (type(item) is int and not 1 <= item <= MAX_EXTENT) or item == "":
            at.fail(f"shape item {item!r} (expected an extent in 1..{MAX_EXTENT}, a name or '?')")
    buf = lookup(at, "buffer", param.slot, host.code.buffers)
    if buf.param != p:
        at.fail(f"slot {param.slot} ('{buf.name}') is not bound to this parameter")


def _check_kernel(cx: CodeCtx, k: int) -> None:
    kernel, where = cx.kernel, cx.where
    if not 0 <= kernel.block_size <= MAX_BLOCK_SIZE:
        where.fail(f"block size {kernel.block_size} out of range (0 for one given by each "
                   f"launch, else 1..{MAX_BLOCK_SIZE})")
    if not 1 <= kernel.grid_rank <= MAX_GRID_RANK:
        where.fail(f"grid rank {kernel.grid_rank} out of range (1..{MAX_GRID_RANK})")
    bounds = kernel.launch_bounds
    if len(bounds) > 3 or any(b < (1 if i else 0) for i, b in enumerate(bounds)):
        where.fail(f"launch bounds {bounds} (expected up to 3 counts: threads, 0 for the "
                   f"block size, then minimum blocks and maximum cluster size, >= 1)")
    if kernel.maxnreg < 0:
        where.fail(f"maxnreg {kernel.maxnreg} is negative")
    lookup(where, "span", kernel.span, cx.module.spans)
    check_code(cx)
    used = _static_shared_bytes(cx, k)
    if used > MAX_SHARED_BYTES:
        where.fail(shared_limit_message(used))


def static_shared_bytes(module: Module, fn: Function) -> list[int]:
    """The shared memory every block of each kernel of ``fn`` needs at least: what the
    limit is checked on (lowering reports it at the kernel's source position first)."""
    where = Where(f"function '{fn.name}'")
    host = CodeCtx(module, fn, fn.host, None, where.at("host"))
    return [_static_shared_bytes(host.beside(kernel.code, kernel,
                                             where.at(f"kernel {k} ('{kernel.name}')")), k)
            for k, kernel in enumerate(fn.kernels)]


def _static_shared_bytes(cx: CodeCtx, k: int) -> int:
    """Shared memory a block needs at least: event slots, and shared buffers whose
    extents are constants (skipped when an extent is only known at run time)."""
    code = cx.code
    total = EVENT_SLOT_BYTES * sum(ev.slots for ev in code.events)
    known = known_registers(cx)
    for buf in code.buffers:
        extents = [known.get(reg) for reg in buf.shape]
        if buf.storage != Storage.SHARED or not extents or None in extents or min(extents) < 1:
            continue
        total += buffer_bytes(BY_CODE[buf.dtype].bits, buf.count, extents)
    return total
