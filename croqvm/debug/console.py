"""The debugger's command language and its text (``croqvm debug``): co-mock's commands
and spellings, so its scripts run unchanged, and the SPMD ones (focus, ``where``,
watchpoints, going back).

From a script every command is echoed after the prompt, then its output, so the
transcript of a script is a test. Bad input is one line and the prompt again; in a script
it is an error that stops the session with the script's line number (exit status 2).
"""
from __future__ import annotations

import re
import sys

from .session import Session, Stop
from .values import DebugError, Tile, lanes_text, scalar_text, table

PROMPT = "(croqvm) "

HELP = {
    "s": ("s, step", "run the focused warp to its next statement (into a kernel or "
          "a call)"),
    "n": ("n, next", "to the next statement, over nested blocks, calls and kernel "
          "launches"),
    "si": ("si, stepi", "run one bytecode instruction of the focused warp"),
    "c": ("c, continue", "run to a breakpoint, a watchpoint, a fault or the end"),
    "finish": ("finish", "run out of the called function to its caller, or until the "
               "host program resumes after this kernel"),
    "rs": ("rs, reverse-step", "back to the focused warp's previous statement"),
    "rn": ("rn, reverse-next", "back to the previous statement, over nested blocks "
           "and calls"),
    "rc": ("rc, reverse-continue", "back to the last breakpoint or watchpoint hit (else "
           "the start)"),
    "b": ("b [FILE:]LINE [if EXPR]", "breakpoint; with EXPR the warp stops when an "
          "active lane meets it (b alone lists them)"),
    "break": ("break fault | break race", "stop at the first runtime error, before its "
              "report | at the first data race (with --check race)"),
    "d": ("d [FILE:]LINE | d #N | d", "delete the breakpoints at LINE (co-mock's), "
          "breakpoint or watchpoint N (as info break numbers them), or all"),
    "watch": ("watch BUF.at(i, ...)", "stop after an instruction changes that element"),
    "rwatch": ("rwatch BUF.at(i, ...)", "stop after an instruction reads that element"),
    "block": ("block B | block host", "focus on block B (the one running) or the host"),
    "warp": ("warp W", "focus on warp W of the focused block"),
    "lane": ("lane L", "focus on lane L of the focused warp"),
    "where": ("where", "every warp of the focused block: line, state, what it waits on"),
    "bt": ("bt", "the focused warp, each call it is inside and the launch it runs "
           "under"),
    "p": ("p EXPR", "EXPR in the focused lane, names in the calls the warp is in "
          "(innermost first); a variable: every lane; a buffer, .chunkat, F.data: its "
          "elements; BUF[i]: element i in row-major order"),
    "info": ("info [break|mem|futures|events|warps]", "the variables of the calls the "
             "warp is in, its kernel's and the host's, or the breakpoints, allocations, "
             "futures, events, warps"),
    "l": ("l, list", "the source around the current line"),
    "q": ("q, quit", "leave the debugger"),
    "help": ("help [CMD]", "the commands, or one"),
}
ALIASES = {"step": "s", "next": "n", "stepi": "si", "continue": "c", "reverse-step": "rs",
           "reverse-next": "rn", "reverse-continue": "rc", "delete": "d", "backtrace": "bt",
           "print": "p", "list": "l", "quit": "q", "h": "help", "break": "b"}
_MOTION = {"s": "step", "n": "next", "si": "stepi", "c": "cont", "finish": "finish",
           "rs": "reverse_step", "rn": "reverse_next", "rc": "reverse_continue"}


class Quit(Exception):
    """``q``: leave the debugger."""


