"""The bytecode module model (ARCHITECTURE.md "The bytecode").

A ``Module`` holds source files, a span table and functions. A ``Function`` has typed
parameters, a host program and kernels. Host programs and kernels are both ``Code``: a
flat instruction array (see ``opcodes``) plus the side tables its operands index. Side
tables hold only ints, strings and lists of ints -- every enumerated field an ``IntEnum``
defined once below -- so a C engine can run the same data (docs/CQB.md lists every record
field by field; ``native/cq_opcodes.h`` the enum values).

Conventions shared by every stage:
- A register index refers to ``Code.regs``, whose entries are dtype codes (croqvm.core.dtypes).
  Registers are per lane. A kernel's argument registers receive their value at launch.
- "-1" means "none" wherever an index is optional.
- Spans: ``Module.spans[i] = (file_index, line, col, end_line, end_col)``; a span inside
  an inlined call has its own index, paired with the call's in ``Module.calls``.
"""
from __future__ import annotations

from array import array
from dataclasses import field
from enum import IntEnum

from croqvm.core.records import dataclass

FORMAT_VERSION = 6       # 6: views with element strides, cluster-scope events and
                         # TRIGGER_CLUSTER, cluster extents of launches


# -- enumerations (the values are part of the format) --------------------------------------

class Storage(IntEnum):
    """Where a buffer or a future's data lives (§3.2)."""
    GLOBAL = 0
    SHARED = 1
    LOCAL = 2


class BaseKind(IntEnum):
    """What an ``Access`` or ``View`` is rooted at (§8)."""
    BUF = 0        # a buffer slot (element ``arr`` of a buffer array)
    FUT = 1        # the data a future refers to


class DmaOp(IntEnum):
    """The operation of a DMA statement (§9.1, §9.6)."""
    COPY = 0
    TRANSP = 1
    PAD = 2


class L2Hint(IntEnum):
    """The L2 cache policy a TMA load asks for (Croqtile: tma.md): a hint the interpreters
    record and the CUDA generator passes on; it changes no value."""
    NONE = 0
    EVICT_FIRST = 1
    EVICT_LAST = 2


SWIZZLES = (0, 32, 64, 128)     # swizzle sizes in bytes (0: none, §9.7)


class PieceKind(IntEnum):
    """A piece of a print format: a string of ``Code.strings`` or a register's value."""
    STR = 0
    REG = 1


class ParamKind(IntEnum):
    """A function parameter (§14.3.1)."""
    BUFFER = 0
    SCALAR = 1
    STREAM = 2     # accepted and ignored


class ParamStorage(IntEnum):
    """Whether a buffer parameter is copied back to the caller (§14.3.3)."""
    DEFAULT = 0
    GLOBAL = 1     # ``global``: results are copied back


class RetKind(IntEnum):
    """What a function returns (§14.3.4)."""
    VOID = 0
    BUFFER = 1
    SCALAR = 2


class FragRole(IntEnum):
    """The operand position of an MMA fragment (§11.3): ``MMA_EXEC acc, a, b``."""
    ACC = 0        # the accumulator C [M, N]
    A = 1          # the A operand: [M, K] (row) or [K, M] (col)
    B = 2          # the B operand: [N, K] (row) or [K, N] (col)


DYNAMIC = -1       # an extent known only at run time (FutureDecl.shape, FragDecl rows/cols)


@dataclass
class BufferDecl:
    """A buffer slot. ``shape`` lists registers holding the extents (read at ALLOC); a
    parameter (``param >= 0``) takes its shape from the bound array instead. ``array`` is
    the static shape of a buffer array (§8.5; [] for a single buffer)."""
    name: str                # for messages ("" for a hidden buffer)
    storage: Storage
    dtype: int               # element type (a dtype code)
    shape: list[int]         # s32 registers holding the extents, [] when bound elsewhere
    array: list[int] = field(default_factory=list)   # buffer-array extents, [] for one buffer
    param: int = -1          # the parameter bound to it, -1: none
    span: int = 0            # its declaration

    @property
    def count(self) -> int:
        n = 1
        for d in self.array:
            n *= d
        return n


