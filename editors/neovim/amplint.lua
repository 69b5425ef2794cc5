-- amplint's language server for Python buffers, on Neovim 0.7 and later.
-- Save as ~/.config/nvim/plugin/amplint.lua, or paste it into init.lua.
-- Another command, e.g. a project's interpreter:
--   vim.g.amplint_cmd = { "/path/to/python", "-m", "amplint", "server" }
local markers = { "pyproject.toml", "amplint.toml", ".amplint.toml", ".git" }
local uv = vim.uv or vim.loop

-- The nearest directory above the file holding a marker, else the file's.
local function root_dir(path)
  if path == "" then
    path = vim.fn.getcwd() .. "/unnamed"
  end
  local start = vim.fn.fnamemodify(path, ":p:h")
  local dir = start
  while true do
    for _, marker in ipairs(markers) do
      if uv.fs_stat(dir .. "/" .. marker) then
        return dir
      end
    end
    local parent = vim.fn.fnamemodify(dir, ":h")
    if parent == dir then
      return start
    end
    dir = parent
  end
end

-- Neovim 0.7: one client per root directory, attached to each of its buffers.
local clients = {}

local function start(bufnr)
  local config = {
    name = "amplint",
    cmd = vim.g.amplint_cmd or { "amplint", "server" },
    root_dir = root_dir(vim.api.nvim_buf_get_name(bufnr)),
  }
  if vim.lsp.start then -- 0.8+: reuses a client of the same name and root
    vim.lsp.start(config, { bufnr = bufnr })
    return
  end
  local id = clients[config.root_dir]
  if id == nil or vim.lsp.get_client_by_id(id) == nil then
    id = vim.lsp.start_client(config)
    clients[config.root_dir] = id
  end
  if id ~= nil then
    vim.lsp.buf_attach_client(bufnr, id)
  end
end

vim.api.nvim_create_autocmd("FileType", {
  pattern = "python",
  callback = function(args)
    start(args.buf)
  end,
})
