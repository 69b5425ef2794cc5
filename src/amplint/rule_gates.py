"""The prefilter's second stage: proofs on Python's ``ast`` that a rule cannot report on a file.

The first stage (:mod:`amplint.selection`) asks substrings; a large model file passes it for the
autocast rules because it says ``torch.autocast(device_type=..., enabled=False)`` or
``maybe_autocast(..., enabled=False)`` in a rotary embedding, or ``torch.is_autocast_enabled()``
in an attention layer. The ``ast`` is at hand for every file that is parsed (Python's syntax
verdict comes first), and one walk of it (:class:`amplint.tree_evidence.TreeEvidence`) shows
whether any autocast in the file can be switched on. When none can, the rules that need an
enabled autocast region provably report nothing, and a file left with no rule to run is not
parsed with libcst.

Every gate is a necessary condition of its rule's findings, argued from how the facts find
autocast regions (:mod:`amplint.amp.autocast`, :mod:`amplint.amp.named_autocast`,
:mod:`amplint.amp.chosen_autocast`):

* an autocast class (``torch.amp.autocast``, ``torch.cuda.amp.autocast``,
  ``torch.cpu.amp.autocast``) is reached only through a name whose last part is ``autocast``: the
  qualified name's last part is written in the source, in the call or in its import (canonical
  names only rewrite a module prefix), unless an import binds it ``as`` another name;
* a region only named like autocast (``with amp_autocast():``) has an identifier containing
  ``autocast`` (any case) as its ``with`` item or the item's callee, in the file or in a helper
  that yields under it; a choice ``ctx = a.autocast if c else nullcontext`` spells it in a branch
  of the conditional expression;
* a same-file helper that returns an autocast builds it with a call of the class.

So when every name or attribute ``autocast`` is (part of) the callee of a call with a literal
``enabled=False`` keyword and no ``*args``/``**kwargs``, no import binds it ``as`` another name, and
no ``with`` item or conditional branch is named like autocast but for one built with
``enabled=False``, every region and every autocast call of the file has ``enabled is False``.
``torch.is_autocast_enabled()``, ``torch.get_autocast_dtype(...)`` or a parameter
``autocast_kernel_dtype`` opens no region. Anything else (an alias, a ``partial``, a bare
decorator, a ``with self.autocast_ctx:``) makes the gate answer "may report", and the file is
parsed as before.

The scaler rules are gated the same way on what makes a name a GradScaler for the facts
(:class:`amplint.amp.scalers.ScalerFacts`): a construction (the class name ``GradScaler`` is then
written in the file), ``unscale_``, ``.scale(loss).backward()``, or a ``step`` on a receiver whose
last part says ``scaler``. A time-series model's ``self.scaler = MeanScaler(config)`` is none of
these. The framework rules are gated on the literal their findings read (``bf16=True``, a
DeepSpeed ``{"fp16": {"enabled": True}}`` unless the file may name another config,
``precision=16``) and on the ``x.backward()`` call
their training needs.
"""

from __future__ import annotations

import ast
import re
from bisect import bisect_right
from itertools import accumulate, count
from operator import add

from amplint.tree_evidence import (  # noqa: F401 - the names the gates' tests read from here
    EXCLUSIVE_PRECISION_FLAGS,
    PREPARING,
    TreeEvidence,
    indexed_device_text,
)


def _needs_enabled_autocast(evidence: TreeEvidence) -> bool:
    """AMP002, AMP013, AMP016, AMP018 report only under (or on) an autocast that may be enabled."""
    return evidence.autocast_region_may_enable


def _amp014_may_report(evidence: TreeEvidence) -> bool:
    """AMP014 reports a ``torch.is_autocast_enabled()`` call given no argument at all: its callee
    (or the import binding it ``as`` another name) spells ``is_autocast_enabled``."""
    return evidence.bare_autocast_state_check


def _amp015_may_report(evidence: TreeEvidence) -> bool:
    """AMP015 judges the ``device_type`` of every autocast call (a call of an autocast class,
    of a ``partial`` of one or of an alias), disabled ones too: its findings need such a call,
    whose class is then named (or imported ``as`` another name), and a ``device_type`` that is an
    indexed string or f-string, a ``torch.device(...)`` call, or a variable holding one of those."""
    if not evidence.autocast_class_named:
        return False  # no autocast class named: no autocast call at all
    return not (not evidence.autocast_class_may_enable and evidence.autocast_arguments_plain
                and not evidence.device_call and not evidence.indexed_device_string)