@dataclass
class FutureDecl:
    """A future slot (§9.4); per lane it holds a handle: a view of some buffer instance,
    whether the last transfer was async, and whether it was waited. The declaration is
    the future's type, fixed by its first DMA (§9.4.4): element type, the storage of the
    data, whether its DMAs are async, and the shape of the data -- one entry per
    dimension, an extent or ``DYNAMIC`` when only known at run time (``FUT_DIM``). Every
    DMA filling it and every future swapped with it agree (the verifier checks)."""
    name: str
    dtype: int               # element type of its data
    storage: Storage         # where its data lives
    is_async: bool           # filled by async DMAs (then waited)
    shape: list[int]         # extent per dimension of its data, or DYNAMIC
    span: int = 0            # its declaration


@dataclass
class EventDecl:
    """A shared event with ``slots`` slots (§10). Arrivals per generation: ``count`` when
    >= 0 (``event<N>``), else the number of lanes in the union of ``lanesets`` (§10.2),
    times the blocks of a cluster when ``cluster`` (§10.8)."""
    name: str
    slots: int               # >= 1
    ready: bool = False      # every slot starts with one completed generation
    count: int = -1          # arrivals per generation, -1: from the lane sets
    lanesets: list[int] = field(default_factory=list)   # lane sets of its trigger statements
    span: int = 0            # its declaration
    cluster: bool = False    # named by TRIGGER_CLUSTER: a generation needs the arrivals
                             # of every block of the cluster, the count times its blocks


@dataclass
class FragDecl:
    """An MMA fragment (§11.2): one copy per unit of ``unit`` lanes (0: one per block,
    1: one per lane, 32: per warp, 128: per warpgroup). ``role`` is its operand position,
    ``dtype`` its element type, ``rows`` x ``cols`` the 2-D tile it holds as stored (an
    accumulator [M, N]; an operand as its view: A [M, K] or [K, M], B [N, K] or [K, N] by
    layout, §11.3). An extent is ``DYNAMIC`` where only known at run time: the first
    operation on each copy fixes it, and later ones must agree."""
    name: str                # the fragment, or the operand's source text for a hidden one
    role: FragRole
    dtype: int               # element type
    rows: int                # tile extents as stored, or DYNAMIC
    cols: int
    unit: int                # lanes per copy: 0 the block, 1, 32 or 128
    span: int = 0            # its first use


@dataclass
class Access:
    """An element access ``base.at(indices)`` (§8.6). ``base_kind`` is ``BUF`` (a buffer
    slot, ``arr`` a register holding the buffer-array index or -1) or ``FUT`` (the data of
    a future, indices relative to its view). ``text`` is how messages name it, e.g.
    ``sa[st]``."""
    base_kind: BaseKind
    base: int                # buffer slot or future
    arr: int                 # s32 register: index into a buffer array, -1: none
    indices: list[int]       # s32 registers, one per dimension of the base
    text: str = ""           # how messages name it


@dataclass
class View:
    """A view (§8.1): origin and extents in registers, relative to the base's own view
    (a buffer's whole extent, or a future's data)."""
    base_kind: BaseKind
    base: int                # buffer slot or future
    arr: int                 # s32 register: index into a buffer array, -1: none
    origin: list[int]        # s32 registers, one per dimension of the base
    extents: list[int]       # s32 registers, as many
    text: str = ""           # how messages name it
    swizzle: int = 0         # bytes of the swizzle mma.load reads it through (§9.7), 0: none
    # span_as (§8.3.3): the base's elements from row-major position R[flat] on, seen as
    # an array of extents ``space``, in which origin and extents count (a future's data
    # counts from its first element and must lie contiguous in its buffer)
    space: list[int] = field(default_factory=list)   # s32 registers of a reshape, empty: none
    flat: int = -1           # s32 register: where the reshape starts, -1: none
    shown: list[int] = field(default_factory=list)   # .sqz() (§8.3.4): shown dims, empty: all
    # element strides (§8.3.2): element ``origin + i`` lies at row-major position
    # R[flat] + sum((origin + i) * strides) of the base's memory; empty: none
    strides: list[int] = field(default_factory=list)  # s32 registers, one per dimension

    @property
    def shown_extents(self) -> list[int]:
        """The registers of the extents the view shows: its shape as an operand."""
        return [self.extents[k] for k in self.shown] if self.shown else self.extents


