"""``target-torch`` inferred from a project's torch requirement (pyproject.toml, setup.cfg,
setup.py, requirements files), and ``--show-settings`` saying where it came from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from amplint.torch_requirement import infer_for_run, infer_target_torch, project_directory, requirement_bound

GRAD_SCALER = "import torch\nscaler = torch.cuda.amp.GradScaler()\n"


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


@pytest.mark.parametrize(
    ("requirement", "lowest"),
    [
        ("torch>=2.1", (2, 1)),
        ("torch >= 2.1, < 3", (2, 1)),
        ("Torch~=2.2", (2, 2)),
        ("torch[opt-einsum]>=2.3", (2, 3)),
        ("torch (>=2.0)", (2, 0)),
        ("torch>=2.4; sys_platform == 'linux'", (2, 4)),
        ("torch==2.1.*", (2, 1)),
        ("torch", None),
        ("torch<3", None),
        ("torch @ https://download.pytorch.org/whl/torch-2.1.0.whl", None),
        ("torchvision>=0.16", None),
        ("pytorch-lightning>=2.0", None),
    ],
)
def test_requirement_bound(requirement, lowest):
    assert requirement_bound(requirement) == lowest


def test_pyproject_dependencies_and_extras(tmp_path):
    write(tmp_path, {"pyproject.toml": '[project]\nname = "x"\ndependencies = ["numpy", "torch>=2.2"]\n'
                                       '[project.optional-dependencies]\ngpu = ["torch>=2.4"]\n'})
    inferred = infer_target_torch(tmp_path)
    assert inferred.release == (2, 2)
    assert inferred.describe() == (
        "inferred from pyproject.toml: torch>=2.2 (the lowest bound; also pyproject.toml: torch>=2.4)"
    )


def test_extras_alone_count(tmp_path):
    write(tmp_path, {"pyproject.toml": '[project]\nname = "x"\n[project.optional-dependencies]\nrun = ["torch>=2.3"]\n'})
    assert infer_target_torch(tmp_path).describe() == "inferred from pyproject.toml: torch>=2.3"


@pytest.mark.parametrize(
    ("dependency", "lowest", "shown"),
    [
        ('torch = "^2.1"', (2, 1), 'torch = "^2.1"'),
        ('torch = { version = ">=2.2", source = "pytorch" }', (2, 2), 'torch = ">=2.2"'),
        ('torch = [{ version = "^2.3", platform = "linux" }, { version = "^2.2", platform = "darwin" }]',
         (2, 2), 'torch = "^2.2"'),
    ],
)
def test_poetry_dependencies(tmp_path, dependency, lowest, shown):
    write(tmp_path, {"pyproject.toml": f'[tool.poetry.dependencies]\npython = "^3.10"\n{dependency}\n'})
    inferred = infer_target_torch(tmp_path)
    assert inferred.release == lowest and inferred.lowest.requirement == shown


def test_setup_cfg(tmp_path):
    write(tmp_path, {"setup.cfg": "[metadata]\nname = x\n\n[options]\ninstall_requires =\n    numpy\n"
                                  "    torch>=1.13  # fp16 kernels\n"})
    assert infer_target_torch(tmp_path).describe() == "inferred from setup.cfg: torch>=1.13"


def test_setup_py_is_read_not_run(tmp_path):
    marker = tmp_path / "ran"
    write(tmp_path, {"setup.py": (
        "from setuptools import setup\n"
        f"open({str(marker)!r}, 'w').close()\n"
        "REQUIRED = ['numpy', 'torch>=2.0,<2.6']\n"
        "setup(name='x', install_requires=REQUIRED, extras_require={'fast': ['torch>=2.2']})\n"
    )})
    inferred = infer_target_torch(tmp_path)
    assert not marker.exists()
    assert inferred.describe() == "inferred from setup.py: torch>=2.0,<2.6 (the lowest bound; also setup.py: torch>=2.2)"


def test_setup_py_with_computed_requirements_gives_nothing(tmp_path):
    write(tmp_path, {"setup.py": "import setuptools\nsetuptools.setup(install_requires=open('deps').read().split())\n"})
    assert infer_target_torch(tmp_path) is None


def test_requirements_files_and_their_includes(tmp_path):
    write(tmp_path, {
        "requirements.txt": "-r requirements/base.txt\n# torch>=1.0 is a comment\n",
        "requirements/base.txt": "numpy\ntorch==2.1.2 \\\n    --hash=sha256:0123\n-r base.txt\n",
        "requirements-dev.txt": "-e .\n--index-url https://example.org\ntorch>=2.3\n",
    })
    inferred = infer_target_torch(tmp_path)
    assert inferred.release == (2, 1)
    assert inferred.describe() == (
        "inferred from requirements/base.txt: torch==2.1.2 (the lowest bound; also requirements-dev.txt: torch>=2.3)"
    )


def test_sources_disagree_lowest_wins(tmp_path):
    write(tmp_path, {"pyproject.toml": '[project]\nname = "x"\ndependencies = ["torch>=2.4"]\n',
                     "requirements.txt": "torch~=2.2\n"})
    inferred = infer_target_torch(tmp_path)
    assert inferred.release == (2, 2)
    assert inferred.others[0].source == "pyproject.toml"


@pytest.mark.parametrize(
    "files",
    [
        {"pyproject.toml": '[project]\nname = "x"\ndependencies = ["torch"]\n'},
        {"requirements.txt": "torch<3\ntorchvision>=0.16\n"},
        {"pyproject.toml": "[project\n", "requirements.txt": "numpy\n"},
        {"setup.py": "setup(\n"},
    ],
    ids=["unbounded", "upper-bound-only", "broken-toml", "broken-setup-py"],
)
def test_nothing_inferred(tmp_path, files):
    write(tmp_path, files)
    assert infer_target_torch(tmp_path) is None


def test_project_directory_is_the_nearest_with_a_packaging_file(tmp_path):
    write(tmp_path, {"requirements.txt": "torch>=2.2\n", "src/pkg/a.py": "x = 1\n"})
    assert project_directory(tmp_path / "src" / "pkg" / "a.py") == tmp_path.resolve()
    assert infer_for_run(None, tmp_path / "src" / "pkg").release == (2, 2)


def test_the_configuration_files_directory_is_read_not_one_above(tmp_path):
    write(tmp_path, {"requirements.txt": "torch>=2.2\n", "sub/amplint.toml": "select = ['AMP001']\n"})
    assert infer_for_run(tmp_path / "sub" / "amplint.toml", tmp_path / "sub") is None


# ----------------------------------------------------------------------------- the command line


def test_show_settings_names_the_inferred_target(cli, files):
    files({"pyproject.toml": '[project]\nname = "x"\ndependencies = ["torch>=2.1"]\n', "a.py": "x = 1\n"})
    lines = cli("check", "--show-settings", "a.py").stdout.splitlines()
    assert 'target-torch = "2.1"  # inferred from pyproject.toml: torch>=2.1' in lines


@pytest.mark.parametrize(
    ("args", "config", "line"),
    [
        (("--target-torch", "2.6"), "", 'target-torch = "2.6"  # from --target-torch'),
        ((), "target-torch = '2.5'\n", 'target-torch = "2.5"  # from amplint.toml'),
        (("--isolated",), "", 'target-torch = "newest"  # --isolated: no project file read'),
    ],
)
def test_a_set_target_wins_over_the_inferred_one(cli, files, args, config, line):
    files({"requirements.txt": "torch>=2.1\n", "a.py": "x = 1\n", **({"amplint.toml": config} if config else {})})
    assert line in cli("check", "--show-settings", *args, "a.py").stdout.splitlines()


def test_the_inferred_target_withholds_fixes_the_project_cannot_run(cli, files):
    files({"requirements.txt": "torch>=2.2,<2.5\n", "a.py": GRAD_SCALER})
    (finding,) = json.loads(cli("a.py", "--output-format", "json", "--no-cache").stdout)
    assert finding["fix"] is None
    files({"requirements.txt": "torch>=2.3\n"})
    (finding,) = json.loads(cli("a.py", "--output-format", "json", "--no-cache").stdout)
    assert finding["fix"] is not None


def test_editor_and_flake8_settings_infer_it_too(tmp_path):
    from amplint.file_settings import settings_for_directory

    write(tmp_path, {"setup.cfg": "[options]\ninstall_requires =\n    torch>=2.2\n"})
    assert settings_for_directory(tmp_path).target_torch == (2, 2)
    write(tmp_path, {"amplint.toml": "target-torch = '2.6'\n"})
    assert settings_for_directory(tmp_path).target_torch == (2, 6)
