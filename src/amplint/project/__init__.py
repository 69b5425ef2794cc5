"""The project pass: a small summary of each module's functions, joined across same-project imports.

:mod:`~amplint.project.summarize` reads a module into a
:class:`~amplint.project.records.ModuleSummary` (its outline from ``ast``, what its functions do
from the libcst facts, by :mod:`amplint.amp.summaries`, as for a linted file); :mod:`~amplint.project.phase` gives a file
that asks (:mod:`~amplint.project.asking`) the :class:`~amplint.project.context.ProjectContext`
of the modules it imports, read as far as its lint asks (:mod:`~amplint.project.deferred`) and
summarised (cached by content) in the worker that lints it; rules ask
:class:`~amplint.project.query.ProjectView` (``facts.project``) what a call reaches.
"""

# The submodules are imported where they are used: a run whose files all fail the prefilter
# imports none of them.
