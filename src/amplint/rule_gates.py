"""The prefilter's second stage: proofs on Python's ``ast`` that a rule cannot report on a file.

The first stage (:mod:`amplint.selection`) asks substrings; a large model file passes it for the
autocast rules because it says ``torch.autocast(device_type=..., enabled=False)`` or
``maybe_autocast(..., enabled=False)`` in a rotary embedding. The ``ast`` is at hand for every file
that is parsed (Python's syntax verdict comes first), and one walk of it shows whether any
autocast in the file can be switched on. When none can, the rules that need an enabled autocast
region provably report nothing, and a file left with no rule to run is not parsed with libcst.

Every gate is a necessary condition of its rule's findings, argued from how the facts find
autocast regions (:mod:`amplint.amp.autocast`, :mod:`amplint.amp.named_autocast`):

* an autocast class is reached only through a name whose last part is ``autocast``: the qualified
  name's last part is written in the source, in the call or in its import;
* a region only named like autocast (``with amp_autocast():``) has an identifier containing
  ``autocast`` (any case) in its ``with`` item;
* a same-file helper that returns or yields an autocast builds it with such a call.

So when every name or attribute containing ``autocast`` is (part of) the callee of a call with a
literal ``enabled=False`` keyword and no ``*args``/``**kwargs``, and no import binds an autocast
name ``as`` another, every region and every autocast call of the file has ``enabled is False``.
Anything else (an alias, a ``partial``, a bare decorator, a ``with self.autocast_ctx:``, a call
of ``torch.is_autocast_enabled``) makes the gate answer "may report", and the file is parsed as
before. Definitions, parameters and keywords named like autocast bind or pass nothing the facts
read as a region by themselves: each use of them is a name or an attribute, and is checked.

The scaler rules are gated the same way on what makes a name a GradScaler for the facts
(:class:`amplint.amp.scalers.ScalerFacts`): a construction (the class name ``GradScaler`` is then
written in the file), ``unscale_``, ``.scale(loss).backward()``, or a ``step`` on a receiver whose
last part says ``scaler``. A time-series model's ``self.scaler = MeanScaler(config)`` is none of
these.
"""

from __future__ import annotations

import ast
import re

# ``amplint.amp.frameworks.EXCLUSIVE_PRECISION_FLAGS`` and AMP022's ``_PREPARING`` (their modules
# import libcst; a test keeps these equal).
EXCLUSIVE_PRECISION_FLAGS = (("fp16", "bf16"), ("fp16_full_eval", "bf16_full_eval"))
PREPARING = ("prepare", "prepare_optimizer")


def _callee_chain(func: ast.expr) -> list[ast.expr]:
    """``a.b.c`` as its Attribute and Name nodes, outermost first."""
    chain = []
    node = func
    while isinstance(node, ast.Attribute):
        chain.append(node)
        node = node.value
    if isinstance(node, ast.Name):
        chain.append(node)
    return chain


def _last_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return None


def _built_disabled(call: ast.Call) -> bool:
    """A literal ``enabled=False`` keyword that the facts read as the call's ``enabled``
    (a keyword wins over any positional argument there), and no unpacked arguments."""
    if any(isinstance(arg, ast.Starred) for arg in call.args) or any(k.arg is None for k in call.keywords):
        return False
    return any(k.arg == "enabled" and isinstance(k.value, ast.Constant) and k.value.value is False for k in call.keywords)


