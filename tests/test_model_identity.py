"""Which variable a dotted text names: scalers and optimizers told apart by binding, not by text."""

from textwrap import dedent

from amplint.amp.facts import FileFacts


def facts_of(source: str) -> FileFacts:
    return FileFacts.from_source(dedent(source))


def scope_named(facts: FileFacts, name: str, nth: int = 0):
    return [s for s in facts.scopes if s.name == name][nth]


CLASSES = """
import torch

class Base:
    def __init__(self):
        self.scaler = torch.amp.GradScaler("cuda")

class Child(Base):
    def step(self, loss):
        self.scaler.scale(loss).backward()

class Other:
    def __init__(self):
        self.scaler = torch.amp.GradScaler("cuda", enabled=False)

    def step(self, loss):
        self.scaler.scale(loss).backward()
"""


def test_self_attribute_belongs_to_the_class_whose_methods_assign_it():
    facts = facts_of(CLASSES)
    child_step, other_step = scope_named(facts, "step", 0), scope_named(facts, "step", 1)
    assert facts.identity.variable("self.scaler", child_step).owner is scope_named(facts, "Base")
    assert facts.identity.variable("self.scaler", other_step).owner is scope_named(facts, "Other")
    assert facts.identity.variable("self.scaler", child_step) != facts.identity.variable("self.scaler", other_step)


def test_a_disabled_scaler_in_one_class_does_not_silence_another_class():
    facts = facts_of(CLASSES)
    assert facts.scaling.scaler_provably_disabled("self.scaler", scope_named(facts, "step", 1)) is True
    assert facts.scaling.scaler_provably_disabled("self.scaler", scope_named(facts, "step", 0)) is False


def test_module_scaler_is_the_same_variable_in_functions_and_closures():
    facts = facts_of("""
        import torch
        scaler = torch.amp.GradScaler("cuda", enabled=False)

        def train(loss):
            scaler.scale(loss).backward()

            def log():
                return scaler.get_scale()

        def evaluate():
            scaler = None
            return scaler
    """)
    train, log, evaluate = (scope_named(facts, n) for n in ("train", "log", "evaluate"))
    assert facts.identity.variable("scaler", train) == facts.identity.variable("scaler", log) == facts.identity.variable("scaler", facts.identity.module_scope)
    assert facts.identity.variable("scaler", evaluate) != facts.identity.variable("scaler", train)
    assert facts.scaling.scaler_provably_disabled("scaler", train) is True


def test_same_name_built_in_two_functions_is_two_scalers():
    facts = facts_of("""
        import torch

        def finetune(loss):
            scaler = torch.amp.GradScaler("cuda", enabled=False)
            scaler.scale(loss).backward()

        def pretrain(loss):
            scaler = torch.amp.GradScaler("cuda")
            scaler.scale(loss).backward()

        def run_step(scaler, loss):
            scaler.scale(loss).backward()
    """)
    assert facts.scaling.scaler_provably_disabled("scaler", scope_named(facts, "finetune")) is True
    assert facts.scaling.scaler_provably_disabled("scaler", scope_named(facts, "pretrain")) is False
    # a parameter: the file's builds of that name decide together, and one is enabled
    assert facts.scaling.scaler_provably_disabled("scaler", scope_named(facts, "run_step")) is False


def test_self_outside_a_method_names_no_variable():
    facts = facts_of("""
        def helper(self):
            return self.scaler
    """)
    assert facts.identity.variable("self.scaler", scope_named(facts, "helper")) is None


def test_optimizer_parameters_follow_the_variable_seen_from_a_scope():
    facts = facts_of("""
        import torch

        def train_gan(gen, disc):
            opt_g = torch.optim.Adam(gen.parameters())
            return opt_g

        def train_distilled(student):
            opt_g = torch.optim.Adam(student.parameters())
            return opt_g

        def step(opt_g):
            opt_g.step()
    """)
    assert facts.optim.optimizer_parameter_owners("opt_g", scope_named(facts, "train_gan")) == {"gen"}
    assert facts.optim.optimizer_parameter_owners("opt_g", scope_named(facts, "train_distilled")) == {"student"}
    assert facts.optim.optimizer_parameter_owners("opt_g", scope_named(facts, "step")) == {"gen", "student"}


def test_rules_tell_two_classes_scalers_apart():
    from amplint.api import lint_source

    source = dedent("""
        import torch

        class FP32Trainer:
            def __init__(self, model, optimizer):
                self.model = model
                self.optimizer = optimizer
                self.scaler = torch.amp.GradScaler("cuda", enabled=False)

            def run(self, loader):
                for batch in loader:
                    with torch.autocast("cuda", dtype=torch.float16):
                        loss = self.model(batch)
                    self.scaler.scale(loss).backward()
                    self.scaler.update()
                    self.scaler.step(self.optimizer)

        class AMPTrainer:
            def __init__(self, model, optimizer):
                self.model = model
                self.optimizer = optimizer
                self.scaler = torch.amp.GradScaler("cuda")

            def run(self, loader):
                for batch in loader:
                    with torch.autocast("cuda", dtype=torch.float16):
                        loss = self.model(batch)
                    self.scaler.scale(loss).backward()
                    self.scaler.update()
                    self.scaler.step(self.optimizer)
    """)
    rows = [f.location.row for f in lint_source(source, settings={"select": ["AMP009"]})]
    lines = source.splitlines()
    amp_trainer = lines.index("class AMPTrainer:") + 1
    assert rows and all(row > amp_trainer for row in rows)


def test_a_global_declaration_binds_the_module_variable():
    facts = facts_of("""
        import torch
        scaler = None

        def setup():
            global scaler
            scaler = torch.amp.GradScaler("cuda", enabled=False)

        def train(loss):
            scaler.scale(loss).backward()
    """)
    setup, train = scope_named(facts, "setup"), scope_named(facts, "train")
    assert facts.identity.variable("scaler", setup) == facts.identity.variable("scaler", train)
    assert "scaler" not in setup.bindings
    assert facts.scaling.scaler_provably_disabled("scaler", train) is True
