"""Statements: blocks, control flow, assignments and the simple statements of LANGUAGE.md
§6.1 (§6.5 control flow, §6.6 assignments, §6.7 ``inthreads``, §6.9 output).

``statement`` is where error recovery happens: a syntax error anywhere inside a statement
unwinds to the innermost enclosing ``statement`` call, which skips the rest of it
(``Cursor.recover``) and returns None. Declarations, loops and device statements live in
``parse_decl``, ``parse_loops`` and ``parse_device``; this module dispatches to them.
"""
from __future__ import annotations

from croqvm.core.intrinsics import ATOMIC

from . import ast
from .parse_base import SyntaxAbort
from .parse_decl import TYPE_WORDS
from .suggest import C_FOR, CUDA, did_you_mean
from .tokens import EOF, KEYWORD, NAME, OP, STRING

# Statement keywords and the method parsing each statement they start.
_KEYWORD_STATEMENTS = {
    "parallel": "_parallel", "with": "_with", "foreach": "_foreach",
    "if": "_if", "else": "_stray_else", "while": "_while", "inthreads": "_inthreads",
    "wait": "_wait", "trigger": "_trigger", "swap": "_swap", "rotate": "_swap",
    "sync": "_sync", "__bar_sync": "_named_barrier", "__bar_arrive": "_named_barrier",
    "dma": "_dma", "tma": "_dma", "mma": "_mma",
    "break": "_jump", "continue": "_jump", "yield": "_jump", "return": "_return",
    "print": "_print", "println": "_print", "assert": "_assert",
    "global": "_storage_decl", "shared": "_storage_decl", "local": "_storage_decl",
    "mutable": "_mutable_decl", "ituple": "_typed_decl", "mdspan": "_typed_decl",
    "event": "_event_decl", "frag": "_frag_decl", "apply": "_apply",
    "copy": "_frag_op", "reduce_sum": "_frag_op", "reduce_max": "_frag_op",
    "all_reduce_sum": "_frag_op",
    "call": "_call_stmt", "__asm__": "_asm", "asm": "_asm",
    **{w: "_typed_decl" for w in TYPE_WORDS},
    **{a.name: "_call_statement" for a in ATOMIC},
}

_JUMPS = {"break": ast.Break, "continue": ast.Continue, "yield": ast.Yield}

# ``x op= e`` is written as two tokens, ``op`` then ``=`` (§2.4.1).
_COMPOUND = frozenset("+-*/%")

# Statements a value from ``dma``/``tma``/``mma`` can be assigned from (§9.1, §11.1).
_VALUE_STATEMENTS = {"dma": "_dma", "tma": "_dma", "mma": "_mma"}

# Fragment statements (§11.7) and their argument counts. The reference reserves the words
# of its own (above); ``reduce_min`` and ``all_reduce_max|min`` stay names that start a
# statement only when a '(' follows.
FRAG_OPS = {"copy": 2, "mma.load": 2, "reduce_sum": 3, "reduce_max": 3, "reduce_min": 3,
            "all_reduce_sum": 1, "all_reduce_max": 1, "all_reduce_min": 1}


