"""Objects -> text. New objects are rendered whole; edits of existing files
splice only the lines they change (:mod:`kb.render.document`)."""