def _amp005_may_report(evidence: TreeEvidence) -> bool:
    """AMP005 needs AMP in use (an enabled autocast region, a GradScaler built, whose class name is
    then written in the file, or a loss scaled with ``.scale(loss).backward()``), a Trainer built
    with a literal ``fp16=True``, or an ``accelerate.Accelerator`` (so named) whose literal
    precision is ``"fp16"``."""
    return (evidence.autocast_region_may_enable or evidence.scaled_backward or evidence.scaler_class_named
            or evidence.fp16_true_keyword or evidence.fp16_precision_named and evidence.accelerator_class_named)


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
    return evidence.scaler_evidence or evidence.autocast_region_may_enable


def _amp021_may_report(evidence: TreeEvidence) -> bool:
    """AMP021 reports a call that passes both flags of an exclusive pair as literal ``True``."""
    return evidence.exclusive_flags_together


def _amp022_may_report(evidence: TreeEvidence) -> bool:
    """AMP022 reports a ``.backward()`` call beside an ``accelerator.prepare(...)`` assignment,
    when an optimizer ``step()`` follows the backward in the same function (the timeline's
    ``OPTIMIZER_STEP`` events of the backward's scope)."""
    return evidence.backward_method_call and evidence.prepare_method_call and evidence.backward_beside_step


def _amp019_may_report(evidence: TreeEvidence) -> bool:
    """AMP019 reports a call of torch's ``clip_grad_norm_``/``clip_grad_value_`` (by qualified
    name) after an ``x.backward(...)`` of an Accelerator."""
    return evidence.backward_method_call and evidence.torch_clip_may_be_called


def _amp020_may_report(evidence: TreeEvidence) -> bool:
    """AMP020 reports a Lightning ``Trainer``/``Fabric`` call whose ``precision=`` is the literal
    ``16``, ``"16"`` or ``"bf16"``."""
    return evidence.legacy_precision_keyword


def _amp026_may_report(evidence: TreeEvidence) -> bool:
    """AMP026 reports only in a file that trains with a plain ``x.backward()`` (a ``BACKWARD``
    event of the timeline, which is a call of a ``backward`` attribute)."""
    return evidence.backward_method_call


def _amp027_may_report(evidence: TreeEvidence) -> bool:
    """AMP027 reports a plain ``x.backward()`` (or, under a float16 ``"torch_autocast"`` config, an
    ``optimizer.step()`` after ``engine.backward(loss)``) beside a ``deepspeed.initialize`` whose
    config is a literal dict (or the one dict a name is assigned) with ``"fp16": {"enabled": True}``
    or a ``"torch_autocast"`` section, or a ``.json`` file of the project; the last two only where
    ``deepspeed`` is imported (or may be, through a star import)."""
    return evidence.backward_method_call and (
        evidence.fp16_config_section or (evidence.deepspeed_config_elsewhere and evidence.deepspeed_may_be_imported))


def _amp028_may_report(evidence: TreeEvidence) -> bool:
    """AMP028 reports a bfloat16 load trained by a Trainer whose arguments pass ``bf16=True``."""
    return evidence.bf16_true_keyword


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
    "AMP014": _amp014_may_report,
    "AMP015": _amp015_may_report,
    "AMP016": _needs_enabled_autocast,
    "AMP017": _needs_a_scaler,
    "AMP018": _needs_enabled_autocast,
    "AMP019": _amp019_may_report,
    "AMP020": _amp020_may_report,
    "AMP021": _amp021_may_report,
    "AMP022": _amp022_may_report,
    "AMP024": _amp024_may_report,
    "AMP026": _amp026_may_report,
    "AMP027": _amp027_may_report,
    "AMP028": _amp028_may_report,
}


# Gates whose proof holds only for a file linted without a project context: with one, a class
# imported from another module may build a GradScaler (a scaler wrapper for AMP006).
_FILE_ALONE = frozenset({"AMP006"})


def codes_that_may_report(codes: frozenset[str], tree: ast.Module, with_project: bool = False,
                          text: str | None = None, project_builds_scaler=None) -> frozenset[str]:
    """``codes`` without the gated rules that provably report nothing on this file.
    ``with_project``: the file is linted with what its imports reach; ``project_builds_scaler``:
    with it, a function answering whether an asked import may build a GradScaler (asked only
    where the file's own evidence cannot show AMP006 may report); ``text``: the source of
    ``tree``, which lets the walk skip statements that cannot matter."""
    return _codes_the_evidence_leaves(codes, lambda: TreeEvidence(tree, text), with_project, project_builds_scaler)


