"""Device statements: DMA (LANGUAGE.md §9.1), MMA (§11.1), events (``wait``/``trigger``,
§10.1), ``swap``/``rotate`` (§9.6) and ``sync`` (§6.8)."""
from __future__ import annotations

from . import ast
from .parse_decl import TYPE_WORDS
from .tokens import KEYWORD

DMA_OPS = ("copy", "transp", "pad", "any")
TMA_OPS = ("copy", "load", "any")
SWIZZLE_BYTES = (32, 64, 128)
L2_HINTS = ("evict_first", "evict_last")     # TMA load cache policies (Croqtile: tma.md)
DMA_DESTINATIONS = ("shared", "local", "global")
MMA_OPS = ("fill", "load", "row", "col", "store", "commit", "scale")
MMA_ASSIGNED = ("fill", "load", "row", "col")  # the forms written ``x = mma...``
SYNC_KINDS = ("shared", "barrier", "fence", "global")
SYNC_WITH_LEVEL = ("barrier", "fence")
_LOAD_FORMS = ("syntax error: 'mma.load' must be assigned to a name, as in 'fa = mma.load "
               "sa;', or name its fragment, as in 'mma.load sa, f;'.")


class DeviceParser:
    # ---------------------------------------------------------------- DMA

    def _dma(self, target: ast.Name | None = None, start=None) -> ast.Stmt:
        start = start or self.tok
        kw = self.advance()
        tma = kw.value == "tma"
        if not tma and self.accept_dotted("load"):    # lib/parser.yy, dma_stmt
            self.fail("'.load' is a TMA-only operation.", self.prev.span,
                      hint="write 'tma.load', or 'dma.copy' for a copy by the DMA engine")
        op = self.expect_dotted(*(TMA_OPS if tma else DMA_OPS), after=kw.value)
        if op == "any":
            if target is None:
                self.fail(f"syntax error: '{kw.value}.any' makes a placeholder future and "
                          f"must be assigned to a name, as in 'f = {kw.value}.any;'.",
                          self.span_from(start))
            self.end_statement()
            return ast.DmaAny(target, self.span_from(start), tma)
        node = ast.Dma(target, op, False, False, None, tma, None, None, start.span)
        if op == "transp":
            node.perm = self._angle_ints("a dimension index of 'dma.transp<...>'")
        elif op == "pad":
            self._pad_args(node)
        self._dma_suffixes(node)
        node.src = self.expr()
        self.expect_op("=>", "syntax error: expected '=>' between the source and the "
                             "destination of the DMA.")
        if self.tok.kind == KEYWORD and self.tok.value in DMA_DESTINATIONS:
            node.dst = str(self.advance().value)
        else:
            node.dst = self.expr()
        self.end_statement()
        node.span = self.span_from(start)
        return node

    def _dma_suffixes(self, node: ast.Dma):
        """``.async``, ``.zfill``, ``.swiz<N>`` and, on TMA copies, ``.multicast`` in any
        order, each once; an L2 eviction hint (``.evict_first``/``.evict_last``) at most
        once and before ``.swiz``, and only on ``tma.load`` (lib/parser.yy, dma_attrib and
        dma_stmt)."""
        seen = set()
        while True:
            word = self.accept_dotted("async", "zfill", "swiz", "swizzle", "multicast",
                                      *L2_HINTS)
            if word is None:
                return
            if word in L2_HINTS:
                self._l2_hint(node, word, seen)
                continue
            if word in seen:
                self.fail(f"syntax error: '.{word}' is written twice.", self.prev.span)
            seen.add(word)
            if word == "async":
                if node.l2_hint is not None:
                    self.fail("TMA eviction modifier must follow '.async'.", self.prev.span,
                              hint=f"write '.async.{node.l2_hint}'")
                node.is_async = True
            elif word == "zfill":
                node.zfill = True
            elif word == "multicast":
                if not node.tma:
                    self.fail("'.multicast' is a TMA-only modifier.", self.prev.span,
                              hint="write 'tma.copy.multicast' or 'tma.load.multicast'")
                node.multicast = True
            else:
                node.swizzle = self._swizzle(word)

    def _l2_hint(self, node: ast.Dma, word: str, seen: set):
        where = self.prev.span
        if node.op != "load":
            self.fail("TMA L2 eviction modifiers are only valid on 'tma.load'.", where)
        if node.l2_hint is not None:
            self.fail("only one TMA eviction modifier is allowed.", where)
        if seen & {"swiz", "swizzle"}:
            self.fail("TMA eviction modifier must precede '.swiz'.", where,
                      hint=f"write '.{word}' before '.swiz<N>'")
        node.l2_hint = word

    def _swizzle(self, word: str) -> int | None:
        """``<N>``; a bare ``.swiz`` asks for no swizzle (lib/parser.yy, swiz_mode)."""
        if not self.tok.is_op("<"):
            return None
        self.advance()
        n = self.int_literal("the swizzle size (32, 64 or 128)")
        if int(n.value) not in SWIZZLE_BYTES:      # lib/parser.yy, swiz_value
            self.fail("swizzle value must be 128, 64, or 32", n.span,
                      hint="the swizzle sizes are 32, 64 and 128 bytes")
        self.expect_op(">", f"syntax error: expected '>' after the size of '.{word}<N>'.")
        return int(n.value)

    def _angle_ints(self, what: str) -> list[int]:
        open_ = self.expect_op("<", "syntax error: expected '<' and the permutation after "
                                    "'dma.transp', as in 'dma.transp<1, 0>'.")
        values = self.comma_list(lambda: int(self.int_literal(what).value))
        self.expect_op(">", f"syntax error: expected '>' to close '{open_.value}'.")
        return values

    def _pad_args(self, node: ast.Dma):
        """``<{lo...}, {hi...}, {mid...}, V>`` (§9.6.3)."""
        self.expect_op("<", "syntax error: expected '<' after 'dma.pad', as in "
                            "'dma.pad<{1, 1}, {1, 1}, {0, 0}, 0>'.")
        lists = []
        for _ in range(3):
            open_ = self.expect_op("{", None)
            lists.append(self.expr_list(open_))
            self.expect_op(",", "syntax error: 'dma.pad<...>' takes {lo...}, {hi...}, "
                                "{mid...} and the padding value, separated by ','.")
        node.pad_lo, node.pad_hi, node.pad_mid = lists
        node.pad_value = self.arithmetic_expr()
        self.expect_op(">", "syntax error: expected '>' after the padding value of "
                            "'dma.pad<...>'.")

    # ---------------------------------------------------------------- MMA

    def _mma(self, target: ast.Name | None = None, start=None) -> ast.Stmt:
        start = start or self.tok
        self.advance()
        op = self.expect_dotted(*MMA_OPS, after="mma")
        if target is not None and op not in MMA_ASSIGNED:
            self.fail(f"syntax error: 'mma.{op}' has no value to assign to '{target.id}'.",
                      self.prev.span)
        if target is None and op == "load":
            node = self._mma_load_into(start)
        else:
            node = getattr(self, _MMA_FORMS[op])(target, op)
        self.end_statement()
        node.span = self.span_from(start)
        return node

    def _mma_fill(self, target, _op) -> ast.Stmt:
        dtype = None
        word, _ = self.peek_dotted()
        if word is not None and word in TYPE_WORDS:
            dtype = self.accept_dotted(word)
        if target is not None:
            return ast.MmaFill(target, dtype, self.expr(), True, None)
        frag, elem = self._acc_ref()
        self.expect_op(",", "syntax error: expected ',' and the fill value after the "
                            "fragment of 'mma.fill'.")
        return ast.MmaFill(frag, dtype, self.expr(), False, None, elem=elem)

    def _mma_load(self, target, _op) -> ast.Stmt:
        swizzle = None
        self.accept_dotted("frag")      # a register operand: what every mma.load makes here
        word = self.accept_dotted("swiz", "swizzle")
        if word is not None:
            swizzle = self._swizzle(word)
        return ast.MmaLoad(target, self.expr(), swizzle, None)

    def _mma_load_into(self, start) -> ast.Stmt:
        """``mma.load[.frag] SRC, f;``: SRC into the existing register fragment ``f``
        (§11.7)."""
        self.accept_dotted("frag")
        if self.peek().is_op(";"):       # ``mma.load sa;``: said at '.load'
            self.fail(_LOAD_FORMS, self.prev.span)
        src = self.expr()
        self.expect_op(",", _LOAD_FORMS)
        return ast.FragOp("mma.load", [self._name_node(), src], start.span)

    def _mma_exec(self, target, first) -> ast.Stmt:
        second = self.expect_dotted("row", "col", after=f"mma.{first}")
        method = f"mma.{first}.{second}"
        word = self.accept_dotted("async", "scale", "sp")
        is_async = word == "async"
        if target is not None and not is_async:
            self.fail(f"syntax error: '{method}' has no value to assign to '{target.id}'; "
                      f"'{target.id} = {method}.async ...' makes an operation future.",
                      self.prev.span)
        if target is None and is_async:
            self.fail(f"syntax error: '{method}.async' must be assigned to a name, as in "
                      f"'f = {method}.async mc, a, b;'.", self.prev.span)
        c, elem = self._acc_ref()
        self.expect_op(",", "syntax error: expected ',' after the accumulator of the mma.")
        a = self.expr()
        self.expect_op(",", "syntax error: expected ',' between the operands of the mma.")
        b = self.expr()
        node = ast.MmaExec(f"{first}.{second}", c, a, b, None, future=target, c_elem=elem)
        if word == "scale":      # lib/parser.yy: mma_exec_method SCALE ... chunkat, s_expr
            node.scale = self._scale_operands(f"{method}.scale mc, a, b, rows, factor;")
        elif word == "sp":       # lib/parser.yy: mma_exec_method SPARSE ... frag_expr
            self.expect_op(",", f"syntax error: expected ',' and the metadata of the packed A "
                                f"operand, as in '{method}.sp mc, a, b, meta;'")
            node.sparse_meta = self.expr()
        return node

    def _scale_operands(self, form: str) -> list:
        """``, rows, factor`` of a scaled MMA (§11.8)."""
        missing = f"syntax error: expected ',' and the row scales and the factor, as in '{form}'"
        self.expect_op(",", missing)
        rows = self.expr()
        self.expect_op(",", missing)
        return [rows, self.expr()]

    def _mma_scale(self, _target, _op) -> ast.Stmt:
        """``mma.scale mc, rows, factor;`` (§11.8)."""
        frag = self._name_node()
        rows, factor = self._scale_operands("mma.scale mc, rows, factor;")
        return ast.MmaScale(frag, rows, factor, None)

    def _mma_store(self, _target, _op) -> ast.Stmt:
        """``mma.store[.transp|.mask|.async] mc, V[, rows[, columns]]`` (§11.1)."""
        word = self.accept_dotted("transp", "mask", "async")
        frag, elem = self._acc_ref()
        self.expect_op(",", "syntax error: expected ',' and the destination after the "
                            "fragment of 'mma.store'.")
        node = ast.MmaStore(word == "transp", frag, self.expr(), None, elem=elem)
        if word == "mask":
            self.expect_op(",", "syntax error: 'mma.store.mask' needs the number of rows to "
                                "store after the destination, as in "
                                "'mma.store.mask mc, V, rows;'.")
            node.guards = [self.expr()]
            if self.accept_op(","):
                node.guards.append(self.expr())
        return node

    def _mma_commit(self, _target, _op) -> ast.Stmt:
        return ast.MmaCommit(None)

    # ---------------------------------------------------------------- events, futures, sync

    def _wait(self) -> ast.Stmt:
        return self._refs_statement(ast.Wait)

    def _trigger(self) -> ast.Stmt:
        """``trigger ...`` (§10.1), or ``trigger.LEVEL ...``, of whose levels the
        reference's grammar accepts only ``cluster`` (§10.8)."""
        if not self.peek().is_op("."):
            return self._refs_statement(ast.Trigger)
        start = self.advance()
        self.advance()
        scope = self.tok
        if scope.kind == KEYWORD and scope.value in ("device", "term"):
            level = str(self.advance().value)   # levels of the reference's grammar, never
                                                # of a croqvm parallel-by
        else:
            level = self.level()
        if level != "cluster":      # lib/parser.yy, trigger_stmt
            self.fail("only 'cluster' scope is supported for trigger.", scope.span,
                      hint="'trigger.cluster e' arrives at 'e' in every block of the "
                           "cluster; 'trigger e' in the lane's own block")
        node = self._refs_statement(ast.Trigger, start)
        node.cluster = True
        return node

    def _refs_statement(self, make, start=None) -> ast.Stmt:
        """``wait a, b[i], c.at(k);`` or ``wait(a, b[i]);`` (§9.5.3, §10.1); ``trigger``
        may end with ``after f0, f1`` (§10.7). ``start``: the statement's first token when
        the caller has read it (``trigger.cluster``, §10.8)."""
        if start is None:
            start = self.advance()
        refs = self._operands(self._ref)
        if not refs:
            self.fail(f"syntax error: '{start.value}' needs at least one name.", self.prev.span)
        after = []
        if make is ast.Trigger and self.accept_kw("after"):
            after = self.comma_list(self._ref)
        elif self.at_kw("after"):
            self.fail("syntax error: only 'trigger' takes an 'after' clause, as in 'trigger "
                      "full after f;'.")
        self.end_statement()
        if after:
            return ast.Trigger(refs, self.span_from(start), after)
        return make(refs, self.span_from(start))

    def _operands(self, item) -> list[ast.Expr]:
        """The operands of ``wait``, ``trigger``, ``swap`` and ``rotate``, written bare
        (``wait a, b;``) or in parentheses (``wait(a, b);``)."""
        if self.at_op("("):
            return self.expr_list(self.advance(), item)
        return self.comma_list(item)

    def _ref(self) -> ast.Expr:
        ref = self._name_node()
        for index in self._subscripts():
            ref = ast.Index(ref, index, self.span_from(ref.span))
        if self.accept_dotted("at"):
            open_ = self.expect_op("(", "syntax error: expected '(' and the event order "
                                        "after '.at', as in 'wait full.at(order);'.")
            order = self.expr()
            self.expect_close(open_)
            ref = ast.EventAt(ref, order, self.span_from(ref.span))
        return ref

    def _swap(self) -> ast.Stmt:
        start = self.advance()
        names = self._operands(self._name_node)
        self.end_statement()
        return ast.Swap(start.value == "rotate", names, self.span_from(start))

    def _sync(self) -> ast.Stmt:
        start = self.advance()
        kind = self.expect_dotted(*SYNC_KINDS, after="sync")
        level = None
        if kind in SYNC_WITH_LEVEL:
            self.expect_op(":", f"syntax error: expected ':' and a level after 'sync.{kind}', "
                                f"as in 'sync.{kind} : block;'.")
            level = self.level()
        self.end_statement()
        return ast.Sync(kind, level, self.span_from(start))

    def _named_barrier(self) -> ast.Stmt:
        start = self.advance()
        args = self.paren_args(start.value)
        self.end_statement()
        return ast.NamedBarrier(start.value == "__bar_arrive", args, self.span_from(start))

    def _acc_ref(self) -> tuple[ast.Name, list[ast.Expr]]:
        """An accumulator: ``mc``, or an element ``mc[i][j]`` of an array of them
        (§11.7)."""
        name = self._name_node()
        subs = []
        while self.accept_op("["):
            subs.append(self.expr())
            self.expect_op("]", "syntax error: expected ']' after the subscript of the "
                                "fragment array.")
        return name, subs

    def _name_node(self) -> ast.Name:
        t = self.name()
        return ast.Name(str(t.value), t.span)


_MMA_FORMS = {"fill": "_mma_fill", "load": "_mma_load", "row": "_mma_exec", "col": "_mma_exec",
              "store": "_mma_store", "commit": "_mma_commit", "scale": "_mma_scale"}
