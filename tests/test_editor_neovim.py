"""The Neovim recipe (editors/neovim/amplint.lua, shown in docs/integrations.md) in a headless
Neovim: the real ``amplint server`` starts for a Python buffer and its diagnostic arrives.
Debian's neovim is 0.7.2, where the recipe takes its ``vim.lsp.start_client`` path; .ci/run
installs it, so this never skips there."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from editor_tools import missing

pytestmark = pytest.mark.slow

RECIPE = Path(__file__).resolve().parent.parent / "editors" / "neovim" / "amplint.lua"
DEPRECATED = "import torch\n\nwith torch.cuda.amp.autocast():\n    pass\n"

# Waits for each buffer's diagnostics, then writes what Neovim holds as JSON and quits.
PROBE = """
local result = { buffers = {} }
for _, name in ipairs({ "train.py", "sub/eval.py" }) do
  vim.cmd("edit " .. name)
  local bufnr = vim.api.nvim_get_current_buf()
  local arrived = vim.wait(30000, function() return #vim.diagnostic.get(bufnr) > 0 end, 50)
  local diagnostics = {}
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    table.insert(diagnostics, { code = d.code, source = d.source, lnum = d.lnum, col = d.col })
  end
  local attached = {}
  for _, client in pairs(vim.lsp.buf_get_clients(bufnr)) do
    table.insert(attached, { name = client.name, root = client.config.root_dir, id = client.id })
  end
  table.insert(result.buffers, { name = name, arrived = arrived, diagnostics = diagnostics, clients = attached })
end
result.version = vim.version()
vim.fn.writefile({ vim.fn.json_encode(result) }, vim.env.AMPLINT_NVIM_OUT)
vim.cmd("qa!")
"""


def test_recipe_starts_amplint_server_and_a_diagnostic_arrives(tmp_path):
    nvim = shutil.which("nvim")
    if nvim is None:
        missing("nvim is not installed (apt-get install neovim; .ci/run installs it)")
    project = tmp_path / "project"
    (project / "sub").mkdir(parents=True)
    (project / "pyproject.toml").write_text("[tool.amplint]\n", encoding="utf-8")
    (project / "train.py").write_text(DEPRECATED, encoding="utf-8")
    (project / "sub" / "eval.py").write_text(DEPRECATED, encoding="utf-8")
    probe = tmp_path / "probe.lua"
    probe.write_text(PROBE, encoding="utf-8")
    out = tmp_path / "out.json"
    command = [sys.executable, "-m", "amplint", "server"]
    proc = subprocess.run(
        [nvim, "--headless", "--clean",
         "--cmd", "lua vim.g.amplint_cmd = vim.fn.json_decode(vim.env.AMPLINT_CMD)",
         "-c", f"luafile {RECIPE}", "-c", f"luafile {probe}"],
        cwd=project, capture_output=True, text=True, timeout=120,
        env={**os.environ, "AMPLINT_CMD": json.dumps(command), "AMPLINT_NVIM_OUT": str(out)},
    )
    assert out.is_file(), f"nvim wrote nothing (rc {proc.returncode}): {proc.stdout[-2000:]} {proc.stderr[-2000:]}"
    result = json.loads(out.read_text(encoding="utf-8"))
    ids = set()
    for buffer in result["buffers"]:
        assert buffer["arrived"], buffer
        assert buffer["diagnostics"] == [{"code": "AMP001", "source": "amplint", "lnum": 2, "col": 5}], buffer
        ((client,),) = [buffer["clients"]]
        assert client["name"] == "amplint"
        # The nearest pyproject.toml above each file is the root, for the nested file too.
        assert Path(client["root"]).resolve() == project.resolve()
        ids.add(client["id"])
    assert len(ids) == 1, "the second buffer of the same root reuses the running server"
