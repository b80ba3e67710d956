"""Read models over the index and the files: what ``kb brief``, ``kb report``,
``kb verifiers`` and the web pages show. Pure reads: nothing here writes a file
or commits (the writes that store a view, such as ``kb report``, are in
:mod:`kb.ops`)."""
