"""The project pass: a small summary of each module's functions, joined across same-project imports.

:mod:`~amplint.project.summarize` reads a module (standard-library ``ast``, no libcst) into a
:class:`~amplint.project.records.ModuleSummary`; :mod:`~amplint.project.phase` summarises a run's
files in the worker pool (cached by content) and gives each file the
:class:`~amplint.project.context.ProjectContext` of the modules it imports; rules ask
:class:`~amplint.project.query.ProjectView` (``facts.project``) what a call reaches.
"""

# The submodules are imported where they are used: a run whose files all fail the prefilter
# imports none of them.