# A top-level statement none of whose lines holds one of these words, nor ``device`` before an
# opening parenthesis (a call of it), and that is no import, sets no flag of
# :class:`TreeEvidence` but ``indexed_device_string``: each flag is read from an identifier, a
# keyword or an attribute that spells one of them (``autocast`` and ``scaler`` in any case, as the
# flags read them; ``GradScaler`` and ``...Scaler`` hold ``scaler``; ``fp16_full_eval`` holds
# ``fp16``), a ``device`` only from a call of it or an import of it ``as`` another name.
# Identifiers are spelled as written only in ASCII source (Python normalises others).
WALK_WORDS = ("bf16", "backward", "prepare", "unscale_")
# AMP001's evidence: the identifier ``amp`` in an attribute or an import (the legacy function
# names hold ``autocast``), or a string spelling a dotted ``.amp``.
_AMP_WORD = re.compile(r"\bamp\b")
WALK_WORDS_ANY_CASE = ("autocast", "scaler", "fp16")
_DEVICE_CALL = re.compile(r"device(?:\s|\\\n|#[^\n]*)*\(")
# What the source of a string constant like ``"cuda:0"`` must show when it has no escape that can
# write a colon or a digit (``\x3a``, ``\072``, ``\u003a``, ``\N{...}``): its first colon right
# after a quote and an identifier (``"cuda:``) or after the quote of a string that another one
# precedes (``"cuda" ":0"``), then a digit, with only whitespace, whitespace escapes, quotes,
# string prefixes and comments between (``"cuda:" "0"``, ``"cuda:\t0"``). A slice (``x[0:1]``)
# or a dict entry (``"a": 1``) shows neither.
_NUMERIC_ESCAPE = re.compile(r"\\[0-7xuUN]")
_INDEXED_SOURCE = re.compile(
    r"""(?:["']\w+|["'](?:\s|#[^\n]*|\\\n)*[rRbBuUfF]*["']):(?:[\s"'rRbBuUfF]|\\[ntrfv\r\n]|#[^\n]*)*\d""")


def indexed_device_text(text: str) -> bool:
    """A string the facts could read as an indexed device (``"cuda:0"``): the test of
    ``amplint.amp.autocast.device_type_of`` on a string holding a colon."""
    kind, sep, index = text.partition(":")
    return bool(sep) and kind.isidentifier() and index.strip().isdigit()