class Console:
    """Commands for ``session``, text to ``out``."""

    def __init__(self, session: Session, out=None):
        self.s = session
        self.out = sys.stdout if out is None else out
        self.last_motion = "s"

    def s_names(self) -> set[str]:
        """The named registers and buffers of the function, for completion."""
        fn = self.s.module.function(self.s.func)
        names = set()
        for code in [fn.host] + [k.code for k in fn.kernels]:
            names |= {n for n in code.reg_names if n and not n.startswith("#")}
            names |= {b.name for b in code.buffers if b.name}
        return names

    def say(self, text: str = "") -> None:
        self.out.write(text + "\n")
        self.out.flush()

    def prompt(self) -> str:
        focus = self.s.focus
        if focus is None or focus[0] is None:
            return PROMPT
        block = "(" + ", ".join(str(i) for i in focus[0]) + ")"
        return f"(croqvm block {block} warp {focus[1]} lane {focus[2]}) "

    # ------------------------------------------------------------------ stops

    def show_stop(self, stop: Stop) -> None:
        if stop.reason == "finished":
            if stop.message:
                self.say(stop.message)
            self.say("The program finished.")
            return
        place = stop.place
        if stop.reason == "fault":
            self.say(stop.message)
        if stop.reason == "interrupted":
            self.say("Interrupted.")
        at = f" at line {stop.at[1]}" if stop.at else ""
        if stop.reason == "race":
            self.say(f"Stopped at a {stop.message}{at} (the report comes when the run ends).")
        if stop.reason == "watch":
            watch, old, new, (block, warp), lanes = stop.watch
            who = "the host program" if block is None else \
                f"block {_index(block)} warp {warp} lanes {_lanes(lanes)}"
            verb = "read" if watch.read else f"{_value(old)} -> {_value(new)}"
            self.say(f"Watchpoint {watch.number}: {watch.text}: {verb}, by {who}{at}")
        if stop.reason == "breakpoint" and stop.breakpoint is not None:
            bp = stop.breakpoint
            if stop.message:
                self.say(f"Breakpoint {bp.number} ({bp.condition}): {stop.message}")
            elif bp.condition:
                self.say(f"Breakpoint {bp.number} ({bp.condition}) met by lanes "
                         f"{_lanes(stop.lanes)}")
        mark = "B>" if stop.reason == "breakpoint" else "->"
        src = self.s.source_line(place.file, place.line)
        where = "" if place.block is None else \
            f"    [block {_index(place.block)} warp {place.warp} lanes {_lanes(place.active)}]"
        self.say(f"{mark} {place.line}  {src}{where}")

    # ------------------------------------------------------------------ commands

    def execute(self, line: str) -> None:
        """Run one command line; DebugError for bad input, Quit for ``q``."""
        text = line.strip()
        if not text:
            text = self.last_motion
        cmd, _, rest = text.partition(" ")
        rest = rest.strip()
        if cmd == "break" and rest in ("fault", "race"):
            return self.cmd_break_kind(rest)
        cmd = ALIASES.get(cmd, cmd)
        if cmd in _MOTION:
            if rest:
                raise DebugError(f"'{cmd}' takes no argument")
            self.last_motion = cmd
            self.show_stop(getattr(self.s, _MOTION[cmd])())
            return
        handler = getattr(self, "cmd_" + cmd, None)
        if handler is not None:
            return handler(rest)
        if re.fullmatch(r"[A-Za-z_]\w*", cmd) and not rest:
            try:
                return self.cmd_p(cmd)         # co-mock: a variable's name prints it
            except DebugError:
                pass
        raise DebugError(f"unknown command '{cmd}'; 'help' lists the commands")

    def cmd_q(self, rest):
        raise Quit

    def cmd_help(self, rest):
        if rest:
            key = rest if rest in HELP else ALIASES.get(rest, rest)
            if key not in HELP:
                raise DebugError(f"no command '{rest}'")
            usage, what = HELP[key]
            self.say(f"{usage}: {what}")
            return
        self.say("croqvm debugger commands (<Enter> repeats the last motion):")
        for usage, what in HELP.values():
            self.say(f"  {usage:38} {what}")

    def cmd_break_kind(self, kind: str):
        if kind == "race":
            if self.s.check != "race":
                raise DebugError("break race needs the race check: run with --check race")
            self.s.break_race = True
            self.say("Will stop at the first data race (with --check race).")
        else:
            self.s.break_fault = True
            self.say("Will stop at the first runtime error, before its report.")

    def cmd_b(self, rest):
        if not rest:
            return self.cmd_info("break")
        m = re.fullmatch(r"(?:(\S+):)?(\d+)(?:\s+if\s+(.+))?", rest)
        if m is None:
            raise DebugError("usage: b [FILE:]LINE [if EXPR]")
        bp = self.s.break_at(int(m.group(2)), m.group(1), m.group(3) or "")
        cond = f" if {bp.condition}" if bp.condition else ""
        self.say(f"Breakpoint {bp.number} set at line {bp.line}{cond}")

    def cmd_d(self, rest):
        if not rest:
            self.s.delete()
            self.say("All breakpoints deleted.")
            return
        number = re.fullmatch(r"#(\d+)", rest)
        if number is not None:
            self.say(f"Deleted {self.s.delete(int(number.group(1)))[0].number}.")
            return
        m = re.fullmatch(r"(?:(\S+):)?(\d+)", rest)
        if m is None:
            raise DebugError("usage: d [FILE:]LINE, d #N or d")
        self.s.delete_at(int(m.group(2)), m.group(1))
        self.say(f"Breakpoint at line {m.group(2)} deleted.")

    def cmd_watch(self, rest, read=False):
        if not rest:
            raise DebugError("usage: watch BUF.at(i, ...)")
        w = self.s.watch(rest, read)
        kind = "Read watchpoint" if read else "Watchpoint"
        self.say(f"{kind} {w.number}: {w.text} (now {_value(w.old)})")

    def cmd_rwatch(self, rest):
        self.cmd_watch(rest, read=True)

    def _focus(self, **what):
        self.s.set_focus(**what)
        block, warp, lane = self.s.focus
        where = "the host program" if block is None else f"block {_index(block)}"
        self.say(f"Focus: {where}, warp {warp}, lane {lane}")

    def cmd_block(self, rest):
        if rest == "host":
            return self._focus(block="host")
        nums = re.findall(r"-?\d+", rest)
        if not nums or not re.fullmatch(r"\(?\s*-?\d+(\s*,\s*-?\d+)*\s*\)?", rest):
            raise DebugError("usage: block B (B: a block index such as 1 or 0,2) or block host")
        self._focus(block=tuple(int(n) for n in nums))

    def cmd_warp(self, rest):
        if not rest.isdigit():
            raise DebugError("usage: warp W")
        self._focus(warp=int(rest))

    def cmd_lane(self, rest):
        if not rest.isdigit():
            raise DebugError("usage: lane L")
        self._focus(lane=int(rest))

    def cmd_where(self, rest):
        for wi in self.s.where():
            self.say(_warp_line(wi))

    def cmd_bt(self, rest):
        for n, wi in enumerate(self.s.backtrace()):
            self.say(f"#{n} {_warp_line(wi)}")

    def cmd_p(self, rest):
        if not rest:
            raise DebugError("usage: p EXPR")
        v = self.s.evaluate(rest)
        if isinstance(v, Tile):
            dims = ", ".join(str(d) for d in v.data.shape)
            self.say(f"{rest}: {v.storage} {v.dtype.name}[{dims}]")
            self.say(table(v))
            return
        lane = self.s.focus[2]
        if re.fullmatch(r"[A-Za-z_]\w*", rest) and v.values.size > 1:
            for line in lanes_text(rest, v):
                self.say(line)
            return
        self.say(f"{rest} = {scalar_text(v.values[lane], v.dtype)}")

    def cmd_info(self, rest):
        what = rest.split()[0] if rest else ""
        if what in ("break", "breakpoints", "b"):
            items = self.s.breakpoints + self.s.watches
            if not items:
                self.say("No breakpoints set.")
                return
            self.say("Breakpoints:")
            for bp in self.s.breakpoints:
                cond = f" if {bp.condition}" if bp.condition else ""
                self.say(f"  {bp.number}: line {bp.line}{cond}: "
                         f"{self.s.source_line(bp.file, bp.line).strip()}  "
                         f"(hit {bp.hits} time(s))")
            for w in self.s.watches:
                self.say(f"  {w.number}: {'rwatch' if w.read else 'watch'} {w.text}")
            if self.s.break_fault:
                self.say("  break fault")
            if self.s.break_race:
                self.say("  break race")
        elif what in ("mem", "memory", "m"):
            mem = self.s.memory()
            for name, storage, dtype, shape, size in mem:
                self.say(f"  {name}: {storage} {dtype}[{', '.join(map(str, shape))}] "
                         f"({size} bytes)")
            if not mem:
                self.say("No allocations.")
        elif what in ("futures", "fut", "f"):
            futs = self.s.futures()
            for name, state in futs:
                self.say(f"  {name}: {state}")
            if not futs:
                self.say("No active futures.")
        elif what == "events":
            evs = self.s.events()
            for name, slots in evs:
                for n, slot in enumerate(slots):
                    waits = "; waiting: " + ", ".join(
                        f"warp {warp} lanes {_lanes(lanes)}" for warp, lanes in slot.waiting) \
                        if slot.waiting else ""
                    self.say(f"  {name} slot {n}: {slot.done} done, {slot.arrived} "
                             f"arrived{waits}")
            if not evs:
                self.say("No events.")
        elif what == "warps":
            for wi in self.s.warps():
                self.say(_warp_line(wi))
        elif what in ("", "locals", "l"):
            for n, (scope, items) in enumerate(self.s.variables()):
                self.say(f"--- scope {n}: {scope} ---")
                for name, text in items:
                    self.say(f"  {name} = {text}")
        else:
            raise DebugError(f"unknown info '{what}': break, mem, futures, events, warps")

    def cmd_l(self, rest, context: int = 5):
        place = self.s.stop.place
        if place is None:
            raise DebugError("the program is not running")
        marks = {bp.line for bp in self.s.breakpoints if bp.file == place.file}
        for i in range(max(1, place.line - context), place.line + context + 1):
            src = self.s.source_line(place.file, i)
            if not src and i > place.line + 1:
                break
            self.say(f"{'B' if i in marks else ' '}{'->' if i == place.line else '  '} "
                     f"{i}\t{src}")


