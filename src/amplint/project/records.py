"""What the project pass knows about one module: plain, JSON-ready records.

A :class:`ModuleSummary` holds, for each top-level function and each method (``Class.method``),
a :class:`FunctionSummary`: which training-step effects its body has (unscale, clip, step,
update, a backward on a scaled loss, a scaler built, a model cast), which of its parameters
reach ``torch.save`` or have their state restored, and the checkpoints it writes. It also lists
the module's imports, so that another module's ``from utils import save_checkpoint`` can be
followed, and, for a function that returns or yields an autocast, where that autocast's device
type and dtype come from. Everything is tuples of strings, ints and bools: summaries are cached as JSON and
shipped to worker processes.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields

# The effects a function summary records; :meth:`FunctionSummary.has` answers for any of them.
EFFECTS = (
    "unscales", "clips", "steps", "updates", "scaled_backward", "constructs_scaler", "casts_model",
    "saves_optimizer", "saves_scaler", "restores_optimizer", "restores_scaler",
)


@dataclass(frozen=True)
class SavedCheckpoint:
    """One ``torch.save`` in a function: the literal keys it writes, as far as the code shows."""

    line: int
    keys: tuple[str, ...]
    complete: bool  # every key is a literal and nothing else is merged in
    optimizer: bool  # holds an optimizer's state
    scaler: bool  # holds a GradScaler's state


@dataclass(frozen=True)
class AutocastHelper:
    """A function that returns or yields an autocast (a ``@contextmanager`` helper): where that
    autocast's device type, dtype and ``enabled`` come from when the function is called."""

    device: str  # the device type when the call does not give one ("" unknown)
    dtype: str = ""  # the dtype when the call does not give one ("": the device's default)
    device_param: str = ""  # the parameter whose argument is the device type
    dtype_param: str = ""  # the parameter whose argument is the dtype; "**": the call's ``dtype=``, through ``**kwargs``
    enabled_param: str = ""  # the same for ``enabled``
    enabled: str = "True"  # ``enabled`` when the call does not give it: "True", "False", "" (not known)


@dataclass(frozen=True)
class FunctionSummary:
    name: str  # ``save_checkpoint`` or ``Trainer.state_dict``
    line: int
    params: tuple[str, ...]  # positional-or-keyword parameters, in order (``self`` included)
    keyword_only: tuple[str, ...] = ()
    has_varargs: bool = False
    has_varkw: bool = False
    defaults: tuple[str, ...] = ()  # the parameters that have a default
    unscales: bool = False
    clips: bool = False
    steps: bool = False
    updates: bool = False
    scaled_backward: bool = False
    constructs_scaler: bool = False
    casts_model: bool = False
    saves_optimizer: bool = False
    saves_scaler: bool = False
    restores_optimizer: bool = False
    restores_scaler: bool = False
    saved_params: tuple[str, ...] = ()  # parameters whose state (or whole value) reaches torch.save
    # parameters handed to torch.save as they are (``torch.save(state, f)``; ``*0`` for
    # ``torch.save(*args)``, the first of the ``*args``)
    saved_whole: tuple[str, ...] = ()
    restored_params: tuple[str, ...] = ()  # parameters whose ``load_state_dict`` is called
    scaler_params: tuple[str, ...] = ()  # parameters used as a GradScaler (or named like one)
    saves: tuple[SavedCheckpoint, ...] = ()
    autocast: AutocastHelper | None = None  # the autocast the function returns or yields

    def has(self, effect: str) -> bool:
        if effect not in EFFECTS:
            raise ValueError(f"unknown effect {effect!r}; known: {', '.join(EFFECTS)}")
        return bool(getattr(self, effect))

    def parameter_for(self, position: int | None, keyword: str | None) -> str | None:
        """The parameter an argument binds: by keyword, or by position (``self`` excluded for methods)."""
        if keyword is not None:
            return keyword if keyword in self.params or keyword in self.keyword_only else None
        params = self.params[1:] if "." in self.name and self.params[:1] == ("self",) else self.params
        if position is not None and position < len(params):
            return params[position]
        if position is not None and self.has_varargs:
            return f"*{position - len(params)}"  # ``*args``: ``*0`` is the first extra positional argument
        return None


@dataclass(frozen=True)
class ImportedName:
    """``local`` is bound by ``from <module> import <name>`` (``name`` None: ``import module``)."""

    local: str
    module: str  # dotted, without the leading dots of a relative import
    level: int  # 0 absolute, 1 for ``from .x``, 2 for ``from ..x``
    name: str | None = None


@dataclass(frozen=True)
class ModuleSummary:
    functions: tuple[FunctionSummary, ...] = ()
    imports: tuple[ImportedName, ...] = ()
    scaler_classes: tuple[str, ...] = ()  # classes that build a GradScaler (``NativeScaler``-style)
    defined: tuple[str, ...] = field(default=())  # top-level names bound by ``def`` / ``class``

    def function(self, name: str) -> FunctionSummary | None:
        return next((f for f in self.functions if f.name == name), None)

    def narrowed(self, names: frozenset[str]) -> "ModuleSummary":
        """Only what these top-level definitions hold: their functions (a class's methods, and
        the class itself when it is built as a library checkpointer) and scaler classes."""
        return ModuleSummary(
            tuple(f for f in self.functions if f.name.split(".", 1)[0] in names), self.imports,
            tuple(c for c in self.scaler_classes if c in names), self.defined,
        )

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "ModuleSummary":
        """The inverse of :meth:`to_dict`; raises ``TypeError``/``KeyError``/``ValueError`` on anything else."""
        if not isinstance(data, dict) or set(data) != {f.name for f in fields(cls)}:
            raise ValueError("not a module summary")
        functions = []
        for item in data["functions"]:
            item = dict(item)
            item["saves"] = tuple(SavedCheckpoint(**{**s, "keys": tuple(s["keys"])}) for s in item["saves"])
            item["autocast"] = AutocastHelper(**item["autocast"]) if item.get("autocast") is not None else None
            for name in ("params", "keyword_only", "defaults", "saved_params", "saved_whole", "restored_params", "scaler_params"):
                item[name] = tuple(_strings(item[name]))
            functions.append(FunctionSummary(**item))
        imports = tuple(ImportedName(**item) for item in data["imports"])
        return cls(tuple(functions), imports, tuple(_strings(data["scaler_classes"])), tuple(_strings(data["defined"])))


def _strings(values) -> list[str]:
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise ValueError("expected a list of strings")
    return values