class TreeEvidence:
    """What one walk of a file's ``ast`` shows about its autocast use."""

    def __init__(self, tree: ast.Module, text: str | None = None) -> None:
        """``text``: the source of ``tree``; with it only the statements (top-level ones and
        members of classes) whose lines hold a word of :data:`WALK_WORDS` are walked."""
        self.autocast_always_off = True  # no autocast region or call of the file can be enabled
        self.autocast_named = False  # some name, attribute or import says ``autocast`` (any case)
        self.autocast_arguments_plain = True  # no autocast call passes an f-string or a call
        self.device_call = False  # a call that may build a ``torch.device``
        self._indexed_device_string = False  # a walked string constant like ``"cuda:0"``
        self._unwalked: list[tuple[ast.stmt, str]] = []  # statements not walked and their source, for that question
        self.scaled_backward = False  # ``x.scale(loss).backward()``
        self.scaler_class_named = False  # an identifier naming a GradScaler class (``GradScaler``, ``ShardedGradScaler``)
        self.fp16_true_keyword = False  # ``fp16=True`` (``TrainingArguments(fp16=True)``)
        # a string ``"fp16"`` (any case) or an attribute ``FP16``: an ``Accelerator(mixed_precision=...)``
        # the facts read as fp16 spells one of them
        self.fp16_precision_named = False
        self.unscale_attribute = False  # ``x.unscale_``
        self.named_scaler_step = False  # ``<...scaler...>.step(...)``: a step on a receiver named like a scaler
        # A call of a class named ``...Scaler`` that is not assigned to one attribute
        # (``self.scaler = MeanScaler(config)``): AMP006 reads ``w = NativeScaler()`` as a scaler wrapper.
        self.scaler_wrapper_call = False
        self.exclusive_flags_together = False  # one call passes ``fp16=True, bf16=True`` (or the full-eval pair)
        self.backward_method_call = False  # ``x.backward(...)``
        self.prepare_method_call = False  # ``x.prepare(...)`` / ``x.prepare_optimizer(...)``
        # ``torch.cuda.amp`` / ``torch.cpu.amp`` may be reached: an attribute ``amp``, an import of
        # it from torch, a legacy ``*autocast_gpu*``/``*autocast_cpu*`` name, or a string spelling one
        self.torch_amp_named = False
        allowed: set[int] = set()  # identifier nodes of the callee of a call built disabled
        held_by_attribute: set[int] = set()  # calls that are the value of ``a.b = <call>``
        for node in self._nodes(tree, text):  # breadth first: a call comes before its callee's nodes
            kind = type(node)
            if kind is ast.Call:
                func = node.func
                if len(node.keywords) > 1 and not self.exclusive_flags_together:
                    true = {k.arg for k in node.keywords if isinstance(k.value, ast.Constant) and k.value.value is True}
                    self.exclusive_flags_together = any(set(pair) <= true for pair in EXCLUSIVE_PRECISION_FLAGS)
                if isinstance(func, ast.Attribute) and func.attr == "backward" and isinstance(func.value, ast.Call):
                    inner = func.value.func
                    self.scaled_backward |= isinstance(inner, ast.Attribute) and inner.attr == "scale"
                last = _last_name(func)
                if last is None:
                    continue
                if isinstance(func, ast.Attribute):
                    self.backward_method_call |= last == "backward"
                    self.prepare_method_call |= last in PREPARING
                if last == "step" and isinstance(func, ast.Attribute):
                    receiver = _last_name(func.value)
                    self.named_scaler_step |= receiver is not None and "scaler" in receiver.lower()
                if last.endswith("Scaler") and id(node) not in held_by_attribute:
                    self.scaler_wrapper_call = True
                if "autocast" in last.lower():
                    self.autocast_named = True
                    if _built_disabled(node):
                        allowed.update(id(part) for part in _callee_chain(node.func))
                        values = [*node.args, *(k.value for k in node.keywords)]
                        if any(isinstance(v, (ast.JoinedStr, ast.Call)) for v in values):
                            self.autocast_arguments_plain = False
                    else:
                        self.autocast_always_off = False
                elif last == "device":
                    self.device_call = True
            elif kind is ast.Name:
                self.torch_amp_named |= _legacy_autocast_name(node.id)
                if "autocast" in node.id.lower():
                    self.autocast_named = True
                    if id(node) not in allowed:
                        self.autocast_always_off = False
                self.scaler_class_named |= "GradScaler" in node.id
            elif kind is ast.Attribute:
                self.torch_amp_named |= node.attr == "amp" or _legacy_autocast_name(node.attr)
                self.fp16_precision_named |= node.attr == "FP16"
                if "autocast" in node.attr.lower():
                    self.autocast_named = True
                    if id(node) not in allowed:
                        self.autocast_always_off = False
                self.scaler_class_named |= "GradScaler" in node.attr
                self.unscale_attribute |= node.attr == "unscale_"
            elif kind is ast.Assign:
                if len(node.targets) == 1 and isinstance(node.targets[0], ast.Attribute) and isinstance(node.value, ast.Call):
                    held_by_attribute.add(id(node.value))
            elif kind is ast.keyword:
                if node.arg == "fp16" and isinstance(node.value, ast.Constant) and node.value.value is True:
                    self.fp16_true_keyword = True
            elif kind is ast.Constant:
                value = node.value
                if isinstance(value, bytes):
                    value = value.decode("latin-1")
                if isinstance(value, str):
                    if ":" in value and indexed_device_text(value):
                        self._indexed_device_string = True
                    self.torch_amp_named |= ".amp" in value or _legacy_autocast_name(value)
                    self.fp16_precision_named |= value.lower() == "fp16"
            elif kind is ast.ImportFrom or kind is ast.Import:
                self.torch_amp_named |= _imports_torch_amp(node)
            elif kind is ast.alias:
                self.torch_amp_named |= _legacy_autocast_name(node.name)
                self.scaler_class_named |= "GradScaler" in node.name
                self.autocast_named |= "autocast" in node.name.lower()
                # ``from torch import autocast`` binds the name its calls are read through; ``as ac``
                # would hide it. ``from torch import device as d`` likewise hides a device call.
                if node.asname is not None:
                    if "autocast" in node.name.lower():
                        self.autocast_always_off = False
                    if node.name.rsplit(".", 1)[-1] == "device":
                        self.device_call = True


    def _nodes(self, tree: ast.Module, text: str | None):
        """Every node of ``tree``, or of its statements that may set a flag (see :data:`WALK_WORDS`),
        each statement breadth first: a call and its callee are in one statement."""
        if text is None:
            yield from ast.walk(tree)
            return
        from amplint.focus import physical_lines

        yield from self._statement_nodes(tree.body, physical_lines(text))

    def _statement_nodes(self, statements: list[ast.stmt], lines: list[str]):
        for statement in statements:
            start = statement.lineno
            decorators = getattr(statement, "decorator_list", None)
            if decorators:
                start = min(start, min(d.lineno for d in decorators))
            chunk = "".join(lines[start - 1: (statement.end_lineno or statement.lineno)])
            # Python normalises identifiers that are not ASCII (NFKC): a statement that is not
            # ASCII is walked whatever it spells.
            if not (not chunk.isascii() or isinstance(statement, (ast.Import, ast.ImportFrom)) or any(word in chunk for word in WALK_WORDS)
                    or any(word in chunk.lower() for word in WALK_WORDS_ANY_CASE) or _AMP_WORD.search(chunk)
                    or "device" in chunk and _DEVICE_CALL.search(chunk)):
                self._unwalked.append((statement, chunk))
            elif isinstance(statement, ast.ClassDef):
                # A class statement sets no flag itself: its bases, keywords and decorators are
                # walked, and its members are asked one by one, as top-level statements are.
                for part in (*statement.decorator_list, *statement.bases, *statement.keywords,
                             *getattr(statement, "type_params", ())):
                    yield from ast.walk(part)
                yield from self._statement_nodes(statement.body, lines)
            else:
                yield from ast.walk(statement)

    @property
    def indexed_device_string(self) -> bool:
        """A string constant like ``"cuda:0"`` in the file. The statements not walked are walked
        for it only when the source may spell one (:data:`_INDEXED_SOURCE`)."""
        if self._indexed_device_string or not self._unwalked:
            return self._indexed_device_string
        # Each statement not walked is ASCII, where the expressions above read a source exactly.
        self._indexed_device_string = any(
            _indexed_constant(node) for statement, chunk in self._unwalked
            if _NUMERIC_ESCAPE.search(chunk) or _INDEXED_SOURCE.search(chunk) for node in ast.walk(statement))
        self._unwalked = []
        return self._indexed_device_string

    @property
    def scaler_evidence(self) -> bool:
        """What makes a name a GradScaler for the facts (``ScalerFacts.scalers``): a construction,
        whose class name is written in the file, ``unscale_``, ``.scale(loss).backward()`` or a
        ``step`` on a receiver whose last part says ``scaler``."""
        return self.scaler_class_named or self.unscale_attribute or self.scaled_backward or self.named_scaler_step