def _codes_the_evidence_leaves(codes: frozenset[str], evidence_of, with_project: bool, project_builds_scaler) -> frozenset[str]:
    """:func:`codes_that_may_report` given a function that makes the file's evidence."""
    gates = {code: GATES[code] for code in codes
             if code in GATES and not (with_project and code in _FILE_ALONE and project_builds_scaler is None)}
    if not gates:
        return codes
    evidence = evidence_of()

    def may_report(code: str) -> bool:
        if code not in gates or gates[code](evidence):
            return True
        return with_project and code in _FILE_ALONE and project_builds_scaler()

    return frozenset(code for code in codes if may_report(code))


# Gates that read where statements are (a backward and a step in one function body): the
# logical lines cut out of a text do not keep it. Each is asked of them only for its part that
# they do keep (flags read from one node): where that part holds, the whole tree is parsed.
_WHOLE_TREE = {"AMP022": lambda evidence: evidence.backward_method_call and evidence.prepare_method_call}
# The words the questions asked after the walk read from the statements it left out (see
# :class:`~amplint.tree_evidence.TreeEvidence`'s properties), but ``step``: only AMP022's gate,
# which needs the whole tree, asks for the steps.
_LATE_WORDS = ("import", "precision", "Accelerator", "clip_grad")
_INDEXED_START = re.compile(r"""["']\w*:""")


def codes_that_may_report_from_text(codes: frozenset[str], text: str, with_project: bool = False,
                                    project_builds_scaler=None) -> frozenset[str] | None:
    """:func:`codes_that_may_report`, asked of the logical lines of ``text`` that can set a flag
    (:mod:`amplint.logical_lines`) instead of its whole ``ast``, for a fraction of the parse.

    Every flag the gates read comes from one node and its children, inside one logical line, and
    only a line that spells one of the words the walk and the later questions look for can set
    one: those lines are all cut, so the answer is the whole tree's. (It can only be larger: an
    import nested in a statement the walk leaves out is read here as if at the top.) ``None``
    when it cannot be asked so (a rule without a gate, a gate whose answer needs the whole tree, a
    text the lexer is unsure of, lines that do not parse alone); then the file is parsed whole."""
    if not codes or any(code not in GATES for code in codes):
        return None
    from amplint.logical_lines import logical_lines_spelling, masked_code
    from amplint.project.quiet_parse import parse
    from amplint.tree_literals import NUMERIC_ESCAPE
    from amplint.walk_words import occurrences, offsets_spelling_a_word

    masked = masked_code(text)
    if masked is None:
        return None
    # Physical lines end at ``\n`` only: the lexer refused a lone ``\r``.
    starts = [0, *map(add, accumulate(map(len, text.split("\n"))), count(1))]
    starts[-1] = len(text)
    # Only AMP015's gate reads whether a device is built or written as an indexed string, and
    # only once an autocast class is named, which an ASCII text without ``autocast`` cannot do
    # (outside ASCII an identifier may spell it in another form: ``ａｕｔｏｃａｓｔ``).
    devices = "AMP015" in codes and ("autocast" in text or not text.isascii())
    found = offsets_spelling_a_word(text, masked, devices)
    for word in _LATE_WORDS:
        found.update(occurrences(text, word))
    # Where a string like ``"cuda:0"`` may be written: where :data:`INDEXED_SOURCE` may begin
    # (a quote, perhaps a word, a colon: a superset, and linear where that pattern is not on
    # a whole text), or an escape that may write a colon or a digit.
    for pattern in (NUMERIC_ESCAPE, _INDEXED_START) if devices else ():
        found.update(match.start() for match in pattern.finditer(text))
    numbers = sorted({bisect_right(starts, at) for at in found})
    module = logical_lines_spelling(text, masked, starts, numbers)
    tree = parse(module) if module is not None else None
    if tree is None:
        return None
    evidence = TreeEvidence(tree, module)
    whole_tree = codes & _WHOLE_TREE.keys()
    if any(_WHOLE_TREE[code](evidence) for code in whole_tree):
        return None
    return _codes_the_evidence_leaves(codes - whole_tree, lambda: evidence, with_project, project_builds_scaler)
