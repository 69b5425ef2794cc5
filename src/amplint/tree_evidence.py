"""One walk of a file's ``ast``: the flags the rule gates (:mod:`amplint.rule_gates`) read.

Each flag is a fact a rule's finding cannot do without, read from the identifiers, keywords,
calls and literals of the file; the gates argue from them. The walk visits only the statements
whose source can spell what a flag reads (:mod:`amplint.walk_words`); a flag whose word is not
one of them is read from the statements left out when first asked (:meth:`TreeEvidence._left_out`).
"""

from __future__ import annotations

import ast
from bisect import bisect_left

from amplint.tree_literals import (
    BODY_FIELDS,
    INDEXED_SOURCE,
    NUMERIC_ESCAPE,
    TORCH_CLIP_NAMES,
    built_disabled,
    callee_chain,
    fp16_section,
    imports_torch_amp,
    indexed_constant,
    indexed_device_text,
    last_name,
    legacy_autocast_name,
    legacy_precision_value,
    body_span,
    innermost,
    named_like_autocast,
    own_parts,
    walk,
)
from amplint.walk_words import lines_spelling_a_word

# ``amplint.amp.frameworks.EXCLUSIVE_PRECISION_FLAGS`` and AMP022's ``_PREPARING`` (their modules
# import libcst; a test keeps these equal).
EXCLUSIVE_PRECISION_FLAGS = (("fp16", "bf16"), ("fp16_full_eval", "bf16_full_eval"))
PREPARING = ("prepare", "prepare_optimizer")