def _legacy_autocast_name(name: str) -> bool:
    return "autocast_gpu" in name or "autocast_cpu" in name


def _imports_torch_amp(node: ast.Import | ast.ImportFrom) -> bool:
    """The import may bind ``torch.cuda.amp``/``torch.cpu.amp`` or a name from them: ``amp`` is a
    part of the imported module or an imported name, of torch (``torch_xla.amp`` is not torch's),
    or of a relative import (the package may be torch)."""
    if isinstance(node, ast.Import):
        return any(alias.name.split(".")[0] == "torch" and "amp" in alias.name.split(".") for alias in node.names)
    parts = (node.module or "").split(".")
    if node.level == 0 and parts[0] != "torch":
        return False
    return "amp" in parts or any(alias.name == "amp" for alias in node.names)


def _indexed_constant(node: ast.AST) -> bool:
    if type(node) is not ast.Constant:
        return False
    value = node.value
    if isinstance(value, bytes):
        value = value.decode("latin-1")
    return isinstance(value, str) and ":" in value and indexed_device_text(value)


def _needs_enabled_autocast(evidence: TreeEvidence) -> bool:
    """AMP002, AMP013, AMP016, AMP018 report only under (or on) an autocast that may be enabled."""
    return not evidence.autocast_always_off


def _amp015_may_report(evidence: TreeEvidence) -> bool:
    """AMP015 judges the ``device_type`` of every autocast call, disabled ones too: its findings
    need an autocast call (whose callee, or the import binding it, is then named like one), and a
    ``device_type`` that is an indexed string or f-string, a ``torch.device(...)`` call, or a
    variable holding one of those."""
    if not evidence.autocast_named:
        return False  # ``autocast`` only in strings and comments: no autocast call at all
    return not (evidence.autocast_always_off and evidence.autocast_arguments_plain
                and not evidence.device_call and not evidence.indexed_device_string)