class StmtParser:
    # ---------------------------------------------------------------- blocks

    def statement(self) -> ast.Stmt | None:
        """One statement, or None after a reported syntax error (the rest is skipped)."""
        start = self.pos
        try:
            with self.nested():
                return self._statement()
        except SyntaxAbort:
            self.recover(start)
            return None

    def block(self) -> ast.Block:
        open_ = self.expect_op("{", "syntax error: expected '{' to open a block.")
        stmts = []
        with self.nested():
            while not self.at_op("}") and self.tok.kind != EOF:
                s = self.statement()  # consumes at least one token, even when it fails
                if s is not None:
                    stmts.append(s)
        self.expect_close(open_)
        return ast.Block(stmts, self.span_from(open_))

    def body(self) -> ast.Stmt:
        """The body of a compound statement: a block or one statement (§6.1 ``body``)."""
        start = self.tok
        if self.at_op("{"):
            return self.block()
        s = self.statement()
        return s if s is not None else ast.Empty(self.span_from(start))

    def _statement(self) -> ast.Stmt:
        t = self.tok
        if t.is_op(";"):
            self.advance()
            return ast.Empty(t.span)
        if t.is_op("{"):
            return self.block()
        if t.is_op("++", "--"):
            return self._prefix_incdec()
        if t.is_op("[") and self.peek().is_op("["):
            return self._attributed()
        if t.kind == KEYWORD and t.value in _KEYWORD_STATEMENTS:
            return getattr(self, _KEYWORD_STATEMENTS[t.value])()
        if t.kind == KEYWORD and self.peek().kind != NAME:  # ``by = 1;``, not ``auto x``
            self.reserved_word()
        if t.kind == NAME:
            return self._name_statement()
        self.fail(f"syntax error: unexpected {t.describe()}, expecting a statement.")

    # ---------------------------------------------------------------- attributes

    def _attributed(self) -> ast.Stmt:
        """``[[launch_bounds(...)]] [[maxnreg(n)]] parallel ...`` (§6.2.5) and
        ``[[schedule(k_tiles(...))]]`` before an MMA execution (§11.6), as the reference
        grammar has them (lib/parser.yy ``pb_attribute``, ``mma_schedule_attribute``)."""
        attrs = []
        while self.at_op("[") and self.peek().is_op("["):
            attrs.append(self._attribute())
        start = self.tok
        stmt = self._statement()
        for a in attrs:
            if a.name == "schedule":
                if not isinstance(stmt, ast.MmaExec):
                    self.fail("[[schedule(k_tiles(...))]] only applies to an MMA execution "
                              "statement.", self.span_from(start))
                if stmt.k_order is not None:
                    self.fail("syntax error: '[[schedule]]' is written twice.", a.span)
                stmt.k_order = [int(x.value) for x in a.args]
                stmt.k_order_span = a.span
            elif not isinstance(stmt, ast.Parallel):
                self.fail(f"syntax error: '[[{a.name}]]' applies to a 'parallel' statement "
                          f"only.", a.span)
            elif any(b.name == a.name for b in stmt.attrs):
                self.fail(f"syntax error: '[[{a.name}]]' is written twice.", a.span)
            else:
                stmt.attrs.append(a)
        return stmt

    def _attribute(self) -> ast.Attribute:
        open_ = self.advance()
        self.advance()
        name = self.name()
        if name.value == "schedule":
            self.expect_op("(", "syntax error: expected '(' after 'schedule', as in "
                                "'[[schedule(k_tiles(1, 0))]]'.")
            inner = self.name()
            if inner.value != "k_tiles":
                self.fail("syntax error: expected 'k_tiles' inside the MMA schedule "
                          "attribute.", inner.span)
            self.expect_op("(", "syntax error: expected '(' after 'k_tiles'.")
            args = self.comma_list(self._issue_order_entry)
            self.expect_op(")", "syntax error: expected ')' to close 'k_tiles('.")
        elif name.value in ("launch_bounds", "maxnreg"):
            self.expect_op("(", f"syntax error: expected '(' after '{name.value}'.")
            args = self.comma_list(self.expr)
        else:
            self.fail(f"syntax error: unknown attribute '{name.value}'; the attributes are "
                      f"'schedule', 'launch_bounds' and 'maxnreg'.", name.span)
        self.expect_op(")", f"syntax error: expected ')' to close '{name.value}('.")
        for _ in range(2):
            self.expect_op("]", "syntax error: expected ']]' to close the attribute.")
        return ast.Attribute(str(name.value), args, self.span_from(open_))

    def _issue_order_entry(self):
        if self.at_op("-"):
            self.fail("mma issue order entries must be non-negative.")
        return self.int_literal("a K tile index")

    # ---------------------------------------------------------------- control flow

    def _paren_cond(self, keyword: str) -> ast.Expr:
        open_ = self.expect_op("(", f"syntax error: expected '(' after '{keyword}'.")
        cond = self.expr()
        self.expect_close(open_)
        return cond

    def _if(self) -> ast.Stmt:
        start = self.advance()
        cond = self._paren_cond("if")
        then = self.body()
        other = self.body() if self.accept_kw("else") else None
        return ast.If(cond, then, other, self.span_from(start))

    def _stray_else(self):
        self.fail("'else' without a previous 'if'.")

    def _while(self) -> ast.Stmt:
        start = self.advance()
        cond = self._paren_cond("while")
        return ast.While(cond, self.body(), self.span_from(start))

    def _inthreads(self) -> ast.Stmt:
        start = self.advance()
        is_async = self.accept_dotted("async") is not None
        cond = self._paren_cond("inthreads.async" if is_async else "inthreads")
        return ast.Inthreads(is_async, cond, self.body(), self.span_from(start))

    def _jump(self) -> ast.Stmt:
        t = self.advance()
        self.end_statement()
        return _JUMPS[t.value](self.span_from(t))

    def _return(self) -> ast.Stmt:
        start = self.advance()
        value = None if self.at_op(";") else self.expr()
        self.end_statement()
        return ast.Return(value, self.span_from(start))

    # ---------------------------------------------------------------- output, assert

    def _print(self) -> ast.Stmt:
        start = self.advance()
        args = self.paren_args(start.value)
        self.end_statement()
        return ast.Print(start.value == "println", args, self.span_from(start))

    def _assert(self) -> ast.Stmt:
        start = self.advance()
        open_ = self.expect_op("(", "syntax error: expected '(' after 'assert'.")
        cond = self.expr()
        self.expect_op(",", "syntax error: expected ',' and a message string after the "
                            "condition of 'assert'.")
        if self.tok.kind != "STRING":
            self.fail(f"syntax error: unexpected {self.tok.describe()}, expecting a string "
                      f"(the message of 'assert').")
        message = str(self.advance().value)
        self.expect_close(open_)
        self.end_statement()
        return ast.Assert(cond, message, self.span_from(start))

    def _call_statement(self) -> ast.Stmt:
        start = self.tok
        call = self.postfix_expr()
        self.end_statement()
        return ast.BuiltinStmt(call, self.span_from(start))

    def _asm(self) -> ast.Stmt:
        """``(__asm__|asm) [volatile] ( "text" [: outputs [: inputs [: clobbers]]] );``
        (§6.11): GNU extended assembly, without ``goto``."""
        start = self.advance()
        volatile = False
        if self.tok.value == "volatile" and self.tok.kind in (NAME, KEYWORD):
            self.advance()
            volatile = True
        if self.tok.value == "goto" and self.tok.kind in (NAME, KEYWORD):
            self.fail("syntax error: __asm__ goto is not supported.")
        open_ = self.expect_op("(", f"syntax error: invalid __asm__ syntax: expected '(' "
                                    f"after '{start.value}'.")
        if self.tok.kind != STRING:
            self.fail("syntax error: invalid __asm__ syntax: expected the template string.")
        template = str(self.advance().value)
        sections: list[list] = []
        colons = 0
        while len(sections) < 3:
            colons += self._asm_colons()
            if colons <= len(sections):
                break
            item = self._asm_clobber if len(sections) == 2 else self._asm_operand
            items = []
            if not (self.at_op(":") or self.at_op("::") or self.at_op(")")):
                items.append(item())
                while self.accept_op(","):
                    items.append(item())
            sections.append(items)
        if colons > 3 or self.at_op(":") or self.at_op("::"):
            self.fail("syntax error: invalid __asm__ syntax: at most three ':' sections "
                      "(outputs, inputs, clobbers).")
        self.expect_close(open_)
        self.end_statement()
        sections += [[]] * (3 - len(sections))
        return ast.Asm(volatile, template, sections[0], sections[1],
                       [str(c) for c in sections[2]], self.span_from(start))

    def _asm_colons(self) -> int:
        """The ':' here (0, 1, or 2 for a '::' token)."""
        if self.accept_op(":"):
            return 1
        if self.accept_op("::"):
            return 2
        return 0

    def _asm_operand(self) -> ast.AsmOperand:
        start = self.tok
        name = None
        if self.accept_op("["):
            name = str(self.name("the operand's symbolic name").value)
            self.expect_op("]", "syntax error: invalid __asm__ syntax: expected ']' after "
                                "the operand's name.")
        if self.tok.kind != STRING:
            self.fail("syntax error: invalid __asm__ syntax: expected an operand's "
                      "constraint string, as in '\"r\"(x)'.")
        constraint = str(self.advance().value)
        open_ = self.expect_op("(", "syntax error: invalid __asm__ syntax: expected '(' and "
                                    "the operand after its constraint.")
        e = self.expr()
        self.expect_close(open_)
        return ast.AsmOperand(name, constraint, e, self.span_from(start))

    def _asm_clobber(self) -> str:
        if self.tok.kind != STRING:
            self.fail("syntax error: invalid __asm__ syntax: a clobber is a string, as in "
                      "'\"memory\"'.")
        return str(self.advance().value)

    def _call_stmt(self) -> ast.Stmt:
        start = self.tok
        call = self.device_call()
        self.end_statement()
        return ast.CallStmt(call, self.span_from(start))

    # ---------------------------------------------------------------- assignments

    def _prefix_incdec(self) -> ast.Stmt:
        op = self.advance()
        target = self.name(f"a name after '{op.value}'")
        self.end_statement()
        return ast.IncDec(op.value, ast.Name(str(target.value), target.span), True,
                          self.span_from(op))

    def _name_statement(self) -> ast.Stmt:
        """``x = e;``, ``x op= e;``, ``b.at(i) op= e;``, ``x++;`` and ``f = dma...;``."""
        start = self.tok
        if start.value == "for" and self.peek().is_op("("):
            return self._c_for()
        if start.value in FRAG_OPS and self.peek().is_op("("):
            return self._frag_op()
        if self.peek().kind == NAME:  # ``s33 x = 1;``: a declaration with a misspelt type
            self.fail(f"syntax error: unknown type '{start.value}'.",
                      hint=did_you_mean(str(start.value), _KEYWORD_STATEMENTS))
        if self.peek().is_op(":"):  # ``sp : [a, b];``: an mdspan, its keyword left out
            return self._scalar_decl(start, False, ast.TypeRef("mdspan", start.span))
        if self.peek().is_op("=") and self.peek(2).kind == KEYWORD \
                and self.peek(2).value in _VALUE_STATEMENTS:
            target = ast.Name(str(start.value), start.span)
            self.advance()
            self.advance()
            return getattr(self, _VALUE_STATEMENTS[self.tok.value])(target, start)
        target = self.postfix_expr()
        if isinstance(target, ast.Postfix):
            return self._postfix_incdec(target, start)
        if isinstance(target, ast.Call) and not self.at_op("="):
            self.fail(f"syntax error: '{target.func}(...)' is not a statement: Croqtile "
                      f"functions can not call each other.", target.func_span,
                      CUDA.get(target.func) or did_you_mean(target.func, _KEYWORD_STATEMENTS))
        op = self._assign_op()
        if not isinstance(target, (ast.Name, ast.ElemAccess)):
            self.fail("syntax error: only a name or an element 'b.at(...)' can be assigned.",
                      target.span)
        value = self.expr()
        self.end_statement()
        return ast.Assign(target, op, value, self.span_from(start))

    # ---------------------------------------------------------------- fragments (§11.7)

    def _frag_decl(self) -> ast.Stmt:
        """``frag T[shape] f [{v}], ...;``: a buffer in the lane's registers;
        ``frag[.T] mc[d0]... {v};``: an accumulator, or an array of them, filled with
        ``v`` (lib/parser.yy ``mma_stmt``)."""
        start = self.advance()
        if self.at_op(".") or self.tok.kind == NAME:
            return self._frag_accumulator(start)
        dtype = self.type_ref()
        if not self.at_op("["):
            self.fail_after(f"syntax error: expected '[' and the shape of the fragment after "
                            f"'{dtype.name}'.")
        decl = self._buffer_decl(start, "local", dtype)
        decl.frag = True
        return decl

    def _frag_accumulator(self, start) -> ast.Stmt:
        dtype = self.type_ref().name if self.accept_op(".") else None
        target = self._name_node()
        dims = []
        while self.accept_op("["):
            dims.append(self.expr())
            self.expect_op("]", "syntax error: expected ']' after the extent of the fragment "
                                "array.")
        self.expect_op("{", f"syntax error: expected '{{' and the fill value of accumulator "
                            f"'{target.id}'.")
        value = self.expr()
        self.expect_op("}", "syntax error: expected '}' after the fill value.")
        self.end_statement()
        return ast.MmaFill(target, dtype, value, True, self.span_from(start), dims=dims,
                           frag_form=True)

    def _apply(self) -> ast.Stmt:
        start = self.advance()
        within = self._within()
        return ast.Apply(within, self.body(), self.span_from(start))

    def _frag_op(self) -> ast.Stmt:
        start = self.advance()
        args = self.paren_args(start.value)
        self.end_statement()
        return ast.FragOp(str(start.value), args, self.span_from(start))

    def _assign_op(self) -> str:
        if self.accept_op("="):
            return "="
        t = self.tok
        if t.kind == OP and t.value in _COMPOUND and self.peek().is_op("="):
            self.advance()
            self.advance()
            return t.value + "="
        self.fail(f"syntax error: unexpected {t.describe()}, expecting '=' or a compound "
                  f"assignment such as '+='.")

    def _c_for(self) -> ast.Stmt:
        """C's ``for (init; cond; step) body``: one error, then the loop is skipped whole
        (its header would otherwise give an error per clause)."""
        start = self.advance()
        self._report("syntax error: 'for' is not a Croqtile statement.", start.span, C_FOR)
        self.skip_brackets()
        self.body()
        return ast.Empty(self.span_from(start))

    def _postfix_incdec(self, target: ast.Postfix, start) -> ast.Stmt:
        if not isinstance(target.operand, ast.Name):
            self.fail(f"syntax error: '{target.op}' applies to a name only.", target.span)
        self.end_statement()
        return ast.IncDec(target.op, target.operand, False, self.span_from(start))