@dataclass
class DmaDesc:
    """One DMA statement (§9). The destination is ``dst_view`` when >= 0; else the buffer
    the future holds (if it holds data); else the statement's own buffer ``dst_buffer``,
    allocated on first use with its own shape registers, which the future then refers to
    (§9.4). Source and destination have one element type (§9.2). The ``DMA`` instruction
    names the collective site when the copy is one (§9.3). With ``swizzle`` the shared
    side (the destination when it is in shared memory, else the source) is addressed
    through the swizzle function of §9.7."""
    op: DmaOp
    src: int                 # view
    dst_view: int = -1       # view, -1: none
    dst_buffer: int = -1     # the statement's own buffer slot, -1: none
    future: int = -1         # the future it fills, -1: none
    is_async: bool = False
    zfill: bool = False      # clear the destination beyond the source (§9.5.1)
    perm: list[int] = field(default_factory=list)     # TRANSP: a permutation of the dimensions
    pad_lo: list[int] = field(default_factory=list)   # PAD: s32 registers per dimension
    pad_hi: list[int] = field(default_factory=list)
    pad_mid: list[int] = field(default_factory=list)
    pad_value: int = -1      # PAD: register of the element type, -1 otherwise
    text: str = ""           # "dma.copy", for messages
    tma: bool = False        # a TMA transfer between global and shared memory (§9.7)
    swizzle: int = 0         # bytes of the swizzle laying out the shared side (§9.7), 0: none
    l2_hint: L2Hint = L2Hint.NONE    # TMA load cache policy
    multicast: bool = False  # a TMA load into every block of the cluster (§9.7)


def dst_decl(code, desc: DmaDesc):
    """The declaration a DMA's destination has its type and storage from: its view's base,
    else the future's data, else the statement's own buffer (§9.4)."""
    if desc.dst_view >= 0:
        v = code.views[desc.dst_view]
        table = code.futures if v.base_kind == BaseKind.FUT else code.buffers
        return table[v.base]
    if desc.future >= 0:
        return code.futures[desc.future]
    return code.buffers[desc.dst_buffer]


def dst_storage(code, desc: DmaDesc) -> Storage:
    """Where a DMA's destination lives (``dst_decl``)."""
    return dst_decl(code, desc).storage


def swizzled_sides(code, desc: DmaDesc) -> tuple[int, int]:
    """The swizzle of a DMA's (source, destination) (§9.7): its shared side's, the
    destination when that is in shared memory, else the source."""
    if dst_storage(code, desc) == Storage.SHARED:
        return 0, desc.swizzle
    return desc.swizzle, 0


# The text of the barrier that ends a parallel region (§7.4): an instruction with the
# parallel statement's span, which closes it as END closes a block.
END_OF_PARALLEL = "barrier at end of parallel"


@dataclass
class CollSite:
    """Who takes part in a collective (§7.4): lanes in ``laneset`` that share the executing
    lane's unit of ``unit`` lanes (0: the whole block) and are not terminated."""
    laneset: int
    unit: int                # 0: the block, else lanes per instance
    text: str                # "dma.copy", "barrier at end of parallel", ...


@dataclass
class LaneSet:
    """A membership predicate evaluated for every lane of a block when the block starts:
    ``code`` (instructions, flat) runs with LANE giving the candidate lane and with the
    kernel's argument registers set; the lane belongs to the set when ``result`` is true.
    ``result`` = -1 means every lane of the block."""
    code: list[int] = field(default_factory=list)   # straight-line instructions
    result: int = -1         # bool register, -1: every lane


@dataclass
class PrintFormat:
    """Pieces printed back to back: (``STR``, string index) or (``REG``, register)."""
    pieces: list[tuple[PieceKind, int]]   # (STR, string) or (REG, register)
    newline: bool            # println


@dataclass
class AsmOperand:
    """An operand of inline assembly (§6.11): a register of the kernel, read (``"r"``),
    written (``"=r"``) or both (``"+r"``) as the constraint says; ``name`` is its symbolic
    name (``[dst]``), "" when it has none."""
    constraint: str
    reg: int
    name: str = ""