def _index(block) -> str:
    return "(" + ", ".join(str(i) for i in block) + ")"


def _lanes(lanes) -> str:
    """0-31, or 0-3, 8, 12-15."""
    parts, run = [], []
    for n in list(lanes) + [None]:
        if run and (n is None or n != run[-1] + 1):
            parts.append(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}")
            run = []
        if n is not None:
            run.append(n)
    return ", ".join(parts) or "none"


def _value(v) -> str:
    return str(v.item() if hasattr(v, "item") else v)


def _warp_line(wi) -> str:
    who = "host" if wi.block is None else f"block {_index(wi.block)} warp {wi.warp}"
    if wi.state == "done":
        return f"  {who}: done"
    waits = f", {wi.waits}" if wi.waits else ""
    return (f"  {who}: line {wi.line} ({wi.state}{waits}), lanes {_lanes(wi.active)}: "
            f"{wi.text}")


def run_script(console: Console, lines: list[str], name: str) -> int:
    """Each line echoed after the prompt, then its output; at the end of the script the
    run continues to its end (as co-mock's). Exit status: 0, 2 for a bad line, or the
    run's fault status (3)."""
    console.show_stop(console.s.stop)
    for number, line in enumerate(lines, 1):
        console.say(console.prompt() + line.strip())
        try:
            console.execute(line)
        except Quit:
            console.s.quit()
            return _status(console.s)
        except DebugError as err:
            console.say(f"{name}:{number}: {err}")
            console.s.quit()
            return 2
    while not console.s.finished:
        console.show_stop(console.s.cont())
    return _status(console.s)


def interact(console: Console) -> int:
    """Commands from the terminal, with readline's history and completion of command
    names and the program's variable names where readline is available."""
    try:
        import readline
    except ImportError:       # pragma: no cover - a Python built without it
        readline = None
    if readline is not None:
        words = sorted(set(HELP) | set(ALIASES) | console.s_names())
        readline.set_completer(lambda text, n: ([w for w in words if w.startswith(text)]
                                                + [None])[n])
        readline.parse_and_bind("tab: complete")
    console.say("croqvm debugger: 'help' lists the commands")
    console.show_stop(console.s.stop)
    while True:
        try:
            line = input(console.prompt())
        except EOFError:
            console.say()
            break
        try:
            console.execute(line)
        except Quit:
            break
        except DebugError as err:
            console.say(str(err))
    console.s.quit()
    return _status(console.s)


def _status(session) -> int:
    stop = session.stop
    return 3 if stop.reason == "fault" or stop.reason != "breakpoint" and stop.message else 0
