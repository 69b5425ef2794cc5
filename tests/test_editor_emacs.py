"""The Emacs recipe (editors/emacs/amplint-eglot.el, shown in docs/integrations.md) in a batch
Emacs with eglot: visiting a Python file starts ``amplint server`` and its diagnostic reaches
flymake. Debian's emacs-nox is 28.2, with eglot from elpa-eglot; .ci/run installs both."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from editor_tools import missing

pytestmark = pytest.mark.slow

RECIPE = Path(__file__).resolve().parent.parent / "editors" / "emacs" / "amplint-eglot.el"
DEPRECATED = "import torch\n\nwith torch.cuda.amp.autocast():\n    pass\n"

# A batch Emacs runs no command loop: running post-command-hook once is what the first command
# after visiting the file would do (eglot-ensure connects there).
PROBE = """
(find-file "train.py")
(run-hooks 'post-command-hook)
(let ((deadline (+ (float-time) 30)))
  (while (and (< (float-time) deadline) (null (flymake-diagnostics)))
    (accept-process-output nil 0.1)))
(let ((found (mapcar (lambda (d)
                       (list (cons 'text (flymake-diagnostic-text d))
                             (cons 'line (line-number-at-pos (flymake-diagnostic-beg d)))
                             (cons 'column (save-excursion (goto-char (flymake-diagnostic-beg d)) (current-column)))))
                     (flymake-diagnostics))))
  (with-temp-file (getenv "AMPLINT_EMACS_OUT")
    (insert (json-encode found))))
(ignore-errors (eglot-shutdown (eglot-current-server)))
"""


# Emacs 27+ activates installed packages before it reads the init file; a batch Emacs does not.
ACTIVATE_PACKAGES = ["--eval", "(package-initialize)"]


def _eglot_available(emacs: str) -> bool:
    proc = subprocess.run([emacs, "--batch", "-q", *ACTIVATE_PACKAGES, "--eval", "(kill-emacs (if (require 'eglot nil t) 0 1))"],
                          capture_output=True, timeout=60)
    return proc.returncode == 0


def test_recipe_connects_eglot_and_flymake_shows_the_finding(tmp_path):
    emacs = shutil.which("emacs")
    if emacs is None:
        missing("emacs is not installed (apt-get install emacs-nox elpa-eglot; .ci/run installs them)")
    if not _eglot_available(emacs):
        missing("this Emacs has no eglot (Emacs 29+ has it built in; apt-get install elpa-eglot)")
    # The recipe starts `amplint server` from PATH: an `amplint` there that runs this checkout.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "amplint"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m amplint "$@"\n', encoding="utf-8")
    shim.chmod(shim.stat().st_mode | stat.S_IXUSR)
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text("[tool.amplint]\n", encoding="utf-8")
    (project / "train.py").write_text(DEPRECATED, encoding="utf-8")
    probe = tmp_path / "probe.el"
    probe.write_text(PROBE, encoding="utf-8")
    out = tmp_path / "out.json"
    proc = subprocess.run(
        [emacs, "--batch", "-q", *ACTIVATE_PACKAGES, "-l", str(RECIPE), "-l", str(probe)],
        cwd=project, capture_output=True, text=True, timeout=120,
        env={**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "AMPLINT_EMACS_OUT": str(out)},
    )
    assert out.is_file(), f"emacs wrote nothing (rc {proc.returncode}): {proc.stderr[-3000:]}"
    (diagnostic,) = json.loads(out.read_text(encoding="utf-8")) or [None]
    assert diagnostic is not None, proc.stderr[-3000:]
    assert "AMP001" in diagnostic["text"] and "torch.cuda.amp.autocast" in diagnostic["text"]
    assert (diagnostic["line"], diagnostic["column"]) == (3, 5)