@dataclass
class AsmDecl:
    """``__asm__ [volatile] ("text" : outputs : inputs : clobbers)`` (§6.11): passed to the
    GPU's assembler as written; output operands first, then the inputs."""
    text: str
    volatile: bool
    outputs: list[AsmOperand]
    inputs: list[AsmOperand]
    clobbers: list[str]


@dataclass
class CxxCall:
    """A call of C++ device function ``func`` (``Module.cxx``, §6.10.4): ``args`` are
    registers of the parameters' dtypes, or for a pointer parameter buffer slots of its
    element dtype (the lane's instance, by its first element); ``result`` a register of the
    result's dtype, -1 for a void function."""
    func: int
    args: list[int]
    result: int = -1


@dataclass
class ExternCall:
    """A call of a function defined in no file of the program (LANGUAGE.md §6.10.6): the
    C++ compiler of the CUDA path resolves it, the interpreters fault when it runs.
    ``template_args`` is the text between ``<>`` as written ("" for none); ``args`` are
    registers, or buffer slots where ``buffers`` says so (passed as a pointer to the lane's
    instance)."""
    template_args: str
    args: list[int]
    buffers: list[bool]


@dataclass
class CxxFunc:
    """A C++ device function of ``Module.cxx_source`` that kernels call: its name, result
    dtype (-1 for void), parameter dtypes, and which parameters point to elements of
    their dtype (the others are scalars)."""
    name: str
    ret: int
    params: list[int]
    pointers: list[bool]


@dataclass
class Launch:
    """A kernel launch from a host program (§14.2). ``block`` is the host register holding
    the block's lane count when the kernel's ``block_size`` is 0 (given at launch), else
    -1; the engine checks the count is 1..MAX_BLOCK_SIZE when it launches (§6.3.6)."""
    kernel: int                           # index in Function.kernels
    grid: list[int]                       # s32 host registers: extent per grid dimension
    buffers: list[tuple[int, int]]        # (kernel buffer slot, host buffer slot)
    scalars: list[tuple[int, int]]        # (kernel register, host register)
    is_async: bool = False                # parallel.async: the host need not wait (§14.2)
    span: int = 0                         # the kernel's parallel statement
    block: int = -1                       # s32 host register: lanes per block, or -1
    stream: int = -1                      # parallel<s>: the index of stream parameter s;
                                          # -1: the default stream (§14.2)
    cooperative: bool = False             # block<cooperative>: all blocks resident at
                                          # once, as GRID_SYNC needs (§7.1.4)
    cluster: list[int] = field(default_factory=list)  # s32 host registers: the cluster's
                                          # extent per grid dimension (§6.3.7); empty: a
                                          # cluster of one block


@dataclass
class Const:
    """A constant of ``dtype`` (a dtype code): ``value`` is an int within the dtype's range
    for integer types, 0 or 1 for bool, and for float types a float (f64) that the dtype
    represents exactly (bf16, tf32 and fp8 values are rounded once, by lowering)."""
    dtype: int
    value: int | float


class Words(array):
    """A finished ``Code``'s instruction words, packed four bytes a word: lowering stores
    each Code so (a large program's instructions are most of its module), a module built
    or decoded otherwise holds plain lists. Either is a ``list[int]`` to the format and to
    its readers, which index and slice it; it equals a list of the same words."""
    __slots__ = ()

    def __new__(cls, words=()):
        return super().__new__(cls, "i", words)

    def __eq__(self, other):
        if isinstance(other, list):
            return len(self) == len(other) and self.tolist() == other
        return super().__eq__(other)

    def __ne__(self, other):
        return not self == other

    def __setitem__(self, index, value):    # a slice takes a list too, as a list's does
        if isinstance(index, slice) and not isinstance(value, array):
            value = array("i", value)
        super().__setitem__(index, value)

    def __copy__(self):         # array's own copies are plain arrays
        return Words(self)

    def __deepcopy__(self, memo):
        return Words(self)

    __hash__ = None