def _amp005_may_report(evidence: TreeEvidence) -> bool:
    """AMP005 needs AMP in use (an enabled autocast region, a GradScaler built, whose class name is
    then written in the file, or a loss scaled with ``.scale(loss).backward()``), a Trainer built
    with a literal ``fp16=True``, or an Accelerator whose literal precision is ``"fp16"``."""
    return not (evidence.autocast_always_off and not evidence.scaled_backward and not evidence.scaler_class_named
                and not evidence.fp16_true_keyword and not evidence.fp16_precision_named)


def _needs_a_scaler(evidence: TreeEvidence) -> bool:
    """AMP003, AMP007, AMP008, AMP009, AMP012, AMP017 report only on the events of a GradScaler
    of the file (a step, update or unscale_ of it, a backward it scales)."""
    return evidence.scaler_evidence


def _amp006_may_report(evidence: TreeEvidence) -> bool:
    """AMP006 asks for the scalers a checkpoint should hold: the file's GradScalers and the locals
    holding a scaler wrapper (a class named ``...Scaler``, or a project class that builds a
    GradScaler, known only from the project context; see :func:`codes_that_may_report`)."""
    return evidence.scaler_evidence or evidence.scaler_wrapper_call


def _amp001_may_report(evidence: TreeEvidence) -> bool:
    """AMP001 reports a reference whose qualified name is a deprecated ``torch.cuda.amp`` /
    ``torch.cpu.amp`` member or legacy function: the module ``amp`` is named in an attribute or a
    torch import, or the function's own name says ``autocast_gpu``/``autocast_cpu``."""
    return evidence.torch_amp_named


def _amp024_may_report(evidence: TreeEvidence) -> bool:
    """AMP024 reports an enabled scale of a GradScaler of the file or an enabled autocast."""
    return evidence.scaler_evidence or not evidence.autocast_always_off


def _amp021_may_report(evidence: TreeEvidence) -> bool:
    """AMP021 reports a call that passes both flags of an exclusive pair as literal ``True``."""
    return evidence.exclusive_flags_together


def _amp022_may_report(evidence: TreeEvidence) -> bool:
    """AMP022 reports a ``.backward()`` call beside an ``accelerator.prepare(...)`` assignment."""
    return evidence.backward_method_call and evidence.prepare_method_call


GATES = {
    "AMP001": _amp001_may_report,
    "AMP002": _needs_enabled_autocast,
    "AMP003": _needs_a_scaler,
    "AMP005": _amp005_may_report,
    "AMP006": _amp006_may_report,
    "AMP007": _needs_a_scaler,
    "AMP008": _needs_a_scaler,
    "AMP009": _needs_a_scaler,
    "AMP012": _needs_a_scaler,
    "AMP013": _needs_enabled_autocast,
    "AMP015": _amp015_may_report,
    "AMP016": _needs_enabled_autocast,
    "AMP017": _needs_a_scaler,
    "AMP018": _needs_enabled_autocast,
    "AMP021": _amp021_may_report,
    "AMP022": _amp022_may_report,
    "AMP024": _amp024_may_report,
}


# Gates whose proof holds only for a file linted without a project context: with one, a class
# imported from another module may build a GradScaler (a scaler wrapper for AMP006).
_FILE_ALONE = frozenset({"AMP006"})


def codes_that_may_report(codes: frozenset[str], tree: ast.Module, with_project: bool = False,
                          text: str | None = None) -> frozenset[str]:
    """``codes`` without the gated rules that provably report nothing on this file.
    ``with_project``: the file is linted with what its imports reach; ``text``: the source of
    ``tree``, which lets the walk skip statements that cannot matter."""
    gates = {code: GATES[code] for code in codes if code in GATES and not (with_project and code in _FILE_ALONE)}
    if not gates:
        return codes
    evidence = TreeEvidence(tree, text)
    return frozenset(code for code in codes if code not in gates or gates[code](evidence))