class TreeEvidence:
    """What one walk of a file's ``ast`` shows about its AMP use."""

    def __init__(self, tree: ast.Module, text: str | None = None) -> None:
        """``text``: the source of ``tree``; with it only the statements (top-level ones and
        members of classes) whose lines hold a word of :data:`amplint.walk_words.WALK_WORDS` are walked."""
        self.autocast_always_off = True  # no name containing ``autocast`` is used but as the callee of a disabled call
        self.deepspeed_config_elsewhere = False  # a ``"torch_autocast"`` key or a ``.json`` path: a DeepSpeed config
        self.autocast_named = False  # some name, attribute or import says ``autocast`` (any case)
        self.autocast_arguments_plain = True  # no autocast call passes an f-string or a call
        # The autocast classes (``torch.autocast``, ``torch.cuda.amp.autocast``...), reached only
        # through a name whose last part is ``autocast`` or an import of one ``as`` another name:
        self.autocast_class_named = False  # some such name or import
        self.autocast_class_may_enable = False  # one used other than as the callee of a disabled call
        # A ``with`` item named like autocast (``with self.amp_autocast():``, also inside a helper
        # that yields) or a choice between such a name and another (``a.autocast if c else n``),
        # not built with a literal ``enabled=False``: a region the facts read by its name.
        self.named_region_may_enable = False
        # ``is_autocast_enabled`` reached other than as the callee of a call with arguments (AMP014
        # reports only a call without any)
        self.bare_autocast_state_check = False
        self.device_call = False  # a call that may build a ``torch.device``
        self._indexed_device_string = False  # a string constant like ``"cuda:0"``
        self._left_out_read_for_devices = False
        self._unwalked: list[tuple[ast.stmt, int, int]] = []  # statements not walked and their lines
        self.scaled_backward = False  # ``x.scale(loss).backward()``
        self.scaler_class_named = False  # an identifier naming a GradScaler class (``GradScaler``, ``ShardedGradScaler``)
        self.fp16_true_keyword = False  # ``fp16=True`` (``TrainingArguments(fp16=True)``)
        self.bf16_true_keyword = False  # ``bf16=True``
        # a string ``"fp16"`` (any case) or an attribute ``FP16``: an ``Accelerator(mixed_precision=...)``
        # the facts read as fp16 spells one of them
        self.fp16_precision_named = False
        # ``{"fp16": {"enabled": True, ...}}``: a DeepSpeed config the facts read as fp16
        self.fp16_config_section = False
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
        self._legacy_precision: bool | None = None
        # Read in the walk for the questions asked later (see the properties below).
        self._accelerator_named = False  # an ``Accelerator`` name or import
        self._clip_heads: set[str] = set()  # the first name of each ``...clip_grad_norm_``-like name
        self._clip_hidden = False  # a torch clip function imported ``as`` another name
        self._imported: set[str] = set()  # names bound by an import
        self._deepspeed_import = False  # an import of the ``deepspeed`` package (or from it)
        self._star_import = False
        self._bodies: list[tuple[tuple[int, int], tuple[int, int]]] = []  # where each function's body starts and ends
        self._backwards: list[tuple[int, int]] = []  # where each ``x.backward(...)`` starts
        self._steps: list[tuple[int, int]] = []  # where each ``x.step(...)`` starts
        self._late_read: set[str] = set()  # the words the statements left out were read for
        allowed: set[int] = set()  # identifier nodes of the callee of a call built disabled
        checks_with_arguments: set[int] = set()  # callees ``is_autocast_enabled`` of calls given arguments
        held_by_attribute: set[int] = set()  # calls that are the value of ``a.b = <call>``
        for node in self._nodes(tree, text):  # each node before its children: a call before its callee
            kind = type(node)
            if kind is ast.Call:
                func = node.func
                if len(node.keywords) > 1 and not self.exclusive_flags_together:
                    true = {k.arg for k in node.keywords if isinstance(k.value, ast.Constant) and k.value.value is True}
                    self.exclusive_flags_together = any(set(pair) <= true for pair in EXCLUSIVE_PRECISION_FLAGS)
                if isinstance(func, ast.Attribute) and func.attr == "backward" and isinstance(func.value, ast.Call):
                    inner = func.value.func
                    self.scaled_backward |= isinstance(inner, ast.Attribute) and inner.attr == "scale"
                last = last_name(func)
                if last is None:
                    continue
                if isinstance(func, ast.Attribute):
                    self.backward_method_call |= last == "backward"
                    self.prepare_method_call |= last in PREPARING
                    if last == "backward" or last == "step":
                        (self._backwards if last == "backward" else self._steps).append((node.lineno, node.col_offset))
                if last == "step" and isinstance(func, ast.Attribute):
                    receiver = last_name(func.value)
                    self.named_scaler_step |= receiver is not None and "scaler" in receiver.lower()
                if last.endswith("Scaler") and id(node) not in held_by_attribute:
                    self.scaler_wrapper_call = True
                if "autocast" in last.lower():
                    self.autocast_named = True
                    if last == "is_autocast_enabled" and (node.args or node.keywords):
                        checks_with_arguments.add(id(func))
                    if built_disabled(node):
                        allowed.update(id(part) for part in callee_chain(node.func))
                        values = [*node.args, *(k.value for k in node.keywords)]
                        if any(isinstance(v, (ast.JoinedStr, ast.Call)) for v in values):
                            self.autocast_arguments_plain = False
                    else:
                        self.autocast_always_off = False
                elif last == "device":
                    self.device_call = True
            elif kind is ast.Name:
                self._identifier(node, node.id, allowed, checks_with_arguments)
                self._late_identifier(node)
            elif kind is ast.Attribute:
                self.torch_amp_named |= node.attr == "amp"
                self.fp16_precision_named |= node.attr == "FP16"
                self.unscale_attribute |= node.attr == "unscale_"
                self._identifier(node, node.attr, allowed, checks_with_arguments)
                self._late_identifier(node)
            elif kind is ast.With or kind is ast.AsyncWith:
                for item in node.items:
                    expr = item.context_expr
                    named = expr.func if isinstance(expr, ast.Call) else expr
                    if named_like_autocast(named) and not (isinstance(expr, ast.Call) and built_disabled(expr)):
                        self.named_region_may_enable = True
            elif kind is ast.FunctionDef or kind is ast.AsyncFunctionDef:
                self._bodies.append(body_span(node))
            elif kind is ast.IfExp:
                self.named_region_may_enable |= named_like_autocast(node.body) or named_like_autocast(node.orelse)
            elif kind is ast.Dict:
                self.fp16_config_section |= fp16_section(node)
            elif kind is ast.Assign:
                if len(node.targets) == 1 and isinstance(node.targets[0], ast.Attribute) and isinstance(node.value, ast.Call):
                    held_by_attribute.add(id(node.value))
            elif kind is ast.keyword:
                if isinstance(node.value, ast.Constant) and node.value.value is True:
                    self.fp16_true_keyword |= node.arg == "fp16"
                    self.bf16_true_keyword |= node.arg == "bf16"
                if node.arg == "precision" and legacy_precision_value(node.value):
                    self._legacy_precision = True
            elif kind is ast.Constant:
                value = node.value
                if isinstance(value, bytes):
                    value = value.decode("latin-1")
                if isinstance(value, str):
                    if ":" in value and indexed_device_text(value):
                        self._indexed_device_string = True
                    self.torch_amp_named |= ".amp" in value or legacy_autocast_name(value)
                    self.fp16_precision_named |= value.lower() == "fp16"
                    self.deepspeed_config_elsewhere |= value == "torch_autocast" or value.endswith(".json")
            elif kind is ast.ImportFrom or kind is ast.Import:
                self.torch_amp_named |= imports_torch_amp(node)
                self._note_import(node)
            elif kind is ast.alias:
                self._alias(node)
                self._late_identifier(node)

    def _identifier(self, node: ast.expr, name: str, allowed: set[int], checks_with_arguments: set[int]) -> None:
        """A name or an attribute's last part."""
        self.torch_amp_named |= legacy_autocast_name(name)
        self.scaler_class_named |= "GradScaler" in name
        if "autocast" not in name.lower():
            return
        self.autocast_named = True
        if id(node) not in allowed:
            self.autocast_always_off = False
            if name == "autocast":
                self.autocast_class_may_enable = True
        self.autocast_class_named |= name == "autocast"
        self.bare_autocast_state_check |= name == "is_autocast_enabled" and id(node) not in checks_with_arguments

    def _late_identifier(self, node: ast.AST) -> None:
        """What the questions asked after the walk read from a name, an attribute or an import."""
        kind = type(node)
        name = node.id if kind is ast.Name else node.attr if kind is ast.Attribute else None
        if name is not None:
            self._accelerator_named |= name == "Accelerator"
            if name in TORCH_CLIP_NAMES:
                head = callee_chain(node)[-1] if kind is ast.Attribute else node
                if type(head) is ast.Name:
                    self._clip_heads.add(head.id)
        elif kind is ast.alias:
            last = node.name.rsplit(".", 1)[-1]
            self._accelerator_named |= last == "Accelerator"
            self._clip_hidden |= last in TORCH_CLIP_NAMES and node.asname is not None
        elif kind is ast.Import or kind is ast.ImportFrom:
            self._note_import(node)
        elif kind is ast.FunctionDef or kind is ast.AsyncFunctionDef:
            self._bodies.append(body_span(node))
        elif kind is ast.Call and type(node.func) is ast.Attribute and node.func.attr == "step":
            self._steps.append((node.lineno, node.col_offset))

    def _note_import(self, node: ast.Import | ast.ImportFrom) -> None:
        if type(node) is ast.Import:
            self._deepspeed_import |= any(alias.name.split(".")[0] == "deepspeed" for alias in node.names)
        else:
            self._deepspeed_import |= node.level == 0 and (node.module or "").split(".")[0] == "deepspeed"
        for alias in node.names:
            if alias.name == "*":
                self._star_import = True
            else:
                self._imported.add(alias.asname or (alias.name.split(".")[0] if type(node) is ast.Import else alias.name))

    def _alias(self, node: ast.alias) -> None:
        self.torch_amp_named |= legacy_autocast_name(node.name)
        self.scaler_class_named |= "GradScaler" in node.name
        self.autocast_named |= "autocast" in node.name.lower()
        last = node.name.rsplit(".", 1)[-1]
        self.autocast_class_named |= last == "autocast"
        # ``from torch import autocast`` binds the name its calls are read through; ``as ac`` would
        # hide it. ``from torch import device as d`` likewise hides a device call.
        if node.asname is not None:
            if "autocast" in node.name.lower():
                self.autocast_always_off = False
            if last == "autocast":
                self.autocast_class_may_enable = True
            self.bare_autocast_state_check |= last == "is_autocast_enabled"
            if last == "device":
                self.device_call = True

    def _nodes(self, tree: ast.Module, text: str | None):
        """Every node of ``tree``, or of its statements that may set a flag (see :data:`amplint.walk_words.WALK_WORDS`),
        each node before its children (a call before its callee, in one statement)."""
        if text is None:
            yield from walk(tree)
            return
        from amplint.focus import physical_lines

        self._lines = physical_lines(text)
        self._marked = lines_spelling_a_word(text, self._lines)
        yield from self._statement_nodes(tree.body)

    def _statement_nodes(self, statements: list[ast.stmt]):
        """The nodes of the statements that may set a flag, at any depth: a statement whose lines
        spell no word of :data:`amplint.walk_words.WALK_WORDS` is left out (kept for the questions asked later); of
        a compound one that spells some, its own parts (a function's decorators and arguments,
        a loop's target, a ``with`` statement's items) are walked and its statements are asked
        one by one. No flag read in the walk needs two statements: a call and its callee, an
        assignment and its value, a ``with`` statement and its items are each in one."""
        marked = self._marked
        for statement in statements:
            start = statement.lineno
            decorators = getattr(statement, "decorator_list", None)
            if decorators:
                start = min(start, min(d.lineno for d in decorators))
            end = statement.end_lineno or statement.lineno
            first = bisect_left(marked, start)
            if not (first < len(marked) and marked[first] <= end or isinstance(statement, (ast.Import, ast.ImportFrom))):
                self._unwalked.append((statement, start, end))
                continue
            inner = [part for name in BODY_FIELDS for part in getattr(statement, name, None) or ()]
            if not inner:
                yield from walk(statement)
                continue
            yield statement  # a function's body span, a ``with`` statement's items
            yield from own_parts(statement)
            for part in inner:
                if isinstance(part, ast.stmt):
                    yield from self._statement_nodes([part])
                else:  # an ``except`` clause or a ``case``: its own parts, then its statements
                    yield part
                    yield from own_parts(part)
                    yield from self._statement_nodes(part.body)

    def _left_out(self, may_hold) -> list[ast.AST]:
        """The nodes of the statements the walk left out whose source passes ``may_hold``. Each of
        them is ASCII, where a test of the source reads the identifiers exactly."""
        return [node for statement, start, end in self._unwalked if may_hold(self._chunk(start, end))
                for node in walk(statement)]

    def _chunk(self, start: int, end: int) -> str:
        return "".join(self._lines[start - 1: end])

    @property
    def indexed_device_string(self) -> bool:
        """A string constant like ``"cuda:0"`` in the file. The statements not walked are walked
        for it only when the source may spell one (:data:`INDEXED_SOURCE`)."""
        if not self._indexed_device_string and not self._left_out_read_for_devices:
            self._left_out_read_for_devices = True
            self._indexed_device_string = any(indexed_constant(node) for node in self._left_out(
                lambda chunk: NUMERIC_ESCAPE.search(chunk) or INDEXED_SOURCE.search(chunk)))
        return self._indexed_device_string

    @property
    def legacy_precision_keyword(self) -> bool:
        """A keyword ``precision=`` given ``16``, ``"16"`` or ``"bf16"`` (or an f-string): what a
        legacy Lightning precision is written as. The walk reads the statements that spell
        ``bf16``; the others are read for it when they spell ``precision``."""
        if self._legacy_precision is None:
            self._legacy_precision = any(
                type(node) is ast.keyword and node.arg == "precision" and legacy_precision_value(node.value)
                for node in self._left_out(lambda chunk: "precision" in chunk))
        return self._legacy_precision

    @property
    def deepspeed_may_be_imported(self) -> bool:
        """An import of the ``deepspeed`` package, at any depth, or a star import that may bind
        it: what a call the facts read as ``deepspeed.initialize`` is reached through."""
        if not self._deepspeed_import and not self._star_import:
            self._read_left_out_imports()
        return self._deepspeed_import or self._star_import

    def _read_late(self, word: str) -> None:
        """Read the statements the walk left out that spell ``word`` for the late questions."""
        if word not in self._late_read:
            self._late_read.add(word)
            for node in self._left_out(lambda chunk: word in chunk):
                self._late_identifier(node)

    def _read_left_out_imports(self) -> None:
        """The names bound by the imports of the statements the walk left out (imports inside
        functions): only their statements are visited, not their expressions."""
        if "import" in self._late_read:
            return
        self._late_read.add("import")
        statements = [statement for statement, start, end in self._unwalked if "import" in self._chunk(start, end)]
        while statements:
            statement = statements.pop()
            if isinstance(statement, (ast.Import, ast.ImportFrom)):
                self._note_import(statement)
                continue
            for field in ("body", "orelse", "finalbody", "handlers", "cases"):
                for inner in getattr(statement, field, ()):
                    statements.append(inner)

    @property
    def accelerator_class_named(self) -> bool:
        """A name, attribute or import ``Accelerator``: how ``accelerate.Accelerator`` is reached."""
        if not self._accelerator_named:
            self._read_late("Accelerator")
        return self._accelerator_named

    @property
    def torch_clip_may_be_called(self) -> bool:
        """A name that may resolve to torch's ``clip_grad_norm_``/``clip_grad_value_``: one spelling
        it whose first part an import binds (``torch.nn.utils...``, ``nn.utils...``, the function
        itself), or the function imported ``as`` another name, or a ``*`` import. A method of
        ``self.accelerator`` resolves to nothing."""
        self._read_late("clip_grad")
        if self._clip_hidden or self._star_import:
            return True
        if self._clip_heads - self._imported:
            self._read_left_out_imports()
        return bool(self._clip_heads & self._imported)

    @property
    def backward_beside_step(self) -> bool:
        """Some function (or the module's, or a class's, body) calls both ``x.backward(...)`` and
        ``y.step(...)``: each call is placed in the innermost function body around it, a grouping
        no finer than the facts' scopes (a class body or a lambda goes with what is around it)."""
        if not self._backwards:
            return False
        self._read_late("step")  # a step in a statement the walk left out, beside a backward
        return bool({innermost(self._bodies, at) for at in self._backwards}
                    & {innermost(self._bodies, at) for at in self._steps})

    @property
    def scaler_evidence(self) -> bool:
        """What makes a name a GradScaler for the facts (``ScalerFacts.scalers``): a construction,
        whose class name is written in the file, ``unscale_``, ``.scale(loss).backward()`` or a
        ``step`` on a receiver whose last part says ``scaler``."""
        return self.scaler_class_named or self.unscale_attribute or self.scaled_backward or self.named_scaler_step

    @property
    def autocast_region_may_enable(self) -> bool:
        """Some autocast region or autocast call of the file may be enabled. The facts find a region
        (``amplint.amp.autocast``) from an autocast class, reached through its name
        (``autocast_class_may_enable``: a call of it, a ``partial`` of it, an alias, a choice, a
        helper returning one, a decorator), or from a ``with`` item named like autocast, in the file
        or in a helper that yields under it (``named_region_may_enable``). A state query
        (``torch.is_autocast_enabled()``) or a variable named ``autocast_dtype`` opens none."""
        return self.autocast_class_may_enable or self.named_region_may_enable
