"""``amplint server``: a Language Server (over stdio) for editors. Needs ``amplint[lsp]`` (pygls)."""
