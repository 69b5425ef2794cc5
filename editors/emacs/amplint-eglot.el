;; amplint's language server through eglot (built into Emacs 29+; on Emacs 28 install the
;; eglot package: M-x package-install RET eglot, or Debian's elpa-eglot).
(with-eval-after-load 'eglot
  (add-to-list 'eglot-server-programs
               '((python-mode python-ts-mode) "amplint" "server")))
(add-hook 'python-mode-hook #'eglot-ensure)
(add-hook 'python-ts-mode-hook #'eglot-ensure)
