"""Whether one dotted text written in two places names the same variable."""

from __future__ import annotations

from amplint.semantic.records import Context


class IdentityQueries:
    """Mixed into :class:`~amplint.amp.facts.FileFacts`; uses the call graph's ``function_of``."""

    def same_variable(self, key: str, at: Context, seen_from: Context) -> bool:
        """Does the dotted text ``key`` at ``at`` name what it names at ``seen_from``?

        ``self.x`` does in methods of one class; a name does within one scope, and between a
        function and module level when the function does not bind the name itself.
        """
        head = key.split(".")[0]
        if head == "self":
            a, b = self.function_of(at.scope), self.function_of(seen_from.scope)
            return a is not None and b is not None and a.class_name is not None and a.class_name == b.class_name
        if at.scope is seen_from.scope:
            return True
        if seen_from.scope.kind == "module":
            return head not in at.scope.bindings
        if at.scope.kind == "module":
            return head not in seen_from.scope.bindings
        return False