@dataclass
class Code:
    """A host program or a kernel: instructions and the side tables their operands index
    (operand kinds, croqvm.bytecode.opcodes)."""
    code: list[int] = field(default_factory=list)        # WIDTH words per instruction
    regs: list[int] = field(default_factory=list)        # dtype code per register
    reg_names: list[str] = field(default_factory=list)   # "" for temporaries
    consts: list[Const] = field(default_factory=list)
    strings: list[str] = field(default_factory=list)     # ASSERT messages, print text
    buffers: list[BufferDecl] = field(default_factory=list)
    futures: list[FutureDecl] = field(default_factory=list)
    events: list[EventDecl] = field(default_factory=list)
    frags: list[FragDecl] = field(default_factory=list)
    accesses: list[Access] = field(default_factory=list)
    views: list[View] = field(default_factory=list)
    dmas: list[DmaDesc] = field(default_factory=list)
    colls: list[CollSite] = field(default_factory=list)
    lanesets: list[LaneSet] = field(default_factory=list)
    prints: list[PrintFormat] = field(default_factory=list)
    launches: list[Launch] = field(default_factory=list)  # host programs only
    once_sites: int = 0      # ONCE sites, numbered 0 .. once_sites - 1
    asms: list[AsmDecl] = field(default_factory=list)    # inline assembly (kernels only)
    cxx_calls: list[CxxCall] = field(default_factory=list)   # calls of C++ functions
    extern_calls: list[ExternCall] = field(default_factory=list)   # calls of functions
                                                                   # defined in no file


@dataclass
class Kernel:
    """A kernel: SPMD code run by every lane of each block of the grid. ``block_size`` is
    the lanes per block, 1..MAX_BLOCK_SIZE, or 0 when every launch of the kernel gives it
    in a host register (``Launch.block``: a block-internal parallel bound known only on the
    host, §6.3.4). ``launch_bounds`` are the counts of ``[[launch_bounds(...)]]`` (§6.2.5):
    threads per block (0: the block size, known only at launch), then optionally the
    minimum blocks per multiprocessor and the maximum cluster size; empty without one."""
    name: str
    code: Code
    block_size: int                 # lanes per block; 0: given by each launch
    grid_rank: int                  # 1..3
    span: int = 0                   # the kernel's ``parallel`` statement
    launch_bounds: list[int] = field(default_factory=list)  # threads, min blocks, cluster
    maxnreg: int = 0                # ``[[maxnreg(n)]]``: registers per thread, 0: none


@dataclass
class Param:
    """A function parameter (§14.3). ``shape`` items are ints, symbolic names, or "?".
    ``slot`` is the host buffer slot (buffers) or host register (scalars); ``dtype`` is
    -1 for a stream."""
    name: str
    kind: ParamKind
    dtype: int               # element or scalar type, -1 for a stream
    shape: list = field(default_factory=list)   # BUFFER: per dimension an int, a name or "?"
    storage: ParamStorage = ParamStorage.GLOBAL
    slot: int = -1           # host buffer slot or host register, -1 for a stream


@dataclass
class Function:
    """A ``__co__`` function (§14.3): its signature, host program and kernels."""
    name: str
    params: list[Param]
    dims: list[tuple[str, int]]     # (symbolic dimension, s32 host register)
    ret_kind: RetKind
    ret_dtype: int                  # -1 for VOID
    host: Code
    kernels: list[Kernel] = field(default_factory=list)
    span: int = 0                   # the function's name


@dataclass
class Module:
    """A compiled program: what a ``.cqb`` file holds."""
    sources: list[tuple[str, str]]                  # (file name, text)
    spans: list[tuple[int, int, int, int, int]]     # (file, line, col, end line, end col)
    functions: list[Function]
    version: int = FORMAT_VERSION
    # Spans inside inlined ``__co_device__`` calls (§6.10): (span, span of the call it
    # lies in); a call inside a callee is itself such a span, so the pairs form a chain.
    calls: list[tuple[int, int]] = field(default_factory=list)
    # The C++ device functions kernels call (§6.10.4): their text, in file order, and
    # their signatures.
    cxx_source: str = ""
    cxx: list[CxxFunc] = field(default_factory=list)

    def function(self, name: str) -> Function | None:
        for fn in self.functions:
            if fn.name == name:
                return fn
        return None
